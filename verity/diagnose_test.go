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
		{"hash", TreeOptions{Hash: "blake2b-256", Salt: salt}, TreeOptions{Salt: salt}, []string{"TreeOptions.Hash=blake2b-256"}, true},
		{"format", TreeOptions{LegacyFormat: true, Salt: salt}, TreeOptions{Salt: salt}, []string{"TreeOptions.LegacyFormat=true"}, true},
		{"salt", TreeOptions{Salt: []byte{}}, TreeOptions{Salt: salt}, []string{"TreeOptions.Salt=[]byte{}"}, true},
		{"hash block size", TreeOptions{HashBlockSize: 8192, Salt: salt}, TreeOptions{Salt: salt}, []string{"TreeOptions.HashBlockSize=8192"}, true},
		{"two at once", TreeOptions{Hash: "blake2b-256", LegacyFormat: true, Salt: salt}, TreeOptions{Salt: salt},
			[]string{"TreeOptions.Hash=blake2b-256", "TreeOptions.LegacyFormat=true"}, true},
		// The other algorithms of a digest size are tried too; the
		// match is named by its kernel name.
		{"hash sha3-256", TreeOptions{Hash: "sha3-256", Salt: salt}, TreeOptions{Salt: salt}, []string{"TreeOptions.Hash=sha3-256"}, true},
		{"hash blake2s-256", TreeOptions{Hash: "blake2s-256", Salt: salt}, TreeOptions{Hash: "blake2b-256", Salt: salt}, []string{"TreeOptions.Hash=blake2s-256"}, true},
		{"hash rmd160 given sha1", TreeOptions{Hash: "ripemd160", Salt: salt}, TreeOptions{Hash: "sha1", Salt: salt}, []string{"TreeOptions.Hash=rmd160"}, true},
		{"hash md4 given md5", TreeOptions{Hash: "md4", LegacyFormat: true, Salt: salt}, TreeOptions{Hash: "md5", Salt: salt},
			[]string{"TreeOptions.Hash=md4", "TreeOptions.LegacyFormat=true"}, true},
		{"hash sha384 given blake2b-384", TreeOptions{Hash: "sha384", Salt: salt}, TreeOptions{Hash: "blake2b-384", Salt: salt}, []string{"TreeOptions.Hash=sha384"}, true},
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
				if d.Match != nil || !strings.Contains(d.Hint, "check TreeOptions.Hash, TreeOptions.Salt, TreeOptions.LegacyFormat") {
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
		hintOf(err) != "the top block matches the root hash with TreeOptions.HashBlockSize=1024: give TreeOptions.HashBlockSize=1024" {
		t.Errorf("error %v, hint %q", err, hintOf(err))
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

// TestShapeDiagnosis: a tree without superblock of another shape than the
// one given (DATA grown since it was made, made with --data-blocks or
// another --data-block-size) has a top block that matches the root hash,
// and the diagnosis names the data blocks or their size with which the
// tree fits (issue 15: HASH "truncated" or a corrupted top block with a
// hint that the top block does not match); a top block corrupted for real
// is still corruption.
func TestShapeDiagnosis(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data, grown := filepath.Join(dir, "d.img"), filepath.Join(dir, "grown.img")
	for _, f := range []struct {
		path   string
		blocks int64
	}{{data, 1000}, {grown, 1043}} {
		w, err := os.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		// The same seed: grown starts with d.img's blocks.
		if err := testimages.Random(w, f.blocks*4096, 5); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	salt := []byte{0x4f, 0x2a}
	for _, c := range []struct {
		name            string
		made            TreeOptions
		check           string // DATA checked
		changed, note   string
		hashTooShortErr bool
	}{
		{"DATA grew", TreeOptions{}, grown, "TreeOptions.DataBlocks=1000", " (DATA has 1043 whole blocks: did it grow since the tree was made?)", true},
		{"data blocks", TreeOptions{DataBlocks: 500}, data, "TreeOptions.DataBlocks=500", " (DATA has 1000 whole blocks: did it grow since the tree was made?)", true},
		{"data block size", TreeOptions{DataBlockSize: 1024}, data, "TreeOptions.DataBlockSize=1024", "", false},
		{"data block size and blocks", TreeOptions{DataBlockSize: 1024, DataBlocks: 3000}, data, "TreeOptions.DataBlockSize=1024 TreeOptions.DataBlocks=3000",
			" (DATA has 4000 whole blocks: did it grow since the tree was made?)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hash := filepath.Join(t.TempDir(), "tree")
			made := c.made
			made.NoSuperblock, made.Salt = true, salt
			fr, err := Format(ctx, data, hash, &FormatOptions{TreeOptions: made})
			if err != nil {
				t.Fatal(err)
			}
			given := TreeOptions{NoSuperblock: true, Salt: salt}
			want := "the top block matches the root hash with " + c.changed + ": give " + c.changed + c.note
			res, err := Verify(ctx, c.check, hash, fr.RootHash, &VerifyOptions{TreeOptions: given})
			if c.hashTooShortErr {
				if err == nil || !strings.Contains(err.Error(), "truncated, or not this tree's hash file?") || hintOf(err) != want {
					t.Fatalf("error %v, hint %q; want hint %q", err, hintOf(err), want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			d := res.RootDiagnosis
			if res.Verified || d == nil || d.Match == nil || strings.Join(d.Changed, " ") != c.changed || d.Hint != want {
				t.Fatalf("want a diagnosis %q: %+v %+v", want, res, d)
			}
			// The parameters found check the tree.
			res2, err := Verify(ctx, c.check, hash, fr.RootHash, &VerifyOptions{TreeOptions: *d.Match})
			if err != nil || !res2.Verified {
				t.Errorf("the parameters found do not verify: %v", err)
			}
			res2.Close()
		})
	}

	// The top block corrupted for real, in a digest or in its padding: no
	// shape explains it.
	hash := filepath.Join(dir, "tree")
	fr, err := Format(ctx, data, hash, &FormatOptions{TreeOptions: TreeOptions{NoSuperblock: true, Salt: salt}})
	if err != nil {
		t.Fatal(err)
	}
	pristine, err := os.ReadFile(hash)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{5, 8 * 32, 4000} {
		b := append([]byte{}, pristine...)
		b[at] ^= 0x55
		if err := os.WriteFile(hash, b, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Verify(ctx, data, hash, fr.RootHash, &VerifyOptions{TreeOptions: TreeOptions{NoSuperblock: true, Salt: salt}})
		if err != nil {
			t.Fatal(err)
		}
		d := res.RootDiagnosis
		if res.Verified || !res.Report.RootMismatch || d == nil || d.Match != nil || !strings.Contains(d.Hint, "else the top block is corrupted") {
			t.Errorf("byte %d: want a corrupted top block: %+v %+v", at, res.Report, d)
		}
		res.Close()
	}
}
