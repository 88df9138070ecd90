package verity

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// resolveLink follows path if it is a symbolic link, so that a file
// replaced by rename is the link's target, as a plain write would be, and
// the link stays.
func resolveLink(path string) string {
	if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		if target, err := filepath.EvalSymlinks(path); err == nil {
			return target
		}
	}
	return path
}

// createTempBeside creates a new, empty file in path's directory, named
// after it (.BASE.tmpXXXXXXXXXXXX), to be renamed over path once complete.
// perm is filtered by the umask, as for any new file (os.CreateTemp would
// force 0600). The file holds an exclusive lock while it is open, so that
// removeStaleTemps can tell a live run's file from a dead one's.
func createTempBeside(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		var r [tempRandBytes]byte
		rand.Read(r[:])
		name := filepath.Join(dir, "."+base+".tmp"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			// A new name nobody else knows yet: the lock cannot be held.
			tryLockExclusive(f)
		}
		return f, err
	}
	return nil, errors.New("cannot find a free temporary name")
}

const tempRandBytes = 6

// removeStaleTemps removes the temporary files createTempBeside made for
// path that no live process holds: those left by a run that was killed
// before it could remove them (its lock died with it). It returns their
// names. Only names of createTempBeside's exact pattern are considered, and
// only regular files.
func removeStaleTemps(path string) []string {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := "." + base + ".tmp"
	var removed []string
	for _, e := range entries {
		name := e.Name()
		suffix, ok := strings.CutPrefix(name, prefix)
		if !ok || !isLowerHex(suffix, 2*tempRandBytes) || !e.Type().IsRegular() {
			continue
		}
		full := filepath.Join(dir, name)
		f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && tryLockExclusive(f) {
			if os.Remove(full) == nil {
				removed = append(removed, name)
			}
		}
		f.Close()
	}
	return removed
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
