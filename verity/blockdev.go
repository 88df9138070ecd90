package verity

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// isBlockDevice reports whether info describes a block device.
func isBlockDevice(info fs.FileInfo) bool {
	return info.Mode()&fs.ModeDevice != 0 && info.Mode()&fs.ModeCharDevice == 0
}

// blockDeviceSize returns the size in bytes of the block device open as f,
// as the kernel's BLKGETSIZE64 ioctl gives it. On anything but a block
// device the ioctl fails (ENOTTY).
func blockDeviceSize(f *os.File) (uint64, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var size uint64
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		size, ierr = unix.IoctlGetUint64(int(fd), unix.BLKGETSIZE64)
	}); err != nil {
		return 0, err
	}
	if ierr != nil {
		return 0, fmt.Errorf("its size cannot be read (the BLKGETSIZE64 ioctl fails: %w)", ierr)
	}
	return size, nil
}

// Size returns the size of the open file f: a regular file's length, a
// block device's size (BLKGETSIZE64, since a device's Stat size is 0), and
// for anything else where seeking to the end puts it.
func fileSize(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	switch {
	case info.Mode().IsRegular():
		return info.Size(), nil
	case isBlockDevice(info):
		size, err := blockDeviceSize(f)
		if err == nil && size > 1<<63-1 {
			err = fmt.Errorf("block device size %d does not fit in 63 bits", size)
		}
		return int64(size), err
	}
	return f.Seek(0, io.SeekEnd)
}
