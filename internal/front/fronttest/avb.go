// Package fronttest holds what the tests of the command-line fronts
// (internal/front/...) share: running a front in-process, the files they
// make and look at, avbtool's known answers.
package fronttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
)

// AVBVectors is the directory of avbtool 1.3.0's known answers
// (avb/testdata/vectors), absolute: the tests change into work directories.
var AVBVectors = avbvectors.Dir

// AVBCase is one add_hashtree_footer case of the vectors' cases.tsv.
type AVBCase struct {
	Name, Image string
	Args        []string
	Result      string
	Size        int64
	SHA256      string
	Footer      string
	VBMeta      string
	Rerun       string
	Expanded    string
}

// AVBTSV reads a tab-separated vector file: rows after the comment and
// the header line.
func AVBTSV(t *testing.T, path string) [][]string {
	t.Helper()
	rows, err := avbvectors.ReadTSV(path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// AVBCases reads the vectors' cases.tsv.
func AVBCases(t *testing.T) []AVBCase {
	t.Helper()
	var cs []AVBCase
	for _, r := range AVBTSV(t, filepath.Join(AVBVectors, "cases.tsv")) {
		c := AVBCase{Name: r[0], Image: r[1], Result: r[3], SHA256: r[5], Footer: r[6], VBMeta: r[7], Rerun: r[8], Expanded: r[9]}
		if err := json.Unmarshal([]byte(r[2]), &c.Args); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		c.Size, _ = strconv.ParseInt(r[4], 10, 64)
		cs = append(cs, c)
	}
	if len(cs) != 56 {
		t.Fatalf("%d cases in cases.tsv, want 56", len(cs))
	}
	return cs
}

// AVBImageBytes builds the image of the README's notation (not sparse:).
func AVBImageBytes(t *testing.T, spec string) []byte {
	t.Helper()
	b, err := avbvectors.Image(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// AVBWorkDir makes the directory a case runs in, as the README says:
// image.img, and keys/, props/, vbmeta/ of the vectors (absolute symbolic
// links), and changes into it.
func AVBWorkDir(t *testing.T, c AVBCase) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"keys", "props", "vbmeta"} {
		if err := os.Symlink(filepath.Join(AVBVectors, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	var img []byte
	if strings.HasPrefix(c.Image, "sparse:") {
		var err error
		if img, err = os.ReadFile(filepath.Join(AVBVectors, "sparse", c.Name+".simg")); err != nil {
			t.Fatal(err)
		}
	} else {
		img = AVBImageBytes(t, c.Image)
	}
	if err := os.WriteFile(filepath.Join(dir, "image.img"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return dir
}

// AVBFileSum returns a file's size and SHA-256 (hex).
func AVBFileSum(t *testing.T, path string) (int64, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return int64(len(b)), hex.EncodeToString(s[:])
}

// AVBFooterOf returns the AVB footer of the image at path as cases.tsv
// writes it: original size, vbmeta offset and size, or "-".
func AVBFooterOf(t *testing.T, path string) string {
	t.Helper()
	img, err := avb.ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	if img.Footer == nil {
		return "-"
	}
	f := img.Footer
	return fmt.Sprintf("%d,%d,%d", f.OriginalImageSize, f.VBMetaOffset, f.VBMetaSize)
}

// NativeArgs translates add_hashtree_footer's arguments into veritygen's
// flags, as the usage text maps them.
func NativeArgs(t *testing.T, args []string) []string {
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
