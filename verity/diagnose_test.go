package verity

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/testimages"
)

// TestRootDiagnosis: a tree without superblock checked with a parameter
// other than the one it was made with is a root mismatch, and the
// diagnosis names the parameter with which its top block matches (issue
// 15: a blake2b-256 tree checked without --hash was reported as a
// corrupted top block); a tree with a superblock points at the root hash;
// a top block that matches nothing says so and lists the parameters.
func TestRootDiagnosis(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := testimages.Random(f, 300*4096, 9); err != nil {
		t.Fatal(err)
	}
	f.Close()
	salt := []byte{0x4f, 0x2a}
	for _, c := range []struct {
		name         string
		made, given  TreeOptions
		changed      []string
		noSuperblock bool
	}{
		{"hash", TreeOptions{Hash: "blake2b-256", Salt: salt}, TreeOptions{Salt: salt}, []string{"--hash=blake2b-256"}, true},
		{"format", TreeOptions{LegacyFormat: true, Salt: salt}, TreeOptions{Salt: salt}, []string{"--format=0"}, true},
		{"salt", TreeOptions{Salt: []byte{}}, TreeOptions{Salt: salt}, []string{"--salt=-"}, true},
		{"hash block size", TreeOptions{HashBlockSize: 8192, Salt: salt}, TreeOptions{Salt: salt}, []string{"--hash-block-size=8192"}, true},
		{"two at once", TreeOptions{Hash: "blake2b-256", LegacyFormat: true, Salt: salt}, TreeOptions{Salt: salt},
			[]string{"--hash=blake2b-256", "--format=0"}, true},
		{"nothing matches", TreeOptions{Salt: []byte{1, 2, 3}}, TreeOptions{Salt: salt}, nil, true},
		{"superblock", TreeOptions{Salt: salt}, TreeOptions{}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hash := filepath.Join(t.TempDir(), "tree")
			made := c.made
			made.NoSuperblock = c.noSuperblock
			fr, err := Format(ctx, data, hash, &FormatOptions{TreeOptions: made})
			if err != nil {
				t.Fatal(err)
			}
			root := fr.RootHash
			if !c.noSuperblock {
				root = append([]byte{}, root...)
				root[0] ^= 1
			}
			given := c.given
			given.NoSuperblock = c.noSuperblock
			res, err := Verify(ctx, data, hash, root, &VerifyOptions{TreeOptions: given})
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			d := res.RootDiagnosis
			if res.Verified || !res.Report.RootMismatch || d == nil {
				t.Fatalf("want a root mismatch with a diagnosis: %+v", res)
			}
			t.Logf("hint: %s", d.Hint)
			switch {
			case c.changed != nil:
				if d.Match == nil || !slices.Equal(d.Changed, c.changed) || !strings.Contains(d.Hint, "give "+strings.Join(c.changed, " ")) {
					t.Errorf("changed %q, hint %q; want %q", d.Changed, d.Hint, c.changed)
				}
				// The parameters found check the tree.
				m := *d.Match
				res2, err := Verify(ctx, data, hash, root, &VerifyOptions{TreeOptions: m})
				if err != nil || !res2.Verified {
					t.Errorf("the parameters found do not verify: %v", err)
				}
				res2.Close()
			case c.noSuperblock:
				if d.Match != nil || !strings.Contains(d.Hint, "check --hash, --salt, --format") {
					t.Errorf("hint %q", d.Hint)
				}
			default:
				if d.Match != nil || !strings.Contains(d.Hint, "root hash is likely another tree's") {
					t.Errorf("hint %q", d.Hint)
				}
			}
		})
	}
	// Smaller hash blocks than given: HASH is too short for the tree
	// given, and the error says which hash block size fits.
	hash := filepath.Join(dir, "small.tree")
	fr, err := Format(ctx, data, hash, &FormatOptions{TreeOptions: TreeOptions{HashBlockSize: 1024, Salt: salt, NoSuperblock: true}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(ctx, data, hash, fr.RootHash, &VerifyOptions{TreeOptions: TreeOptions{Salt: salt, NoSuperblock: true}})
	if err == nil || !strings.Contains(err.Error(), "truncated, or not this tree's hash file?") ||
		HintOf(err) != "the top block matches the root hash with --hash-block-size=1024: give --hash-block-size=1024" {
		t.Errorf("error %v, hint %q", err, HintOf(err))
	}

	// An intact tree has no diagnosis.
	hash = filepath.Join(dir, "ok.tree")
	fr, err = Format(ctx, data, hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Verify(ctx, data, hash, fr.RootHash, nil)
	if err != nil || !res.Verified || res.RootDiagnosis != nil {
		t.Errorf("intact: %v %+v", err, res)
	}
	res.Close()
}
