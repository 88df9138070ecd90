package fronttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/veritytree/veritytree/testimages"
)

// Image writes size deterministic pseudo-random bytes to path and returns
// them. Past 1 MiB the random MiB repeats, each copy stamped with its
// number so that no two blocks are equal (generating is slow under -race).
func Image(t testing.TB, path string, size int64, seed uint64) []byte {
	t.Helper()
	const tile = 1 << 20
	var b bytes.Buffer
	if err := testimages.Random(&b, min(size, tile), seed); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, size)
	copy(img, b.Bytes())
	for off := int64(tile); off < size; off += tile {
		copy(img[off:], img[:tile])
		for blk := off; blk < min(off+tile, size); blk += 512 {
			binary.LittleEndian.PutUint64(img[blk:min(blk+8, size)], uint64(off/tile))
		}
	}
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return img
}

// Read reads a file or fails the test.
func Read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sum returns the SHA-256 of a file's content, read in small pieces (one
// large buffer is slow under -race).
func Sum(t testing.TB, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// Listing describes every entry under dir (name, type, size, mode, mtime
// and, for regular files the owner may read, a digest of the content),
// without following symbolic links.
func Listing(t testing.TB, dir string) map[string]string {
	t.Helper()
	return listing(t, dir, false)
}

// ListingWithDir is Listing with dir's own mode and mtime too (under "."),
// so that an entry made and removed again shows.
func ListingWithDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	return listing(t, dir, true)
}

func listing(t testing.TB, dir string, withDir bool) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if path == dir {
			if withDir {
				m["."] = fmt.Sprintf("%v mtime=%s", info.Mode(), info.ModTime().Format(time.RFC3339Nano))
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		desc := fmt.Sprintf("%v size=%d mtime=%s", info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
		if info.Mode().IsRegular() && info.Mode().Perm()&0o400 != 0 {
			desc += fmt.Sprintf(" sha256=%x", Sum(t, path))
		}
		m[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// SameListing fails the test with the entries that differ unless the
// listings before and after are equal.
func SameListing(t testing.TB, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	all := maps.Clone(before)
	maps.Copy(all, after)
	for _, n := range slices.Sorted(maps.Keys(all)) {
		b, inB := before[n]
		a, inA := after[n]
		switch {
		case !inB:
			t.Errorf("%s appeared: %s", n, a)
		case !inA:
			t.Errorf("%s disappeared (was %s)", n, b)
		case a != b:
			t.Errorf("%s changed:\n  before %s\n  after  %s", n, b, a)
		}
	}
}
