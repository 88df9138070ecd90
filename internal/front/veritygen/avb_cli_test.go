package veritygen

// veritygen --append --avb against avbtool 1.3.0's known answers, and its
// errors.

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestAvbNativeVectors: veritygen --append --avb makes avbtool's partition
// file (size and SHA-256) for the cases of cases.tsv its flags cover, and
// the same file again when run on its output.
func TestAvbNativeVectors(t *testing.T) {
	want := map[string]bool{"none-sha256": true, "sha256-rsa2048": true, "sha512-rsa8192": true, "hash-sha1": true,
		"hash-blake2b-256": true, "hash-default": true, "salt-empty": true, "bs-512": true, "bs-1024-unaligned": true,
		"bs-16384": true, "one-block": true, "size-4097": true, "psize-1m": true, "props": true, "rollback-hex": true,
		"do-not-use-ab": true, "check-at-most-once": true, "persistent-digest": true, "no-hashtree": true,
		"rootfs-camo-sha1": true, "rootfs-psize": true, "kernel-cmdline": true, "vbmeta-only": true, "vbmeta-also": true,
		"sparse-psize": true, "raw-psize": true, "sparse-p0": true}
	n := 0
	for _, c := range fronttest.AVBCases(t) {
		if !want[c.Name] {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			fronttest.AVBWorkDir(t, c)
			args := append([]string{"--json"}, fronttest.NativeArgs(t, c.Args)...)
			r := cliOK(t, args...)
			var m map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
				t.Fatalf("--json: %v\n%s", err, r.stdout)
			}
			size, sum := fronttest.AVBFileSum(t, "image.img")
			if size != c.Size || sum != c.SHA256 {
				t.Fatalf("image.img: %d bytes, sha256 %s; want %d, %s", size, sum, c.Size, c.SHA256)
			}
			a := m["avb"].(map[string]any)
			if c.Footer != "-" {
				f := a["footer"].(map[string]any)
				got := strconv.FormatFloat(f["original_image_size"].(float64), 'f', -1, 64) + "," +
					strconv.FormatFloat(f["vbmeta_offset"].(float64), 'f', -1, 64) + "," + strconv.FormatFloat(f["vbmeta_size"].(float64), 'f', -1, 64)
				if got != c.Footer || fronttest.AVBFooterOf(t, "image.img") != c.Footer {
					t.Errorf("footer in --json %s, in the file %s; want %s", got, fronttest.AVBFooterOf(t, "image.img"), c.Footer)
				}
				// A sparse file's partition is the size it expands to.
				if c.Expanded == "-" && a["partition_size"].(float64) != float64(c.Size) {
					t.Errorf("partition_size %v, want %d", a["partition_size"], c.Size)
				}
			} else if a["footer"] != nil {
				t.Errorf("footer %v, want null", a["footer"])
			}
			if c.Rerun == "same" {
				cliOK(t, args...)
				if size, sum := fronttest.AVBFileSum(t, "image.img"); size != c.Size || sum != c.SHA256 {
					t.Errorf("rerun: %d bytes, sha256 %s; want the same file", size, sum)
				}
			}
		})
	}
	if n < 10 {
		t.Fatalf("%d cases run, want at least 10", n)
	}
}

// TestAvbNativeCalcMaxImageSize: --calc-max-image-size prints avbtool's
// number (FEC included with --fec), and needs no DATA.
func TestAvbNativeCalcMaxImageSize(t *testing.T) {
	n := 0
	for _, row := range fronttest.AVBTSV(t, filepath.Join(fronttest.AVBVectors, "calc_max_image_size.tsv")) {
		args := []string{"--avb", "--calc-max-image-size", "--partition-size=" + row[0], "--hash=" + row[1], "--data-block-size=" + row[2]}
		if row[3] != "0" {
			args = append(args, "--append", "--fec", "--fec-roots="+row[3])
		}
		if row[4] == "yes" {
			args = append(args, "--no-hashtree")
		}
		if r := cliOK(t, args...); r.stdout != row[6]+"\n" {
			t.Errorf("%v: %q, want %s", args, r.stdout, row[6])
		}
		n++
	}
	if n < 100 {
		t.Fatalf("%d rows", n)
	}
}
