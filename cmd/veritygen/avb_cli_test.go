package main

// veritygen --append --avb against avbtool 1.3.0's known answers, and its
// errors.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// avbNativeArgs translates add_hashtree_footer's arguments into veritygen's
// flags, as the usage text maps them.
func avbNativeArgs(t *testing.T, args []string) []string {
	t.Helper()
	out := []string{"--append", "--avb"}
	names := map[string]string{
		"--partition_name": "--partition-name", "--hash_algorithm": "--hash", "--block_size": "--data-block-size",
		"--partition_size": "--partition-size", "--algorithm": "--avb-algorithm", "--key": "--avb-key", "--prop": "--prop",
		"--prop_from_file": "--prop-from-file", "--rollback_index": "--rollback-index",
		"--rollback_index_location": "--rollback-index-location", "--kernel_cmdline": "--kernel-cmdline",
		"--output_vbmeta_image": "--output-vbmeta-image",
	}
	bools := map[string]string{
		"--do_not_use_ab": "--do-not-use-ab", "--check_at_most_once": "--check-at-most-once", "--use_persistent_digest": "--use-persistent-digest",
		"--no_hashtree": "--no-hashtree", "--setup_as_rootfs_from_kernel": "--setup-as-rootfs-from-kernel",
		"--do_not_append_vbmeta_image": "--do-not-append-vbmeta-image",
	}
	var image string
	hash := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--image":
			i++
			image = args[i]
		case a == "--do_not_generate_fec":
		case a == "--salt":
			i++
			s := args[i]
			if s == "" {
				s = "-"
			}
			out = append(out, "--salt="+s)
		case names[a] != "":
			i++
			out = append(out, names[a]+"="+args[i])
			hash = hash || a == "--hash_algorithm"
		case bools[a] != "":
			out = append(out, bools[a])
		default:
			t.Fatalf("no veritygen flag for %s", a)
		}
	}
	if !hash {
		out = append(out, "--hash=sha1") // avbtool's default; veritygen's is sha256
	}
	return append(out, image)
}

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
	for _, c := range avbCases(t) {
		if !want[c.name] {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			avbWorkDir(t, c)
			args := append([]string{"--json"}, avbNativeArgs(t, c.args)...)
			r := cliOK(t, args...)
			var m map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
				t.Fatalf("--json: %v\n%s", err, r.stdout)
			}
			size, sum := avbFileSum(t, "image.img")
			if size != c.size || sum != c.sha256 {
				t.Fatalf("image.img: %d bytes, sha256 %s; want %d, %s", size, sum, c.size, c.sha256)
			}
			a := m["avb"].(map[string]any)
			if c.footer != "-" {
				f := a["footer"].(map[string]any)
				got := strconv.FormatFloat(f["original_image_size"].(float64), 'f', -1, 64) + "," +
					strconv.FormatFloat(f["vbmeta_offset"].(float64), 'f', -1, 64) + "," + strconv.FormatFloat(f["vbmeta_size"].(float64), 'f', -1, 64)
				if got != c.footer || avbFooterOf(t, "image.img") != c.footer {
					t.Errorf("footer in --json %s, in the file %s; want %s", got, avbFooterOf(t, "image.img"), c.footer)
				}
				// A sparse file's partition is the size it expands to.
				if c.expanded == "-" && a["partition_size"].(float64) != float64(c.size) {
					t.Errorf("partition_size %v, want %d", a["partition_size"], c.size)
				}
			} else if a["footer"] != nil {
				t.Errorf("footer %v, want null", a["footer"])
			}
			if c.rerun == "same" {
				cliOK(t, args...)
				if size, sum := avbFileSum(t, "image.img"); size != c.size || sum != c.sha256 {
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
	for _, row := range avbTSV(t, filepath.Join(avbVectorDir, "calc_max_image_size.tsv")) {
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
	keys := filepath.Join(avbVectorDir, "keys")
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
			img := avbImageBytes(t, "blockbyte:4096:64")
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
