package safefile

import (
	"os"
	"sync"
)

// Locks are flock(2) locks, taken without waiting: a file held by another
// run makes this one fail at once rather than hang, and two runs never
// write the same file at once, nor one reads what the other writes.
//
// flock locks belong to an open file description, so two opens of one file
// in the same process conflict like two processes. The registry below lets
// a command that holds a shared lock on a file it reads take the exclusive
// one for writing it through another open: the held lock is converted.

type fileID struct{ dev, ino uint64 }

var (
	locksMu sync.Mutex
	locks   = map[fileID]*os.File{}
)

// LockShared takes a shared lock on f, opened from path, for reading it;
// role names it in the error ("DATA", "HASH").
func LockShared(f *os.File, role, path string) error {
	return lock(f, lockSH, role, path)
}

// LockExclusive takes an exclusive lock on f, opened from path, for writing
// it. When this process already holds a lock on the same file through
// another open file, that lock is converted to an exclusive one instead.
//
// A caller writing around a verb of the verity package (the avb package
// writes the vbmeta and the footer after Format's tree) takes it on the
// image first and keeps the file open: the verb then uses that lock
// instead of failing on it, and the file stays locked from the first write
// to the last.
func LockExclusive(f *os.File, role, path string) error {
	return lock(f, lockEX, role, path)
}

// lockSH and lockEX are the kinds of lock, as flock(2) numbers them.
const (
	lockSH = 1
	lockEX = 2
)

func lock(f *os.File, how int, role, path string) error {
	id, err := identify(f)
	if err != nil {
		return errorf(KindIO, "", "%s %s: %v", role, path, unwrapPath(err))
	}
	locksMu.Lock()
	defer locksMu.Unlock()
	target := f
	if held, ok := locks[id]; ok && held != f && isOpen(held) {
		if how == lockSH {
			return nil // already held, shared or exclusive
		}
		target = held
	}
	err = flock(target, how)
	switch {
	case isHeld(err):
		return &Error{Kind: KindRefused, Err: &LockedError{Role: role, Path: path}}
	case noLocks(err):
		// Some file systems (e.g. some network ones) have no flock, nor
		// some systems: there is nothing to lock with, and refusing to
		// work there would be worse.
		return nil
	case err != nil:
		return errorf(KindIO, "", "locking %s %s: %v", role, path, err)
	}
	locks[id] = target
	return nil
}

// CheckNotLocked fails with LockShared's error when another process holds
// an exclusive lock on the file at path (it is being written), so that a
// check about to judge what the file holds says that, rather than what it
// finds in a half-written file. Another error (the file cannot be opened)
// is left to the check.
func CheckNotLocked(role, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return LockShared(f, role, path)
}

// LockedError is the cause of a KindRefused error when another process
// holds the lock of the file Path of Role (matching ErrLocked). Via names
// the temporary file through which another run is writing a path that does
// not exist yet; Appeared says such a run has just put it in place. A
// front that can guess who holds it (its own program) says so from these.
type LockedError struct {
	Role, Path string
	Via        string
	Appeared   bool
}

func (e *LockedError) Error() string {
	switch {
	case e.Via != "":
		return e.Role + " " + e.Path + " is locked by another process, which is writing it (its temporary file " + e.Via + " is held); wait for it to finish"
	case e.Appeared:
		return e.Role + " " + e.Path + " was created by another process while this run was starting; nothing was written"
	}
	return e.Role + " " + e.Path + " is locked by another process; wait for it to finish"
}
func (e *LockedError) Unwrap() error { return ErrLocked }

// isOpen reports whether f is still open: a closed file's lock is gone.
func isOpen(f *os.File) bool {
	rc, err := f.SyscallConn()
	return err == nil && rc.Control(func(uintptr) {}) == nil
}
