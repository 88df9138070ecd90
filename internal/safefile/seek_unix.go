//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// SeekData returns the offset of the first data at or past off
// (SEEK_DATA), ErrNoData when there is none up to the end.
func SeekData(f *os.File, off int64) (int64, error) {
	d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return 0, ErrNoData
	}
	return d, err
}

// SeekHole returns the offset of the first hole at or past off
// (SEEK_HOLE; the end of the file is one).
func SeekHole(f *os.File, off int64) (int64, error) {
	return unix.Seek(int(f.Fd()), off, unix.SEEK_HOLE)
}

// DeviceNumber returns the device number of the device file info
// describes (st_rdev): two nodes of one device have the same.
func DeviceNumber(info fs.FileInfo) (uint64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Rdev), true
}
