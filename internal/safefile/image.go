package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// OpenImage opens an image for reading, locked shared (see LockShared),
// and returns its size (a block device's from the BLKGETSIZE64 ioctl, see
// FileSize); role names it in errors ("DATA", "HASH"). Only regular files
// and block devices are accepted: an image is read at any offset, and a
// FIFO, socket or character device cannot be, while opening some of them
// would wait for a writer forever.
func OpenImage(role, path string) (*os.File, int64, error) {
	// Stat first, so that a device that is not an image is not even
	// opened (opening some has side effects).
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, openError(role, path, err)
	}
	if err := CheckImageType(role, path, info.Mode(), "read"); err != nil {
		return nil, 0, err
	}
	f, err := openImageFile(role, path)
	if err != nil {
		return nil, 0, err
	}
	// Shared, before anything is read: while a writer holds the file, a
	// reader fails at once saying so, rather than reading a half-written
	// file and calling it something else (no footer, no superblock).
	if err := LockShared(f, role, path); err != nil {
		f.Close()
		return nil, 0, err
	}
	size, err := FileSize(f)
	if err != nil {
		f.Close()
		return nil, 0, errorf(KindIO, "", "%s %s: %v", role, path, unwrapPath(err))
	}
	return f, size, nil
}

func openError(role, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		// The message is ours; errors.Is(err, fs.ErrNotExist) and As of
		// the *fs.PathError still find the cause.
		return &Error{Kind: KindInput, Err: &causedError{msg: fmt.Sprintf("%s %s does not exist", role, path), cause: err}}
	}
	return errorf(KindIO, "", "cannot open %s %s: %v", role, path, unwrapPath(err))
}

// CheckImageType refuses what cannot hold an image read or written at any
// offset: anything but a regular file or a block device. use says what is
// done with it: "read", "written", "read and written".
func CheckImageType(role, path string, mode fs.FileMode, use string) error {
	if mode.IsRegular() || mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0 {
		return nil
	}
	if mode.IsDir() {
		return errorf(KindInput, "give the image file, not its directory", "%s %s is a directory", role, path)
	}
	what := "a special file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	}
	hint := "write it to a file first, and give that file"
	if use != "read" {
		hint = "name a file or a block device"
	}
	return errorf(KindInput, hint, "%s %s is %s: it must be a file or a block device, to be %s at any offset", role, path, what, use)
}
