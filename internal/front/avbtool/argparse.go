package avbtool

// avbtool's command-line errors as Python's argparse prints them: the
// usage of the subcommand, wrapped as argparse wraps it, then "PROG CMD:
// error: MESSAGE", exit 2. Scripts that wrap avbtool match these lines.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"github.com/spf13/pflag"
)

// usageWidth is argparse's text width when stdout is not a terminal and
// COLUMNS is not set (80 columns, less its 2 of margin): what a build sees.
const usageWidth = 78

// metavar sets the placeholder argparse shows for a flag's value; without
// one it is the flag's name in capitals, as argparse's default.
func metavar(fs *pflag.FlagSet, name, mv string) {
	_ = fs.SetAnnotation(name, "metavar", []string{mv})
}

// argparseUsage is the usage argparse prints for subcommand cmd: its
// options in the order they were added, hidden ones left out, required
// ones without brackets.
func (t *tool) argparseUsage(cmd string, fs *pflag.FlagSet, required []string) string {
	prog := filepath.Base(t.prog) + " " + cmd
	parts := []string{"[-h]"}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		opt := "--" + f.Name
		if f.Value.Type() != "bool" {
			mv := strings.ToUpper(f.Name)
			if a := f.Annotations["metavar"]; len(a) == 1 {
				mv = a[0]
			}
			if isRequired(f.Name, required) {
				// argparse's regular expression splits these in two.
				parts = append(parts, opt, mv)
				return
			}
			opt += " " + mv
		}
		if isRequired(f.Name, required) {
			parts = append(parts, opt)
			return
		}
		parts = append(parts, "["+opt+"]")
	})
	const prefix = "usage: "
	if len(prefix)+len(prog)+1+len(strings.Join(parts, " ")) <= usageWidth {
		return prefix + prog + " " + strings.Join(parts, " ") + "\n"
	}
	var lines []string
	if float64(len(prefix)+len(prog)) <= 0.75*usageWidth {
		indent := strings.Repeat(" ", len(prefix)+len(prog)+1)
		lines = wrapUsage(append([]string{prog}, parts...), indent, len(prefix))
	} else {
		lines = append([]string{prog}, wrapUsage(parts, strings.Repeat(" ", len(prefix)), -1)...)
	}
	return prefix + strings.Join(lines, "\n") + "\n"
}

// avbtoolSubcommands are all of avbtool 1.3.0's, in its order: its own
// usage lists them.
var avbtoolSubcommands = []string{"generate_test_image", "version", "extract_public_key", "make_vbmeta_image",
	"add_hash_footer", "append_vbmeta_image", "add_hashtree_footer", "erase_footer", "zero_hashtree",
	"extract_vbmeta_image", "resize_image", "info_image", "verify_image", "print_partition_digests",
	"calculate_vbmeta_digest", "calculate_kernel_cmdline", "set_ab_metadata", "make_atx_certificate",
	"make_atx_permanent_attributes", "make_atx_metadata", "make_atx_unlock_credential"}

// mainUsage is the usage of avbtool's own parser, which reports the
// arguments no subcommand takes.
func (t *tool) mainUsage() string {
	prog := filepath.Base(t.prog)
	const prefix = "usage: "
	pos := []string{"{" + strings.Join(avbtoolSubcommands, ",") + "}", "..."}
	if float64(len(prefix)+len(prog)) > 0.75*usageWidth {
		lines := wrapUsage(append([]string{"[-h]"}, pos...), strings.Repeat(" ", len(prefix)), -1)
		return prefix + strings.Join(append([]string{prog}, lines...), "\n") + "\n"
	}
	indent := strings.Repeat(" ", len(prefix)+len(prog)+1)
	lines := wrapUsage([]string{prog, "[-h]"}, indent, len(prefix))
	return prefix + strings.Join(append(lines, wrapUsage(pos, indent, -1)...), "\n") + "\n"
}

// tooFewArguments is what avbtool prints when a subcommand reaches for an
// option that was not given (Python's AttributeError on None, which avbtool
// takes for a missing subcommand): its usage and "avbtool: error: too few
// arguments", both on stdout, exit 2.
func (t *tool) tooFewArguments() int {
	fmt.Fprint(t.stdout, t.mainUsage())
	fmt.Fprintln(t.stdout, "avbtool: error: too few arguments")
	return exitUsage
}

func isRequired(name string, required []string) bool {
	for _, r := range required {
		if r == name {
			return true
		}
	}
	return false
}

// wrapUsage is argparse's get_lines: parts joined by spaces into lines of
// at most usageWidth, each but the first indented; a first line after a
// prefix of prefixLen (-1: none) is not indented.
func wrapUsage(parts []string, indent string, prefixLen int) []string {
	var lines, line []string
	lineLen := len(indent) - 1
	if prefixLen >= 0 {
		lineLen = prefixLen - 1
	}
	for _, p := range parts {
		if lineLen+1+len(p) > usageWidth && len(line) > 0 {
			lines = append(lines, indent+strings.Join(line, " "))
			line, lineLen = nil, len(indent)-1
		}
		line = append(line, p)
		lineLen += len(p) + 1
	}
	if len(line) > 0 {
		lines = append(lines, indent+strings.Join(line, " "))
	}
	if prefixLen >= 0 && len(lines) > 0 {
		lines[0] = lines[0][len(indent):]
	}
	return lines
}

// fileType marks a flag as one argparse opens while it parses (its type
// is FileType): mode "r" (rb, rt), "rw" (rb+) or "w" (wb, wt); name is the
// option argparse names in its error (an alias's first name).
func fileType(fs *pflag.FlagSet, flag, mode, name string) {
	_ = fs.SetAnnotation(flag, "filetype", []string{mode, name})
}

// checkFileTypeFlag opens, as argparse's FileType does while it parses,
// the file v of an option marked by fileType: one that cannot be opened
// is a usage error naming it. Nothing is created or changed, and nothing
// waits (a FIFO is opened non-blocking); an output that does not exist
// yet only needs its directory.
func checkFileTypeFlag(f *pflag.Flag, v string) error {
	ft := f.Annotations["filetype"]
	if len(ft) != 2 {
		return nil
	}
	if e := checkFileType(v, ft[0]); e != nil {
		// FileType quotes the name as given, not as repr does.
		return fmt.Errorf("argument --%s: can't open '%s': %s", ft[1], v, pyOSError(e, v))
	}
	return nil
}

func checkFileType(path, mode string) error {
	if path == "-" {
		return nil // stdin or stdout
	}
	if mode == "w" {
		fi, err := os.Stat(path)
		switch {
		case err == nil && fi.IsDir():
			return syscall.EISDIR
		case errors.Is(err, fs.ErrNotExist):
			if _, err := os.Stat(filepath.Dir(path)); err != nil {
				return syscall.ENOENT
			}
			return nil
		}
		return nil // anything else is the output's own check
	}
	flag := os.O_RDONLY
	if mode == "rw" {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	f.Close()
	if err == nil && fi.IsDir() {
		return syscall.EISDIR
	}
	return nil
}

// pyOSError is Python's text of an OSError about path: [Errno N] Message:
// 'path'.
func pyOSError(err error, path string) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	msg := []rune(errno.Error())
	if len(msg) > 0 {
		msg[0] = unicode.ToUpper(msg[0])
	}
	return fmt.Sprintf("[Errno %d] %s: %s", int(errno), string(msg), pyStr(path))
}

// pyStr is Python's repr of a str: in single quotes unless it holds
// single quotes and no double ones, backslash and controls escaped.
func pyStr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyBytes is Python's repr of bytes (b'...'), as avbtool prints a signing
// helper's stderr.
func pyBytes(p []byte) string {
	q := byte('\'')
	if strings.IndexByte(string(p), '\'') >= 0 && strings.IndexByte(string(p), '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteString("b")
	b.WriteByte(q)
	for _, c := range p {
		switch {
		case c == '\\' || c == q:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}
