package avb

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckHashtreeData: the root and the stored tree are checked apart,
// as avbtool verify_image reports them: data changed (root differs), tree
// changed (tree differs), no tree stored (--no_hashtree), and an intact
// image.
func TestCheckHashtreeData(t *testing.T) {
	for _, c := range []struct {
		name       string
		noHashtree bool
		flip       func(ht *HashtreeDescriptor) int64 // -1: nothing
		root, tree bool
	}{
		{"intact", false, func(*HashtreeDescriptor) int64 { return -1 }, true, true},
		{"data", false, func(*HashtreeDescriptor) int64 { return 12345 }, false, false},
		{"tree", false, func(ht *HashtreeDescriptor) int64 { return int64(ht.TreeOffset) + 100 }, true, false},
		{"no hashtree", true, func(*HashtreeDescriptor) int64 { return -1 }, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "system.img")
			if err := os.WriteFile(path, makeImage(t, "blockbyte:4096:300"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := AddHashtreeFooter(context.Background(), path, &HashtreeFooterOptions{HashAlgorithm: "sha256", NoHashtree: c.noHashtree})
			if err != nil {
				t.Fatal(err)
			}
			ht := r.Descriptor
			if at := c.flip(ht); at >= 0 {
				b, _ := os.ReadFile(path)
				b[at] ^= 1
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := CheckHashtreeData(context.Background(), path, ht, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got.RootMatches != c.root || got.TreeMatches != c.tree || got.Zeroed != c.noHashtree {
				t.Errorf("root %v, tree %v, zeroed %v; want %v, %v, %v", got.RootMatches, got.TreeMatches, got.Zeroed, c.root, c.tree, c.noHashtree)
			}
		})
	}
}
