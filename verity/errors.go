package verity

import (
	"context"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"

	"github.com/veritytree/veritytree/merkle"
)

// Kind says what sort of failure an *Error is, so that a caller can tell
// its own mistakes from bad input and from a failing disk.
type Kind uint8

const (
	// KindParam: an option or argument is wrong or contradicts another;
	// Error.Field names the option.
	KindParam Kind = iota + 1
	// KindInput: an input file is not what the operation needs: not an
	// image or not a tree, malformed, too short, of the wrong type.
	KindInput
	// KindCorrupt: the data or the tree does not match the root hash.
	KindCorrupt
	// KindIO: reading or writing a file failed.
	KindIO
	// KindRefused: the operation would destroy something it was not given
	// to write (an output that does not look like one of ours), or a file
	// is locked by another process; for Activate and Deactivate, a device
	// of that name exists already, or is in use.
	KindRefused
	// KindUntrusted: a root hash signature does not verify, or not with a
	// trusted certificate.
	KindUntrusted
	// KindSystem: the system cannot do it: no device-mapper or loop
	// devices (another OS, a kernel without them), no root privileges, no
	// free loop device.
	KindSystem
	// KindCanceled: the run was stopped by its context. The error matches
	// the context's error (errors.Is(err, context.Canceled) or
	// context.DeadlineExceeded), never ErrIO, and says what was left.
	KindCanceled
)

// kindNames are the Kinds' names, as String gives them.
var kindNames = [...]string{
	KindParam:     "param",
	KindInput:     "input",
	KindCorrupt:   "corrupt",
	KindIO:        "io",
	KindRefused:   "refused",
	KindUntrusted: "untrusted",
	KindSystem:    "system",
	KindCanceled:  "canceled",
}

// String names the kind ("param", "input", "corrupt", "io", "refused",
// "untrusted", "system", "canceled"), Kind(N) for any other value, so that
// %v of a Kind (and of an *Error's fields) reads as a word.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Role is the part a file plays in an operation, as messages name it.
type Role string

// The roles of the files the verbs take.
const (
	RoleData Role = "DATA"
	RoleHash Role = "HASH"
	RoleFEC  Role = "FEC device"
)

// Sentinels for errors.Is: every *Error of a kind matches its sentinel.
var (
	ErrParam   = errors.New("verity: invalid parameter")
	ErrInput   = errors.New("verity: unusable input")
	ErrCorrupt = merkle.ErrCorrupt
	ErrIO      = errors.New("verity: I/O error")
	ErrRefused = errors.New("verity: refused")
	// ErrUntrusted matches KindUntrusted errors.
	ErrUntrusted = errors.New("verity: root hash signature not trusted")
	ErrSystem    = errors.New("verity: not possible on this system")
	// ErrLocked is a KindRefused error's cause when another process holds
	// a lock on a file the operation reads or writes.
	ErrLocked = safefile.ErrLocked
)

func (k Kind) sentinel() error {
	switch k {
	case KindParam:
		return ErrParam
	case KindInput:
		return ErrInput
	case KindCorrupt:
		return ErrCorrupt
	case KindIO:
		return ErrIO
	case KindRefused:
		return ErrRefused
	case KindUntrusted:
		return ErrUntrusted
	case KindSystem:
		return ErrSystem
	}
	return nil
}

// Error is the error of every operation of this package.
//
// Messages and hints name an option by its Go field, qualified by its
// struct ("FormatOptions.FECRoots 30 is not from 2 to 24", "add
// FormatOptions.Force"), and a value it could take as an assignment
// ("TreeOptions.HashOffset=4096"), so that a command line can say it as
// its flag; Field has the bare name. They name no command: where a
// command line would say "run it again", they say which verb to call.
type Error struct {
	Kind Kind
	// Field is the option a KindParam error is about, e.g. "FECOffset"
	// (or the KindSystem error of a RootHashSignature the kernel's keyring
	// did not take; with AdviceAgain, the option to set in the call that
	// finishes the run); "" when it is about several or none.
	Field string
	// Requires, for a KindParam error saying that Field is only taken
	// with another option, is that option's Go name ("Append").
	Requires string
	// Role and Path name the file the error is about, when it is about
	// opening, locking or checking the type of one (RoleHash and the path
	// given for it, say); "" otherwise.
	Role Role
	Path string
	// Err is the message (and cause).
	Err error
	// Hint, if not "", says what to do instead, one suggestion per line,
	// naming options as the message does.
	Hint string
	// Advice is what Hint advises, as a fact for a caller that words its
	// own hints (a command line naming itself, not Format); AdviceNone
	// when Hint says nothing of the kind.
	Advice Advice
	// Value is a number the hint's advice takes: with AdviceAgain and
	// Field, the value to give Field in the call that finishes the run
	// (FormatOptions.OriginalSize's); in the avb package's refusal to cut
	// an image whose footer disagrees with its descriptors
	// (ErrFooterMismatch, KindRefused), the original image size to put
	// back in the footer.
	Value uint64
	// DataPath, with AdviceSwapped, is the path given for DATA (Path is
	// the one given for HASH).
	DataPath string
	// Device, with AdviceDeactivate and AdviceDeactivateLeft, is the
	// device-mapper name to give Deactivate ("" when not known).
	Device string
}

// ForeignOutputError is the cause of Format's refusal (KindRefused) to
// replace an existing output, HASH or the FEC device, that is not
// something Format could have written: a filesystem or an image named
// there by mistake, say.
type ForeignOutputError struct {
	// Role is RoleHash or RoleFEC; Path, the path given for it.
	Role Role
	Path string
	// Reason says what it is instead, e.g. "an ext2/3/4 filesystem".
	Reason string
}

func (e *ForeignOutputError) Error() string {
	if e.Role == RoleFEC {
		return fmt.Sprintf("FormatOptions.FECDevice %s is not error correction Format could have written (%s): replacing it would destroy it", e.Path, e.Reason)
	}
	return fmt.Sprintf("%s %s is not a tree Format could have written (%s): replacing it would destroy it", e.Role, e.Path, e.Reason)
}

// Advice is what an error's hint advises doing next, as a fact.
type Advice uint8

const (
	// AdviceNone: nothing of the kinds below.
	AdviceNone Advice = iota
	// AdviceAgain: an interrupted Format left its output unfinished:
	// calling it again (with Field set to Value, when Field is not "")
	// finishes it.
	AdviceAgain
	// AdviceSwapped: Format refused to replace HASH (Path), which looks
	// like an image, while DATA (DataPath) looks like a tree: the two were
	// likely given the wrong way round.
	AdviceSwapped
	// AdviceAVB: Append refused DATA (Path), an AVB image: the avb
	// package's AddHashtreeFooter builds its tree and footer again, and
	// its EraseFooter cuts the footer off for a tree without AVB.
	AdviceAVB
	// AdviceAVBInterrupted: Append refused DATA (Path), which ends in the
	// provisional footer of an interrupted AddHashtreeFooter: calling that
	// again finishes it; EraseFooter cuts DATA back to its image.
	AdviceAVBInterrupted
	// AdviceVerifyAgain: Verify wrote the whole repair, then failed to
	// read it back: calling Verify again checks it.
	AdviceVerifyAgain
	// AdviceVerifyPartial: Verify failed while writing the repair, after
	// some blocks, each correct: calling Verify again shows what is left.
	AdviceVerifyPartial
	// AdviceDeactivate: Activate refused because a device-mapper device
	// of that name (Device) exists: Deactivate removes it, or another name
	// does not meet it.
	AdviceDeactivate
	// AdviceDeactivateLeft: Activate failed and could not undo all it had
	// done: Deactivate of Device removes what is left.
	AdviceDeactivateLeft
)

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrParam) (and the other sentinels) true for
// every *Error of that kind. An error that a context's end caused is not
// ErrIO, whatever its kind: it matches context.Canceled (or
// DeadlineExceeded) through its chain instead.
func (e *Error) Is(target error) bool {
	s := e.Kind.sentinel()
	if s == nil || target != s {
		return false
	}
	return s != ErrIO || !isContextEnd(e.Err)
}

// isContextEnd says whether err is, or wraps, a context's end.
func isContextEnd(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// errorf returns an *Error of kind k with a hint ("" for none). Errors of
// the standard library among args are worded as safefile.Cause words them.
func errorf(k Kind, hint, format string, args ...any) *Error {
	return &Error{Kind: k, Err: fmt.Errorf(format, causes(args)...), Hint: hint}
}

// causes returns args with each error in it as safefile.Cause words it.
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

// causedErrorf returns an *Error of kind k whose message is format's, and
// which matches cause (errors.Is, errors.As) without quoting it: a
// missing file's *fs.PathError behind "DATA x does not exist", say.
func causedErrorf(k Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: k, Err: &causedError{msg: fmt.Sprintf(format, args...), cause: cause}}
}

// paramErrorf returns a KindParam *Error about field.
func paramErrorf(field, hint, format string, args ...any) *Error {
	return &Error{Kind: KindParam, Field: field, Err: fmt.Errorf(format, args...), Hint: hint}
}

// withHint returns err as an *Error of kind k with hint, keeping its kind
// and field if it already is one.
func withHint(k Kind, err error, hint string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Kind: e.Kind, Field: e.Field, Err: err, Hint: hint}
	}
	return &Error{Kind: k, Err: err, Hint: hint}
}

// hintOf returns the hint of the first *Error in err's chain, or "".
func hintOf(err error) string {
	var e *Error
	for errors.As(err, &e) {
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}
