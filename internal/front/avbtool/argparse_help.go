package avbtool

// A subcommand's --help as argparse's HelpFormatter writes it at
// usageWidth: the usage, then "options:" and one entry per option not
// hidden, its help text wrapped as textwrap wraps it.

import (
	"strings"
	"unicode"

	"github.com/spf13/pflag"
)

// maxHelpPosition is HelpFormatter's max_help_position: the help text's
// column, unless every option's invocation is shorter.
const maxHelpPosition = 24

// argparseHelp is what avbtool prints for `SUB --help`.
func (t *tool) argparseHelp(cmd string, fs *pflag.FlagSet, required []string) string {
	type entry struct{ inv, help string }
	var entries []entry
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			entries = append(entries, entry{"-h, --help", f.Usage})
			return
		}
		if f.Hidden {
			return
		}
		names := []string{"--" + f.Name}
		if ft := f.Annotations["filetype"]; len(ft) == 2 {
			names = strings.Split("--"+ft[1], "/") // an alias's names
		}
		if f.Value.Type() != "bool" {
			mv := strings.ToUpper(f.Name)
			if a := f.Annotations["metavar"]; len(a) == 1 {
				mv = a[0]
			}
			for i := range names {
				names[i] += " " + mv
			}
		}
		entries = append(entries, entry{strings.Join(names, ", "), f.Usage})
	})
	const indent = 2
	maxLen := 0
	for _, e := range entries {
		maxLen = max(maxLen, len(e.inv)+indent)
	}
	helpPos := min(maxLen+2, maxHelpPosition)
	helpWidth := max(usageWidth-helpPos, 11)
	actionWidth := helpPos - indent - 2
	var b strings.Builder
	b.WriteString(t.argparseUsage(cmd, fs, required))
	b.WriteString("\noptions:\n")
	for _, e := range entries {
		lines := textWrap(strings.Join(strings.Fields(e.help), " "), helpWidth)
		switch {
		case len(lines) == 0:
			b.WriteString(strings.Repeat(" ", indent) + e.inv + "\n")
			continue
		case len(e.inv) <= actionWidth:
			b.WriteString(strings.Repeat(" ", indent) + e.inv + strings.Repeat(" ", actionWidth-len(e.inv)+2) + lines[0] + "\n")
		default:
			b.WriteString(strings.Repeat(" ", indent) + e.inv + "\n" + strings.Repeat(" ", helpPos) + lines[0] + "\n")
		}
		for _, l := range lines[1:] {
			b.WriteString(strings.Repeat(" ", helpPos) + l + "\n")
		}
	}
	return b.String()
}

// textWrap is Python's textwrap.wrap(text, width) of a text whose spaces
// are single: words (split after the hyphen of a hyphenated word, as
// textwrap's wordsep_re splits them) filled into lines of at most width,
// a word longer than a line cut.
func textWrap(text string, width int) []string {
	var chunks []string
	for i, w := range strings.Split(text, " ") {
		if i > 0 {
			chunks = append(chunks, " ")
		}
		chunks = append(chunks, splitHyphens(w)...)
	}
	var lines []string
	for len(chunks) > 0 {
		if chunks[0] == " " && len(lines) > 0 {
			chunks = chunks[1:]
		}
		var line []string
		n := 0
		for len(chunks) > 0 && n+len(chunks[0]) <= width {
			line = append(line, chunks[0])
			n += len(chunks[0])
			chunks = chunks[1:]
		}
		if len(chunks) > 0 && len(chunks[0]) > width {
			cut := max(width-n, 1)
			line = append(line, chunks[0][:cut])
			chunks[0] = chunks[0][cut:]
		}
		if len(line) > 0 && line[len(line)-1] == " " {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			lines = append(lines, strings.Join(line, ""))
		}
	}
	return lines
}

// splitHyphens splits w after each hyphen that textwrap breaks at: one
// after two letters (or letter-hyphen-letter), before a letter, an
// optional hyphen and a letter.
func splitHyphens(w string) []string {
	letter := func(i int) bool {
		return i >= 0 && i < len(w) && (w[i] == '_' || w[i] < 0x80 && unicode.IsLetter(rune(w[i])))
	}
	var out []string
	start := 0
	for i := 0; i < len(w); i++ {
		if w[i] != '-' || i+1 == len(w) {
			continue
		}
		after := letter(i+1) && (letter(i+2) || w[i+2:min(i+3, len(w))] == "-" && letter(i+3))
		before := letter(i-1) && (letter(i-2) || i >= 3 && w[i-2] == '-' && letter(i-3))
		if i > start && before && after {
			out = append(out, w[start:i+1])
			start = i + 1
		}
	}
	return append(out, w[start:])
}
