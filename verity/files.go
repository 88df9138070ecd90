package verity

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
)

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
		e := errorf(KindInput, "", "%s %s shrank to %d bytes while being read (it was %d bytes): is another program writing it?",
			g.role, g.path, now, g.size)
		e.Role, e.Path = Role(g.role), g.path
		return n, e
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
