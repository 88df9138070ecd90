package safefile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// punchHole deallocates bytes [from, to) of f, keeping its size; errNoHole
// where the file system cannot.
func punchHole(f *os.File, from, to uint64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(from), int64(to-from))
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return errNoHole
	}
	return err
}
