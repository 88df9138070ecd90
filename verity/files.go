package verity

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/internal/safefile"
)

// openImage opens an image for reading, locked shared (see lockShared),
// and returns its size (a block device's from the BLKGETSIZE64 ioctl, see
// Size); role names it in errors ("DATA", "HASH"). Only regular files and block devices are accepted: an
// image is read at any offset, and a FIFO, socket or character device
// cannot be, while opening some of them would wait for a writer forever.
func openImage(role, path string) (*os.File, int64, error) {
	// Stat first, so that a device that is not an image is not even
	// opened (opening some has side effects).
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, openError(role, path, err)
	}
	if err := checkImageType(role, path, info.Mode(), "read"); err != nil {
		return nil, 0, err
	}
	// O_NONBLOCK: should path have become a FIFO since the Stat, the open
	// must not wait for a writer; the type is checked again on the open
	// file below.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, openError(role, path, &fs.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, errorf(KindIO, "", "%s %s: %v", role, path, err)
	}
	if err := checkImageType(role, path, fileMode(st.Mode), "read"); err != nil {
		unix.Close(fd)
		return nil, 0, err
	}
	// Reads of files and block devices never return EAGAIN, but os.NewFile
	// would treat a non-blocking descriptor as one for the poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, 0, errorf(KindIO, "", "%s %s: %v", role, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	// Shared, before anything is read: while a writer holds the file, a
	// reader fails at once saying so, rather than reading a half-written
	// file and calling it something else (no footer, no superblock).
	if err := lockShared(f, role, path); err != nil {
		f.Close()
		return nil, 0, err
	}
	size, err := fileSize(f)
	if err != nil {
		f.Close()
		return nil, 0, errorf(KindIO, "", "%s %s: %v", role, path, unwrapPath(err))
	}
	return f, size, nil
}

func openError(role, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return causedErrorf(KindInput, err, "%s %s does not exist", role, path)
	}
	return errorf(KindIO, "", "cannot open %s %s: %v", role, path, unwrapPath(err))
}

// checkImageType refuses what cannot hold an image read or written at any
// offset: anything but a regular file or a block device. use says what is
// done with it: "read", "written", "read and written".
func checkImageType(role, path string, mode fs.FileMode, use string) error {
	if mode.IsRegular() || mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0 {
		return nil
	}
	if mode.IsDir() {
		return errorf(KindInput, "give the image file, not its directory", "%s %s is a directory", role, path)
	}
	what := "a special file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	}
	hint := "write it to a file first, and give that file"
	if use != "read" {
		hint = "name a file or a block device"
	}
	return errorf(KindInput, hint, "%s %s is %s: it must be a file or a block device, to be %s at any offset", role, path, what, use)
}

// fileMode converts a stat(2) st_mode to an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	default:
		mode |= fs.ModeIrregular
	}
	return mode
}

// unwrapPath drops the "op path:" prefix of a *fs.PathError, for messages
// that name the path themselves, and words what is left as Cause does.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return Cause(pe)
	}
	return Cause(err)
}

// Cause returns err, an error of the standard library's file operations,
// as the cause of a message of ours that names the file and says what was
// being done: without Go's "op path:" (*fs.PathError) or "syscall:"
// (*os.SyscallError) prefix, the system's own text (e.g. "no space left on
// device") kept, and an early end of the file or an offset past 2^63 in
// our words. errors.Is and As still find the original. Other errors (ours)
// are returned as they are.
func Cause(err error) error {
	orig := err
	var se *os.SyscallError
	if pe, ok := err.(*fs.PathError); ok {
		err = pe.Err
	} else if errors.As(err, &se) && se == err {
		err = se.Err
	}
	switch {
	case err == io.EOF, err == io.ErrUnexpectedEOF:
		return &causedError{msg: "the file ends before the bytes to read", cause: orig}
	case err != nil && err.Error() == "negative offset":
		return &causedError{msg: "an offset past 2^63, beyond any file", cause: orig}
	case err != orig:
		return &causedError{msg: err.Error(), cause: orig}
	}
	return err
}

// readSmallFile reads all of a small file through safefile.ReadSmall: a
// file of more than limit bytes is refused (safefile.ErrTooLarge) without
// reading the rest (it may be /dev/zero, or an image named by mistake);
// path may be a pipe (bash's <(...)) or a FIFO, whose wait for a writer
// ctx ends (with ctx's error). role names it in errors.
func readSmallFile(ctx context.Context, role, path string, limit int) ([]byte, error) {
	b, err := safefile.ReadSmall(ctx, path, limit)
	switch {
	case err == nil:
		return b, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, safefile.Interrupted(ctx, role+" "+path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, err
	case errors.Is(err, safefile.ErrNotFile):
		return nil, errorf(KindInput, "", "%s %s %s", role, path, safefile.Message(err))
	}
	return nil, errorf(KindIO, "", "reading %s %s: %s", role, path, safefile.Message(err))
}

// shrinkGuard reads an image that was size bytes when opened, and calls a
// read that ends early before that size what it is: the file shrank while
// being read. Without it the user would see only where the failed read
// was, not why.
type shrinkGuard struct {
	f          *os.File
	role, path string
	size       int64
}

// guardShrink returns f as an io.ReaderAt whose reads ending early inside
// the size it had when opened fail with an error that gives the size it
// shrank to.
func guardShrink(f *os.File, role, path string, size int64) io.ReaderAt {
	return &shrinkGuard{f: f, role: role, path: path, size: size}
}

func (g *shrinkGuard) ReadAt(p []byte, off int64) (int, error) {
	n, err := g.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		// A failing disk, say: named as the user named the file, not as
		// Go's "read PATH:".
		return n, errorf(KindIO, "", "reading %s %s at byte %d: %w", g.role, g.path, off, unwrapPath(err))
	}
	if n < len(p) && (err == nil || err == io.EOF) && off+int64(n) < g.size {
		now, serr := fileSize(g.f)
		if serr != nil || now >= g.size {
			// Not smaller now (truncated and grown again?): the end of the
			// read is all there is to tell.
			now = off + int64(n)
		}
		return n, errorf(KindInput, "", "%s %s shrank to %d bytes while being read (it was %d bytes): is another program writing it?",
			g.role, g.path, now, g.size)
	}
	return n, err
}

// fileIO reads and writes an output's file, its errors naming the file as
// the user named it (not a temporary file's name, nor Go's "write PATH:"),
// with the offset. An early end of a read is io.EOF, as for the file.
type fileIO struct {
	f          *os.File
	role, path string
}

func (o *output) io(role string) *fileIO { return &fileIO{f: o.f, role: role, path: o.path} }

func (w *fileIO) WriteAt(p []byte, off int64) (int, error) {
	n, err := w.f.WriteAt(p, off)
	if err != nil {
		err = errorf(KindIO, "", "writing %s %s at byte %d: %w", w.role, w.path, off, unwrapPath(err))
	}
	return n, err
}

func (w *fileIO) ReadAt(p []byte, off int64) (int, error) {
	n, err := w.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		err = errorf(KindIO, "", "reading %s %s at byte %d: %w", w.role, w.path, off, unwrapPath(err))
	}
	return n, err
}
