package safefile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// IsBlockDevice reports whether info describes a block device.
func IsBlockDevice(info fs.FileInfo) bool {
	return info.Mode()&fs.ModeDevice != 0 && info.Mode()&fs.ModeCharDevice == 0
}

// FileSize returns the size of the open file f: a regular file's length, a
// block device's size (BLKGETSIZE64, since a device's Stat size is 0), and
// for anything else where seeking to the end puts it.
func FileSize(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	switch {
	case info.Mode().IsRegular():
		return info.Size(), nil
	case IsBlockDevice(info):
		size, err := BlockDeviceSize(f)
		if err == nil && size > 1<<63-1 {
			err = fmt.Errorf("block device size %d does not fit in 63 bits", size)
		}
		return int64(size), err
	}
	return f.Seek(0, io.SeekEnd)
}
