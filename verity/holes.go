package verity

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
)

// holeRuns finds the holes of the regular file f with SEEK_DATA and
// SEEK_HOLE and returns the data blocks of the first blocks that lie
// entirely inside one, as runs of zeros: the longest maxRuns of them, so
// that a file of millions of small holes takes a few MiB, not hundreds. A file system without hole
// support reports none, and an error stops the search: the blocks not in
// a run are read, so the tree is right either way.
func holeRuns(f *os.File, dbs int, blocks uint64) []merkle.Run {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var runs []merkle.Run
	rc.Control(func(fd uintptr) {
		runs = findHoles(func(off int64, whence int) (int64, error) {
			return unix.Seek(int(fd), off, whence)
		}, dbs, blocks)
	})
	return runs
}

// findHoles is holeRuns on a seek function (lseek with SEEK_DATA and
// SEEK_HOLE, or a test's).
func findHoles(seek func(off int64, whence int) (int64, error), dbs int, blocks uint64) []merkle.Run {
	b := uint64(dbs)
	end := blocks * b
	var keep runKeeper
	add := func(from, to uint64) { // a hole from byte from to byte to
		first, last := (from+b-1)/b, min(to, end)/b
		if last > first {
			keep.add(keptRun{start: first, count: last - first})
		}
	}
	for off := uint64(0); off < end; {
		data, err := seek(int64(off), unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			add(off, end) // no data from off on: a hole up to the end
			break
		}
		if err != nil || data < int64(off) {
			break // no SEEK_DATA here: read everything left
		}
		if uint64(data) > off {
			add(off, uint64(data))
		}
		if uint64(data) >= end {
			break
		}
		hole, err := seek(data, unix.SEEK_HOLE)
		if err != nil || hole <= data {
			break
		}
		off = uint64(hole)
	}
	return keep.result()
}
