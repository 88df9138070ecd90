//go:build !unix

package safefile

import (
	"errors"
	"os"
)

// Without flock(2) (Windows) files are not locked, as on a file system
// without locks: the checks of what a file holds still apply, but two
// runs are not kept from writing one file at once, and temporary files of
// killed runs cannot be told from live ones, so none is removed.

const canLock = false

var errNoFlock = unsupported("file locks")

func tryLockExclusive(*os.File) bool { return true }

func flock(*os.File, int) error { return errNoFlock }

func isHeld(error) bool { return false }

func noLocks(err error) bool { return errors.Is(err, errNoFlock) }

func identify(*os.File) (fileID, error) { return fileID{}, nil }

func openNoFollow(string) (*os.File, error) { return nil, errNoFlock }
