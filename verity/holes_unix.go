//go:build unix

package verity

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
)

// The lseek(2) whences and error findHoles knows.
const (
	seekData = unix.SEEK_DATA
	seekHole = unix.SEEK_HOLE
)

var errNXIO error = unix.ENXIO

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
