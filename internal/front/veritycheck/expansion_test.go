package veritycheck

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
	"github.com/veritytree/veritytree/verity"
)

// TestSparseExpansionSaid: before checking a sparse DATA, veritycheck
// says how large the file is and how large its expansion, so that a
// 40-byte file standing for 4 GiB (or 16 TiB) is noticed at once.
func TestSparseExpansionSaid(t *testing.T) {
	dir := t.TempDir()
	data, hash := filepath.Join(dir, "x.simg"), filepath.Join(dir, "x.verity")
	const blocks = 1 << 20 // 4 GiB of DONT_CARE
	le := binary.LittleEndian
	f := make([]byte, sparse.HeaderSize+sparse.ChunkHeaderSize)
	le.PutUint32(f[0:], sparse.Magic)
	le.PutUint16(f[4:], 1)
	le.PutUint16(f[8:], sparse.HeaderSize)
	le.PutUint16(f[10:], sparse.ChunkHeaderSize)
	le.PutUint32(f[12:], 4096)
	le.PutUint32(f[16:], blocks)
	le.PutUint32(f[20:], 1)
	le.PutUint16(f[28:], sparse.ChunkDontCare)
	le.PutUint32(f[32:], blocks)
	le.PutUint32(f[36:], sparse.ChunkHeaderSize)
	if err := os.WriteFile(data, f, 0o666); err != nil {
		t.Fatal(err)
	}
	src, err := verity.OpenSource(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	alg, err := hashes.Lookup("sha256")
	if err != nil {
		t.Fatal(err)
	}
	g, err := merkle.NewGeometry(merkle.Params{Hash: alg, Salt: []byte{1}, DataBlockSize: 4096, HashBlockSize: 4096,
		DataBlocks: blocks, Superblock: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(hash)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	root, err := merkle.Build(context.Background(), g, src, out, &merkle.BuildOptions{Runs: src.Runs(4096, blocks)})
	if err != nil {
		t.Fatal(err)
	}
	res := vcVerifiedStderr(t, "--root-hash="+hex.EncodeToString(root), data, hash)
	want := fmt.Sprintf("veritycheck: DATA %s is an Android sparse image of 40 B that expands to 4.0 GiB (4294967296 bytes)\n", data)
	if res.stderr != want {
		t.Errorf("stderr:\n%q\nwant\n%q", res.stderr, want)
	}
}

// vcVerifiedStderr runs veritycheck and fails the test unless it exits 0.
func vcVerifiedStderr(t *testing.T, args ...string) vcResult {
	t.Helper()
	r := vcRun(args...)
	if r.code != 0 {
		t.Fatalf("want exit 0, got:\n%v", r)
	}
	return r
}
