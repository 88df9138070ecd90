package avb

import (
	"errors"
	"fmt"

	"github.com/veritytree/veritytree/internal/safefile"

	"github.com/veritytree/veritytree/verity"
)

// Errors are *verity.Error values, so that callers (and the commands'
// reporting) treat this package as they treat verity: errors.Is works with
// verity.ErrParam, ErrInput, ErrCorrupt, ErrIO, and with these sentinels.
var (
	// ErrMalformed is the cause of every error about a footer, vbmeta
	// blob, descriptor or public key that does not parse: sizes beyond
	// the data, overlapping offsets, lengths that overflow.
	ErrMalformed = errors.New("malformed AVB data")
	// ErrNoFooter: the image does not end in an AVB footer.
	ErrNoFooter = errors.New("no AVB footer")
	// ErrNotAVB: a file of at least a footer's size with neither an AVB
	// footer at its end nor a vbmeta blob at its start (an input error;
	// a shorter one is refused in the same words without it).
	ErrNotAVB = errors.New("no AVB footer and no vbmeta blob at the start")
	// ErrNoHashtree: the image's vbmeta has no hashtree descriptor where
	// one is needed (erasing a footer but keeping the tree, the rootfs
	// command lines of an image).
	ErrNoHashtree = errors.New("no hashtree descriptor")
	// ErrSignature: a vbmeta blob's hash or signature does not verify.
	ErrSignature = errors.New("vbmeta signature does not verify")
)

func malformed(format string, args ...any) error {
	return &verity.Error{Kind: verity.KindInput, Err: fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, causes(args)...)...)}
}

func paramErr(field, hint, format string, args ...any) error {
	return &verity.Error{Kind: verity.KindParam, Field: field, Hint: hint, Err: fmt.Errorf(format, causes(args)...)}
}

func inputErr(hint, format string, args ...any) error {
	return &verity.Error{Kind: verity.KindInput, Hint: hint, Err: fmt.Errorf(format, causes(args)...)}
}

func ioErr(format string, args ...any) error {
	return &verity.Error{Kind: verity.KindIO, Err: fmt.Errorf(format, causes(args)...)}
}

// causes returns args with each error in it as safefile.Cause words it: no
// Go "op path:" prefix, an early end of the file in our words.
func causes(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok {
			a = safefile.Cause(err)
		}
		out[i] = a
	}
	return out
}

// inputCause returns a KindInput error whose message is ours alone, for a
// failure of the standard library (x509, hex, strconv) whose own text is
// Go's, not the user's; the cause stays wrapped for errors.Is and As.
func inputCause(cause error, hint, format string, args ...any) error {
	return &verity.Error{Kind: verity.KindInput, Hint: hint, Err: &causedError{msg: fmt.Sprintf(format, args...), cause: cause}}
}

// causedError is a message that matches its cause without quoting it.
type causedError struct {
	msg   string
	cause error
}

func (e *causedError) Error() string { return e.msg }
func (e *causedError) Unwrap() error { return e.cause }
