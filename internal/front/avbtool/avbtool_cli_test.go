package avbtool

// The avbtool front's command line: the name it answers to, what it does
// not do (exit 2, named), FEC by default, and verify_image on damaged
// images.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/front/veritygen"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

const avbSalt = "5eedf00d0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4"

// TestAvbtoolFrontSymlink: the binary run through a symbolic link named
// avbtool is the front; another subcommand exits 2 naming it.
func TestAvbtoolFrontSymlink(t *testing.T) {
	bin := testtool.BuildCommand(t, t.TempDir(), "./cmd/veritygen")
	ours := filepath.Join(filepath.Dir(bin), "avbtool")
	if err := os.Symlink(bin, ours); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(ours, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	if code, out, _ := run("version"); code != 0 || out != "avbtool 1.3.0\n" {
		t.Errorf("version: exit %d, %q", code, out)
	}
	code, _, errOut := run("set_ab_metadata", "--misc_image", "x")
	if code != 2 || !strings.Contains(errOut, "set_ab_metadata is not one of") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("set_ab_metadata: exit %d, %q; want 2 and one line naming it", code, errOut)
	}
	img := filepath.Join(t.TempDir(), "system.img")
	if err := os.WriteFile(img, fronttest.AVBImageBytes(t, "blockbyte:4096:64"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("add_hashtree_footer", "--image", img, "--hash_algorithm", "sha256", "--partition_name", "system")
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("add_hashtree_footer: exit %d, %q, %q", code, out, errOut)
	}
	// argparse's abbreviations: --ima is --image.
	if code, out, _ := run("verify_image", "--ima", img); code != 0 || !strings.Contains(out, "Successfully verified sha256 hashtree") {
		t.Errorf("verify_image: exit %d, %q", code, out)
	}
}

// TestAvbtoolFrontFECByDefault: without --do_not_generate_fec the front
// appends FEC, as avbtool does, and its file is veritygen --append --fec
// --avb's for the same inputs; the descriptor points at the parity, and
// --calc_max_image_size counts it.
func TestAvbtoolFrontFECByDefault(t *testing.T) {
	dir := t.TempDir()
	data := fronttest.AVBImageBytes(t, "blockbyte:4096:300+fill:77:5000")
	// verify_image reads partition system's data from system.img.
	front, native := filepath.Join(dir, "front", "system.img"), filepath.Join(dir, "native", "system.img")
	for _, p := range []string{front, native} {
		if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(fronttest.AVBVectors, "keys", "rsa4096.pem")
	common := []string{"--partition_name", "system", "--salt", avbSalt, "--partition_size", "2097152", "--algorithm", "SHA256_RSA4096", "--key", key}
	if r := run(t, append([]string{"add_hashtree_footer", "--image", front, "--hash_algorithm", "sha256"}, common...)...); r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	fronttest.OK(t, veritygen.Main, "veritygen", "--append", "--fec", "--avb", "--partition-name=system", "--salt="+avbSalt, "--partition-size=2097152",
		"--avb-algorithm=SHA256_RSA4096", "--avb-key="+key, native)
	a, _ := os.ReadFile(front)
	b, _ := os.ReadFile(native)
	if !bytes.Equal(a, b) || len(a) != 2097152 {
		t.Fatalf("front %d bytes, native %d: not the same file", len(a), len(b))
	}
	img, err := avb.ReadImage(front)
	if err != nil {
		t.Fatal(err)
	}
	ht := img.VBMeta.FirstHashtree()
	if ht.FECNumRoots != 2 || ht.FECOffset != ht.TreeOffset+ht.TreeSize || ht.FECSize+4096 != avb.FECSize(ht.FECOffset, 2) {
		// avbtool stores the parity's size without libfec's header block.
		t.Errorf("descriptor FEC: roots %d, offset %d, size %d; tree at %d, %d bytes", ht.FECNumRoots, ht.FECOffset, ht.FECSize, ht.TreeOffset, ht.TreeSize)
	}
	if r := run(t, "verify_image", "--image", front); r.code != 0 {
		t.Errorf("verify_image: exit %d", r.code)
	}
	r := run(t, "add_hashtree_footer", "--calc_max_image_size", "--partition_size", "2097152")
	with := r.stdout
	r = run(t, "add_hashtree_footer", "--calc_max_image_size", "--partition_size", "2097152", "--do_not_generate_fec")
	if with == r.stdout || r.code != 0 {
		t.Errorf("--calc_max_image_size: %q with FEC, %q without: FEC not counted", with, r.stdout)
	}
}

// TestAvbtoolFrontSparseFECByDefault: on an Android sparse image the front
// appends FEC by default too (it exited 2 before): the output stays sparse,
// expands to the front's output for the expanded image, verifies, and is
// veritygen --append --fec --avb's file for the same inputs.
func TestAvbtoolFrontSparseFECByDefault(t *testing.T) {
	simg, err := os.ReadFile(filepath.Join(fronttest.AVBVectors, "sparse", "sparse-p0.simg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, d := range []string{"front", "native", "raw"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"front/system.img", "native/system.img"} {
		if err := os.WriteFile(p, simg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	expanded, err := avbExpandedBytes("front/system.img")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("raw/system.img", expanded, 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(fronttest.AVBVectors, "keys", "rsa2048.pem")
	args := []string{"--partition_name", "system", "--hash_algorithm", "sha256", "--salt", avbSalt, "--partition_size", "2097152",
		"--algorithm", "SHA256_RSA2048", "--key", key}
	for _, p := range []string{"front/system.img", "raw/system.img"} {
		if r := run(t, append([]string{"add_hashtree_footer", "--image", p}, args...)...); r.code != 0 || r.stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", p, r.code, r.stderr)
		}
	}
	front, _ := os.ReadFile("front/system.img")
	if !bytes.Equal(front[:4], simg[:4]) || len(front) >= 2097152/4 {
		t.Fatalf("the front's output (%d bytes) is not sparse", len(front))
	}
	if got, want := avbExpandedSum(t, "front/system.img"), avbExpandedSum(t, "raw/system.img"); got != want {
		t.Fatalf("the sparse output expands to %s, the raw output is %s", got, want)
	}
	img, err := avb.ReadImage("front/system.img")
	if err != nil {
		t.Fatal(err)
	}
	if ht := img.VBMeta.FirstHashtree(); ht.FECNumRoots != 2 || ht.FECSize == 0 || ht.FECOffset != ht.TreeOffset+ht.TreeSize {
		t.Fatalf("descriptor FEC: roots %d, offset %d, size %d", ht.FECNumRoots, ht.FECOffset, ht.FECSize)
	}
	if r := run(t, "verify_image", "--image", "front/system.img"); r.code != 0 {
		t.Errorf("verify_image: exit %d", r.code)
	}
	fronttest.OK(t, veritygen.Main, "veritygen", "--append", "--fec", "--avb", "--partition-name=system", "--salt="+avbSalt, "--partition-size=2097152",
		"--avb-algorithm=SHA256_RSA2048", "--avb-key="+key, "native/system.img")
	if native, _ := os.ReadFile("native/system.img"); !bytes.Equal(native, front) {
		t.Fatalf("veritygen --append --fec --avb: %d bytes, not the front's file", len(native))
	}
}

// avbExpandedBytes is what a (sparse) file expands to.
func avbExpandedBytes(path string) ([]byte, error) {
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	b := make([]byte, src.Size())
	_, err = src.ReadAt(b, 0)
	return b, err
}

// TestAvbtoolFrontVerifyDamage: verify_image finds what avbtool finds in
// a damaged image, exit 1, with avbtool's lines: data that is not the
// descriptor's, a tree that is not the data's, a vbmeta whose signature
// fails, another key than the one given. avbtool prints its errors as
// "argv0: message" (testdata/avbauth records them).
func TestAvbtoolFrontVerifyDamage(t *testing.T) {
	key := filepath.Join(fronttest.AVBVectors, "keys", "rsa2048.pem")
	other := filepath.Join(fronttest.AVBVectors, "keys", "rsa4096.pub.pem")
	for _, c := range []struct {
		name   string
		at     func(img *avb.Image) int64 // the byte flipped; -1 for none
		key    string
		stdout int // lines of stdout expected before the failure
		want   string
	}{
		{"data", func(*avb.Image) int64 { return 5000 }, "", 2, "hashtree of system.img does not match descriptor\navbtool: Error verifying descriptor.\n"},
		{"tree", func(img *avb.Image) int64 { return int64(img.VBMeta.FirstHashtree().TreeOffset) + 7 }, "", 2,
			"hashtree of system.img contains invalid data\navbtool: Error verifying descriptor.\n"},
		{"signature", func(img *avb.Image) int64 { return int64(img.Footer.VBMetaOffset) + avb.HeaderSize + 40 }, "", 1,
			"avbtool: Signature check failed for SHA256_RSA2048 vbmeta struct system.img\n"},
		{"other key", func(*avb.Image) int64 { return -1 }, other, 1, "avbtool: Embedded public key does not match given key.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if err := os.WriteFile("system.img", fronttest.AVBImageBytes(t, "blockbyte:4096:64"), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := run(t, "add_hashtree_footer", "--image", "system.img", "--partition_name", "system", "--hash_algorithm", "sha256",
				"--algorithm", "SHA256_RSA2048", "--key", key, "--do_not_generate_fec"); r.code != 0 {
				t.Fatalf("exit %d", r.code)
			}
			img, err := avb.ReadImage("system.img")
			if err != nil {
				t.Fatal(err)
			}
			if at := c.at(img); at >= 0 {
				b, _ := os.ReadFile("system.img")
				b[at] ^= 0x40
				if err := os.WriteFile("system.img", b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"verify_image", "--image", "system.img"}
			if c.key != "" {
				args = append(args, "--key", c.key)
			}
			var stdout, stderr bytes.Buffer
			code := Main(t.Context(), "avbtool", args, &stdout, &stderr)
			if code != 1 || stderr.String() != c.want || strings.Count(stdout.String(), "\n") != c.stdout {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, %d lines, %q", code, stdout.String(), stderr.String(), c.stdout, c.want)
			}
		})
	}
}

// TestAvbtoolFrontOutputs: the front's small outputs (--output_vbmeta_image,
// extract_public_key --output) follow veritygen's rules: a symbolic link
// stays a link (its target gets the bytes), an existing file that is not
// what the option writes is refused (exit 1) with the image untouched, and
// one that is is replaced.
func TestAvbtoolFrontOutputs(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "system.img")
	data := fronttest.AVBImageBytes(t, "blockbyte:4096:64")
	key := filepath.Join(fronttest.AVBVectors, "keys", "rsa2048.pem")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	footer := func(out string) avbRun {
		write("system.img", data)
		return run(t, "add_hashtree_footer", "--image", img, "--partition_size", "1048576", "--do_not_generate_fec",
			"--salt", avbSalt, "--output_vbmeta_image", out)
	}

	// A link: followed, kept.
	target := write("target.vbmeta", nil)
	link := filepath.Join(dir, "link.vbmeta")
	if err := os.Symlink("target.vbmeta", link); err != nil {
		t.Fatal(err)
	}
	if r := footer(link); r.code != 0 {
		t.Fatalf("vbmeta through a link: exit %d, %s", r.code, r.stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !bytes.HasPrefix(b, []byte("AVB0")) {
		t.Errorf("the link's target holds %d bytes, not the vbmeta", len(b))
	}
	// Again over the vbmeta it wrote: replaced.
	if r := footer(link); r.code != 0 {
		t.Errorf("over its own vbmeta: exit %d, %s", r.code, r.stderr)
	}

	// A file that is not a vbmeta: refused, nothing changed.
	other := write("notes.txt", []byte("keep me\n"))
	if r := footer(other); r.code != 1 || !strings.Contains(r.stderr, "is not a vbmeta image") {
		t.Errorf("over a text file: exit %d, %q; want 1, refused", r.code, r.stderr)
	} else if strings.Contains(r.stderr, "--force") || !strings.Contains(r.stderr, "hint: name another file") {
		// The hint names only what this front takes (issue 21 item 11).
		t.Errorf("over a text file: the hint %q names --force, which avbtool does not take", r.stderr)
	}
	if b, _ := os.ReadFile(other); string(b) != "keep me\n" {
		t.Error("the text file changed")
	}
	if b, _ := os.ReadFile(img); !bytes.Equal(b, data) {
		t.Error("the image changed though an output was refused")
	}

	// extract_public_key --output: a foreign file refused, a key replaced.
	if r := run(t, "extract_public_key", "--key", key, "--output", other); r.code != 1 {
		t.Errorf("extract_public_key over a text file: exit %d, %q; want 1", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(other); string(b) != "keep me\n" {
		t.Error("the text file changed")
	}
	pub := filepath.Join(dir, "key.avbpubkey")
	for range 2 {
		if r := run(t, "extract_public_key", "--key", key, "--output", pub); r.code != 0 {
			t.Fatalf("extract_public_key: exit %d, %q", r.code, r.stderr)
		}
	}
	if b, _ := os.ReadFile(pub); len(b) != 8+2*2048/8 {
		t.Errorf("the key blob is %d bytes", len(b))
	}
}

// TestAvbtoolCommand: cmd/avbtool, installed without a link, is the front.
func TestAvbtoolCommand(t *testing.T) {
	fronttest.SameAsCommand(t, "./cmd/avbtool", Main, []string{"version"}, nil, []string{"--help"},
		[]string{"set_ab_metadata", "--misc_image", "x"}, []string{"info_image", "--image", "/nonexistent"})
}
