// Package safefile reads the small inputs of the commands and of the
// library (keys, property files, root hash files, public key metadata,
// chained partitions' keys) in one way: bounded in size, never waiting
// uninterruptibly, and with errors that say what the file is.
//
// A small input may be a regular file, a pipe or FIFO (bash's
// <(cat key.pem), mkfifo) or a character device (/dev/stdin on a
// terminal). A FIFO nobody writes to yet must not block its reader in
// open(2), where no signal ends the wait: on Linux the file is opened
// without blocking and its data is waited for in the Go poller, which the
// context ends; elsewhere the open and the reads run on a goroutine left
// behind when the context ends (the process is about to exit then).
//
// Errors are *fs.PathError values, so that errors.Is(err, fs.ErrNotExist)
// and errors.Is(err, context.Canceled) work; their Err says what is wrong
// in words a caller can print after the path: "is a directory, not a
// file", "is larger than 4096 bytes".
package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

var (
	// ErrTooLarge: the input holds more than the limit given (it is read
	// no further). Matched with errors.Is; the message gives the limit.
	ErrTooLarge = errors.New("larger than the limit")
	// ErrNotFile: the input is a directory, a socket, a block device or
	// something else that is not a file, a pipe or a character device.
	ErrNotFile = errors.New("not a file")
	// ErrForeign: an existing output does not look like what the caller
	// writes there, and replacing it was not forced. The hint names the
	// command lines' --force; a caller with its own name for forcing
	// gives its own hint.
	ErrForeign = errors.New("not an output of ours")
)

// tooLarge is ErrTooLarge with the limit, for the message.
type tooLarge struct{ limit int }

func (e tooLarge) Error() string        { return fmt.Sprintf("is larger than %d bytes", e.limit) }
func (e tooLarge) Is(target error) bool { return target == ErrTooLarge }

// notFile is ErrNotFile with what the input is instead.
type notFile struct{ what string }

func (e notFile) Error() string        { return "is " + e.what + ", not a file" }
func (e notFile) Is(target error) bool { return target == ErrNotFile }

// ReadSmall returns the whole content of the small input at path, at most
// limit bytes: more is ErrTooLarge, read no further than limit+1 bytes (it
// may be /dev/zero, or an image named by mistake). It waits for a pipe's or
// a FIFO's writer and data until ctx ends, and then returns ctx's error
// (wrapped in an *fs.PathError).
func ReadSmall(ctx context.Context, path string, limit int) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	if err := ctx.Err(); err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	// Stat first: a socket or a device that is not a small input is not
	// even opened (opening some has side effects).
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkType(path, info.Mode()); err != nil {
		return nil, err
	}
	return readSmall(ctx, path, limit)
}

// checkType refuses what a small input cannot be.
func checkType(path string, mode fs.FileMode) error {
	what := ""
	switch {
	case mode.IsRegular(), mode&fs.ModeNamedPipe != 0, mode&fs.ModeCharDevice != 0:
		return nil
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a block device"
	default:
		what = "a special file"
	}
	return &fs.PathError{Op: "open", Path: path, Err: notFile{what}}
}

// Message returns what err says about the input without the operation and
// the path of its *fs.PathError ("is a directory, not a file"; "no such
// file or directory"), for messages that name the input themselves.
func Message(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// interrupted is the error of a wait that a context ended: in our words,
// matching the context's error.
type interrupted struct {
	msg   string
	cause error
}

func (e *interrupted) Error() string { return e.msg }
func (e *interrupted) Unwrap() error { return e.cause }

// Interrupted returns the error of a wait for the input what (e.g. "key
// k.pem") that ctx ended: "interrupted while waiting for key k.pem", which
// matches ctx's error (context.Canceled).
func Interrupted(ctx context.Context, what string) error {
	return &interrupted{msg: "interrupted while waiting for " + what, cause: ctx.Err()}
}

// ContextWriter is w, its writes failing with ctx's error once ctx ends:
// a long output (a sparse image's chunks copied, the text of a million
// descriptors) stops on Ctrl-C.
func ContextWriter(ctx context.Context, w io.Writer) io.Writer { return ctxWriter{ctx, w} }

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
