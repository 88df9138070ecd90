// Package cli holds what veritygen and veritycheck share: exit codes, error
// and hint printing, the tree-parameter flags, and the progress bar.
package cli

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// Exit codes, the same for both commands.
const (
	ExitOK = 0
	// ExitCorrupt: the data is not as the root hash says (checker only).
	ExitCorrupt = 1
	// ExitError: anything else, bad usage or an I/O error.
	ExitError = 2
)

// Error is an error to show the user, with an optional hint saying what to
// type instead.
type Error struct {
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a message and a hint ("" for none).
func Errorf(hint, format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...), Hint: hint}
}

// WithHint adds a hint to err.
func WithHint(err error, hint string) error {
	return &Error{Err: err, Hint: hint}
}

// Report prints err as "prog: error: ..." and its hint, if any, to w.
func Report(w io.Writer, prog string, err error) {
	fmt.Fprintf(w, "%s: error: %s\n", prog, Flags.Message(err))
	if hint := errorHint(err); hint != "" {
		for _, line := range strings.Split(hint, "\n") {
			fmt.Fprintf(w, "%s: hint: %s\n", prog, line)
		}
	}
}

// errorHint returns the hint of the first *Error in err's chain, or else that
// of a *verity.Error (the library's errors carry their own hints), or of
// the file-safety layer's (an output a command opens itself).
func errorHint(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return Flags.Say(e.Hint)
	}
	if h := avbHint(err); h != "" {
		return h
	}
	if h := verifyAdvice(err); h != "" {
		return h
	}
	if h := deviceAdvice(err); h != "" {
		return h
	}
	if h := LibraryHint(err); h != "" {
		return Flags.Say(h)
	}
	return safefile.HintOf(err)
}

// verifyAdvice words the library's advice to call Verify again (the
// repairs of veritycheck, plain or AVB) as running veritycheck; "" for
// any other error.
func verifyAdvice(err error) string {
	var e *verity.Error
	for inner := err; errors.As(inner, &e); inner = e.Err {
		switch e.Advice {
		case verity.AdviceVerifyAgain:
			return "the repair was written; run veritycheck again"
		case verity.AdviceVerifyPartial:
			return "the blocks written so far are correct (each was checked against the tree); run veritycheck again to see what is left"
		}
	}
	return ""
}

// deviceAdvice words the library's advice to Deactivate a device (of
// Activate, which veritycheck --kernel calls) as veritysetup close, when
// it is that of the hint LibraryHint would give; "" otherwise.
func deviceAdvice(err error) string {
	var e *verity.Error
	for inner := err; errors.As(inner, &e); inner = e.Err {
		if e.Hint == "" {
			continue
		}
		name := e.Device
		if name == "" {
			name = "NAME"
		}
		switch e.Advice {
		case verity.AdviceDeactivate:
			return "close it first (veritysetup close " + name + "), or choose another name"
		case verity.AdviceDeactivateLeft:
			return "remove what is left with veritysetup close " + name
		}
		return ""
	}
	return ""
}

// avbHint words the avb package's hints that advise running something as
// the commands say it (the package's own name its Go verbs): from the
// error's sentinel and facts, "" for any other error.
func avbHint(err error) string {
	var e *verity.Error
	for inner := err; errors.As(inner, &e); inner = e.Err {
	}
	switch {
	case e == nil:
		return ""
	case errors.Is(err, avb.ErrUnsupportedVersion):
		return "a bootloader refuses a vbmeta it is too old for, before reading anything else in it; make the image with avbtool 1.3 or older (or veritygen)"
	case errors.Is(err, avb.ErrFooterMismatch) && e.Kind == verity.KindRefused:
		return fmt.Sprintf("nothing was cut; the footer, which no signature covers, is wrong: if the image is as signed, put %d back as the footer's original image size (veritycheck IMAGE names both numbers)", e.Value)
	case errors.Is(err, avb.ErrFooterMismatch):
		return "the footer is not signed: a tool trusting it would cut or misread the image (avbtool erase_footer, a rerun of add_hashtree_footer); veritygen's avbtool front refuses to"
	}
	return ""
}

// LibraryHint returns the hint of the first *verity.Error in err's chain
// that has one, or "": in the library's words, for the front to say.
func LibraryHint(err error) string {
	var e *verity.Error
	for errors.As(err, &e) {
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}

// ReportJSON writes err to w as one JSON object, {"error": ..., "hint":
// ...} (hint "" when there is none): what --json prints on stdout instead
// of a report, so that a script reading it (jq -r .root_hash) sees the
// failure, not an empty string.
func ReportJSON(w io.Writer, err error) {
	out := struct {
		Error string `json:"error"`
		Hint  string `json:"hint"`
	}{Error: Flags.Message(err), Hint: errorHint(err)}
	WriteJSON(w, out) // stdout is all there is to report a failure of
}

// WriteJSON writes v to w as the commands print their reports: indented,
// one object.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Warn prints "prog: warning: ..." to w.
func Warn(w io.Writer, prog, format string, args ...any) {
	fmt.Fprintf(w, "%s: warning: %s\n", prog, fmt.Sprintf(format, args...))
}

// ParseHex decodes a hex string; what names the value in errors.
func ParseHex(what, s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		var ie hex.InvalidByteError
		switch {
		case errors.As(err, &ie):
			return nil, fmt.Errorf("%s %q is not hexadecimal: bad character %q", what, s, rune(ie))
		case errors.Is(err, hex.ErrLength):
			return nil, fmt.Errorf("%s %q has an odd number of hex digits", what, s)
		}
		return nil, fmt.Errorf("%s %q: %v", what, s, err)
	}
	return b, nil
}

// ParseUUID parses the text form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	bad := fmt.Errorf("UUID %q is not of the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex digits)", s)
	if len(s) != 36 {
		return u, bad
	}
	for _, i := range []int{8, 13, 18, 23} {
		if s[i] != '-' {
			return u, bad
		}
	}
	b, err := hex.DecodeString(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
	if err != nil {
		return u, bad
	}
	copy(u[:], b)
	return u, nil
}

// FormatUUID returns the text form of u, in lower case.
func FormatUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// FormatSalt returns the salt as veritysetup shows it: hex, or "-" if empty.
func FormatSalt(s []byte) string {
	if len(s) == 0 {
		return "-"
	}
	return hex.EncodeToString(s)
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	return isTerminal(int(f.Fd()))
}

// integerFlags are pflag's integer flag types, and whether each is signed.
var integerFlags = map[string]bool{"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": false, "uint8": false, "uint16": false, "uint32": false, "uint64": false}

// integerSyntax matches what strconv.ParseInt/ParseUint with base 0 take.
var integerSyntax = regexp.MustCompile(`^[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO]?[0-7_]+|0[bB][01_]+|[0-9_]+)$`)

// FlagError words an error of pflag's Parse: a number that is one, but
// out of range for its flag, is said to be so (pflag says "must be an
// integer"); other errors are returned as they are.
func FlagError(err error) error {
	var ie *pflag.InvalidValueError
	if !errors.As(err, &ie) {
		return err
	}
	f, v := ie.GetFlag(), ie.GetValue()
	signed, isInt := integerFlags[f.Value.Type()]
	if !isInt || !integerSyntax.MatchString(v) || !signed && strings.HasPrefix(v, "-") {
		return err // not a number, or a negative one for a count: pflag's words say it
	}
	name := "--" + f.Name // as pflag names the flag
	if f.Shorthand != "" && f.ShorthandDeprecated == "" {
		name = "-" + f.Shorthand + ", " + name
	}
	return &Error{Err: fmt.Errorf("%s %s is out of range", name, v)}
}
