package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// sweepTemps can tell a live run's file from a dead one's: it is returned
// only once locked and still under its name (between the create and the
// lock, another run's sweep may take it for a dead run's and remove it;
// then another name is drawn).
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
		if err != nil {
			return nil, err
		}
		if tryLockExclusive(f) && stillNamed(f, name) {
			return f, nil
		}
		// Held by another run's sweep, or removed by it: that sweep
		// removes the name, if it has not.
		f.Close()
	}
	return nil, errors.New("cannot find a free temporary name")
}

// stillNamed reports whether name still refers to the open file f.
func stillNamed(f *os.File, name string) bool {
	now, err := os.Lstat(name)
	if err != nil {
		return false
	}
	info, err := f.Stat()
	return err == nil && os.SameFile(now, info)
}

const tempRandBytes = 6

// sweepTemps looks at the temporary files createTempBeside made for path,
// other than own (this run's, "" for none): it removes those no live
// process holds, left by a run that was killed before it could remove
// them (its lock died with it), and returns their names; live is the name
// of one a live process holds (another run writing path), or "". Only
// names of createTempBeside's exact pattern are considered, and only
// regular files.
func sweepTemps(path, own string) (removed []string, live string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ""
	}
	prefix := "." + base + ".tmp"
	for _, e := range entries {
		name := e.Name()
		suffix, ok := strings.CutPrefix(name, prefix)
		if !ok || !isLowerHex(suffix, 2*tempRandBytes) || !e.Type().IsRegular() || name == filepath.Base(own) {
			continue
		}
		switch sweepTemp(filepath.Join(dir, name)) {
		case tempRemoved:
			removed = append(removed, name)
		case tempLive:
			live = name
		}
	}
	return removed, live
}

type tempState int

const (
	tempGone tempState = iota // not there (any more), or not a regular file
	tempRemoved
	tempLive
)

// sweepTemp removes the temporary file at full unless a live process
// holds its lock.
func sweepTemp(full string) tempState {
	if !canLock {
		return tempGone // no telling whether its run is alive
	}
	f, err := openNoFollow(full)
	if err != nil {
		return tempGone
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return tempGone
	}
	if !tryLockExclusive(f) {
		return tempLive
	}
	// Locked: its run is dead, or renamed it over its target and has just
	// closed it (then the name is gone, or another file's).
	if stillNamed(f, full) && os.Remove(full) == nil {
		return tempRemoved
	}
	return tempGone
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
