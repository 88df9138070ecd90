package avb

import (
	"context"
	"io"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// The file-safety layer is internal/safefile; this glue gives its errors
// the kinds of verity.Error, which this package's errors are.

// fileErr returns an error of safefile as a *verity.Error of the same
// kind, with the same message and hint; other errors as they are.
func fileErr(err error) error {
	e, ok := err.(*safefile.Error)
	if !ok {
		return err
	}
	k := verity.KindIO
	switch e.Kind {
	case safefile.KindInput:
		k = verity.KindInput
	case safefile.KindRefused:
		k = verity.KindRefused
	}
	return &verity.Error{Kind: k, Err: e.Err, Hint: e.Hint}
}

// lockImage takes, without waiting, the exclusive lock the verity
// package's verbs take on a file they write: a file another process holds
// is a KindRefused error matching verity.ErrLocked. While f stays open,
// the verbs called on the same file use that lock instead of failing on
// it, so that AddHashtreeFooter, writing around verity.Format, keeps the
// image locked from its first write to its last.
func lockImage(f *os.File, path string) error {
	return fileErr(safefile.LockExclusive(f, "image", path))
}

func zeroRange(f *os.File, from, to uint64) error { return fileErr(safefile.ZeroRange(f, from, to)) }

// writeResumeRecord writes the record of a run of verb (avbtool's name) on
// a sparse image (see safefile.WriteResumeRecord).
func writeResumeRecord(f *os.File, at, origSize uint64, verb string) (uint64, error) {
	at, err := safefile.WriteResumeRecord(f, at, origSize, true, verb)
	return at, fileErr(err)
}

// outputFile is a small output (see safefile.OpenOutputFile) with errors
// of verity's kinds.
type outputFile struct{ f *safefile.OutputFile }

func openOutputFile(path, role, what string, ours func(head []byte) bool, force bool) (*outputFile, error) {
	f, err := safefile.OpenOutputFile(path, role, what, ours, force)
	if err != nil {
		return nil, fileErr(err)
	}
	return &outputFile{f}, nil
}

func (o *outputFile) Commit(data []byte) error { return fileErr(o.f.Commit(data)) }
func (o *outputFile) Abort()                   { o.f.Abort() }

// Writer is safefile.OutputFile.Writer, with errors of verity's kinds.
func (o *outputFile) Writer(ctx context.Context) io.Writer {
	w := o.f.Writer(ctx)
	return writerFunc(func(p []byte) (int, error) {
		n, err := w.Write(p)
		return n, fileErr(err)
	})
}

type writerFunc func(p []byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
