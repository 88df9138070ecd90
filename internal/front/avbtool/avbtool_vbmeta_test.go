package avbtool

// make_vbmeta_image and the digests through the front, beyond avbtool's
// recorded answers: add_hashtree_footer signed by a signing helper, the
// outputs' rules, stdout as --output.

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// TestAvbtoolFrontHashtreeSigningHelper: add_hashtree_footer signed by a
// signing helper (on stdin, or with files) gives the file --key gives;
// a helper that fails is reported as avbtool reports it, exit 1, the
// image as it was.
func TestAvbtoolFrontHashtreeSigningHelper(t *testing.T) {
	c := avbvectors.Case2{Inputs: map[string]string{}}
	avbvectors.WorkDir2(t, &c)
	t.Setenv("HELPER_LOG", "")
	data := fronttest.AVBImageBytes(t, "blockbyte:4096:8")
	footer := func(extra ...string) (avbRun, []byte) {
		if err := os.WriteFile("system.img", data, 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"add_hashtree_footer", "--image", "system.img", "--partition_size", "262144", "--partition_name", "system",
			"--do_not_generate_fec", "--salt", avbSalt, "--algorithm", "SHA256_RSA4096"}, extra...)
		r := run(t, args...)
		return r, fronttest.Read(t, "system.img")
	}
	r, want := footer("--key", "keys/rsa4096.pem")
	if r.code != 0 {
		t.Fatalf("--key: exit %d", r.code)
	}
	for _, helper := range [][]string{
		{"--signing_helper", "./helper.py", "--key", "keys/rsa4096.pub.pem"},
		{"--signing_helper_with_files", "./helper.py", "--key", "keys/rsa4096.pem"},
	} {
		t.Setenv("HELPER_MODE", "")
		if r, got := footer(helper...); r.code != 0 || !bytes.Equal(got, want) {
			t.Errorf("%v: exit %d, %q; not the file --key makes", helper, r.code, r.stderr)
		}
		t.Setenv("HELPER_MODE", "fail")
		r, got := footer(helper...)
		msg := "avbtool.py: Adding hashtree_footer failed: Error signing: b'helper: no signing today\\n'.\n"
		if helper[0] == "--signing_helper_with_files" {
			msg = "helper: no signing today\navbtool.py: Adding hashtree_footer failed: Error signing.\n"
		}
		if r.code != 1 || r.stderr != msg || !bytes.Equal(got, data) {
			t.Errorf("%v failing: exit %d, %q; want 1, %q and the image as it was", helper, r.code, r.stderr, msg)
		}
	}
}

// TestAvbtoolFrontVBMetaOutputs: make_vbmeta_image's --output replaces
// only a vbmeta image (a text file is refused, exit 1, unchanged), keeps
// a symbolic link, and "-" is stdout; extract_vbmeta_image,
// calculate_vbmeta_digest and print_partition_digests write their --output
// under the same rules.
func TestAvbtoolFrontVBMetaOutputs(t *testing.T) {
	t.Chdir(t.TempDir())
	key := filepath.Join(fronttest.AVBVectors, "keys", "rsa2048.pem")
	mk := func(out string) avbRun {
		return run(t, "make_vbmeta_image", "--output", out, "--algorithm", "SHA256_RSA2048", "--key", key, "--padding_size", "4096")
	}
	if r := mk("vbmeta.img"); r.code != 0 {
		t.Fatalf("exit %d, %s", r.code, r.stderr)
	}
	img := fronttest.Read(t, "vbmeta.img")
	if len(img) != 4096 || !bytes.HasPrefix(img, []byte("AVB0")) {
		t.Fatalf("vbmeta.img: %d bytes", len(img))
	}
	if r := mk("-"); r.code != 0 || r.stdout != string(img) {
		t.Errorf("--output -: exit %d, %d bytes on stdout; want vbmeta.img's %d", r.code, len(r.stdout), len(img))
	}
	os.WriteFile("notes.txt", []byte("keep me\n"), 0o644)
	if r := mk("notes.txt"); r.code != 1 || !strings.Contains(r.stderr, "not a vbmeta image") {
		t.Errorf("over a text file: exit %d, %q; want 1, refused", r.code, r.stderr)
	}
	if b := fronttest.Read(t, "notes.txt"); string(b) != "keep me\n" {
		t.Error("the text file changed")
	}
	os.WriteFile("target.img", nil, 0o644)
	os.Symlink("target.img", "link.img")
	if r := mk("link.img"); r.code != 0 {
		t.Fatalf("through a link: exit %d, %s", r.code, r.stderr)
	}
	if fi, err := os.Lstat("link.img"); err != nil || fi.Mode()&os.ModeSymlink == 0 || !bytes.Equal(fronttest.Read(t, "target.img"), img) {
		t.Errorf("the link was replaced, or its target does not hold the image (%v)", err)
	}

	// A footer image, and what the digests say of it.
	os.WriteFile("system.img", fronttest.AVBImageBytes(t, "blockbyte:4096:8"), 0o644)
	if r := run(t, "add_hashtree_footer", "--image", "system.img", "--partition_name", "system", "--do_not_generate_fec", "--salt", avbSalt); r.code != 0 {
		t.Fatalf("add_hashtree_footer: exit %d", r.code)
	}
	for _, c := range [][]string{
		{"extract_vbmeta_image", "--image", "system.img", "--padding_size", "1000"},
		{"calculate_vbmeta_digest", "--image", "system.img"},
		{"print_partition_digests", "--image", "system.img", "--json"},
		{"print_partition_digests", "--image", "system.img"},
	} {
		toStdout := run(t, append(c, "--output", "-")...)
		if toStdout.code != 0 || toStdout.stdout == "" {
			t.Fatalf("%v --output -: exit %d, %q", c, toStdout.code, toStdout.stderr)
		}
		for range 2 { // the second replaces the first
			if r := run(t, append(c, "--output", "out")...); r.code != 0 || r.stdout != "" {
				t.Fatalf("%v --output out: exit %d, %q", c, r.code, r.stderr)
			}
			if b := fronttest.Read(t, "out"); string(b) != toStdout.stdout {
				t.Errorf("%v: --output holds %q, stdout %q", c, b, toStdout.stdout)
			}
		}
		if r := run(t, append(c, "--output", "notes.txt")...); r.code != 1 {
			t.Errorf("%v over a text file: exit %d, %q; want 1", c, r.code, r.stderr)
		}
		if b := fronttest.Read(t, "notes.txt"); string(b) != "keep me\n" {
			t.Errorf("%v: the text file changed", c)
		}
		os.Remove("out")
	}
}

// TestAvbtoolFrontSigningInterrupted: make_vbmeta_image ended by SIGINT
// while a signing helper that does not answer runs exits 130, saying so,
// with the helper killed and nothing written.
func TestAvbtoolFrontSigningInterrupted(t *testing.T) {
	c := avbvectors.Case2{Inputs: map[string]string{}}
	dir := avbvectors.WorkDir2(t, &c)
	log := testtool.MkFIFO(t, t.TempDir(), "helper.log")
	t.Setenv("HELPER_LOG", log)
	t.Setenv("HELPER_MODE", "hang")
	before := fronttest.Listing(t, dir)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		// The helper has started once it writes its line.
		if f, err := os.Open(log); err == nil {
			bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		cancel(&cli.Interrupted{Signal: syscall.SIGINT})
	}()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, "avbtool", []string{"make_vbmeta_image", "--output", "vbmeta.img", "--algorithm", "SHA256_RSA2048",
		"--key", "keys/rsa2048.pem", "--signing_helper", "./helper.py"}, &stdout, &stderr)
	if code != 130 || stderr.String() != "avbtool: interrupted by SIGINT\n" {
		t.Errorf("exit %d, %q; want 130, interrupted by SIGINT", code, stderr.String())
	}
	fronttest.SameListing(t, before, fronttest.Listing(t, dir))
}
