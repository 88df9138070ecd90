package veritysetup

// The command line as veritysetup's popt reads it (popt 1.19's
// poptGetNextOpt, cryptsetup 2.6.1's tools_parse_arg_value): the words in
// order, each option's value checked as it is read (a bad number stops the
// parse there), --help, --usage and --version acted on where they stand, an
// option's value the next word whatever it starts with, and popt's errors
// naming the word they were found in.

import (
	"os"
	"strings"
)

// optKind is what an option takes.
type optKind int

const (
	optSwitch optKind = iota // no value
	optString
	optUint32 // a number of 32 bits, as strtoull reads it
	optUint64
	optHelp // --help, --usage, --version: acted on at once
)

type optSpec struct {
	name  string
	short byte
	kind  optKind
	field func(o *options) *string // where a value goes (nil: only recorded)
}

// optSpecs are veritysetup's options (veritysetup_arg_list.h and the help
// table).
var optSpecs = []optSpec{
	{"help", '?', optHelp, nil},
	{"usage", 0, optHelp, nil},
	{"version", 'V', optHelp, nil},
	{"cancel-deferred", 0, optSwitch, nil},
	{"check-at-most-once", 0, optSwitch, nil},
	{"data-block-size", 0, optUint32, func(o *options) *string { return &o.dataBlockSize }},
	{"data-blocks", 0, optUint64, func(o *options) *string { return &o.dataBlocks }},
	{"debug", 0, optSwitch, nil},
	{"deferred", 0, optSwitch, nil},
	{"fec-device", 0, optString, func(o *options) *string { return &o.fecDevice }},
	{"fec-offset", 0, optUint64, func(o *options) *string { return &o.fecOffset }},
	{"fec-roots", 0, optUint32, func(o *options) *string { return &o.fecRoots }},
	{"format", 0, optUint32, func(o *options) *string { return &o.format }},
	{"hash", 'h', optString, func(o *options) *string { return &o.hash }},
	{"hash-block-size", 0, optUint32, func(o *options) *string { return &o.hashBlockSize }},
	{"hash-offset", 0, optUint64, func(o *options) *string { return &o.hashOffset }},
	{"ignore-corruption", 0, optSwitch, nil},
	{"ignore-zero-blocks", 0, optSwitch, nil},
	{"no-superblock", 0, optSwitch, nil},
	{"panic-on-corruption", 0, optSwitch, nil},
	{"restart-on-corruption", 0, optSwitch, nil},
	{"root-hash-file", 0, optString, func(o *options) *string { return &o.rootHashFile }},
	{"root-hash-signature", 0, optString, func(o *options) *string { return &o.rootHashSignature }},
	{"salt", 's', optString, func(o *options) *string { return &o.salt }},
	{"use-tasklets", 0, optSwitch, nil},
	{"uuid", 0, optString, func(o *options) *string { return &o.uuid }},
	{"verbose", 'v', optSwitch, nil},
}

func findLong(name string) *optSpec {
	for i := range optSpecs {
		if optSpecs[i].name == name {
			return &optSpecs[i]
		}
	}
	return nil
}

func findShort(c byte) *optSpec {
	for i := range optSpecs {
		if optSpecs[i].short == c {
			return &optSpecs[i]
		}
	}
	return nil
}

// defaults are veritysetup's compiled-in values.
func (o *options) defaults() {
	o.hash, o.format, o.dataBlockSize, o.hashBlockSize = "sha256", "1", "4096", "4096"
	o.dataBlocks, o.hashOffset, o.fecOffset, o.fecRoots = "0", "0", "0", "2"
	o.set = map[string]bool{}
}

// parse reads args as popt does. It stops at the first --help, --usage or
// --version (o.help, o.usage, o.version) and at the first mistake, which
// it returns as veritysetup reports it.
func (o *options) parse(args []string) error {
	o.defaults()
	// POSIXLY_CORRECT: options end at the first argument, as popt's.
	posix := os.Getenv("POSIXLY_CORRECT") != "" || os.Getenv("POSIX_ME_HARDER") != ""
	rest := false
	for i := 0; i < len(args); i++ {
		word := args[i]
		if rest || !strings.HasPrefix(word, "-") || word == "-" {
			o.args = append(o.args, word)
			rest = rest || posix
			continue
		}
		if word == "--" {
			rest = true
			continue
		}
		// badWord is popt's poptBadOption: the word it stopped in.
		bad := func(what string) error { return usageOnly(word + ": " + what) }
		var chars string // short options still to read in this word
		var opt *optSpec
		var value *string
		if strings.HasPrefix(word, "--") {
			name := word[2:]
			if k := strings.IndexByte(name, '='); k >= 0 {
				v := name[k+1:]
				name, value = name[:k], &v
			}
			if opt = findLong(name); opt == nil {
				return bad("unknown option")
			}
		} else {
			// One dash: short options, however many (a long name
			// with one dash is read as short ones: -salt is -s alt).
			chars = word[1:]
		}
		for {
			if chars != "" {
				if opt = findShort(chars[0]); opt == nil {
					return bad("unknown option")
				}
				chars = chars[1:]
			}
			if opt.kind == optSwitch || opt.kind == optHelp {
				if value != nil || strings.HasPrefix(chars, "=") {
					return bad("option does not take an argument")
				}
			} else {
				switch {
				case value != nil:
				case chars != "":
					// -s00, or -s=00
					v := strings.TrimPrefix(chars, "=")
					value, chars = &v, ""
				case i+1 < len(args):
					// The next word, even one that starts with a dash.
					i++
					value = &args[i]
				default:
					return bad("missing argument")
				}
			}
			if done, err := o.take(opt, value); done || err != nil {
				return err
			}
			value = nil
			if chars == "" {
				break
			}
		}
	}
	return nil
}

// take is what veritysetup's popt callbacks do with one option: check a
// number (tools_parse_arg_value), record the option, act on help. done
// says the parse stops there.
func (o *options) take(opt *optSpec, value *string) (done bool, err error) {
	switch opt.kind {
	case optHelp:
		switch opt.name {
		case "help":
			o.help = true
		case "usage":
			o.usage = true
		default:
			o.version = true
		}
		return true, nil
	case optUint32:
		if _, err := number32(*value); err != nil {
			return true, err
		}
	case optUint64:
		if _, err := number(*value); err != nil {
			return true, err
		}
	}
	o.set[opt.name] = true
	if opt.field != nil {
		*opt.field(o) = *value
	}
	switch opt.name {
	case "debug":
		o.debug, o.verbose = true, true
	case "verbose":
		o.verbose = true
	case "no-superblock":
		o.noSuperblock = true
	}
	return false, nil
}

// changed reports whether the line gave the option.
func (o *options) changed(name string) bool { return o.set[name] }

// withFEC and withRootHashFile report whether the line names the file,
// even as "" (--fec-device=): veritysetup then fails to open or create a
// file of no name, where it would use the file.
func (o *options) withFEC() bool          { return o.changed("fec-device") }
func (o *options) withRootHashFile() bool { return o.changed("root-hash-file") }
