//go:build linux

package safefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

func TestReadSmallRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadSmall(context.Background(), p, 3)
	if err != nil || string(b) != "abc" {
		t.Fatalf("got %q, %v", b, err)
	}
	_, err = ReadSmall(context.Background(), p, 2)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 2 bytes") {
		t.Fatalf("a file over the limit: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSmall(context.Background(), empty, 0); err != nil || len(b) != 0 {
		t.Fatalf("empty file: %q, %v", b, err)
	}
}

func TestReadSmallRefuses(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadSmall(context.Background(), filepath.Join(dir, "none"), 10)
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := ReadSmall(context.Background(), dir, 10); !errors.Is(err, ErrNotFile) || Message(err) != "is a directory, not a file" {
		t.Fatalf("directory: %v", err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := ReadSmall(context.Background(), sock, 10); !errors.Is(err, ErrNotFile) || !strings.Contains(err.Error(), "socket") {
		t.Fatalf("socket: %v", err)
	}
}

// Devices read as files, under the limit: /dev/zero never ends.
func TestReadSmallCharDevices(t *testing.T) {
	if b, err := ReadSmall(context.Background(), "/dev/null", 10); err != nil || len(b) != 0 {
		t.Fatalf("/dev/null: %q, %v", b, err)
	}
	if _, err := ReadSmall(context.Background(), "/dev/zero", 100000); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// A pipe (what bash's <(...) gives) is read to its end.
func TestReadSmallPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := bytes.Repeat([]byte("0123456789"), 2000) // more than a page
	go func() {
		w.Write(want)
		w.Close()
	}()
	b, err := ReadSmall(context.Background(), fmt.Sprintf("/proc/self/fd/%d", r.Fd()), len(want))
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("got %d bytes, %v", len(b), err)
	}
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// openedHere reports whether this process has path open.
func openedHere(path string) bool {
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			return true
		}
	}
	return false
}

// A FIFO nobody writes to: the read waits, in no open(2), until the
// context ends.
func TestReadSmallFIFOWithoutWriterEndsWithContext(t *testing.T) {
	p := mkfifo(t)
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := ReadSmall(ctx, p, 100)
		done <- result{b, err}
	}()
	// Once the FIFO is open here the reader waits past open(2).
	for !openedHere(p) {
		select {
		case r := <-done:
			t.Fatalf("returned without a writer: %q, %v", r.b, r.err)
		default:
			runtime.Gosched()
		}
	}
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %q, %v; want context.Canceled", r.b, r.err)
	}
}

// A FIFO's writer that comes later, writes and leaves: all of it is read;
// one that writes nothing gives an empty input.
func TestReadSmallFIFOWriter(t *testing.T) {
	for _, data := range []string{"abc" + strings.Repeat("x", 70000), ""} {
		p := mkfifo(t)
		testtool.FeedFIFO(t, p, []byte(data))
		b, err := ReadSmall(context.Background(), p, 1<<20)
		if err != nil || string(b) != data {
			t.Fatalf("got %d bytes, %v; want %d", len(b), err, len(data))
		}
	}
}

// The same with another process as writer, as a shell's
// "echo ... > fifo" is.
func TestReadSmallFIFOOtherProcess(t *testing.T) {
	p := mkfifo(t)
	cmd := exec.Command("sh", "-c", `printf 'abcd\n' > "$0"`, p)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if b, err := ReadSmall(context.Background(), p, 100); err != nil || string(b) != "abcd\n" {
		t.Fatalf("got %q, %v", b, err)
	}
}

// A writer that comes, writes and goes between the reader's empty read
// and its poll (the poll then reports a hang-up): what it wrote is read.
// Taking the hang-up for the end lost it (one run in a few hundred).
func TestReadSmallFIFOWriterBetweenReadAndPoll(t *testing.T) {
	p := mkfifo(t)
	wrote := false
	afterEmptyRead = func() {
		if wrote {
			return
		}
		wrote = true
		fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Errorf("opening the writer: %v", err)
			return
		}
		syscall.Write(fd, []byte("abc"))
		syscall.Close(fd)
	}
	defer func() { afterEmptyRead = nil }()
	b, err := ReadSmall(context.Background(), p, 100)
	if err != nil || string(b) != "abc" || !wrote {
		t.Fatalf("got %q, %v (writer came: %v); want \"abc\"", b, err, wrote)
	}
}

// A FIFO that gives more than the limit is refused once past it, without
// waiting for its end.
func TestReadSmallFIFOOverLimit(t *testing.T) {
	p := mkfifo(t)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		if w := testtool.OpenFIFOWriter(p, stop); w != nil {
			defer w.Close()
			w.Write(make([]byte, 200))
			<-stop // the writer stays: only the limit ends the read
		}
	}()
	if _, err := ReadSmall(context.Background(), p, 100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestReadSmallContextDoneFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadSmall(ctx, "/dev/null", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// TestContextWriter: writes go through until the context ends, then fail
// with its error, writing nothing.
func TestContextWriter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	w := ContextWriter(ctx, &buf)
	if n, err := w.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("before the end: %d, %v", n, err)
	}
	cancel()
	if n, err := w.Write([]byte("def")); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("after the end: %d, %v; want 0, context.Canceled", n, err)
	}
	if buf.String() != "abc" {
		t.Errorf("wrote %q, want %q", buf.String(), "abc")
	}
}
