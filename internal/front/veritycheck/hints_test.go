package veritycheck

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/verity"
)

// TestCommonMistakeHints: DATA and HASH swapped, the root hash first, and
// the tree of another image each get a hint that names the mistake
// (issue 21 item 16), where they used to get a superblock error, advice
// about --root-hash-file, or "1024 corrupted data blocks" alone.
func TestCommonMistakeHints(t *testing.T) {
	dir := t.TempDir()
	data, hash, root := frTree(t, dir, nil)
	other, otherHash := filepath.Join(dir, "o.img"), filepath.Join(dir, "o.img.verity")
	fronttest.Image(t, other, 32*4096, 9)
	res, err := verity.Format(context.Background(), other, otherHash, &verity.FormatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "m.img")
	fronttest.Image(t, mine, 32*4096, 4)
	otherRoot := hex.EncodeToString(res.RootHash)
	for _, c := range []struct {
		name      string
		args      []string
		code      int
		err, hint string
	}{
		{"swapped", []string{hash, data, root}, 2, "DATA and HASH swapped?", "DATA comes first, then HASH: veritycheck [flags] " + data + " " + hash + " ROOT"},
		{"swapped, no root hash", []string{hash, data}, 2, "DATA and HASH swapped?", "DATA comes first, then HASH: veritycheck [flags] " + data + " " + hash + " ROOT"},
		{"swapped, flags", []string{"--root-hash=" + root, hash, data}, 2, "starts with a verity superblock and HASH", data + " " + hash},
		{"root first", []string{root, data, hash}, 2, "got the root hash first", "veritycheck " + data + " " + hash + " " + root},
		{"another image's tree", []string{mine, otherHash, otherRoot}, 1, "32 corrupted data blocks", "32 of the 32 data blocks fail while the tree above them is sound"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := vcRun(c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, "error: ") || !strings.Contains(r.stderr, c.err) || !strings.Contains(r.stderr, "hint: ") || !strings.Contains(r.stderr, c.hint) {
				t.Errorf("want exit %d, %q and hint %q\n%v", c.code, c.err, c.hint, r)
			}
		})
	}
	// A few corrupted blocks are corruption, not another image.
	b := fronttest.Read(t, data)
	b[0] ^= 1
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := vcRun(data, hash, root); r.code != 1 || strings.Contains(r.stderr, "another image") {
		t.Errorf("one corrupted block: want exit 1 without the other-image hint\n%v", r)
	}
}
