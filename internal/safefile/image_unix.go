//go:build unix

package safefile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openImageFile opens path, which was an image when OpenImage looked, and
// checks again on the open file that it still is one.
func openImageFile(role, path string) (*os.File, error) {
	// O_NONBLOCK: should path have become a FIFO since the Stat, the open
	// must not wait for a writer; the type is checked again on the open
	// file below.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(role, path, &fs.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, errorf(KindIO, "", "%s %s: %v", role, path, err)
	}
	if err := CheckImageType(role, path, statMode(uint32(st.Mode)), "read"); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Reads of files and block devices never return EAGAIN, but os.NewFile
	// would treat a non-blocking descriptor as one for the poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, errorf(KindIO, "", "%s %s: %v", role, path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// statMode converts a stat(2) st_mode to an fs.FileMode.
func statMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	default:
		mode |= fs.ModeIrregular
	}
	return mode
}
