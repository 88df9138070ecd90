package verity

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// memFile is an in-memory file: io.ReaderAt and io.WriterAt.
type memFile struct{ b []byte }

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.b) {
		f.b = append(f.b, make([]byte, end-len(f.b))...)
	}
	return copy(f.b[off:], p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// fixture is an image, its tree with a superblock in a hash file of its
// own, and FEC parity in a third file, in memory and on disk.
type fixture struct {
	dir, dataPath, hashPath, fecPath string
	data, hash, parity               []byte
	g                                *merkle.Geometry
	root                             []byte
	roots                            int
	p                                fec.Params
}

// newFixture makes an image of blocks random blocks of bs bytes (SHA-256,
// fixed salt and UUID), its tree, and parity of roots roots.
func newFixture(t testing.TB, blocks uint64, bs, roots int, seed uint64) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{dir: t.TempDir(), roots: roots}
	f.data = make([]byte, blocks*uint64(bs))
	var s [32]byte
	s[0] = byte(seed)
	rand.NewChaCha8(s).Read(f.data)
	g, err := merkle.NewGeometry(merkle.Params{Hash: hashes.SHA256, Salt: []byte{1, 2, 3}, UUID: [16]byte{1, 2},
		DataBlockSize: bs, HashBlockSize: bs, DataBlocks: blocks, Superblock: true})
	if err != nil {
		t.Fatal(err)
	}
	f.g = g
	hash := &memFile{}
	if f.root, err = merkle.Build(ctx, g, bytes.NewReader(f.data), hash, &merkle.BuildOptions{Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	f.hash = hash.b
	if f.p, err = fecParams(g, roots, g.HashEnd()); err != nil {
		t.Fatal(err)
	}
	parity := &memFile{}
	msg := fecMessage(g, f.p, bytes.NewReader(f.data), bytes.NewReader(f.hash))
	if err := fec.Encode(ctx, f.p, msg, parity, 0, 1); err != nil {
		t.Fatal(err)
	}
	f.parity = parity.b
	f.dataPath, f.hashPath, f.fecPath = filepath.Join(f.dir, "data.img"), filepath.Join(f.dir, "data.img.verity"), filepath.Join(f.dir, "data.img.fec")
	f.writeFiles(t)
	return f
}

// writeFiles writes the fixture's (possibly corrupted) contents to disk.
func (f *fixture) writeFiles(t testing.TB) {
	t.Helper()
	for path, b := range map[string][]byte{f.dataPath: f.data, f.hashPath: f.hash, f.fecPath: f.parity} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// clone returns a copy of the fixture's contents (the files are shared).
func (f *fixture) clone() *fixture {
	n := *f
	n.data, n.hash, n.parity = bytes.Clone(f.data), bytes.Clone(f.hash), bytes.Clone(f.parity)
	return &n
}

// corrupt flips a byte of block index of level (merkle.DataLevel for
// data) in memory.
func (f *fixture) corrupt(level merkle.Level, index uint64, at int) {
	if level == merkle.DataLevel {
		f.data[index*uint64(f.g.DataBlockSize)+uint64(at)] ^= 0x5a
		return
	}
	f.hash[f.g.BlockOffset(level, index)+uint64(at)] ^= 0x5a
}

// msg returns the FEC message block of block index of level.
func (f *fixture) msg(level merkle.Level, index uint64) uint64 { return msgIndex(f.g, level, index) }

// inRound returns n data blocks of the given FEC round.
func (f *fixture) inRound(round uint64, n int) []uint64 {
	var out []uint64
	for m := round; m < f.g.DataBlocks && len(out) < n; m += f.p.Rounds() {
		out = append(out, m)
	}
	return out
}

// plan runs PlanRepair on the fixture's contents in memory.
func (f *fixture) plan(t testing.TB) (*RepairPlan, *merkle.VerifyReport) {
	t.Helper()
	rp, rep, err := PlanRepair(context.Background(), f.g, bytes.NewReader(f.data), bytes.NewReader(f.hash), f.root,
		&FECInfo{Roots: f.roots, Blocks: f.p.Blocks}, bytes.NewReader(f.parity), &RepairOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rp != nil {
		t.Cleanup(func() { rp.Close() })
	}
	return rp, rep
}
