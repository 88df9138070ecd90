package veritygen

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/front/veritysetup"
)

// holdExclusive takes the exclusive lock a writer holds on path, through an
// open of its own, as another process would, until the returned func (or
// the test's end) releases it.
func holdExclusive(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

const lockedTail = " is locked by another process (another veritygen or veritycheck?); wait for it to finish"

// TestFrontsReadLockedFiles: the fronts' reads of a file a writer holds say
// it is locked, with the front's exit code (avbtool's 1, veritysetup's 5
// for a busy device), instead of reading a file being written: an image
// being given its footer (none yet: "no AVB footer"), a complete one
// (printed as if whole), a tree being written ("not a valid VERITY device").
func TestFrontsReadLockedFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("system.img", fronttest.AVBImageBytes(t, "blockbyte:4096:64"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("plain.img", fronttest.AVBImageBytes(t, "blockbyte:4096:64"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := fronttest.Run(t, avbtool.Main, "avbtool.py", "add_hashtree_footer", "--image", "system.img", "--partition_name", "system", "--hash_algorithm", "sha256"); r.Code != 0 {
		t.Fatalf("setup: exit %d", r.Code)
	}
	if err := os.WriteFile("tree.verity", make([]byte, 8192), 0o644); err != nil { // a tree being written
		t.Fatal(err)
	}
	fronttest.Image(t, "data.img", 1<<20, 3)
	for _, c := range []struct {
		name, path string
		front      string // "avbtool" or "veritysetup"
		args       []string
		code       int
		stderr     string
	}{
		{"info_image, footer being added", "plain.img", "avbtool", []string{"info_image", "--image", "plain.img"}, 1, "avbtool: error: image plain.img" + lockedTail + "\n"},
		{"info_image", "system.img", "avbtool", []string{"info_image", "--image", "system.img"}, 1, "avbtool: error: image system.img" + lockedTail + "\n"},
		{"verify_image", "system.img", "avbtool", []string{"verify_image", "--image", "system.img"}, 1, "avbtool: error: image system.img" + lockedTail + "\n"},
		{"calculate_kernel_cmdline", "system.img", "avbtool", []string{"calculate_kernel_cmdline", "--image", "system.img"}, 1, "avbtool: error: image system.img" + lockedTail + "\n"},
		{"erase_footer", "system.img", "avbtool", []string{"erase_footer", "--image", "system.img"}, 1, "avbtool: error: image system.img" + lockedTail + "\n"},
		{"dump", "tree.verity", "veritysetup", []string{"dump", "tree.verity"}, 5, "HASH tree.verity" + lockedTail + ".\n"},
		{"verify", "tree.verity", "veritysetup", []string{"verify", "data.img", "tree.verity", strings.Repeat("ab", 32)}, 5, "HASH tree.verity" + lockedTail + ".\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			holdExclusive(t, c.path)
			var stdout, stderr bytes.Buffer
			var code int
			if c.front == "avbtool" {
				code = avbtool.Main(context.Background(), "avbtool", c.args, &stdout, &stderr)
			} else {
				code = veritysetup.Main(context.Background(), "veritysetup", c.args, &stdout, &stderr)
			}
			// verify_image names the image it verifies first, as avbtool.
			if out := stdout.String(); code != c.code || stderr.String() != c.stderr || out != "" && !strings.HasPrefix(out, "Verifying image") {
				t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want exit %d and only %q", c.front, c.args, code, out, stderr.String(), c.code, c.stderr)
			}
		})
	}
}

// TestOutputsLockedByAWriter: an existing output that another run is
// writing is reported as locked, not judged by what it holds half-written
// (a HASH of random bytes, a root hash file that is not hex yet), which
// named --force as the way out.
func TestOutputsLockedByAWriter(t *testing.T) {
	t.Chdir(t.TempDir())
	fronttest.Image(t, "data.img", 1<<20, 4)
	fronttest.Image(t, "busy", 1<<20, 5) // no superblock, and not zeros
	if err := os.WriteFile("busy.root", []byte("being written"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		args       []string
		role       string
	}{
		{"HASH", "busy", []string{"data.img", "busy"}, "HASH"},
		{"--fec-device", "busy", []string{"--fec-device=busy", "data.img", "h.verity"}, "FEC device"},
		{"--root-hash-file", "busy.root", []string{"--root-hash-file=busy.root", "data.img", "h.verity"}, "--root-hash-file"},
		{"veritysetup format HASH", "busy", []string{"format", "data.img", "busy"}, "HASH"},
		{"veritysetup format --root-hash-file", "busy.root", []string{"format", "--root-hash-file=busy.root", "data.img", "h.verity"}, "--root-hash-file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			holdExclusive(t, c.path)
			before := fronttest.Listing(t, ".")
			var stdout, stderr bytes.Buffer
			var code, want int
			if c.args[0] == "format" {
				code, want = veritysetup.Main(context.Background(), "veritysetup", c.args, &stdout, &stderr), 5
			} else {
				code, want = run(context.Background(), c.args, &stdout, &stderr, &stderr), 2
			}
			if code != want || !strings.Contains(stderr.String(), c.role+" "+c.path+lockedTail) || strings.Contains(stderr.String(), "--force") {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), want, c.role+" "+c.path+lockedTail)
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, "."))
		})
	}
}

// TestAvbtoolFrontSecondWriterOfANewOutput: an --output_vbmeta_image that
// does not exist yet, which another run is writing (its temporary file
// beside it, locked), is refused at once (exit 1), the image untouched.
func TestAvbtoolFrontSecondWriterOfANewOutput(t *testing.T) {
	t.Chdir(t.TempDir())
	img := fronttest.AVBImageBytes(t, "blockbyte:4096:64")
	if err := os.WriteFile("system.img", img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(".v.img.tmp0123456789ab", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	holdExclusive(t, ".v.img.tmp0123456789ab")
	before := fronttest.Listing(t, ".")
	var stdout, stderr bytes.Buffer
	code := avbtool.Main(context.Background(), "avbtool", []string{"add_hashtree_footer", "--image", "system.img", "--partition_size", "1048576",
		"--hash_algorithm", "sha256", "--output_vbmeta_image", "v.img"}, &stdout, &stderr)
	want := "avbtool: error: output vbmeta image v.img is locked by another process, which is writing it (its temporary file .v.img.tmp0123456789ab is held); wait for it to finish\n"
	if code != 1 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
	}
	fronttest.SameListing(t, before, fronttest.Listing(t, "."))
}
