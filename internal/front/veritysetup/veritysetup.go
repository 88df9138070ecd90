// Package veritysetup is the veritysetup front: cmd/veritysetup, or
// veritygen run under the name veritysetup (a symbolic or hard link), takes
// veritysetup 2.6.1's command line for format, verify, dump, open, close
// and status, prints what it prints and exits as it does, so that scripts
// written for veritysetup run unchanged where only veritygen is installed.
// It is one more caller of the library's verbs.
package veritysetup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// prog is the name under which veritygen behaves as veritysetup.
const prog = "veritysetup"

// CalledAs reports whether argv0 names the veritysetup front.
func CalledAs(argv0 string) bool { return filepath.Base(argv0) == prog }

// Exit codes of veritysetup (cryptsetup's translate_errno).
const (
	exitOK     = 0
	exitEINVAL = 1 // wrong or missing parameters, wrong root hash
	exitEPERM  = 2 // corruption
	exitENOMEM = 3
	exitENODEV = 4 // wrong device or file specified, missing file
	exitEBUSY  = 5 // device busy: a file locked by another process
)

var codeText = map[int]string{
	exitEINVAL: "wrong or missing parameters",
	exitEPERM:  "no permission or bad passphrase",
	exitENOMEM: "out of memory",
	exitENODEV: "wrong device or file specified",
	exitEBUSY:  "device already exists or device is busy",
}

// versionText keeps veritysetup's first two words, which scripts check, and
// says what answers.
const versionText = "veritysetup 2.6.1 flags: veritygen\n"

const usageText = `Usage: veritysetup [-?Vv] [-?|--help] [--usage] [-V|--version]
        [--cancel-deferred] [--check-at-most-once] [--data-block-size=bytes]
        [--data-blocks=blocks] [--debug] [--deferred] [--fec-device=path]
        [--fec-offset=bytes] [--fec-roots=bytes] [--format=number]
        [-h|--hash=string] [--hash-block-size=bytes] [--hash-offset=bytes]
        [--ignore-corruption] [--ignore-zero-blocks] [--no-superblock]
        [--panic-on-corruption] [--restart-on-corruption]
        [--root-hash-file=STRING] [--root-hash-signature=STRING]
        [-s|--salt=hex string] [--use-tasklets] [--uuid=STRING]
        [-v|--verbose] [OPTION...] <action> <action-specific>
`

const helpText = `Usage: veritysetup [OPTION...] <action> <action-specific>

This is veritygen answering as veritysetup: it formats, verifies and dumps
dm-verity hash trees, and opens, closes and queries dm-verity devices (through
device-mapper's ioctls and loop devices), as veritysetup 2.6.1 does: same
trees, same output, same exit codes.

Help options:
  -?, --help                           Show this help message
      --usage                          Display brief usage
  -V, --version                        Print package version
      --cancel-deferred                Cancel a previously set deferred device
                                       removal
      --check-at-most-once             Verify data block only the first time
                                       it is read
      --data-block-size=bytes          Block size on the data device
      --data-blocks=blocks             The number of blocks in the data file
      --debug                          Show debug messages
      --deferred                       Device removal is deferred until the
                                       last user closes it
      --fec-device=path                Path to device with error correction
                                       data
      --fec-offset=bytes               Starting offset on the FEC device
      --fec-roots=bytes                FEC parity bytes
      --format=number                  Format type (1 - normal, 0 - original
                                       Chrome OS)
  -h, --hash=string                    Hash algorithm
      --hash-block-size=bytes          Block size on the hash device
      --hash-offset=bytes              Starting offset on the hash device
      --ignore-corruption              Ignore corruption, log it only
      --ignore-zero-blocks             Do not verify zeroed blocks
      --no-superblock                  Do not use verity superblock
      --panic-on-corruption            Panic kernel if corruption is detected
      --restart-on-corruption          Restart kernel if corruption is detected
      --root-hash-file=STRING          Path to root hash file
      --root-hash-signature=STRING     Path to root hash signature file
  -s, --salt=hex string                Salt
      --use-tasklets                   Use kernel tasklets for performance
      --uuid=STRING                    UUID for device to use
  -v, --verbose                        Shows more detailed error messages

<action> is one of:
	format <data_device> <hash_device> - format device
	verify <data_device> <hash_device> [<root_hash>] - verify device
	open <data_device> <name> <hash_device> [<root_hash>] - open device as <name>
	close <name> - close device (remove mapping)
	status <name> - show active device status
	dump <hash_device> - show on-disk information

<name> is the device to create under /dev/mapper
<data_device> is the data device
<hash_device> is the device containing verification data
<root_hash> hash of the root node on <hash_device>

Default compiled-in dm-verity parameters:
	Hash: sha256, Data block (bytes): 4096, Hash block (bytes): 4096, Salt size: 32, Hash format: 1
`

// activationOnly are veritysetup's options for open and close only
// (optionActions says which).
var activationOnly = []string{"ignore-corruption", "ignore-zero-blocks", "restart-on-corruption", "panic-on-corruption",
	"use-tasklets", "deferred", "cancel-deferred", "root-hash-signature"}

// options are veritysetup's options, numbers kept as text so that a bad
// one gets veritysetup's message rather than pflag's.
type options struct {
	hash, salt, uuid, format                             string
	dataBlockSize, hashBlockSize, dataBlocks, hashOffset string
	noSuperblock                                         bool
	rootHashFile, fecDevice, fecOffset, fecRoots         string
	verbose, debug, help, usage, version                 bool
	fs                                                   *pflag.FlagSet
}

// failure is a failure reported as veritysetup reports it: lines on
// stderr (after the short usage when usage is set) and an exit code.
type failure struct {
	code     int
	usage    bool
	prefixed bool // the lines start with the invocation name
	lines    []string
}

func (f *failure) Error() string { return strings.Join(f.lines, "; ") }

func fail(code int, format string, args ...any) *failure {
	return &failure{code: code, lines: []string{fmt.Sprintf(format, args...)}}
}

// usageFail is a command-line mistake: veritysetup prints its short usage
// and the message prefixed with the name it was invoked by (argv[0]).
func usageFail(format string, args ...any) *failure {
	return &failure{code: exitEINVAL, usage: true, lines: []string{fmt.Sprintf(format, args...)}, prefixed: true}
}

// Main is main for the front; argv0 is the name it was invoked
// by, which veritysetup's usage errors start with.
func Main(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int {
	var o options
	err := o.parse(args)
	verbose := o.verbose || o.debug
	code := exitOK
	switch {
	case err != nil:
	case o.help:
		fmt.Fprint(stdout, versionText+helpText)
		return exitOK
	case o.version:
		fmt.Fprint(stdout, versionText)
		return exitOK
	case o.usage:
		fmt.Fprint(stderr, usageText)
		return exitOK
	default:
		err = o.action(ctx, o.fs.Args(), stdout, stderr)
	}
	if err != nil {
		var f *failure
		if !errors.As(err, &f) {
			f = fromLibrary(err)
		}
		if f.usage {
			fmt.Fprint(stderr, usageText)
		}
		for _, l := range f.lines {
			if f.prefixed {
				l = argv0 + ": " + l
			}
			fmt.Fprintln(stderr, l)
		}
		code = f.code
	}
	if verbose && !o.help && !o.version && !o.usage {
		if code == exitOK {
			fmt.Fprintln(stdout, "Command successful.")
		} else {
			fmt.Fprintf(stdout, "Command failed with code -%d (%s).\n", code, codeText[code])
		}
	}
	return code
}

func (o *options) parse(args []string) error {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.fs = fs
	fs.StringVarP(&o.hash, "hash", "h", "sha256", "")
	fs.StringVarP(&o.salt, "salt", "s", "", "")
	fs.StringVar(&o.uuid, "uuid", "", "")
	fs.StringVar(&o.format, "format", "1", "")
	fs.StringVar(&o.dataBlockSize, "data-block-size", "4096", "")
	fs.StringVar(&o.hashBlockSize, "hash-block-size", "4096", "")
	fs.StringVar(&o.dataBlocks, "data-blocks", "0", "")
	fs.StringVar(&o.hashOffset, "hash-offset", "0", "")
	fs.BoolVar(&o.noSuperblock, "no-superblock", false, "")
	fs.StringVar(&o.rootHashFile, "root-hash-file", "", "")
	fs.StringVar(&o.fecDevice, "fec-device", "", "")
	fs.StringVar(&o.fecOffset, "fec-offset", "0", "")
	fs.StringVar(&o.fecRoots, "fec-roots", "2", "")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "")
	fs.BoolVar(&o.debug, "debug", false, "")
	fs.BoolVarP(&o.help, "help", "?", false, "")
	fs.BoolVar(&o.usage, "usage", false, "")
	fs.BoolVarP(&o.version, "version", "V", false, "")
	// Accepted as veritysetup accepts them; meaningful only for open.
	fs.Bool("check-at-most-once", false, "")
	for _, name := range activationOnly {
		if name == "root-hash-signature" {
			fs.String(name, "", "")
		} else {
			fs.Bool(name, false, "")
		}
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	return nil
}

// parseError words pflag's errors as popt's, from their types: the
// option as given, then what is wrong with it.
func parseError(err error) error {
	var ne *pflag.NotExistError
	var vr *pflag.ValueRequiredError
	switch {
	case errors.As(err, &ne):
		return usageOnly(given(ne.GetSpecifiedName(), ne.GetSpecifiedShortnames()) + ": unknown option")
	case errors.As(err, &vr):
		return usageOnly(given(vr.GetSpecifiedName(), vr.GetSpecifiedShortnames()) + ": missing argument")
	}
	return usageOnly(err.Error())
}

// given is an option as the command line gave it: --name, or the
// shorthands from this one on (-q of -vq, as pflag reports them).
func given(name, shorthands string) string {
	if shorthands != "" {
		return "-" + shorthands
	}
	return "--" + name
}

// usageOnly is popt's own error: the short usage, then the message as
// it is.
func usageOnly(msg string) *failure {
	return &failure{code: exitEINVAL, usage: true, lines: []string{msg}}
}

func (o *options) action(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageFail("Argument <action> missing.")
	}
	verb, args := args[0], args[1:]
	// veritysetup's aliases: create takes the name first (only with two
	// arguments or more), remove is close.
	switch {
	case verb == "create" && len(args) > 1:
		args = append([]string{args[1], args[0]}, args[2:]...)
		verb = "open"
	case verb == "remove":
		verb = "close"
	}
	switch verb {
	case "format", "verify", "dump", "open", "close", "status":
	default:
		return usageFail("Unknown action.")
	}
	if err := o.checkActionOptions(verb); err != nil {
		return err
	}
	switch verb {
	case "open", "close", "status":
		return o.deviceAction(ctx, verb, args, stdout, stderr)
	}
	// As veritysetup, arguments past those an action takes are ignored.
	switch verb {
	case "format":
		if len(args) < 2 {
			return usageFail("format: requires <data_device> <hash_device> as arguments")
		}
		return o.formatAction(ctx, args[0], args[1], stdout, stderr)
	case "verify":
		if len(args) < 2 {
			return usageFail("verify: requires <data_device> <hash_device> [<root_hash>] as arguments")
		}
		root := ""
		if len(args) > 2 {
			root = args[2]
		}
		return o.verifyAction(ctx, args[0], args[1], root, stderr)
	}
	if len(args) < 1 {
		return usageFail("dump: requires <hash_device> as arguments")
	}
	return o.dumpAction(args[0], stdout)
}

// number parses a numeric option as veritysetup does (strtoull, base
// 10: leading spaces, a sign, a negative number wrapping around, nothing
// after the digits): a bad one is a usage error.
func number(text string) (uint64, error) {
	n, ok := strtoull(text)
	if !ok {
		return 0, usageFail("invalid numeric value")
	}
	return n, nil
}

// number32 is number for the options veritysetup keeps in 32 bits.
func number32(text string) (uint64, error) {
	n, err := number(text)
	if err == nil && n > 1<<32-1 {
		return 0, usageFail("invalid numeric value")
	}
	return n, err
}

func strtoull(text string) (uint64, bool) {
	s := strings.TrimLeft(text, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// numberOr0 is a number checked already.
func numberOr0(text string) uint64 {
	n, _ := strtoull(text)
	return n
}

// treeHooks are checks veritysetup makes between tree's own, in its order:
// afterOffsets once the block sizes and offsets are checked (the data
// device, then the overlap of the data and hash areas), afterHash once the
// hash algorithm is (the overlaps of the FEC area), beforeUUID after those
// (format's page-size warning and FEC parameters). Any may be nil.
type treeHooks struct {
	afterOffsets, afterHash, beforeUUID func(t *verity.TreeOptions) error
}

// tree checks the tree options as veritysetup does (crypt_format's order:
// salt, hash type, block sizes, offsets, the hooks' checks, hash
// algorithm), with its messages, and returns them as the library takes
// them. hashPath names HASH in the UUID message.
//
// With fromSuperblock (verify of a tree with a superblock) the options the
// superblock gives are not checked: veritysetup ignores them.
func (o *options) tree(hashPath string, hooks treeHooks, fromSuperblock bool) (verity.TreeOptions, error) {
	nums, err := o.treeNumbers()
	if err != nil {
		return verity.TreeOptions{}, err
	}
	if fromSuperblock {
		return superblockTree(nums)
	}
	var t verity.TreeOptions
	if err := o.treeSalt(&t); err != nil {
		return t, err
	}
	if err := treeGeometry(&t, nums); err != nil {
		return t, err
	}
	t.NoSuperblock = o.noSuperblock
	if hooks.afterOffsets != nil {
		if err := hooks.afterOffsets(&t); err != nil {
			return t, err
		}
	}
	if _, err = hashes.Lookup(o.hash); err != nil {
		return t, fail(exitEINVAL, "Hash algorithm %s not supported.", o.hash)
	}
	t.Hash = o.hash // the superblock keeps veritysetup's spelling, in lower case
	for _, hook := range []func(*verity.TreeOptions) error{hooks.afterHash, hooks.beforeUUID} {
		if hook == nil {
			continue
		}
		if err := hook(&t); err != nil {
			return t, err
		}
	}
	if o.noSuperblock {
		// Without superblock veritysetup starts the tree at the hash
		// block the offset falls in (VERITY_hash_offset_block).
		t.HashOffset -= t.HashOffset % uint64(t.HashBlockSize)
	}
	if o.fs.Changed("uuid") && !o.noSuperblock { // veritysetup ignores it without superblock
		u, err := cli.ParseUUID(o.uuid)
		if err != nil {
			return t, fail(exitEINVAL, "Wrong VERITY UUID format provided on device %s.", hashPath)
		}
		t.UUID = &u
	}
	return t, nil
}

// treeNumbers parses the numeric tree options, as veritysetup's popt does
// (some in 32 bits), by their flag names.
func (o *options) treeNumbers() (map[string]uint64, error) {
	nums := map[string]uint64{}
	for _, n := range []struct {
		name, text string
		bits32     bool
	}{{"format", o.format, true}, {"data-block-size", o.dataBlockSize, true},
		{"hash-block-size", o.hashBlockSize, true}, {"data-blocks", o.dataBlocks, false}, {"hash-offset", o.hashOffset, false},
		{"fec-offset", o.fecOffset, false}, {"fec-roots", o.fecRoots, true}} {
		parse := number
		if n.bits32 {
			parse = number32
		}
		v, err := parse(n.text)
		if err != nil {
			return nil, err
		}
		nums[n.name] = v
	}
	return nums, nil
}

// superblockTree is tree's answer for a tree whose superblock gives the
// options: only the offsets are checked.
func superblockTree(nums map[string]uint64) (verity.TreeOptions, error) {
	var t verity.TreeOptions
	t.DataBlockSize, t.HashBlockSize, t.HashOffset = 4096, 4096, nums["hash-offset"]
	if t.HashOffset%merkle.SuperblockSize != 0 || cli.CheckHashOffset(t.HashOffset, t.HashBlockSize) != nil {
		return t, fail(exitEINVAL, "Unsupported VERITY hash offset.")
	}
	if nums["fec-offset"]%merkle.SuperblockSize != 0 {
		return t, fail(exitEINVAL, "Unsupported VERITY FEC offset.")
	}
	return t, nil
}

// treeSalt sets the salt --salt gives, if given.
func (o *options) treeSalt(t *verity.TreeOptions) error {
	if !o.fs.Changed("salt") {
		return nil
	}
	if o.salt == "-" || o.salt == "" { // popt's empty value: no salt, as "-"
		t.Salt = []byte{}
		return nil
	}
	salt, err := cli.ParseHex("salt", o.salt)
	if err != nil || len(salt) == 0 || len(salt) > merkle.MaxSaltSize {
		return fail(exitEINVAL, "Invalid salt string specified.")
	}
	t.Salt = salt
	return nil
}

// treeGeometry checks and sets the format, block sizes, data blocks and
// offsets, in veritysetup's order.
func treeGeometry(t *verity.TreeOptions, nums map[string]uint64) error {
	if f := nums["format"]; f > 1 {
		return fail(exitEINVAL, "Unsupported VERITY hash type %d.", f)
	}
	t.LegacyFormat = nums["format"] == 0
	for _, name := range []string{"data-block-size", "hash-block-size"} {
		v := nums[name]
		if v > 1<<30 || merkle.CheckBlockSize(int(v)) != nil {
			return fail(exitEINVAL, "Unsupported VERITY block size.")
		}
	}
	t.DataBlockSize, t.HashBlockSize = int(nums["data-block-size"]), int(nums["hash-block-size"])
	t.DataBlocks = nums["data-blocks"]
	t.HashOffset = nums["hash-offset"]
	if t.HashOffset%merkle.SuperblockSize == 0 && t.HashOffset > math.MaxInt64 {
		// A negative --hash-offset wraps around past veritysetup's
		// signed offsets.
		return fail(exitEINVAL, "Device offset overflow.")
	}
	if t.HashOffset%merkle.SuperblockSize != 0 || cli.CheckHashOffset(t.HashOffset, t.HashBlockSize) != nil {
		return fail(exitEINVAL, "Unsupported VERITY hash offset.")
	}
	if nums["fec-offset"]%merkle.SuperblockSize != 0 {
		return fail(exitEINVAL, "Unsupported VERITY FEC offset.")
	}
	if t.DataBlocks > math.MaxInt64/uint64(t.DataBlockSize) {
		// veritysetup counts the data area's size in a signed 64-bit
		// offset (a negative --data-blocks wraps around to a huge one).
		return fail(exitEINVAL, "Device offset overflow.")
	}
	return nil
}

// overlapHooks are veritysetup's checks that the areas given do not
// overlap (crypt_format for VERITY, which format and a verify without
// superblock go through): HASH the same device as DATA must start its tree
// past all of the data, which without --data-blocks is the whole device;
// an FEC device that is HASH or DATA must start its parity past the tree
// or the data. The tree's size is counted as veritysetup counts it: no
// superblock, and no tree at all without --data-blocks. Devices are the
// same as device_is_identical says.
//
// verify names its missing devices later, in its own order: with
// mustExist false, a missing DATA or HASH skips the checks.
func (o *options) overlapHooks(dataPath, hashPath string, mustExist bool) treeHooks {
	var dataBytes uint64
	skip := false
	return treeHooks{
		afterOffsets: func(t *verity.TreeOptions) error {
			if !mustExist {
				_, derr := os.Stat(dataPath)
				_, herr := os.Stat(hashPath)
				if skip = derr != nil || herr != nil; skip {
					return nil
				}
			} else if err := checkDevice(dataPath); err != nil {
				return err
			}
			dataBytes = t.DataBlocks * uint64(t.DataBlockSize)
			if t.DataBlocks == 0 {
				dataBytes = deviceSize(dataPath) / uint64(t.DataBlockSize) * uint64(t.DataBlockSize)
			}
			if identical(hashPath, dataPath) && dataBytes > t.HashOffset {
				return fail(exitEINVAL, "Data area overlaps with hash area.")
			}
			return nil
		},
		afterHash: func(t *verity.TreeOptions) error {
			if o.fecDevice == "" || skip {
				return nil
			}
			fecOffset := numberOr0(o.fecOffset) // checked by tree
			alg, _ := hashes.Lookup(t.Hash)
			tree := hashBlocks(t.HashBlockSize, alg.Size(), t.DataBlocks) * uint64(t.HashBlockSize)
			if identical(hashPath, o.fecDevice) && t.HashOffset+tree > fecOffset {
				return fail(exitEINVAL, "Hash area overlaps with FEC area.")
			}
			if identical(dataPath, o.fecDevice) && dataBytes > fecOffset {
				return fail(exitEINVAL, "Data area overlaps with FEC area.")
			}
			return nil
		},
	}
}

// verifyHooks are verify's checks between tree's: without superblock,
// veritysetup lays the tree out as format does, with its checks of the
// areas; with one it checks none.
func (o *options) verifyHooks(dataPath, hashPath string) treeHooks {
	if !o.noSuperblock {
		return treeHooks{}
	}
	return o.overlapHooks(dataPath, hashPath, false)
}

// identical is veritysetup's device_is_identical: the same path, or two
// block devices of the same device number, or two regular files of the
// same device and inode (links followed).
func identical(a, b string) bool {
	if a == b {
		return true
	}
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	switch ta, tb := sa.Mode&syscall.S_IFMT, sb.Mode&syscall.S_IFMT; {
	case ta == syscall.S_IFBLK && tb == syscall.S_IFBLK:
		return sa.Rdev == sb.Rdev
	case ta == syscall.S_IFREG && tb == syscall.S_IFREG:
		return sa.Ino == sb.Ino && sa.Dev == sb.Dev
	}
	return false
}

// deviceSize is the size of the file or block device at path; 0 if it
// cannot be read (the library then says why).
func deviceSize(path string) uint64 {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Raw: true})
	if err != nil {
		return 0
	}
	defer src.Close()
	return uint64(src.Size())
}

// hashBlocks is veritysetup's VERITY_hash_blocks: the hash blocks of a
// tree of blocks data blocks (0 when its levels cannot be counted, as for
// 0 blocks: the count then wraps), with digestSize-byte digests.
func hashBlocks(hashBlockSize, digestSize int, blocks uint64) uint64 {
	bits := 0
	for u := hashBlockSize / digestSize; u>>bits > 1; {
		bits++
	}
	if bits == 0 {
		return 0
	}
	levels := 0
	for bits*levels < 64 && (blocks-1)>>(bits*levels) != 0 {
		levels++
	}
	if levels > merkle.MaxLevels {
		return 0
	}
	var pos uint64
	for i := levels - 1; i >= 0; i-- {
		shift := (i + 1) * bits
		if shift > 63 {
			return 0
		}
		s := (blocks + 1<<shift - 1) >> shift
		if pos+s < pos {
			return 0
		}
		pos += s
	}
	return pos
}

// fec checks the FEC options against the tree's block sizes.
func (o *options) fecOptions(t *verity.TreeOptions) (offset uint64, roots int, err error) {
	if o.fecDevice == "" {
		return 0, 0, nil
	}
	offset = numberOr0(o.fecOffset) // checked by tree
	r := numberOr0(o.fecRoots)
	if t.DataBlockSize != t.HashBlockSize {
		return 0, 0, fail(exitEINVAL, "Block sizes must match for FEC.")
	}
	if r < fec.MinRoots || r > fec.MaxRoots {
		return 0, 0, fail(exitEINVAL, "Invalid number of parity bytes.")
	}
	return offset, int(r), nil
}

// checkDevice fails as veritysetup does when path cannot be opened.
func checkDevice(path string) error {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return fail(exitENODEV, "Device %s does not exist or access denied.", path)
	case !info.Mode().IsRegular() && info.Mode()&fs.ModeDevice == 0 || info.Mode()&fs.ModeCharDevice != 0:
		// Only a regular file or a block device is one (a directory,
		// /dev/null and a FIFO are not).
		return fail(exitENODEV, "Device %s is not compatible.", path)
	}
	return nil
}

func (o *options) formatAction(ctx context.Context, dataPath, hashPath string, stdout, stderr io.Writer) error {
	hooks := o.overlapHooks(dataPath, hashPath, true)
	var fecOffset uint64
	var fecRoots int
	hooks.beforeUUID = func(t *verity.TreeOptions) (err error) {
		if t.DataBlockSize > 4096 {
			// veritysetup's words, with its page size on the machines it
			// runs on, once the areas are checked.
			fmt.Fprintln(stderr, "WARNING: Kernel cannot activate device if data block size exceeds page size (4096).")
		}
		fecOffset, fecRoots, err = o.fecOptions(t)
		if f, ok := err.(*failure); ok {
			// format prints these twice: where it checks them and
			// where its caller fails.
			f.lines = append(f.lines, f.lines...)
		}
		return err
	}
	t, err := o.tree(hashPath, hooks, false)
	if err != nil {
		return err
	}
	if _, err := os.Stat(hashPath); err == nil {
		if err := checkDevice(hashPath); err != nil {
			return err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if dir, err := os.Stat(filepath.Dir(hashPath)); err != nil || !dir.IsDir() {
			return fail(exitEINVAL, "Cannot create hash image %s for writing.", hashPath)
		}
	}
	if p := o.rootHashFile; p != "" {
		if dir, err := os.Stat(filepath.Dir(p)); err != nil || !dir.IsDir() {
			return fail(exitEINVAL, "Cannot create root hash file %s for writing.", p)
		}
	}
	// Raw: veritysetup reads an Android sparse image as the bytes it is;
	// InPlace: it writes its outputs in place.
	opts := &verity.FormatOptions{TreeOptions: t, HashOffsetSet: o.fs.Changed("hash-offset"), Raw: true, InPlace: true,
		FECDevice: o.fecDevice, FECOffset: fecOffset, FECRoots: fecRoots, RootHashFile: o.rootHashFile}
	if o.verbose || o.debug {
		opts.Warn = func(msg string) { fmt.Fprintf(stderr, "WARNING: %s\n", flags.Say(msg)) }
	}
	fr, err := verity.Format(ctx, dataPath, hashPath, opts)
	if err != nil {
		return formatError(err)
	}
	g := fr.Layout.Geometry
	h := cli.NewHeader(g, hashPath)
	h.Algorithm = o.hash // veritysetup prints the name given, as given
	if o.fs.Changed("uuid") && !o.noSuperblock {
		h.UUID = o.uuid // and the UUID as given (capitals kept)
	}
	h.RootHash = fmt.Sprintf("%x", fr.RootHash)
	if !fr.Layout.TreeInData && numberOr0(o.hashOffset) == 0 {
		// veritysetup prints the size only for a hash device of its own.
		h.HashDeviceSize, h.ShowHashDeviceSize = g.HashEnd(), true
	}
	if f := fr.FEC; f != nil {
		h.FECRoots, h.FECBlocks = f.Roots, f.ParityBlocks
		switch {
		case f.InHash && h.ShowHashDeviceSize:
			h.HashDeviceSize = f.Offset + f.Size
		case !f.InHash && !f.InData && f.Offset == 0:
			h.FECDeviceSize = f.Size
		}
	}
	h.Print(stdout)
	return nil
}

// formatError words the library's format errors as veritysetup's.
func formatError(err error) error {
	var e *verity.Error
	if errors.As(err, &e) && e.Kind == verity.KindParam {
		switch e.Field {
		case "DataBlocks":
			return fail(exitEINVAL, "Input/output error while creating hash area.")
		case "HashOffset":
			return fail(exitEINVAL, "Data area overlaps with hash area.")
		}
	}
	return err
}

// fromLibrary words any other error of the library: its own message (one
// line), and the exit code veritysetup gives that kind of failure.
func fromLibrary(err error) *failure {
	code := exitEINVAL
	var e *verity.Error
	switch {
	case errors.Is(err, verity.ErrLocked):
		code = exitEBUSY
	case errors.Is(err, fs.ErrNotExist):
		code = exitENODEV
	case errors.As(err, &e) && e.Kind == verity.KindCorrupt:
		code = exitEPERM
	}
	return &failure{code: code, lines: []string{flags.Say(err.Error()) + "."}}
}

// flags is how veritysetup spells the library's options: as veritygen
// and veritycheck spell the ones it shares with them.
var flags = cli.NewSpelling(cli.SharedFlags...)

func (o *options) dumpAction(hashPath string, stdout io.Writer) error {
	offset, err := number(o.hashOffset)
	if err != nil {
		return err
	}
	if err := checkDevice(hashPath); err != nil {
		return err
	}
	if offset%merkle.SuperblockSize != 0 {
		return fail(exitEINVAL, "Unsupported VERITY hash offset.")
	}
	g, err := verity.ReadSuperblock(hashPath, offset)
	if err != nil {
		return superblockError(err, hashPath)
	}
	h := cli.NewHeader(g, hashPath)
	if g.HashOffset == 0 {
		h.HashDeviceSize, h.ShowHashDeviceSize = g.HashEnd(), true
	}
	h.Print(stdout)
	return nil
}

func superblockError(err error, hashPath string) error {
	if errors.Is(err, verity.ErrInput) {
		f := fail(exitEINVAL, "Device %s is not a valid VERITY device.", hashPath)
		var se *merkle.SuperblockError
		if errors.As(err, &se) && se.Field == "algorithm" && se.Name != "" {
			// A name we do not know: veritysetup (OpenSSL) says so first.
			f.lines = append([]string{fmt.Sprintf("Hash algorithm %s not supported.", se.Name)}, f.lines...)
		}
		return f
	}
	return err
}

func (o *options) verifyAction(ctx context.Context, dataPath, hashPath, rootText string, stderr io.Writer) error {
	a, err := o.activation(dataPath, hashPath, rootText)
	if err != nil {
		return err
	}
	vo := &verity.VerifyOptions{TreeOptions: a.tree, Raw: true,
		FECDevice: o.fecDevice, FECOffset: a.fecOffset, FECRoots: a.fecRoots, MaxProblems: 1}
	g, root := a.g, a.root
	first := firstProblem{g: g}
	vo.OnProblem = first.see
	if g == nil {
		// Without superblock the tree is known once Verify has checked
		// the options.
		vo.OnStart = func(tg *merkle.Geometry, _ *verity.Source) { first.g = tg }
	}
	res, err := verity.Verify(ctx, dataPath, hashPath, root, vo)
	if err != nil {
		var e *verity.Error
		if errors.As(err, &e) && e.Field == "root" {
			return fail(exitEINVAL, "Invalid root hash string specified.")
		}
		return err
	}
	defer res.Close()
	if res.Verified {
		return nil
	}
	lines, code, err := first.report(ctx, dataPath, hashPath, res.Report, vo)
	if err != nil {
		return err
	}
	if code == exitOK {
		return nil // only the superblock's reserved bytes, which veritysetup ignores
	}
	if res.Repair == nil {
		return &failure{code: code, lines: lines}
	}
	return fecVerdict(res, lines, dataPath, hashPath, stderr)
}

// fecVerdict is verify's answer for a tree with FEC that did not verify:
// veritysetup checks the whole image against the parity and says how
// many bytes it would correct, writing nothing. lines are the problem's
// messages.
func fecVerdict(res *verity.VerifyResult, lines []string, dataPath, hashPath string, stderr io.Writer) error {
	for _, l := range lines {
		fmt.Fprintln(stderr, l)
	}
	rp := res.Repair
	if !rp.Whole() {
		p := res.FEC.Params(res.Geometry)
		round := uint64(0)
		if lost := rp.Lost(); len(lost) > 0 {
			round, _ = p.Round(lost[0].FECBlock)
		}
		return &failure{code: exitEPERM, lines: []string{fmt.Sprintf("Failed to repair parity for block %d.", round),
			"Errors cannot be repaired with FEC device."}}
	}
	n, err := repairableBytes(rp, dataPath, hashPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Found %d repairable errors with FEC device.\n", n)
	if len(lines) > 0 && lines[0] == msgRootFailed {
		// The repair is counted, but nothing proves that the repaired
		// data is what the root hash stands for: veritysetup fails.
		return &failure{code: exitEPERM}
	}
	return nil
}

// msgRootFailed is veritysetup's message for a tree that matches itself
// but not the root hash given.
const msgRootFailed = "Verification of root hash failed."

// belowTop verifies everything under the top block against the top
// block as it is (the root hash it stands for is its own digest), and
// reports what that finds: veritysetup, which checks from the data up,
// blames the root hash only if everything under the top block matches it.
func belowTop(ctx context.Context, dataPath, hashPath string, g *merkle.Geometry, vo *verity.VerifyOptions) ([]string, int, error) {
	f, err := os.Open(hashPath)
	if err != nil {
		return nil, 0, readError("HASH", hashPath, err)
	}
	defer f.Close()
	top := make([]byte, g.HashBlockSize)
	if _, err := f.ReadAt(top, int64(g.BlockOffset(g.TopLevel(), 0))); err != nil {
		return nil, 0, readError("HASH", hashPath, err)
	}
	own := *vo
	own.FECDevice, own.FECOffset, own.FECRoots = "", 0, 0
	first := firstProblem{g: g}
	own.OnProblem, own.OnStart = first.see, nil
	res, err := verity.Verify(ctx, dataPath, hashPath, digest(g, top), &own)
	if err != nil {
		return nil, 0, err
	}
	defer res.Close()
	if first.definite == nil && first.changed == nil {
		return []string{msgRootFailed}, exitEINVAL, nil
	}
	return first.report(ctx, dataPath, hashPath, res.Report, nil)
}

// firstChildMismatch returns the offset of the first block under hash
// block (level, index) whose digest is not the one the block holds.
func firstChildMismatch(g *merkle.Geometry, dataPath, hashPath string, level merkle.Level, index uint64) (i, off uint64, found bool, err error) {
	hash, err := os.Open(hashPath)
	if err != nil {
		return 0, 0, false, readError("HASH", hashPath, err)
	}
	defer hash.Close()
	children, size := hash, g.HashBlockSize
	childRole, childPath := "HASH", hashPath
	count := uint64(0)
	if level == 0 {
		childRole, childPath = "DATA", dataPath
		data, err := os.Open(dataPath)
		if err != nil {
			return 0, 0, false, readError("DATA", dataPath, err)
		}
		defer data.Close()
		children, size, count = data, g.DataBlockSize, g.DataBlocks
	} else {
		count = g.LevelBlocks[level-1]
	}
	block := make([]byte, g.HashBlockSize)
	if _, err := hash.ReadAt(block, int64(g.BlockOffset(level, index))); err != nil {
		return 0, 0, false, readError("HASH", hashPath, err)
	}
	child := make([]byte, size)
	hpb := uint64(g.HashesPerBlock)
	for i = 0; i < hpb && index*hpb+i < count; i++ {
		c := index*hpb + i
		off = c * uint64(size)
		if level > 0 {
			off = g.BlockOffset(level-1, c)
		}
		if _, err := children.ReadAt(child, int64(off)); err != nil {
			return 0, 0, false, readError(childRole, childPath, err)
		}
		slot := block[i*uint64(g.DigestSlot):][:g.DigestSize]
		if !bytes.Equal(digest(g, child), slot) {
			return i, off, true, nil
		}
	}
	return 0, 0, false, nil
}

// readError is a failed read of the front's own, in our words (not Go's
// "open PATH:" or "EOF").
func readError(role, path string, err error) error {
	return fmt.Errorf("reading %s %s: %w", role, path, safefile.Cause(err))
}

// digest is the salted digest of a block, as the tree stores it.
func digest(g *merkle.Geometry, block []byte) []byte {
	d := make([]byte, g.DigestSize)
	g.Hash.NewBlockHasher(len(block), g.Salt, g.SaltPosition()).HashBlocks(d, len(d), block)
	return d
}

// firstProblem finds the problem veritysetup would have stopped at: it
// checks level by level from the data up (stage s checks the blocks of
// level s-1, the data for stage 0, against the digests of level s), each
// block against the digest its parent holds, and each hash block's spare
// area right after the digests it holds. The library checks top down and
// does not look under a hash block that does not match its parent
// ("changed"): where veritysetup stops under it is found by checking its
// children against it.
type firstProblem struct {
	g *merkle.Geometry
	// definite is the first data block that does not match, or the first
	// hash block with a bad spare area, in veritysetup's order (stage,
	// pos: positions count the checked blocks twice over, so that the
	// padding of block k comes after its children's).
	definite *merkle.CorruptionError
	stage    int
	pos      uint64
	// changed is the lowest, first hash block whose digests changed.
	changed *merkle.CorruptionError
}

func (f *firstProblem) see(p *merkle.CorruptionError) {
	if p.Level == merkle.HeaderLevel || f.g == nil {
		return // veritysetup does not check the superblock's reserved bytes
	}
	if p.Level.IsTree() && p.Fault != merkle.FaultPadding {
		if c := f.changed; c == nil || p.Level < c.Level || p.Level == c.Level && p.Index < c.Index {
			f.changed = p
		}
		return
	}
	stage, pos := int(p.Level)+1, 2*p.Index
	if p.Level.IsTree() { // padding
		stage, pos = int(p.Level), 2*(p.Index+1)*uint64(f.g.HashesPerBlock)-1
	}
	if f.definite == nil || stage < f.stage || stage == f.stage && pos < f.pos {
		f.definite, f.stage, f.pos = p, stage, pos
	}
}

// report returns veritysetup's messages for what verification found, and
// its exit code (exitOK if only what veritysetup does not check is wrong).
// vo, when not nil, are the options to verify again under a top block that
// does not match the root hash.
func (f *firstProblem) report(ctx context.Context, dataPath, hashPath string, rep *merkle.VerifyReport, vo *verity.VerifyOptions) ([]string, int, error) {
	g := f.g
	if c := f.changed; c != nil && c.Level == g.TopLevel() && rep.RootMismatch && vo != nil {
		return belowTop(ctx, dataPath, hashPath, g, vo)
	}
	if f.definite == nil && f.changed == nil {
		if rep.RootMismatch {
			return []string{msgRootFailed}, exitEINVAL, nil
		}
		return nil, exitOK, nil
	}
	if g.Levels == 0 && rep.RootMismatch {
		return []string{msgRootFailed}, exitEINVAL, nil
	}
	failedAt := func(off uint64) []string {
		return []string{fmt.Sprintf("Verification failed at position %d.", off), "Verification of data area failed."}
	}
	if c := f.changed; c != nil {
		hpb := uint64(g.HashesPerBlock)
		i, off, ok, err := firstChildMismatch(g, dataPath, hashPath, c.Level, c.Index)
		if err != nil {
			return nil, 0, err
		}
		stage, pos := int(c.Level), 2*(c.Index*hpb+i)
		if !ok { // cannot be: its digests changed; say where it is
			stage, pos, off = int(c.Level)+1, 2*c.Index, c.Offset
		}
		// The child that does not match may have changed too, and so on
		// down: veritysetup stops at the lowest.
		for level, index := c.Level, c.Index*hpb+i; ok && level > 0; level-- {
			ci, coff, cok, err := firstChildMismatch(g, dataPath, hashPath, level-1, index)
			if err != nil {
				return nil, 0, err
			}
			if !cok {
				break
			}
			stage, pos, off = int(level)-1, 2*(index*hpb+ci), coff
			index = index*hpb + ci
		}
		if f.definite == nil || stage < f.stage || stage == f.stage && pos < f.pos {
			return failedAt(off), exitEPERM, nil
		}
	}
	p := f.definite
	if p.Fault == merkle.FaultPadding {
		return []string{fmt.Sprintf("Spare area is not zeroed at position %d.", p.Offset+spareStart(g, p.Level, p.Index, p.PaddingAt)),
			"Verification of data area failed."}, exitEPERM, nil
	}
	return failedAt(p.Offset), exitEPERM, nil
}

// spareStart returns where the spare area holding byte at of hash block
// (level, index) starts, as veritysetup reports it: the padding after a
// digest in its slot, or the rest of the block after the digests it holds.
func spareStart(g *merkle.Geometry, level merkle.Level, index uint64, at int) uint64 {
	children := g.DataBlocks
	if level > 0 {
		children = g.LevelBlocks[level-1]
	}
	n := int(min(uint64(g.HashesPerBlock), children-index*uint64(g.HashesPerBlock)))
	if used := n * g.DigestSlot; at >= used {
		return uint64(used)
	}
	slot := at / g.DigestSlot
	return uint64(slot*g.DigestSlot + g.DigestSize)
}

// repairableBytes counts the bytes the repair would change: what
// veritysetup reports as the errors FEC can correct. The plan is applied
// to writers that compare and write nothing.
func repairableBytes(rp *verity.RepairPlan, dataPath, hashPath string) (uint64, error) {
	data, err := os.Open(dataPath)
	if err != nil {
		return 0, readError("DATA", dataPath, err)
	}
	defer data.Close()
	hash, err := os.Open(hashPath)
	if err != nil {
		return 0, readError("HASH", hashPath, err)
	}
	defer hash.Close()
	c := &counter{blocks: rp.RebuiltCount()}
	if err := rp.Apply(c.on(data), c.on(hash)); err != nil {
		return 0, err
	}
	return c.bytes, c.err
}

// counter counts differing bytes in the first blocks writes (the rebuilt
// blocks; Apply then restores the superblock area, which the parity does
// not cover).
type counter struct {
	blocks int
	bytes  uint64
	err    error
}

type compare struct {
	c *counter
	f *os.File
}

func (c *counter) on(f *os.File) io.WriterAt { return &compare{c: c, f: f} }

func (w *compare) WriteAt(b []byte, off int64) (int, error) {
	c := w.c
	if c.blocks == 0 {
		return len(b), nil
	}
	c.blocks--
	old := make([]byte, len(b))
	n, err := w.f.ReadAt(old, off)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	for i := range b {
		if i >= n || old[i] != b[i] {
			c.bytes++
		}
	}
	return len(b), nil
}
