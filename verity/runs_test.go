package verity

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
)

// TestRunsKeepLongest: past maxRuns, the longest runs are kept, in order,
// with their patterns.
func TestRunsKeepLongest(t *testing.T) {
	old := maxRuns
	maxRuns = 3
	defer func() { maxRuns = old }()
	var extents []sparse.Extent
	var pos uint64
	for i, n := range []uint64{1, 5, 2, 7, 1, 6, 3} {
		extents = append(extents, sparse.Extent{Start: pos, Blocks: n, Kind: sparse.Fill, Fill: uint32(i + 1)},
			sparse.Extent{Start: pos + n, Blocks: 1, Kind: sparse.Raw})
		pos += n + 1
	}
	pat := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	got := runsOfExtents(extents, 4096, 4096, pos)
	want := []merkle.Run{{Start: 2, Count: 5, Pattern: pat(2)}, {Start: 11, Count: 7, Pattern: pat(4)}, {Start: 21, Count: 6, Pattern: pat(6)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRunsBounded: a file of 4M one-block holes, and a sparse image of 4M
// one-block FILL chunks of alternating patterns, give at most maxRuns runs
// in a few MiB, and the one long hole at the end of the file is among them
// (a list cut after the first N holes would miss it).
func TestRunsBounded(t *testing.T) {
	const bs, n = 4096, 4 << 20
	// Data in every even block up to 2n, then a hole of a million blocks.
	size := int64(2*n+1<<20) * bs
	seek := func(off int64, whence int) (int64, error) {
		if off >= size {
			return 0, unix.ENXIO
		}
		b := off / bs
		switch {
		case whence == unix.SEEK_DATA && b >= 2*n-1:
			return 0, unix.ENXIO
		case whence == unix.SEEK_DATA && b%2 == 0:
			return off, nil
		case whence == unix.SEEK_DATA:
			return (b + 1) * bs, nil
		case b%2 == 0 && b < 2*n:
			return (b + 1) * bs, nil
		}
		return off, nil
	}
	var runs []merkle.Run
	if a := allocated(func() { runs = findHoles(seek, bs, uint64(size/bs)) }); a > 16<<20 {
		t.Errorf("findHoles of %d holes allocated %d MiB", n, a>>20)
	}
	last := runs[len(runs)-1]
	if len(runs) > maxRuns || last.Start != 2*n-1 || last.Count != 1<<20+1 {
		t.Errorf("findHoles: %d runs, the last %v", len(runs), last)
	}

	walk := func(fn func(sparse.Extent) bool) error {
		for i := range uint64(n) {
			if !fn(sparse.Extent{Start: i, Blocks: 1, Kind: sparse.Fill, Fill: uint32(i%2 + 1)}) {
				break
			}
		}
		return nil
	}
	if a := allocated(func() { runs = sparseRuns(walk, bs, bs, n) }); a > 16<<20 || len(runs) > maxRuns {
		t.Errorf("sparseRuns of %d extents: %d runs in %d MiB", n, len(runs), a>>20)
	}
}
