package veritygen

// veritygen --append --avb against avbtool 1.3.0's known answers, and its
// errors.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestAvbNativeErrors: what --avb refuses exits 2 with one clear line (and
// a hint), DATA untouched.
func TestAvbNativeErrors(t *testing.T) {
	keys := filepath.Join(fronttest.AVBVectors, "keys")
	for _, c := range []struct {
		name string
		args []string // DATA is added
		want string
	}{
		{"no append", []string{"--avb"}, "--avb writes into DATA: it needs --append"},
		{"no avb", []string{"--append", "--partition-size=1048576"}, "--partition-size needs --avb"},
		{"key without algorithm", []string{"--append", "--avb", "--avb-key=" + keys + "/rsa2048.pem"}, "--avb-key without --avb-algorithm"},
		{"algorithm without key", []string{"--append", "--avb", "--avb-algorithm=SHA256_RSA2048"}, "key is required for algorithm SHA256_RSA2048"},
		{"wrong key size", []string{"--append", "--avb", "--avb-algorithm=SHA256_RSA4096", "--avb-key=" + keys + "/rsa2048.pem"}, "key is wrong size for algorithm SHA256_RSA4096"},
		{"unknown algorithm", []string{"--append", "--avb", "--avb-algorithm=SHA1_RSA1024"}, "SHA1_RSA1024"},
		{"data-size", []string{"--append", "--avb", "--data-size=4096"}, "--data-size does not apply to --avb"},
		{"hash block size", []string{"--append", "--avb", "--hash-block-size=1024"}, "--hash-block-size 1024 is not --data-block-size 4096"},
		{"partition too small", []string{"--append", "--avb", "--partition-size=131072"}, "exceeds maximum image size"},
		{"partition unaligned", []string{"--append", "--avb", "--partition-size=1000000"}, "not a multiple of the image block size 4096"},
		{"vbmeta lost", []string{"--append", "--avb", "--do-not-append-vbmeta-image"}, "--do-not-append-vbmeta-image without --output-vbmeta-image"},
		{"bad salt", []string{"--append", "--avb", "--salt=xyz"}, "not hexadecimal"},
		{"boot params", []string{"--append", "--avb", "--dm-name=x"}, "--dm-name does not apply to --avb"},
		{"fec-roots without fec", []string{"--append", "--avb", "--fec-roots=4"}, "--fec-roots needs --fec"},
		{"bad prop", []string{"--append", "--avb", "--prop=novalue"}, "malformed property"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "system.img")
			img := fronttest.AVBImageBytes(t, "blockbyte:4096:64")
			if err := os.WriteFile(data, img, 0o644); err != nil {
				t.Fatal(err)
			}
			r := cliRun(t, t.Context(), append(c.args, data)...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2", r.code)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if !strings.HasPrefix(lines[0], "veritygen: error: ") || !strings.Contains(lines[0], c.want) ||
				len(lines) > 2 || len(lines) == 2 && !strings.HasPrefix(lines[1], "veritygen: hint: ") {
				t.Errorf("stderr %q: want one error line with %q (and a hint)", r.stderr, c.want)
			}
			if got, _ := os.ReadFile(data); string(got) != string(img) {
				t.Error("DATA changed")
			}
		})
	}
}
