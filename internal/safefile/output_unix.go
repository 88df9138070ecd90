//go:build unix

package safefile

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writeThrough writes b at the current offset of a file written in place
// (a character device, a FIFO) in one write(2), never waiting for a FIFO's
// reader to make room: an error instead of a run that never ends.
func (o *Output) writeThrough(b []byte) error {
	rc, err := o.f.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for {
			n, werr = unix.Write(int(fd), b)
			if werr != unix.EINTR {
				return true
			}
		}
	}); err != nil {
		return err
	}
	if werr == nil && n < len(b) {
		werr = io.ErrShortWrite
	}
	return werr
}

// openFIFOWriter opens the FIFO at path for writing through it.
func openFIFOWriter(path, role string) (*Output, error) {
	// Non-blocking: with no reader the open fails (ENXIO) at once
	// instead of waiting for one, maybe forever.
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENXIO) {
		return nil, errorf(KindInput, "start the reader first (e.g. cat "+path+" &), or name a regular file",
			"%s %s is a FIFO that no process is reading", role, path)
	}
	if err != nil {
		return nil, errorf(KindIO, "", "cannot open %s %s for writing: %w", role, path, err)
	}
	return &Output{path: path, f: os.NewFile(uintptr(fd), path)}, nil
}

// openOwnFD writes the root hash through a copy of the process's own file
// descriptor fd (e.g. stdout), at its current offset: replacing the file it
// stands for by rename would leave fd writing into the old, unlinked one,
// and opening it anew would write from its start.
func openOwnFD(path, role string, fd int) (*Output, error) {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil && flags&unix.O_ACCMODE == unix.O_RDONLY {
		err = errors.New("open for reading only")
	}
	if err != nil {
		return nil, errorf(KindInput, "", "%s %s is this process's file descriptor %d, which cannot be written: %w", role, path, fd, err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, errorf(KindIO, "", "%s %s (file descriptor %d): %w", role, path, fd, err)
	}
	return &Output{path: path, f: os.NewFile(uintptr(dup), path), noSync: true}, nil
}
