package avbtool

// A subcommand's command line read as Python 3.11's argparse reads it
// (_parse_known_args): every argument classified first (an ambiguous
// abbreviation fails there, whatever comes before it), then the options
// taken left to right, each value converted as it is met (a number that
// is not one, a file that cannot be opened: the first such wins), -h
// printing the help at its place; then the required options missing, and
// last the arguments no option took.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

// errHelp: -h or --help was taken; the help is printed.
var errHelp = errors.New("help")

// argparseNegative is argparse's _negative_number_matcher (\d is any
// Unicode decimal digit in Python's str patterns).
var argparseNegative = regexp.MustCompile(`^-\p{Nd}+$|^-\p{Nd}*\.\p{Nd}+$`)

// optTuple is argparse's option tuple: the option (nil: one this parser
// does not know), the string naming it, the value after '=' if any.
type optTuple struct {
	f        *pflag.Flag
	opt      string
	explicit *string
}

type argParser struct {
	fs      *pflag.FlagSet
	strs    []string // option strings, in argparse's order (-h, --help, then the flags')
	byStr   map[string]*pflag.Flag
	onValue func(f *pflag.Flag, v string) error // a value's check as argparse converts it
	onHelp  func()
}

func newArgParser(fs *pflag.FlagSet) *argParser {
	p := &argParser{fs: fs, byStr: map[string]*pflag.Flag{}}
	help := fs.Lookup("help")
	p.add("-h", help)
	p.add("--help", help)
	fs.VisitAll(func(f *pflag.Flag) {
		if f != help {
			p.add("--"+f.Name, f)
		}
	})
	return p
}

func (p *argParser) add(s string, f *pflag.Flag) {
	p.strs = append(p.strs, s)
	p.byStr[s] = f
}

// actionName is argparse's name of an option in its errors: all its
// option strings, joined by '/'.
func actionName(f *pflag.Flag) string {
	if f.Name == "help" {
		return "-h/--help"
	}
	if ft := f.Annotations["filetype"]; len(ft) == 2 {
		return "--" + ft[1] // an alias's names too
	}
	return "--" + f.Name
}

func argErr(f *pflag.Flag, format string, args ...any) error {
	return fmt.Errorf("argument %s: %s", actionName(f), fmt.Sprintf(format, args...))
}

// parseOptional is argparse's _parse_optional: nil for an argument that
// is not an option.
func (p *argParser) parseOptional(arg string) (*optTuple, error) {
	if arg == "" || arg[0] != '-' {
		return nil, nil
	}
	if f, ok := p.byStr[arg]; ok {
		return &optTuple{f: f, opt: arg}, nil
	}
	if len(arg) == 1 {
		return nil, nil
	}
	if o, v, ok := strings.Cut(arg, "="); ok {
		if f, ok := p.byStr[o]; ok {
			return &optTuple{f: f, opt: o, explicit: &v}, nil
		}
	}
	tuples := p.optionTuples(arg)
	switch {
	case len(tuples) > 1:
		names := make([]string, len(tuples))
		for i, t := range tuples {
			names[i] = t.opt
		}
		return nil, fmt.Errorf("ambiguous option: %s could match %s", arg, strings.Join(names, ", "))
	case len(tuples) == 1:
		return &tuples[0], nil
	}
	if argparseNegative.MatchString(arg) || strings.Contains(arg, " ") {
		return nil, nil
	}
	return &optTuple{opt: arg}, nil
}

// optionTuples is argparse's _get_option_tuples (abbreviations allowed).
func (p *argParser) optionTuples(arg string) []optTuple {
	var out []optTuple
	if arg[1] == '-' {
		prefix, v, hasValue := strings.Cut(arg, "=")
		for _, s := range p.strs {
			if strings.HasPrefix(s, prefix) {
				t := optTuple{f: p.byStr[s], opt: s}
				if hasValue {
					t.explicit = &v
				}
				out = append(out, t)
			}
		}
		return out
	}
	short, rest := arg[:2], arg[2:]
	for _, s := range p.strs {
		if s == short {
			out = append(out, optTuple{f: p.byStr[s], opt: s, explicit: &rest})
		} else if strings.HasPrefix(s, arg) {
			out = append(out, optTuple{f: p.byStr[s], opt: s})
		}
	}
	return out
}

// nargs is how many values an option takes: store_true none, the rest one.
func nargs(f *pflag.Flag) int {
	if f.Value.Type() == "bool" {
		return 0
	}
	return 1
}

// parse takes args as argparse does and returns the arguments no option
// took, or the first error; errHelp when the help was printed.
func (p *argParser) parse(args []string) (extras []string, err error) {
	pattern := make([]byte, len(args))
	tuples := make([]*optTuple, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			pattern[i] = '-'
			for i++; i < len(args); i++ {
				pattern[i] = 'A'
			}
			break
		}
		t, err := p.parseOptional(args[i])
		if err != nil {
			return nil, err
		}
		pattern[i] = 'A'
		if t != nil {
			tuples[i], pattern[i] = t, 'O'
		}
	}
	for i := 0; i < len(args); {
		if pattern[i] != 'O' {
			// The subcommands take no positional arguments.
			extras = append(extras, args[i])
			i++
			continue
		}
		if tuples[i].f == nil {
			extras = append(extras, args[i]) // another parser's, perhaps
			i++
			continue
		}
		next, err := p.consumeOptional(args, pattern, tuples[i], i)
		if err != nil {
			return nil, err
		}
		if next < 0 {
			return nil, errHelp
		}
		i = next
	}
	return extras, nil
}

// take is one option taken with its values (argparse's action_tuples).
type take struct {
	f    *pflag.Flag
	vals []string
}

// consumeOptional is argparse's consume_optional: the index after what
// the option at i took, -1 when it was the help.
func (p *argParser) consumeOptional(args []string, pattern []byte, t *optTuple, i int) (int, error) {
	var takes []take
	f, opt, explicit := t.f, t.opt, t.explicit
	stop := i + 1
	for {
		if explicit == nil {
			n := matchArgument(f, pattern[i+1:])
			if n < 0 {
				return 0, argErr(f, "expected one argument")
			}
			stop = i + 1 + n
			takes = append(takes, take{f, args[i+1 : stop]})
			break
		}
		if nargs(f) == 1 {
			takes = append(takes, take{f, []string{*explicit}})
			break
		}
		if opt[1] == '-' || *explicit == "" {
			return 0, argErr(f, "ignored explicit argument %s", pyStr(*explicit))
		}
		// -hh: single-dash options run together.
		takes = append(takes, take{f, nil})
		opt = "-" + (*explicit)[:1]
		rest := (*explicit)[1:]
		g, ok := p.byStr[opt]
		if !ok {
			return 0, argErr(f, "ignored explicit argument %s", pyStr(*explicit))
		}
		f, explicit = g, nil
		if rest != "" {
			explicit = &rest
		}
	}
	for _, tk := range takes {
		if tk.f.Name == "help" {
			p.onHelp()
			return -1, nil
		}
		if nargs(tk.f) == 0 {
			_ = tk.f.Value.Set("true")
		} else {
			if err := p.onValue(tk.f, tk.vals[0]); err != nil {
				return 0, err
			}
			if err := tk.f.Value.Set(tk.vals[0]); err != nil {
				return 0, argErr(tk.f, "%v", err)
			}
		}
		tk.f.Changed = true
	}
	return stop, nil
}

// matchArgument is argparse's _match_argument for an option (whose
// pattern has no '-': a '--' is no option's value): how many of the
// pattern's first strings it takes, -1 when it cannot take its one.
func matchArgument(f *pflag.Flag, pattern []byte) int {
	if nargs(f) == 0 {
		return 0
	}
	if len(pattern) == 0 || pattern[0] != 'A' {
		return -1
	}
	return 1
}
