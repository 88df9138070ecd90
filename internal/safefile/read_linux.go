package safefile

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// readSmall opens path without blocking (a FIFO without writer would
// otherwise hold open(2) until one comes, deaf to signals), checks its
// type again on the open file, and reads it: a regular file at once, a
// FIFO or a character device through the poller, whose wait ctx ends.
func readSmall(ctx context.Context, path string, limit int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	typ := st.Mode & unix.S_IFMT
	if err := checkType(path, fileMode(typ)); err != nil {
		unix.Close(fd) // it changed since the Stat
		return nil, err
	}
	if typ == unix.S_IFREG {
		// Reads of a regular file never wait; os.NewFile would take a
		// non-blocking descriptor for one of the poller's.
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		f := os.NewFile(uintptr(fd), path)
		defer f.Close()
		if st.Size > int64(limit) {
			return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge{limit}}
		}
		return readAll(f, path, st.Size, limit)
	}
	f := os.NewFile(uintptr(fd), path) // non-blocking: in the poller
	defer f.Close()
	// The end of ctx wakes the wait below (a deadline in the past).
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	b, err := readPolled(f, limit, typ == unix.S_IFIFO)
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if len(b) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge{limit}}
	}
	return b, nil
}

// readAll reads a regular file of size bytes (when opened) to its end, up
// to limit+1 bytes, into a buffer of that size: a 16 MiB property file is
// read into 16 MiB, not into the doublings of io.ReadAll.
func readAll(f *os.File, path string, size int64, limit int) ([]byte, error) {
	b := make([]byte, 0, min(size, int64(limit))+1)
	for {
		if len(b) == cap(b) { // it grew since the Fstat
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):min(cap(b), limit+1)])
		b = b[:len(b)+n]
		switch {
		case len(b) > limit:
			return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge{limit}}
		case err == io.EOF:
			return b, nil
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: unwrap(err)}
		}
	}
}

// readPolled reads a non-blocking FIFO or character device to its end (or
// past limit), waiting in the poller whenever there is nothing to read
// yet. A FIFO's read returns 0 both at its end and while no writer has
// opened it: the hang-up poll(2) reports once a writer has come and gone
// tells the two apart, and a writer may have come, written and gone
// between the read and the poll, so the FIFO is read again after a
// hang-up before its end is believed.
func readPolled(f *os.File, limit int, fifo bool) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, min(limit+1, 4096))
	var rerr error
	hungUp := false
	err = rc.Read(func(fd uintptr) bool {
		for {
			if len(buf) == cap(buf) {
				grown := make([]byte, len(buf), min(2*cap(buf), limit+1))
				buf = grown[:copy(grown, buf)]
			}
			n, err := unix.Read(int(fd), buf[len(buf):cap(buf)])
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false // a writer, no data yet: wait
			case err != nil:
				rerr = err
				return true
			case n > 0:
				buf = buf[:len(buf)+n]
				if len(buf) > limit {
					return true
				}
				continue
			case !fifo || hungUp:
				return true // the end
			}
			if afterEmptyRead != nil {
				afterEmptyRead()
			}
			switch revents := pollNow(int(fd)); {
			case revents&unix.POLLHUP != 0:
				hungUp = true // read what the writer left, then the end
			case revents&unix.POLLIN == 0:
				return false // no writer yet: wait for one
			}
		}
	})
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, context.Canceled // replaced by ctx's error
		}
		return nil, unwrap(err)
	}
	return buf, rerr
}

// afterEmptyRead, if set (by tests), runs between a FIFO's empty read and
// the poll that follows it.
var afterEmptyRead func()

// pollNow returns the events poll(2) reports on fd at once: for a FIFO,
// POLLIN with data, POLLHUP once all its writers have gone after one came
// (Linux reports no hang-up before a writer has come).
func pollNow(fd int) int16 {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0
		}
		return fds[0].Revents
	}
}

// fileMode converts a stat(2) file type to an fs.FileMode.
func fileMode(typ uint32) fs.FileMode {
	switch typ {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	}
	return fs.ModeIrregular
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
