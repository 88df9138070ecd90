package verity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
)

// Open reads an Android sparse DATA as Verify and Format do: as the image
// it expands to, the same bytes as the raw image, whether img2simg or our
// writer made it, with the tree in a file of its own or in the sparse
// file itself; corruption in a RAW or a FILL chunk is still found, and Raw
// reads the sparse file as it is. Before, Open read the sparse file's own
// bytes, and every read failed as corrupted.
func TestOpenSparse(t *testing.T) {
	data := make([]byte, sparseBlocks*sparseBS)
	rng := rand.NewChaCha8([32]byte{9})
	rng.Read(data[:20*sparseBS])                   // RAW
	for i := 40 * sparseBS; i < 50*sparseBS; i++ { // FILL; 20-39 DONT_CARE
		data[i] = 0x5a
	}
	rng.Read(data[50*sparseBS:])
	makers := map[string]func(t *testing.T, raw []byte, path string){
		"ours":     func(t *testing.T, raw []byte, path string) { writeSparse(t, path, raw) },
		"img2simg": img2simgFile,
	}
	for maker, makeSparse := range makers {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, tree in DATA %v", maker, inPlace), func(t *testing.T) {
				openSparse(t, data, makeSparse, inPlace)
			})
		}
	}
}

// The geometry of TestOpenSparse's image.
const sparseBS, sparseBlocks = 4096, 64

// img2simgFile writes to path what img2simg makes of raw.
func img2simgFile(t *testing.T, raw []byte, path string) {
	img2simg := testtool.Require(t, "img2simg")
	in := path + ".raw"
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img2simg, in, path).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
}

// openSparse is one case of TestOpenSparse: data's tree (in a file of its
// own or in DATA), the image made sparse by makeSparse, read intact, then
// spoiled.
func openSparse(t *testing.T, data []byte, makeSparse func(t *testing.T, raw []byte, path string), inPlace bool) {
	const bs, blocks = sparseBS, sparseBlocks
	ctx := context.Background()
	dir := t.TempDir()
	rawPath, simgPath := filepath.Join(dir, "image.raw"), filepath.Join(dir, "image.img")
	if err := os.WriteFile(rawPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	hashPath, openHash := filepath.Join(dir, "image.verity"), filepath.Join(dir, "image.verity")
	fo := &FormatOptions{Jobs: 1}
	oo := &OpenOptions{}
	if inPlace {
		hashPath, openHash = rawPath, simgPath
		fo.HashOffset, fo.HashOffsetSet = blocks*bs, true
		oo.HashOffset = blocks * bs
	}
	fr, err := Format(ctx, rawPath, hashPath, fo)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, make([]byte, (bs-len(raw)%bs)%bs)...) // whole sparse blocks

	makeSparse(t, raw, simgPath)
	r, err := Open(simgPath, openHash, fr.RootHash, oo)
	if err != nil {
		t.Fatalf("in place %v: %v", inPlace, err)
	}
	checkSparseReads(t, r, data, inPlace)
	r.Close()

	// Block 5 (RAW) changes a byte, blocks 40-49 (FILL) their pattern.
	bad := bytes.Clone(raw)
	bad[5*bs+100] ^= 0x40
	for i := 40 * bs; i < 50*bs; i++ {
		bad[i] = 0x5b
	}
	makeSparse(t, bad, simgPath)
	if r, err = Open(simgPath, openHash, fr.RootHash, oo); err != nil {
		t.Fatalf("in place %v: %v", inPlace, err)
	}
	defer r.Close()
	checkSparseCorruption(t, r, inPlace)
	if inPlace {
		return
	}
	// Raw: the sparse file as it is, shorter than the image.
	_, err = Open(simgPath, openHash, fr.RootHash, &OpenOptions{Raw: true})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "shorter than the 64 blocks") {
		t.Errorf("Raw: %v", err)
	}
}

// checkSparseReads checks that r reads data, whole and in pieces across
// the chunks.
func checkSparseReads(t *testing.T, r *Reader, data []byte, inPlace bool) {
	t.Helper()
	const bs, blocks = sparseBS, sparseBlocks
	got, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil || r.Size() != blocks*bs || !bytes.Equal(got, data) || r.DataFormat() != "android-sparse" {
		t.Fatalf("in place %v: read %d of %d bytes (%s), equal %v: %v", inPlace, len(got), r.Size(), r.DataFormat(), bytes.Equal(got, data), err)
	}
	for _, off := range []int64{0, 19*bs + 4000, 20 * bs, 39*bs + 1, 45 * bs, blocks*bs - 10} {
		b := make([]byte, 300)
		n, err := r.ReadAt(b, off)
		if want := data[off:min(off+300, blocks*bs)]; !bytes.Equal(b[:n], want) || (err != nil && err != io.EOF) {
			t.Errorf("in place %v: %d bytes at %d differ from the raw image's: %v", inPlace, n, off, err)
		}
	}
}

// checkSparseCorruption checks that r finds the spoiled RAW and FILL
// blocks corrupted, and reads the others.
func checkSparseCorruption(t *testing.T, r *Reader, inPlace bool) {
	t.Helper()
	for _, c := range []struct {
		block   uint64
		corrupt bool
	}{{0, false}, {5, true}, {30, false}, {42, true}, {50, false}} {
		_, err := r.ReadAt(make([]byte, sparseBS), int64(c.block)*sparseBS)
		var ce *merkle.CorruptionError
		switch {
		case c.corrupt && (!errors.As(err, &ce) || ce.Level != merkle.DataLevel || ce.Index != c.block || !errors.Is(err, ErrCorrupt)):
			t.Errorf("in place %v: corrupted block %d read: %v", inPlace, c.block, err)
		case !c.corrupt && err != nil:
			t.Errorf("in place %v: intact block %d: %v", inPlace, c.block, err)
		}
	}
}
