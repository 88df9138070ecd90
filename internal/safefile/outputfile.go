package safefile

import (
	"context"
	"io"
	"io/fs"
	"os"
)

// MaxRecognized is how much of an existing output OpenOutputFile shows
// its caller's recognizer.
const MaxRecognized = 4096

// OutputFile is a small output (a vbmeta blob, a public key) opened by
// OpenOutputFile: checked and locked now, written by Commit.
type OutputFile struct{ o *Output }

// OpenOutputFile prepares a small output under the rules Format follows
// for its root hash file, so that naming the wrong file destroys nothing:
// an existing regular file (through symbolic links, which stay) will be
// replaced through a temporary file renamed when complete, and only if it
// is empty or ours recognizes its first bytes (up to 4 KiB) as something
// the caller could have written, unless force; a character device, a FIFO
// with a reader and the process's own descriptors (/dev/stdout,
// /proc/self/fd/N) are written through; a block device, a socket or a FIFO
// nobody reads is refused. Open every output before changing anything,
// then Commit each (or Abort). role names the output in errors (e.g.
// "--output_vbmeta_image"), what the kind of file it holds ("a vbmeta
// image").
func OpenOutputFile(path, role, what string, ours func(head []byte) bool, force bool) (*OutputFile, error) {
	o, err := OpenSmall(path, role, what, ForeignUnless(ours), force, nil)
	if err != nil {
		return nil, err
	}
	return &OutputFile{o: o}, nil
}

// ForeignUnless returns an OpenSmall check that takes an existing
// file for ours if it is empty or ours recognizes its first 4 KiB.
func ForeignUnless(ours func(head []byte) bool) func(string, fs.FileInfo) string {
	return func(path string, info fs.FileInfo) string {
		if info.Size() == 0 {
			return ""
		}
		f, err := os.Open(path)
		if err != nil {
			return "it cannot be read: " + unwrapPath(err).Error()
		}
		defer f.Close()
		head, err := io.ReadAll(io.LimitReader(f, MaxRecognized))
		if err != nil {
			return "it cannot be read: " + unwrapPath(err).Error()
		}
		if ours == nil || !ours(head) {
			return "its content is not recognized"
		}
		return ""
	}
}

// Commit writes data and puts it in place.
func (f *OutputFile) Commit(data []byte) error { return f.o.WriteAll(data) }

// Writer returns a writer for an output too large to hold in memory (the
// text of a million descriptors): what it writes goes into the temporary
// file, or through the device or FIFO, whose reader it waits for (until
// ctx ends); Commit(nil) then puts it in place. A failed write aborts the
// output.
func (f *OutputFile) Writer(ctx context.Context) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if err := f.o.WriteStream(ctx, p); err != nil {
			f.o.Abort()
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// Abort gives up the output: the file stays as it was. After Commit it
// does nothing.
func (f *OutputFile) Abort() {
	if f != nil {
		f.o.Abort()
	}
}
