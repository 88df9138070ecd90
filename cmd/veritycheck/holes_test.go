package main

// Holes of a raw DATA file are checked as zeros without being read.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
)

// holesCapture runs veritycheck with verifyTree wrapped and returns the
// runs merkle.Verify was given first.
func holesCapture(t *testing.T, args ...string) (vcResult, []merkle.Run) {
	t.Helper()
	var runs []merkle.Run
	seen := false
	orig := verifyTree
	verifyTree = func(ctx context.Context, g *merkle.Geometry, data, hash io.ReaderAt, root []byte, opts *merkle.VerifyOptions) (*merkle.VerifyReport, error) {
		if !seen {
			runs, seen = opts.Runs, true
		}
		return orig(ctx, g, data, hash, root, opts)
	}
	defer func() { verifyTree = orig }()
	return vcRun(args...), runs
}

// fsHasHoles says whether SEEK_HOLE finds a hole in the file at path (the
// file system supports holes, and the file has one).
func fsHasHoles(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
	return err == nil && off < info.Size()
}

func holesCovered(runs []merkle.Run, block uint64) bool {
	for _, r := range runs {
		if block >= r.Start && block < r.Start+r.Count {
			return true
		}
	}
	return false
}

// TestHolesChecked: on a mostly-hole image (tree by veritysetup), the holes
// go to Verify as runs and the image verifies; data written into a hole,
// data corrupted outside the holes, and data punched out into a new hole
// are each reported at the right block.
func TestHolesChecked(t *testing.T) {
	vsPath(t)
	dir := t.TempDir()
	data, hash := filepath.Join(dir, "holes.img"), filepath.Join(dir, "holes.verity")
	const bs = 4096
	const dataAt = 20 << 20 // one of the data stretches
	testimages.Holes(t, data, 32<<20, []int64{4096, 3<<20 + 1, dataAt, 32<<20 - 70000}, 65536)
	root := vsFormat(t, "--salt=0102", data, hash).root

	if !fsHasHoles(t, data) {
		t.Skip("this file system reports no holes (SEEK_HOLE)")
	}
	res, runs := holesCapture(t, "--json", "--root-hash="+root, data, hash)
	if j := vcDecode(t, res); res.code != 0 || !j.Verified {
		t.Fatalf("intact holey image:\n%v", res)
	}
	var covered uint64
	for _, r := range runs {
		covered += r.Count
	}
	if covered < (32<<20)/bs*9/10 {
		t.Errorf("holes cover %d of %d blocks; the file is mostly hole", covered, (32<<20)/bs)
	}

	expectOne := func(what string, block uint64) {
		t.Helper()
		res, _ := holesCapture(t, "--json", "--root-hash="+root, data, hash)
		j := vcDecode(t, res)
		if res.code != 1 || j.CorruptDataBlocks != 1 || len(j.Problems) != 1 || j.Problems[0].Where != "data" || j.Problems[0].Index != block {
			t.Errorf("%s: want exit 1 and data block %d alone reported, got:\n%v", what, block, res)
		}
	}

	// Data outside the holes is still read and checked.
	vcXorByte(t, data, dataAt+5000, 0x40)
	expectOne("a flipped byte in a data stretch", (dataAt+5000)/bs)
	vcXorByte(t, data, dataAt+5000, 0x40)

	// A byte written into a hole makes that block data again.
	hole := uint64(10 << 20 / bs)
	if !holesCovered(runs, hole) {
		t.Fatalf("block %d should be in a hole: runs %v", hole, runs)
	}
	vcXorByte(t, data, int64(hole*bs)+7, 0x01)
	expectOne("a byte written into a hole", hole)
	vcXorByte(t, data, int64(hole*bs)+7, 0x01) // zero again, but now allocated

	// A data block punched out reads as zeros: it is in a hole now, checked
	// without being read, and does not match the tree.
	punched := uint64(dataAt/bs + 2)
	f, err := os.OpenFile(data, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(punched*bs), bs)
	f.Close()
	if err != nil {
		t.Fatalf("punching a hole: %v", err)
	}
	res, runs = holesCapture(t, "--json", "--root-hash="+root, data, hash)
	if !holesCovered(runs, punched) {
		t.Errorf("the punched block %d is not in the runs %v", punched, runs)
	}
	if j := vcDecode(t, res); res.code != 1 || j.CorruptDataBlocks != 1 || j.Problems[0].Index != punched {
		t.Errorf("a punched-out data block: want data block %d reported, got:\n%v", punched, res)
	}
}
