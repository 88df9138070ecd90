//go:build unix

package safefile

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// canLock: flock(2) tells a live run's temporary file from a dead one's.
const canLock = true

// tryLockExclusive takes an exclusive lock on f if nobody holds one, and
// reports whether it did.
func tryLockExclusive(f *os.File) bool {
	return flock(f, lockEX) == nil
}

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), flockHow(how)|unix.LOCK_NB)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

func identify(f *os.File) (fileID, error) {
	info, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, errors.New("no device and inode number")
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

func flockHow(how int) int {
	if how == lockSH {
		return unix.LOCK_SH
	}
	return unix.LOCK_EX
}

// isHeld reports whether flock failed because another open file holds a
// conflicting lock.
func isHeld(err error) bool { return errors.Is(err, unix.EWOULDBLOCK) }

// noLocks reports whether flock failed because the file system has none.
func noLocks(err error) bool {
	return errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)
}

// openNoFollow opens path for reading unless it is a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
