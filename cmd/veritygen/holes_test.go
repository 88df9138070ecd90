package main

// Holes of raw files (SEEK_DATA/SEEK_HOLE) and the known runs veritygen
// hands to merkle.Build.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
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

// holeImage makes a file of size bytes, all hole but for chunks of random
// data at the given offsets, and returns the bytes it reads as.
func holeImage(t *testing.T, path string, size int64, at []int64, chunk int) []byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for i, off := range at {
		b := make([]byte, chunk)
		for j := range b {
			b[j] = byte(j*31 + i*7 + 1)
		}
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, size)
	if _, err := f.ReadAt(img, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return img
}

// holeCapture runs veritygen with buildTree wrapped and returns the runs
// merkle.Build was given.
func holeCapture(t *testing.T, args ...string) (cliResult, []merkle.Run) {
	t.Helper()
	var runs []merkle.Run
	orig := buildTree
	buildTree = func(ctx context.Context, g *merkle.Geometry, data io.ReaderAt, hash io.WriterAt, opts *merkle.BuildOptions) ([]byte, error) {
		runs = opts.Runs
		return orig(ctx, g, data, hash, opts)
	}
	defer func() { buildTree = orig }()
	return cliOK(t, args...), runs
}

// TestHolesRealFile: on this machine's file system, the runs found are
// holes (they read as zeros) and cover most of a mostly-hole file.
func TestHolesRealFile(t *testing.T) {
	const bs = 4096
	path := filepath.Join(t.TempDir(), "holes.img")
	img := holeImage(t, path, 64<<20, []int64{0, 5<<20 + 123, 40 << 20, 64<<20 - 5000}, 300000)
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

// TestHolesTree: the tree of a mostly-hole file, built with its holes as
// known runs, is veritysetup's byte for byte, for several block sizes.
func TestHolesTree(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	dir := t.TempDir()
	data := filepath.Join(dir, "holes.img")
	holeImage(t, data, 48<<20+512, []int64{4096, 3<<20 + 1, 20 << 20, 48<<20 - 70000}, 65536)
	for i, extra := range [][]string{nil, {"--data-block-size=512", "--hash-block-size=1024"}, {"--hash=sha1", "--format=0", "--no-superblock"}} {
		ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
		os.Remove(ours)
		os.Remove(theirs)
		args := append([]string{"--json", "--salt=" + cliSalt, "--uuid=" + cliUUID, fmt.Sprintf("--jobs=%d", 1+i)}, extra...)
		res, runs := holeCapture(t, append(args, data, ours)...)
		if len(runs) == 0 {
			t.Skip("this file system reports no holes (SEEK_HOLE)")
		}
		andrExec(t, vs, append(append([]string{"format", "--salt=" + cliSalt, "--uuid=" + cliUUID}, extra...), data, theirs)...)
		andrSameFiles(t, ours, theirs)
		if m := cliJSON(t, res.stdout); cliUint(t, m, "uncovered_bytes") != 512 && len(extra) == 0 {
			t.Errorf("uncovered_bytes = %d, want 512", cliUint(t, m, "uncovered_bytes"))
		}
	}
}

// TestHolesWiring: which runs each kind of DATA gets: a sparse image its
// FILL/DONT_CARE runs, a raw file its holes, --raw on a sparse image none
// of the sparse ones.
func TestHolesWiring(t *testing.T) {
	dir := t.TempDir()
	s := &andrSparse{bs: 4096}
	s.raw(make([]byte, 4096)).dontCare(10).fill(0xabcdef01, 5).raw(make([]byte, 8192))
	simg := filepath.Join(dir, "w.simg")
	if err := os.WriteFile(simg, s.bytes(0), 0o644); err != nil {
		t.Fatal(err)
	}
	_, runs := holeCapture(t, "--salt=-", simg, filepath.Join(dir, "a.verity"))
	want := []merkle.Run{{Start: 1, Count: 10}, {Start: 11, Count: 5, Pattern: []byte{1, 0xef, 0xcd, 0xab}}}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("sparse image: runs %v, want %v", runs, want)
	}
	_, runs = holeCapture(t, "--salt=-", "--raw", simg, filepath.Join(dir, "b.verity"))
	for _, r := range runs {
		if len(r.Pattern) != 0 {
			t.Errorf("--raw: pattern run %v from the sparse chunks", r)
		}
	}
	raw := filepath.Join(dir, "h.img")
	holeImage(t, raw, 8<<20, []int64{1 << 20}, 4096)
	if _, runs = holeCapture(t, "--salt=-", raw, filepath.Join(dir, "c.verity")); len(runs) == 0 {
		t.Log("this file system reports no holes")
	}
}
