//go:build unix

package safefile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// seekData returns the offset of the first data at or past off
// (SEEK_DATA), errNoData when there is none up to the end.
func seekData(f *os.File, off int64) (int64, error) {
	d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return 0, errNoData
	}
	return d, err
}

// seekHole returns the offset of the first hole at or past off
// (SEEK_HOLE; the end of the file is one).
func seekHole(f *os.File, off int64) (int64, error) {
	return unix.Seek(int(f.Fd()), off, unix.SEEK_HOLE)
}
