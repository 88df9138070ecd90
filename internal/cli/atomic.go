package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// ResolveLink follows path if it is a symbolic link, so that a file
// replaced by rename is the link's target, as a plain write would be, and
// the link stays.
func ResolveLink(path string) string {
	if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		if target, err := filepath.EvalSymlinks(path); err == nil {
			return target
		}
	}
	return path
}

// CreateTempBeside creates a new, empty file in path's directory, named
// after it, to be renamed over path once complete. perm is filtered by the
// umask, as for any new file (os.CreateTemp would force 0600).
func CreateTempBeside(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		var r [6]byte
		rand.Read(r[:])
		name := filepath.Join(dir, "."+base+".tmp"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, errors.New("cannot find a free temporary name")
}

// WriteFileAtomic writes b to path through a temporary file and a rename,
// so that path holds either its old content or b, never a part.
func WriteFileAtomic(path string, b []byte, perm fs.FileMode) error {
	path = ResolveLink(path)
	tmp, err := CreateTempBeside(path, perm)
	if err != nil {
		return UnwrapPath(err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
