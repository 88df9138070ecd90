package verity

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// DescribeFEC gives, for an existing tree, the FECInfo Format gave when it
// wrote the parity and Verify gives when it reads it, wherever the parity
// is (a file of its own, at an offset, in HASH past the tree, in DATA past
// the data, in DATA past the tree in DATA), and so the same table.
func TestDescribeFEC(t *testing.T) {
	ctx := context.Background()
	const bs, blocks = 4096, 300
	data := make([]byte, blocks*bs)
	rand.NewChaCha8([32]byte{5}).Read(data)
	for _, c := range []struct {
		name            string
		treeInData      bool
		fecIn           string // "fec", "hash" or "data"
		fecOffset       uint64
		roots           int
		wantHash, wantD bool
	}{
		{"a file of its own", false, "fec", 0, 0, false, false},
		{"a file of its own, at an offset, 8 roots", false, "fec", 3 * bs, 8, false, false},
		{"HASH, past the tree", false, "hash", 1 << 20, 2, true, false},
		{"DATA, the tree elsewhere", false, "data", 2 << 20, 4, false, true},
		{"DATA, past the tree in DATA", true, "data", 2 << 20, 2, true, false},
	} {
		dir := t.TempDir()
		dataPath, hashPath, fecPath := filepath.Join(dir, "data.img"), filepath.Join(dir, "data.verity"), filepath.Join(dir, "data.fec")
		if err := os.WriteFile(dataPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fo := &FormatOptions{FECOffset: c.fecOffset, FECRoots: c.roots, Jobs: 1}
		if c.treeInData {
			hashPath = dataPath
			fo.HashOffset, fo.HashOffsetSet = blocks*bs, true
		}
		switch c.fecIn {
		case "hash":
			fecPath = hashPath
		case "data":
			fecPath = dataPath
		}
		fo.FECDevice = fecPath
		fr, err := Format(ctx, dataPath, hashPath, fo)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := DescribeFEC(fr.Layout.Geometry, dataPath, hashPath, fecPath, c.fecOffset, c.roots)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, fr.FEC) || got.InHash != c.wantHash || got.InData != c.wantD {
			t.Errorf("%s: DescribeFEC %+v, Format wrote %+v", c.name, got, fr.FEC)
		}
		res, err := Verify(ctx, dataPath, hashPath, fr.RootHash, &VerifyOptions{TreeOptions: TreeOptions{HashOffset: fo.HashOffset},
			FECDevice: fecPath, FECOffset: c.fecOffset, FECRoots: c.roots})
		if err != nil || !res.Verified || res.Repair != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, res.FEC) {
			t.Errorf("%s: DescribeFEC %+v, Verify read %+v", c.name, got, res.FEC)
		}
		res.Close()
		p := got.Params(fr.Layout.Geometry)
		if p.Validate() != nil || p.ParityBlocks() != got.ParityBlocks || p.ParitySize() != got.Size {
			t.Errorf("%s: Params %+v do not give %+v", c.name, p, got)
		}
		opts := &TableOptions{DataDevice: "/dev/sda1", HashDevice: "/dev/sda2", FECDevice: "/dev/sda3"}
		want, err1 := fr.Table(opts)
		ours, err2 := Table(fr.Layout.Geometry, fr.RootHash, got, opts)
		if err1 != nil || err2 != nil || *want != *ours {
			t.Errorf("%s: table\n%+v (%v), from Format\n%+v (%v)", c.name, ours, err2, want, err1)
		}
	}
}

func TestDescribeFECErrors(t *testing.T) {
	f := newFixture(t, 40, 4096, 2, 41)
	missing := filepath.Join(f.dir, "missing")
	for _, c := range []struct {
		name           string
		fecPath        string
		offset         uint64
		roots          int
		kind           Kind
		field, msg     string
		notExist, hint bool
	}{
		{"roots out of range", f.fecPath, 0, 30, KindParam, "FECRoots", "VerifyOptions.FECRoots 30 is not from 2 to 24", false, true},
		{"offset not a block", f.fecPath, 100, 2, KindParam, "FECOffset", "VerifyOptions.FECOffset 100 is not a multiple of the block size 4096", false, true},
		{"in HASH, inside the tree", f.hashPath, 4096, 2, KindParam, "FECOffset", "inside the tree", false, true},
		{"more roots than made with", f.fecPath, 0, 4, KindInput, "", "wrong VerifyOptions.FECRoots or VerifyOptions.FECOffset", false, true},
		{"missing", missing, 0, 2, KindInput, "", "FEC device " + missing + " does not exist", true, false},
	} {
		_, err := DescribeFEC(f.g, f.dataPath, f.hashPath, c.fecPath, c.offset, c.roots)
		var e *Error
		switch {
		case !errors.As(err, &e) || e.Kind != c.kind || e.Field != c.field || !strings.Contains(err.Error(), c.msg):
			t.Errorf("%s: %v (%+v), want kind %v field %q %q", c.name, err, e, c.kind, c.field, c.msg)
		case errors.Is(err, fs.ErrNotExist) != c.notExist, (hintOf(err) != "") != c.hint:
			t.Errorf("%s: %v: ErrNotExist %v, hint %q", c.name, err, errors.Is(err, fs.ErrNotExist), hintOf(err))
		}
	}
}
