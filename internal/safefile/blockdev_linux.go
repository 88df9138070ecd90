package safefile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// BlockDeviceSize returns the size in bytes of the block device open as f,
// as the kernel's BLKGETSIZE64 ioctl gives it. On anything but a block
// device the ioctl fails (ENOTTY).
func BlockDeviceSize(f *os.File) (uint64, error) {
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
