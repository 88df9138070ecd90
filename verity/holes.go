package verity

import (
	"errors"

	"github.com/veritytree/veritytree/merkle"
)

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
		data, err := seek(int64(off), seekData)
		if errors.Is(err, errNXIO) {
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
		hole, err := seek(data, seekHole)
		if err != nil || hole <= data {
			break
		}
		off = uint64(hole)
	}
	return keep.result()
}
