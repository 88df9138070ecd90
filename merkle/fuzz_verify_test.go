package merkle

import (
	"bytes"
	"context"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// fuzzTree is a small tree to damage: 300 data blocks of 512 bytes, three
// levels of 512-byte hash blocks after a superblock.
func fuzzTree(f *testing.F) (g *Geometry, data, hash, root []byte) {
	a, err := hashes.Lookup("sha256")
	if err != nil {
		f.Fatal(err)
	}
	g, err = NewGeometry(Params{Hash: a, Salt: []byte{1, 2, 3}, DataBlockSize: 512, HashBlockSize: 512,
		DataBlocks: 300, Superblock: true})
	if err != nil {
		f.Fatal(err)
	}
	data = make([]byte, g.DataSize())
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	var out writerAt
	root, err = Build(context.Background(), g, bytes.NewReader(data), &out, &BuildOptions{Jobs: 1})
	if err != nil {
		f.Fatal(err)
	}
	return g, data, out.b, root
}

type writerAt struct{ b []byte }

func (w *writerAt) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(w.b) {
		w.b = append(w.b, make([]byte, end-len(w.b))...)
	}
	return copy(w.b[off:], p), nil
}

// FuzzVerifyDamage: Verify reads a hash device and data damaged anywhere
// (bytes XORed at two offsets, and the hash device cut short) without
// panicking, and finds every damage: it reports no problem exactly when
// nothing the tree covers changed.
func FuzzVerifyDamage(f *testing.F) {
	g, data, hash, root := fuzzTree(f)
	f.Add(uint16(0), []byte{}, uint16(0), []byte{}, uint16(0))
	f.Add(uint16(600), []byte{1}, uint16(0), []byte{}, uint16(0))
	f.Add(uint16(3000), []byte{0xff, 0, 3}, uint16(100), []byte{9}, uint16(0))
	f.Add(uint16(100), []byte{1}, uint16(0), []byte{}, uint16(700))
	f.Fuzz(func(t *testing.T, hashOff uint16, hashXor []byte, dataOff uint16, dataXor []byte, cut uint16) {
		h, d := bytes.Clone(hash), bytes.Clone(data)
		changed := false
		for i, x := range hashXor {
			if o := int(hashOff) + i; o < len(h) {
				h[o] ^= x
				changed = changed || x != 0
			}
		}
		for i, x := range dataXor {
			if o := int(dataOff)*41 + i; o < len(d) {
				d[o] ^= x
				changed = changed || x != 0
			}
		}
		if cut > 0 {
			h = h[:max(0, len(h)-int(cut))]
		}
		rep, err := Verify(context.Background(), g, bytes.NewReader(d), bytes.NewReader(h), root, &VerifyOptions{Jobs: 1})
		if cut > 0 {
			if err == nil && rep.OK() && !rep.RootMismatch {
				t.Fatalf("a hash device cut by %d bytes verifies", cut)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok := rep.OK() && !rep.RootMismatch; ok == changed {
			t.Fatalf("changed %v, but report OK %v: %+v", changed, ok, rep)
		}
	})
}
