package cli

import (
	"errors"
	"io/fs"
	"os"
)

// OpenImage opens an image for reading and returns its size (a block
// device's from the BLKGETSIZE64 ioctl, see Size); role names it in errors
// ("DATA", "HASH"). Directories are refused.
func OpenImage(role, path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, Errorf("", "%s %s does not exist", role, path)
		}
		return nil, 0, Errorf("", "cannot open %s %s: %v", role, path, UnwrapPath(err))
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, Errorf("", "%s %s: %v", role, path, UnwrapPath(err))
	}
	if info.IsDir() {
		f.Close()
		return nil, 0, Errorf("give the image file, not its directory", "%s %s is a directory", role, path)
	}
	size, err := Size(f)
	if err != nil {
		f.Close()
		return nil, 0, Errorf("", "%s %s: %v", role, path, UnwrapPath(err))
	}
	return f, size, nil
}

// UnwrapPath drops the "op path:" prefix of a *fs.PathError, for messages
// that name the path themselves.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
