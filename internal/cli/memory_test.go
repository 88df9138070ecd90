package cli

// Peak memory of veritygen and veritycheck on adversarial inputs: sparse
// images of millions of chunks that no index can merge.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/sparse"
)

// maxRSS is the peak RSS allowed to either command, for any input.
const maxRSS = 64 << 20

// writeChunks writes a sparse file of bs-byte blocks: crcs CRC32 chunks
// (of the empty image so far: 0), then n one-block chunks that do not
// merge: FILL chunks alternating two patterns, or (dontCare) alternating a
// FILL and a DONT_CARE chunk.
func writeChunks(t *testing.T, path string, bs, n, crcs int, dontCare bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	le := binary.LittleEndian
	var c [sparse.HeaderSize]byte
	le.PutUint32(c[0:], sparse.Magic)
	le.PutUint16(c[4:], 1)
	le.PutUint16(c[8:], sparse.HeaderSize)
	le.PutUint16(c[10:], sparse.ChunkHeaderSize)
	le.PutUint32(c[12:], uint32(bs))
	le.PutUint32(c[16:], uint32(n))
	le.PutUint32(c[20:], uint32(n+crcs))
	w.Write(c[:])
	for i := range crcs + n {
		typ, blocks, size, value := uint16(sparse.ChunkFill), uint32(1), uint32(16), uint32(i%2+1)*0x01010101
		switch {
		case i < crcs:
			typ, blocks, value = sparse.ChunkCRC32, 0, 0
		case dontCare && i%2 == 1:
			typ, size = sparse.ChunkDontCare, 12
		}
		le.PutUint16(c[0:], typ)
		le.PutUint16(c[2:], 0)
		le.PutUint32(c[4:], blocks)
		le.PutUint32(c[8:], size)
		le.PutUint32(c[12:], value)
		w.Write(c[:size])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// runMeasured runs a built command through the launcher and returns its
// peak RSS in bytes; the command must succeed.
func runMeasured(t *testing.T, launcher, name string, args ...string) int64 {
	t.Helper()
	var stderr bytes.Buffer
	code, rss := testtool.RunMeasured(t, launcher, io.Discard, &stderr, name, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit %d\n%s", filepath.Base(name), strings.Join(args, " "), code, stderr.String())
	}
	return rss
}

// TestMemoryBounded: both commands stay under 64 MiB of RSS on sparse
// images of millions of unmergeable chunks (they took 20 times the file's
// size: over 1 GiB for 56 MB).
func TestMemoryBounded(t *testing.T) {
	testtool.Long(t, "the memory bounds on images of millions of chunks (about a minute)")
	dir := t.TempDir()
	gen, check := testtool.BuildCommand(t, dir, "./cmd/veritygen"), testtool.BuildCommand(t, dir, "./cmd/veritycheck")
	launcher := testtool.BuildLauncher(t, dir)
	for _, tc := range []struct {
		name         string
		bs, n, crcs  int
		dontCare     bool
		dataBlockArg string
	}{
		// 4M chunks of 4-byte blocks (a 16 MiB expansion, so that hashing
		// is quick), after 1M CRC32 chunks: the index.
		{"4M FILL chunks", 4, 4 << 20, 1 << 20, false, "--data-block-size=4096"},
		// Every data block a run of its own: the runs.
		{"1M FILL runs", 512, 1 << 20, 0, false, "--data-block-size=512"},
		// The file, a quarter of it: FILL and DONT_CARE of 4 KiB.
		{"1M FILL and DONT_CARE", 4096, 1 << 20, 0, true, "--data-block-size=4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simg, hash, rootFile := filepath.Join(dir, "data.simg"), filepath.Join(dir, "data.verity"), filepath.Join(dir, "root.hex")
			writeChunks(t, simg, tc.bs, tc.n, tc.crcs, tc.dontCare)
			if rss := runMeasured(t, launcher, gen, "--no-progress", tc.dataBlockArg, "--root-hash-file="+rootFile, simg, hash); rss > maxRSS {
				t.Errorf("veritygen: peak RSS %d MiB, want < %d MiB", rss>>20, maxRSS>>20)
			} else {
				t.Logf("veritygen: peak RSS %.1f MiB", float64(rss)/(1<<20))
			}
			if rss := runMeasured(t, launcher, check, "--no-progress", "--root-hash-file="+rootFile, simg, hash); rss > maxRSS {
				t.Errorf("veritycheck: peak RSS %d MiB, want < %d MiB", rss>>20, maxRSS>>20)
			} else {
				t.Logf("veritycheck: peak RSS %.1f MiB", float64(rss)/(1<<20))
			}
		})
	}
}
