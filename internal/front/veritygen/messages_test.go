package veritygen

import (
	"bytes"
	"context"
	"encoding/hex"
	"io/fs"
	"regexp"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/verity"
)

// goInternals are texts of Go's packages and runtime that must never reach
// the user: each error gets a sentence of ours.
var goInternals = []string{"asn1:", "x509:", "pkcs1", "pkcs8", "encoding/hex", "strconv.", "readat", "unexpected EOF",
	"invalid byte: U+", "odd length hex", "*rsa.", "*ecdsa.", "panic", "goroutine"}

// fullStdout fails every write as a full disk does through os.Stdout.
type fullStdout struct{}

func (fullStdout) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
}

// TestReportWriteFails: a report that cannot be written (stdout full, a
// closed pipe) fails the run (exit 2) with the root hash in the message,
// in our words: the tree is written, and the report may be the only place
// its root hash was going to. Before, the text report's failure was
// ignored (exit 0, the root hash lost) and --json's said "write
// /dev/stdout: ...".
func TestReportWriteFails(t *testing.T) {
	t.Chdir(t.TempDir())
	fronttest.Image(t, "d.img", 1<<20, 22)
	fronttest.Image(t, "a.img", 1<<20, 22)
	for _, args := range [][]string{{"d.img"}, {"--json", "d.img"}, {"--append", "--avb", "a.img"}, {"--append", "--avb", "--json", "a.img"}} {
		var stderr bytes.Buffer
		code := run(context.Background(), args, fullStdout{}, &stderr, &stderr)
		root, hash := "", "d.img.verity"
		if args[0] == "--append" {
			hash = "a.img"
		}
		if m := regexp.MustCompile(`root hash ([0-9a-f]{64});`).FindStringSubmatch(stderr.String()); m != nil {
			root = m[1]
		}
		want := "veritygen: error: the new tree is in " + hash + ", root hash " + root + "; writing the report on stdout: no space left on device\n"
		if code != 2 || root == "" || stderr.String() != want {
			t.Errorf("veritygen %q: exit %d, stderr %q; want exit 2 and %q", args, code, stderr.String(), want)
			continue
		}
		if hash == "d.img.verity" { // the root hash given is the tree's
			b, _ := hex.DecodeString(root)
			res, err := verity.Verify(context.Background(), "d.img", hash, b, nil)
			if err != nil || !res.Verified {
				t.Errorf("the root hash in the message does not verify the tree: %v", err)
			} else {
				res.Close()
			}
		}
	}
}
