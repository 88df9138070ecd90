package verity

// Holes of raw files (SEEK_DATA/SEEK_HOLE) as known runs of zeros.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
)

// holeFakeFile answers SEEK_DATA and SEEK_HOLE like Linux for a file of
// size bytes whose data lies in the given [start, end) extents.
type holeFakeFile struct {
	size int64
	data [][2]int64
	err  error // returned by every seek when set
}

func (f *holeFakeFile) seek(off int64, whence int) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	if off >= f.size {
		return 0, unix.ENXIO
	}
	switch whence {
	case unix.SEEK_DATA:
		for _, d := range f.data {
			if off < d[1] {
				return max(off, d[0]), nil
			}
		}
		return 0, unix.ENXIO
	case unix.SEEK_HOLE:
		for _, d := range f.data {
			if off >= d[0] && off < d[1] {
				return d[1], nil
			}
		}
		return off, nil
	}
	return 0, unix.EINVAL
}

func TestHolesFind(t *testing.T) {
	const bs = 4096
	for _, tc := range []struct {
		name   string
		f      holeFakeFile
		blocks uint64
		want   []merkle.Run
	}{
		{"no holes", holeFakeFile{size: 10 * bs, data: [][2]int64{{0, 10 * bs}}}, 10, nil},
		{"all hole", holeFakeFile{size: 10 * bs}, 10, []merkle.Run{{Start: 0, Count: 10}}},
		{"holes at both ends", holeFakeFile{size: 10 * bs, data: [][2]int64{{3 * bs, 5 * bs}}}, 10,
			[]merkle.Run{{Start: 0, Count: 3}, {Start: 5, Count: 5}}},
		// Only whole blocks inside a hole: data ending at byte 100 of block
		// 1 and starting in block 6 leaves blocks 2 to 5.
		{"unaligned", holeFakeFile{size: 10 * bs, data: [][2]int64{{0, bs + 100}, {6*bs + 1, 7 * bs}}}, 10,
			[]merkle.Run{{Start: 2, Count: 4}, {Start: 7, Count: 3}}},
		{"several", holeFakeFile{size: 20 * bs, data: [][2]int64{{bs, 2 * bs}, {4 * bs, 5 * bs}, {9 * bs, 19 * bs}}}, 20,
			[]merkle.Run{{Start: 0, Count: 1}, {Start: 2, Count: 2}, {Start: 5, Count: 4}, {Start: 19, Count: 1}}},
		// The tree covers fewer blocks than the file holds.
		{"cut", holeFakeFile{size: 20 * bs, data: [][2]int64{{0, bs}}}, 8, []merkle.Run{{Start: 1, Count: 7}}},
		{"partial last block", holeFakeFile{size: 10*bs + 10, data: [][2]int64{{0, bs}}}, 10, []merkle.Run{{Start: 1, Count: 9}}},
		{"not supported", holeFakeFile{size: 10 * bs, err: unix.EINVAL}, 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := findHoles(tc.f.seek, bs, tc.blocks)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("SEEK_HOLE fails midway", func(t *testing.T) {
		f := &holeFakeFile{size: 10 * bs, data: [][2]int64{{2 * bs, 3 * bs}}}
		calls := 0
		seek := func(off int64, whence int) (int64, error) {
			if calls++; whence == unix.SEEK_HOLE {
				return 0, unix.EIO
			}
			return f.seek(off, whence)
		}
		if got := findHoles(seek, bs, 10); fmt.Sprint(got) != fmt.Sprint([]merkle.Run{{Start: 0, Count: 2}}) {
			t.Errorf("got %v: want the hole before the error only", got)
		}
	})
}

// TestHolesRealFile: on this machine's file system, the runs found are
// holes (they read as zeros) and cover most of a mostly-hole file.
func TestHolesRealFile(t *testing.T) {
	const bs = 4096
	path := filepath.Join(t.TempDir(), "holes.img")
	img := testimages.Holes(t, path, 64<<20, []int64{0, 5<<20 + 123, 40 << 20, 64<<20 - 5000}, 300000)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := holeRuns(f, bs, uint64(len(img)/bs))
	var n uint64
	for _, r := range runs {
		n += r.Count
		for b := r.Start; b < r.Start+r.Count; b++ {
			for _, c := range img[b*bs : (b+1)*bs] {
				if c != 0 {
					t.Fatalf("block %d of run %v is not zeros", b, r)
				}
			}
		}
	}
	t.Logf("%d runs, %d of %d blocks", len(runs), n, len(img)/bs)
	if n == 0 {
		t.Skip("this file system reports no holes (SEEK_HOLE)")
	}
	if n < uint64(len(img)/bs)*9/10 {
		t.Errorf("runs cover %d of %d blocks; the file is more than 95%% hole", n, len(img)/bs)
	}
}
