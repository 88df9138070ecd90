package verity

import (
	"errors"
	"io/fs"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
)

// The file-safety layer (replacing only what is ours, locks, atomic
// commit, block devices) is internal/safefile; what follows is the glue
// that gives its errors this package's kinds and keeps the names the
// verbs use.

// fileErr returns an error of safefile as this package's *Error of the
// same kind, with the same message and hint; other errors as they are.
func fileErr(err error) error {
	e, ok := err.(*safefile.Error)
	if !ok {
		return err
	}
	k := KindIO
	switch e.Kind {
	case safefile.KindInput:
		k = KindInput
	case safefile.KindRefused:
		k = KindRefused
	}
	return &Error{Kind: k, Err: e.Err, Hint: e.Hint}
}

// fileErrAbout is fileErr for an error about the file path of role.
func fileErrAbout(err error, role, path string) error {
	if e, ok := fileErr(err).(*Error); ok {
		e.Role, e.Path = Role(role), path
		return e
	}
	return err
}

func openImage(role, path string) (*os.File, int64, error) {
	f, size, err := safefile.OpenImage(role, path)
	return f, size, fileErrAbout(err, role, path)
}

func checkImageType(role, path string, mode fs.FileMode, use string) error {
	return fileErrAbout(safefile.CheckImageType(role, path, mode, use), role, path)
}

func lockShared(f *os.File, role, path string) error {
	return fileErrAbout(safefile.LockShared(f, role, path), role, path)
}

func lockExclusive(f *os.File, role, path string) error {
	return fileErrAbout(safefile.LockExclusive(f, role, path), role, path)
}

func checkNotLocked(role, path string) error {
	return fileErrAbout(safefile.CheckNotLocked(role, path), role, path)
}

func fileSize(f *os.File) (int64, error) { return safefile.FileSize(f) }

func isBlockDevice(info fs.FileInfo) bool { return safefile.IsBlockDevice(info) }

// unwrapPath drops the "op path:" prefix of a *fs.PathError, for messages
// that name the path themselves (see safefile.UnwrapPath).
func unwrapPath(err error) error { return safefile.UnwrapPath(err) }

func writeResumeRecord(f *os.File, at, origSize uint64, sparse bool) (uint64, error) {
	at, err := safefile.WriteResumeRecord(f, at, origSize, sparse, safefile.VerbAppend)
	return at, fileErr(err)
}

// output is a file a verb writes (see safefile.Output), with its errors
// of this package's kinds.
type output struct {
	s    *safefile.Output
	path string   // as the user named it, for messages
	f    *os.File // the file written: temporary, or in place
	tmp  string   // the temporary file's name, "" when written in place
}

func newOutput(s *safefile.Output, err error) (*output, error) {
	if err != nil {
		return nil, fileErr(err)
	}
	return &output{s: s, path: s.Path(), f: s.File(), tmp: s.Temp()}, nil
}

func openInPlace(path, role string) (*output, error) {
	return newOutput(safefile.OpenInPlace(path, role))
}

func openReplacement(path, role string, existing fs.FileInfo, keepFrom uint64, note func(string)) (*output, error) {
	return newOutput(safefile.OpenReplacement(path, role, existing, keepFrom, note))
}

func openCreatedInPlace(path, role string, created *[]string) (*output, error) {
	return newOutput(safefile.OpenCreatedInPlace(path, role, created))
}

// openSmallOutput opens a small output of Format's (see safefile.OpenSmall);
// a foreign file is replaced only with FormatOptions.Force.
func openSmallOutput(path, role, what string, foreign func(string, fs.FileInfo) string, force bool, note func(string)) (*output, error) {
	o, err := newOutput(safefile.OpenSmall(path, role, what, foreign, force, note))
	if e, ok := err.(*Error); ok && errors.Is(err, safefile.ErrForeign) {
		e.Hint = "name another file, or add FormatOptions.Force to replace it"
	}
	return o, err
}

func (o *output) size() (uint64, error) { return o.s.Size() }

func (o *output) checkDeviceRoom(role string, end uint64) error {
	return fileErr(o.s.CheckDeviceRoom(role, end))
}

func (o *output) zero(from, to uint64) error { return fileErr(o.s.Zero(from, to)) }
func (o *output) truncate(n uint64) error    { return fileErr(o.s.Truncate(n)) }
func (o *output) extend(n uint64) error      { return fileErr(o.s.Extend(n)) }
func (o *output) commit() error              { return fileErr(o.s.Commit()) }
func (o *output) abort()                     { o.s.Abort() }
func (o *output) writeAll(data []byte) error { return fileErr(o.s.WriteAll(data)) }
