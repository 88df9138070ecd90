package verity

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/merkle"
)

func TestOpenReadsThroughTree(t *testing.T) {
	f := newFixture(t, 40, 4096, 2, 21)
	r, err := Open(f.dataPath, f.hashPath, f.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil || string(got) != string(f.data) || r.Geometry().DataBlocks != 40 {
		t.Fatalf("read %d bytes: %v", len(got), err)
	}
	r.Close()

	// Without superblock: the parameters are given.
	hashOnly := filepath.Join(f.dir, "tree.bin")
	if err := os.WriteFile(hashOnly, f.hash[f.g.TreeOffset():], 0o644); err != nil {
		t.Fatal(err)
	}
	opts := &OpenOptions{TreeOptions: TreeOptions{NoSuperblock: true, Salt: []byte{1, 2, 3}}}
	if r, err = Open(f.dataPath, hashOnly, f.root, opts); err != nil {
		t.Fatal(err)
	}
	f.corrupt(merkle.DataLevel, 33, 0)
	f.writeFiles(t)
	_, err = r.ReadAt(make([]byte, 4096), 33*4096)
	var ce *merkle.CorruptionError
	if !errors.As(err, &ce) || ce.Index != 33 || !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupted block: %v", err)
	}
	r.Close()

	for _, c := range []struct {
		root  []byte
		opts  *OpenOptions
		kind  Kind
		field string
		msg   string
	}{
		{f.root[:4], nil, KindParam, "root", "the root hash is 4 bytes"},
		{f.root, &OpenOptions{TreeOptions: TreeOptions{NoSuperblock: true}}, KindParam, "Salt", "TreeOptions.NoSuperblock needs TreeOptions.Salt"},
		{f.root, &OpenOptions{TreeOptions: TreeOptions{HashOffset: 512}}, KindInput, "", "has no valid verity superblock at byte 512"},
	} {
		_, err := Open(f.dataPath, f.hashPath, c.root, c.opts)
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || e.Field != c.field || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("got %v, want kind %d field %q %q", err, c.kind, c.field, c.msg)
		}
	}
	if _, err := Open(filepath.Join(f.dir, "none"), f.hashPath, f.root, nil); !errors.Is(err, ErrInput) {
		t.Errorf("missing DATA: %v", err)
	}
}

func TestReadSuperblock(t *testing.T) {
	f := newFixture(t, 40, 4096, 2, 22)
	g, err := ReadSuperblock(f.hashPath, 0)
	if err != nil || g.DataBlocks != 40 || g.UUID != f.g.UUID || string(g.Salt) != string(f.g.Salt) {
		t.Fatalf("%+v, %v", g, err)
	}
	for _, c := range []struct {
		offset uint64
		kind   Kind
		msg    string
		hint   string
	}{
		{100, KindParam, "TreeOptions.HashOffset 100 is not a multiple of 512", ""},
		{4096, KindInput, "has no valid verity superblock at byte 4096", "TreeOptions.NoSuperblock"},
		{1 << 40, KindInput, "ends before a superblock at byte 1099511627776", "TreeOptions.NoSuperblock"},
	} {
		_, err := ReadSuperblock(f.hashPath, c.offset)
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.msg) || !strings.Contains(hintOf(err), c.hint) {
			t.Errorf("offset %d: %v (hint %q)", c.offset, err, hintOf(err))
		}
	}
}
