package testtool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Held is a command stopped at a known point of its run: its stderr is a
// pipe filled to the brim before it starts, so that its first write there
// waits until Release reads the pipe. A command that writes a line on
// stderr right after a step (veritygen's note on the stale temporary
// files it removed, once its own is created and locked) waits there, with
// no clock involved.
type Held struct {
	t      testing.TB
	cmd    *exec.Cmd
	r      *os.File
	filler int
	stdout bytes.Buffer
	done   chan error
}

// StartHeld starts bin with args in dir, its stderr a full pipe, and
// returns once the file dir/removed has been removed (watched with
// inotify), which the command does just before its first write on stderr.
// The test fails if the command ends first.
func StartHeld(t testing.TB, dir, removed, bin string, args ...string) *Held {
	t.Helper()
	watch, err := watchRemovals(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	h := &Held{t: t, done: make(chan error, 1)}
	w, err := h.fullPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd = exec.Command(bin, args...)
	h.cmd.Dir, h.cmd.Stdout, h.cmd.Stderr = dir, &h.stdout, w
	h.cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		if h.r != nil {
			h.Release()
		}
	})
	go func() { h.done <- h.cmd.Wait() }()
	names, stop := make(chan string), make(chan struct{})
	defer close(stop)
	go func() {
		defer close(names)
		buf := make([]byte, 4096)
		for {
			n, err := watch.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				// struct inotify_event: wd, mask, cookie, len, name.
				size := int(binary.NativeEndian.Uint32(buf[off+12:]))
				name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+size]
				select {
				case names <- strings.TrimRight(string(name), "\x00"):
				case <-stop:
					return
				}
				off += unix.SizeofInotifyEvent + size
			}
		}
	}()
	for {
		select {
		case name, ok := <-names:
			if !ok {
				t.Fatal("watching " + dir + " failed")
			}
			if name == filepath.Base(removed) {
				return h
			}
		case err := <-h.done:
			h.done <- err
			code, _, stderr := h.Release()
			t.Fatalf("%s ended (exit %d) before removing %s:\n%s", filepath.Base(bin), code, removed, stderr)
		}
	}
}

// fullPipe makes the pipe the command's stderr goes to and fills it, so
// that any write to it waits for a read. It returns the write end.
func (h *Held) fullPipe() (*os.File, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fds[1], true); err != nil {
		return nil, err
	}
	// Big writes, then single bytes for the last page's room.
	for _, size := range []int{4096, 1} {
		chunk := bytes.Repeat([]byte{'#'}, size)
		for {
			n, err := unix.Write(fds[1], chunk)
			if errors.Is(err, unix.EAGAIN) {
				break
			}
			if err != nil {
				return nil, err
			}
			h.filler += n
		}
	}
	if err := unix.SetNonblock(fds[1], false); err != nil {
		return nil, err
	}
	h.r = os.NewFile(uintptr(fds[0]), "stderr")
	return os.NewFile(uintptr(fds[1]), "stderr"), nil
}

// Release lets the command go on and waits for its end: its exit code,
// stdout, and what it wrote on stderr.
func (h *Held) Release() (code int, stdout, stderr string) {
	h.t.Helper()
	b, err := io.ReadAll(h.r)
	h.r.Close()
	h.r = nil
	if err != nil {
		h.t.Fatal(err)
	}
	err = <-h.done
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		h.t.Fatal(err)
	}
	return code, h.stdout.String(), string(b[min(h.filler, len(b)):])
}

// watchRemovals returns an inotify descriptor reporting the names removed
// from dir (or renamed away from it).
func watchRemovals(dir string) (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_DELETE|unix.IN_MOVED_FROM); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Non-blocking: read through the poller, and Close ends a read.
	return os.NewFile(uintptr(fd), "inotify"), nil
}
