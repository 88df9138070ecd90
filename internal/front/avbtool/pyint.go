package avbtool

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// number is avbtool's parse_number: Python's int(s, 0). A number Python
// reads but this front cannot take (negative, or past 2^64-1) is kept in
// bad: argparse takes it, and avbtool fails on it later (exit 1) or uses
// it, so t.parse refuses it after argparse's own checks, exit 1.
type number struct {
	v   uint64
	bad string
	// late: refused where avbtool fails on it, not by t.parse.
	late bool
}

func (n *number) String() string { return strconv.FormatUint(n.v, 10) }
func (n *number) Type() string   { return "NUMBER" }
func (n *number) Set(s string) error {
	v, neg, ok := pyParseInt(s)
	switch {
	case !ok:
		return fmt.Errorf("invalid parse_number value: %s", pyStr(s))
	case neg || !v.IsUint64():
		n.v, n.bad = 0, s
	default:
		n.v, n.bad = v.Uint64(), ""
	}
	return nil
}

// negative reports whether the number given is one Python reads as below
// zero (avbtool goes on with it).
func (n *number) negative() bool {
	if n.bad == "" {
		return false
	}
	_, neg, ok := pyParseInt(n.bad)
	return ok && neg
}

// signed is the number given as Python holds it (a negative one too), for
// avbtool's messages.
func (n *number) signed() string {
	if n.bad == "" {
		return n.String()
	}
	b, neg, ok := pyParseInt(n.bad)
	switch {
	case !ok:
		return n.bad
	case neg:
		return "-" + b.String()
	}
	return b.String()
}

// outOfRange is the refusal of a number given that the front cannot hold.
func (n *number) outOfRange(name string) error {
	return fmt.Errorf("--%s %s: a number from 0 to %d is needed", name, n.bad, uint64(math.MaxUint64))
}

// pyInt reads s as Python's int(s, 0) does, for the numbers from 0 to
// 2^64-1 (-0 is 0).
func pyInt(s string) (uint64, bool) {
	v, neg, ok := pyParseInt(s)
	if !ok || neg || !v.IsUint64() {
		return 0, false
	}
	return v.Uint64(), true
}

// pyMaxStrDigits is Python's limit on the digits of a decimal it reads
// (sys.get_int_max_str_digits(), 4300 by default): a longer one is a
// ValueError.
const pyMaxStrDigits = 4300

// pyParseInt is Python 3.11's int(s, 0): the Unicode decimal digits of
// s read as ASCII ones and its Unicode whitespace as spaces; then ASCII
// whitespace around, a sign, 0x/0o/0b (either case) and digits of that
// base, or decimal digits without a leading zero (but for zero itself); a
// single underscore between digits or after the prefix. neg: a minus
// sign before a number other than 0.
func pyParseInt(s string) (v *big.Int, neg, ok bool) {
	s = pyASCII(s)
	s = strings.Trim(s, " \t\n\v\f\r")
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := 10
	if len(s) >= 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
	}
	if base != 10 {
		s = strings.TrimPrefix(s[2:], "_")
	}
	digits := strings.ReplaceAll(s, "_", "")
	if digits == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return nil, false, false
	}
	if base == 10 && digits[0] == '0' && strings.Trim(digits, "0") != "" {
		return nil, false, false // Python refuses 010 (Go's octal)
	}
	if base == 10 && len(digits) > pyMaxStrDigits {
		return nil, false, false
	}
	for _, c := range digits {
		d := digitValue(c)
		if d < 0 || d >= base {
			return nil, false, false
		}
	}
	v, ok = new(big.Int).SetString(digits, base)
	if !ok {
		return nil, false, false
	}
	return v, neg && v.Sign() != 0, true
}

func digitValue(c rune) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}

// pyASCII is Python's _PyUnicode_TransformDecimalAndSpaceToASCII: a
// Unicode decimal digit (Arabic-Indic, Devanagari, fullwidth...) as its
// ASCII digit, Unicode whitespace as a space, anything else not ASCII as
// '?' (which no number holds). Each block of decimal digits is whole runs
// of ten from its zero, so a digit's value is its distance from the
// block's start, modulo 10.
func pyASCII(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r < utf8.RuneSelf:
			return r
		case unicode.IsSpace(r):
			return ' '
		case !unicode.Is(unicode.Nd, r):
			return '?'
		}
		start := r
		for unicode.Is(unicode.Nd, start-1) {
			start--
		}
		return '0' + (r-start)%10
	}, s)
}
