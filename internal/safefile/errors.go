package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Kind says what sort of failure an *Error is; the verity package turns it
// into its own Kind of the same name (verity.KindInput, KindIO,
// KindRefused), and so do the callers that return verity errors.
type Kind uint8

const (
	// KindInput: a file is not what the operation needs (a directory, a
	// FIFO where an image belongs, a block device too small).
	KindInput Kind = iota + 1
	// KindIO: reading or writing a file failed.
	KindIO
	// KindRefused: writing would destroy something that is not ours, or
	// another process holds the file's lock.
	KindRefused
)

// foreignError is the cause of a refusal of an output that exists and is
// not what the caller writes: its message, matching ErrForeign.
type foreignError struct{ error }

func (e foreignError) Is(target error) bool { return target == ErrForeign }

// ErrLocked is a KindRefused error's cause when another process holds a
// lock on a file the operation reads or writes.
var ErrLocked = errors.New("locked by another process")

// Error is the error of the file operations of this package that name the
// file themselves: a message in our words, its kind, and what to do
// instead (Hint, one suggestion per line; "" for none).
type Error struct {
	Kind Kind
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// errorf returns an *Error of kind k with a hint ("" for none). Errors of
// the standard library among args are worded as Cause words them.
func errorf(k Kind, hint, format string, args ...any) *Error {
	out := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok {
			a = Cause(err)
		}
		out[i] = a
	}
	return &Error{Kind: k, Err: fmt.Errorf(format, out...), Hint: hint}
}

// HintOf returns the hint of the first *Error in err's chain that has one,
// or "".
func HintOf(err error) string {
	var e *Error
	for errors.As(err, &e) {
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
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

// causedError is a message of ours in place of an error it keeps for
// errors.Is and As.
type causedError struct {
	msg   string
	cause error
}

func (e *causedError) Error() string { return e.msg }
func (e *causedError) Unwrap() error { return e.cause }

// UnwrapPath drops the "op path:" prefix of a *fs.PathError, for messages
// that name the path themselves, and words what is left as Cause does.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return Cause(pe)
	}
	return Cause(err)
}

// unwrapPath is UnwrapPath, for this package's messages.
func unwrapPath(err error) error { return UnwrapPath(err) }

// ReadFullAt reads len(b) bytes of r at off; an early end is an error
// (io.ErrUnexpectedEOF), and the error names the bytes and the offset.
func ReadFullAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading %d bytes at byte %d: %w", len(b), off, Cause(err))
}
