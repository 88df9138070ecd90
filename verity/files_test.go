package verity

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/internal/testtool"
)

// within runs f and fails the test if it has not returned in 30 s: what it
// tests is that f does not wait forever.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still waiting after 30 s", what)
		panic("unreachable")
	}
}

// TestOpenImageRefusesSpecialFiles: an image is read at any offset; a
// FIFO (which, without a writer, made open wait forever), a socket and a
// character device are refused at once with one clear line.
func TestOpenImageRefusesSpecialFiles(t *testing.T) {
	fifo := testtool.MkFIFO(t, t.TempDir(), "fifo")
	sock := filepath.Join(t.TempDir(), "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct{ path, want, hint string }{
		{fifo, "DATA " + fifo + " is a FIFO (named pipe): it must be a file or a block device, to be read at any offset",
			"write it to a file first, and give that file"},
		{sock, "DATA " + sock + " is a socket: it must be a file or a block device, to be read at any offset", ""},
		{"/dev/zero", "DATA /dev/zero is a character device: it must be a file or a block device, to be read at any offset", ""},
		{t.TempDir(), " is a directory", "give the image file, not its directory"},
		{filepath.Join(t.TempDir(), "none"), " does not exist", ""},
	} {
		err := within(t, "openImage("+c.path+")", func() error {
			f, _, err := openImage("DATA", c.path)
			if err == nil {
				f.Close()
			}
			return err
		})
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) || c.hint != "" && e.Hint != c.hint {
			t.Errorf("openImage(%s) = %v (hint %q), want an error with %q (hint %q)", c.path, err, hintOf(err), c.want, c.hint)
		}
	}
}

// TestOpenImageRegularFile: a regular file opens as before, in blocking
// mode, with its size.
func TestOpenImageRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, make([]byte, 12345), 0o600); err != nil {
		t.Fatal(err)
	}
	f, size, err := openImage("DATA", path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size != 12345 {
		t.Errorf("size %d, want 12345", size)
	}
	flags, err := fcntlFlags(f)
	if err != nil {
		t.Fatal(err)
	}
	if flags&syscall.O_NONBLOCK != 0 {
		t.Error("the image is left open with O_NONBLOCK")
	}
	b := make([]byte, 10)
	if n, err := f.ReadAt(b, 12340); n != 5 {
		t.Errorf("ReadAt at 12340: %d bytes, %v; want 5", n, err)
	}
}

func fcntlFlags(f *os.File) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// TestReadSmallFile: --root-hash-file is read with a limit (/dev/zero made
// veritycheck run out of memory), from a file, a char device or a FIFO,
// and a FIFO without a writer waits only until ctx ends.
func TestReadSmallFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("a", n)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	if b, err := readSmallFile(ctx, "--root-hash-file", write("exact", 4096), 4096); err != nil || len(b) != 4096 {
		t.Errorf("4096-byte file, limit 4096: %d bytes, %v", len(b), err)
	}
	for _, p := range []string{write("over", 4097), "/dev/zero"} {
		err := within(t, "readSmallFile("+p+")", func() error {
			_, err := readSmallFile(ctx, "--root-hash-file", p, 4096)
			return err
		})
		if !errors.Is(err, safefile.ErrTooLarge) {
			t.Errorf("readSmallFile(%s): %v, want safefile.ErrTooLarge", p, err)
		}
	}
	if _, err := readSmallFile(ctx, "--root-hash-file", dir, 4096); err == nil || err.Error() != "--root-hash-file "+dir+" is a directory, not a file" {
		t.Errorf("directory: %v", err)
	}
	if _, err := readSmallFile(ctx, "--root-hash-file", filepath.Join(dir, "none"), 4096); err == nil || err.Error() != "reading --root-hash-file "+filepath.Join(dir, "none")+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}

	// A FIFO with a writer: read to its end (bash's <(cat root.hex)).
	fifo := testtool.MkFIFO(t, t.TempDir(), "written")
	testtool.FeedFIFO(t, fifo, []byte("abcd\n"))
	got := within(t, "reading a FIFO", func() string {
		b, err := readSmallFile(ctx, "--root-hash-file", fifo, 4096)
		if err != nil {
			return err.Error()
		}
		return string(b)
	})
	if got != "abcd\n" {
		t.Errorf("FIFO with a writer: got %q, want \"abcd\\n\"", got)
	}

	// A FIFO without a writer: the wait ends with ctx.
	fifo = testtool.MkFIFO(t, t.TempDir(), "no-writer")
	cctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() {
		_, err := readSmallFile(cctx, "--root-hash-file", fifo, 4096)
		res <- err
	}()
	cancel()
	if err := within(t, "readSmallFile of a FIFO without a writer, canceled", func() error { return <-res }); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled wait for a writer: %v, want context.Canceled", err)
	}
	// Let the goroutine left waiting in open end.
	if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}

// TestGuardShrink: a read that ends early inside the size DATA had gives
// the size it shrank to, not the offset of the read.
func TestGuardShrink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, make([]byte, 65536), 0o600); err != nil {
		t.Fatal(err)
	}
	f, size, err := openImage("DATA", path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := guardShrink(f, "DATA", path, size)
	b := make([]byte, 4096)
	if n, err := r.ReadAt(b, 61440); n != 4096 || err != nil {
		t.Fatalf("read before the shrink: %d, %v", n, err)
	}
	if err := os.Truncate(path, 10000); err != nil {
		t.Fatal(err)
	}
	want := "DATA " + path + " shrank to 10000 bytes while being read (it was 65536 bytes): is another program writing it?"
	for _, off := range []int64{8192, 32768} {
		if _, err := r.ReadAt(b, off); err == nil || err.Error() != want {
			t.Errorf("read at %d after the shrink: %v\nwant %s", off, err, want)
		}
	}
	// Past the size it had, a short read is the caller's to judge.
	if n, err := r.ReadAt(b, 65536); n != 0 || err == nil || err.Error() != "EOF" {
		t.Errorf("read past the original end: %d, %v; want 0, EOF", n, err)
	}
}

func TestCheckHashOffset(t *testing.T) {
	for _, c := range []struct {
		off  uint64
		hbs  int
		want string
	}{
		{0, 4096, ""},
		{9223372036854771200, 4096, ""},
		{9223372036854771712, 4096, "TreeOptions.HashOffset 9223372036854771712 is too large: at most 9223372036854771200"},
		{18446744073709551104, 512, "TreeOptions.HashOffset 18446744073709551104 is too large: at most 9223372036854774784"},
		{1000, 4096, "TreeOptions.HashOffset 1000 is not a multiple of 512"},
	} {
		err := checkHashOffset(c.off, c.hbs)
		if got := fmtErr(err); got != c.want {
			t.Errorf("checkHashOffset(%d, %d) = %q, want %q", c.off, c.hbs, got, c.want)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCause: the standard library's file errors as the cause of a message
// of ours: no "op path:", an early end and an offset past 2^63 in words,
// the system's own text kept, and errors.Is still finding the original.
func TestCause(t *testing.T) {
	ours := errorf(KindInput, "", "ours")
	for _, c := range []struct {
		err  error
		want string
		is   error
	}{
		{&fs.PathError{Op: "write", Path: "/x/.h.tmp0123456789ab", Err: syscall.ENOSPC}, "no space left on device", syscall.ENOSPC},
		{&fs.PathError{Op: "open", Path: "k.pem", Err: syscall.ENOENT}, "no such file or directory", fs.ErrNotExist},
		{os.NewSyscallError("flock", syscall.EBADF), "bad file descriptor", syscall.EBADF},
		{io.EOF, "the file ends before the bytes to read", io.EOF},
		{io.ErrUnexpectedEOF, "the file ends before the bytes to read", io.ErrUnexpectedEOF},
		{&fs.PathError{Op: "readat", Path: "h", Err: errors.New("negative offset")}, "an offset past 2^63, beyond any file", nil},
		{ours, "ours", ErrInput},
	} {
		got := safefile.Cause(c.err)
		if got.Error() != c.want || c.is != nil && !errors.Is(got, c.is) {
			t.Errorf("Cause(%q) = %q (errors.Is %v: %v), want %q", c.err, got, c.is, errors.Is(got, c.is), c.want)
		}
	}
	if safefile.Cause(ours) != error(ours) {
		t.Error("an error of ours was rewrapped")
	}
	// errorf words every error among its arguments so.
	if got := errorf(KindIO, "", "writing HASH h: %v", &fs.PathError{Op: "write", Path: "/x/.h.tmp0", Err: syscall.EIO}).Error(); got != "writing HASH h: input/output error" {
		t.Errorf("errorf: %q", got)
	}
}

// TestOutputIOErrors: an output's write or read fails with the file named
// as the user named it and the offset, not Go's "write PATH:" with a
// temporary file's name.
func TestOutputIOErrors(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	o := &output{path: "small/h", f: f, tmp: "small/.h.tmp0123456789ab"}
	_, err = o.io("HASH").WriteAt(make([]byte, 4096), 8192)
	if want := "writing HASH small/h at byte 8192: no space left on device"; err == nil || err.Error() != want || !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrIO) {
		t.Errorf("got %v, want %q (ENOSPC, ErrIO)", err, want)
	}
	_, err = o.io("HASH").ReadAt(make([]byte, 16), 0)
	if want := "reading HASH small/h at byte 0: bad file descriptor"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
