package veritygen

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dustin/go-humanize"

	"github.com/veritytree/veritytree/sparse"
)

// tinyHugeSparse writes a 40-byte sparse image of one DONT_CARE chunk of
// blocks 4 KiB blocks.
func tinyHugeSparse(t *testing.T, path string, blocks uint32) {
	t.Helper()
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
	if err := os.WriteFile(path, f, 0o666); err != nil {
		t.Fatal(err)
	}
}

// TestSparseExpansionSaid: a sparse DATA far larger expanded than on disk
// is announced before hashing, on stderr (the file's size, the expanded
// size and the tree's), and the JSON report gives expanded_size and
// tree_size; a raw DATA gets no such line.
func TestSparseExpansionSaid(t *testing.T) {
	dir := t.TempDir()
	data, hash := filepath.Join(dir, "x.simg"), filepath.Join(dir, "x.verity")
	tinyHugeSparse(t, data, 1<<20) // 4 GiB
	res := cliOK(t, "--json", data, hash)
	m := cliJSON(t, res.stdout)
	tree := cliUint(t, m, "hash_end") - cliUint(t, m, "hash_offset")
	if got := cliUint(t, m, "tree_size"); got != tree || tree != 8258*4096 {
		t.Errorf("tree_size = %d, want %d (hash_end - hash_offset: the superblock and 8257 hash blocks)", got, tree)
	}
	if got := cliUint(t, m, "expanded_size"); got != 4<<30 {
		t.Errorf("expanded_size = %d, want %d", got, uint64(4<<30))
	}
	want := fmt.Sprintf("veritygen: DATA %s is an Android sparse image of 40 B that expands to 4.0 GiB (4294967296 bytes); its tree will be %s\n",
		data, humanize.IBytes(tree))
	if res.stderr != want {
		t.Errorf("stderr:\n%q\nwant\n%q", res.stderr, want)
	}

	raw := filepath.Join(dir, "raw.img")
	if err := os.WriteFile(raw, make([]byte, 8192), 0o666); err != nil {
		t.Fatal(err)
	}
	res = cliOK(t, "--json", raw, hash)
	if res.stderr != "" || strings.Contains(res.stdout, "expanded_size") {
		t.Errorf("raw DATA: stderr %q, stdout:\n%s", res.stderr, res.stdout)
	}
}
