package cli

import (
	"os"
	"strings"
)

// HelpAlone reports whether args ask for help with veritysetup's -h alone:
// -h is --hash (as in veritysetup) and needs an algorithm, but "prog -h",
// with nothing after it, can only mean help.
func HelpAlone(args []string) bool { return len(args) == 1 && args[0] == "-h" }

// WantsJSON reports whether args ask for --json, for a failure that comes
// before the flags are parsed (a bad flag) and must still be reported as
// JSON on stdout.
func WantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}

// Exists reports whether a file of that name exists, to tell a veritysetup
// verb ("format") from a file of that name given as DATA.
func Exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// CommandLine is args as one line to type, with each argument that the
// shell would split or expand in single quotes, for hints that say exactly
// what to type.
func CommandLine(prog string, args []string) string {
	out := []string{prog}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

// Without returns args without the first occurrence of verb (for a hint
// that repeats the command line, flags and all, without it).
func Without(args []string, verb string) []string {
	for i, a := range args {
		if a == verb {
			return append(append([]string{}, args[:i]...), args[i+1:]...)
		}
	}
	return args
}
