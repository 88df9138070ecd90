package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/hashes"
)

// HelpWidth is the width --help keeps within: a terminal's smallest
// common one.
const HelpWidth = 80

// HelpGroup is a heading of --help and the flags listed under it, in
// order.
type HelpGroup struct {
	Title string
	Flags []string
}

// FlagHelp lists fs's flags under the groups' headings, one line each:
// "  -h, --hash ALGORITHM   usage (default sha256)", the usages of a group
// aligned. It replaces pflag's listing, which puts "[=true|false]" after
// every boolean and repeats a default the usage already gives. A visible
// flag no group names goes under a last "Other options:", so none is
// ever left out.
func FlagHelp(fs *pflag.FlagSet, groups []HelpGroup) string {
	listed := map[string]bool{}
	for _, g := range groups {
		for _, name := range g.Flags {
			listed[name] = true
		}
	}
	var other []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !listed[f.Name] {
			other = append(other, f.Name)
		}
	})
	if len(other) > 0 {
		groups = append(groups, HelpGroup{"Other options", other})
	}
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s:\n%s", g.Title, flagLines(fs, g.Flags))
	}
	return b.String()
}

// FlagLines lists all of fs's visible flags as FlagHelp does, in one
// group without heading.
func FlagLines(fs *pflag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return flagLines(fs, names)
}

// flagLines lists the named flags of fs that are visible, one line each,
// their usages aligned.
func flagLines(fs *pflag.FlagSet, flags []string) string {
	var names, usages []string
	for _, name := range flags {
		f := fs.Lookup(name)
		if f == nil || f.Hidden {
			continue
		}
		n, u := flagLine(f)
		names, usages = append(names, n), append(usages, u)
	}
	col := 0
	for _, n := range names {
		col = max(col, len(n))
	}
	var b strings.Builder
	for j := range names {
		fmt.Fprintf(&b, "%-*s  %s\n", col, names[j], usages[j])
	}
	return b.String()
}

// flagLine is a flag's name, with its shorthand and the name of its value
// ("  -h, --hash ALGORITHM"), and its usage with its default.
func flagLine(f *pflag.Flag) (name, usage string) {
	name = "      --" + f.Name
	if f.Shorthand != "" {
		name = "  -" + f.Shorthand + ", --" + f.Name
	}
	varname, usage := pflag.UnquoteUsage(f)
	// A usage that starts with its value's name ("`DEV` /dev/sda1, ...")
	// has it only for the name.
	if rest, ok := strings.CutPrefix(f.Usage, "`"+varname+"` "); ok {
		usage = rest
	}
	if f.Value.Type() != "bool" && varname != "" {
		name += " " + strings.ToUpper(varname)
	}
	if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "[]" && !strings.Contains(usage, "default") {
		usage += " (default " + d + ")"
	}
	return name, usage
}

// Wrap fills text into lines of at most HelpWidth columns, each starting
// with indent.
func Wrap(text, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if line != indent && len(line)+1+len(w) > HelpWidth {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	if line != indent {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// HashHelp is the paragraph of --help that lists the hash algorithms.
func HashHelp() string {
	return Wrap("Hash algorithms (--hash): "+strings.Join(hashes.Names(), ", ")+
		", or veritysetup's other names for them (ripemd160, sha2-256, blake2b512...).", "")
}
