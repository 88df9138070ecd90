// Package veritysetup is the veritysetup front: cmd/veritysetup, or
// veritygen run under the name veritysetup (a symbolic or hard link), takes
// veritysetup 2.6.1's command line for format, verify, dump, open, close
// and status, prints what it prints and exits as it does, so that scripts
// written for veritysetup run unchanged where only veritygen is installed.
// It is one more caller of the library's verbs.
package veritysetup

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

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

// options are veritysetup's options, numbers kept as text (checked as
// popt reads them, then read again where they are used).
type options struct {
	hash, salt, uuid, format                             string
	dataBlockSize, hashBlockSize, dataBlocks, hashOffset string
	noSuperblock                                         bool
	rootHashFile, fecDevice, fecOffset, fecRoots         string
	rootHashSignature                                    string
	verbose, debug, help, usage, version                 bool
	set                                                  map[string]bool // the options given
	args                                                 []string        // the words that are not options
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
	usageExit := false // veritysetup's usage() exits without its verbose result line
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
		err = o.action(ctx, o.args, stdout, stderr)
	}
	if err != nil {
		var f *failure
		if !errors.As(err, &f) {
			f = fromLibrary(err)
		}
		if f.usage {
			fmt.Fprint(stderr, usageText)
			usageExit = true
		}
		for _, l := range f.lines {
			if f.prefixed {
				l = argv0 + ": " + l
			}
			fmt.Fprintln(stderr, l)
		}
		code = f.code
	}
	if verbose && !o.help && !o.version && !o.usage && !usageExit {
		if code == exitOK {
			fmt.Fprintln(stdout, "Command successful.")
		} else {
			fmt.Fprintf(stdout, "Command failed with code -%d (%s).\n", code, codeText[code])
		}
	}
	return code
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
	return o.dumpAction(args[0], stdout, stderr)
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

// opensslOnly are the algorithms veritysetup's crypto backend (OpenSSL)
// hashes with and the front refuses (README: no Go implementation, or
// none in the kernel), with their digest sizes: the front checks
// everything veritysetup checks before it hashes, then refuses them.
var opensslOnly = map[string]int{"whirlpool": 64, "sm3": 32, "sha512-224": 28, "sha512-256": 32}

// digestSize is the digest size of the algorithm name as veritysetup's
// crypt_hash_size knows it (0: an unknown one).
func digestSize(name string) int {
	if a, err := hashes.Lookup(name); err == nil {
		return a.Size()
	}
	return opensslOnly[strings.ToLower(name)]
}

// notInOpenSSL reports whether name is one of the kernel's algorithms that
// veritysetup's crypto backend (OpenSSL, which has only BLAKE2b-512 of the
// family) does not know: veritysetup refuses them, veritygen makes them.
func notInOpenSSL(name string) bool {
	switch strings.ToLower(name) {
	case "blake2b-160", "blake2b-256", "blake2b-384":
		return true
	}
	return false
}

// numbers parses the numeric options, as popt does before anything else.
func (o *options) numbers() (map[string]uint64, error) {
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

// tree checks the tree options as veritysetup does (crypt_format's order:
// salt, hash type, block sizes, offsets, the hooks' checks, hash
// algorithm), with its messages, and returns them as the library takes
// them. hashPath names HASH in the UUID message.
//
// With fromSuperblock (verify of a tree with a superblock) the options the
// superblock gives are not checked: veritysetup ignores them.
func (o *options) tree(hashPath string, hooks treeHooks, fromSuperblock bool) (verity.TreeOptions, error) {
	var t verity.TreeOptions
	nums, err := o.numbers()
	if err != nil {
		return t, err
	}
	if fromSuperblock {
		// VERITY_read_sb's checks of the offset; veritysetup's caller
		// then says the device is not valid. (It checks no FEC offset.)
		t.DataBlockSize, t.HashBlockSize, t.HashOffset = 4096, 4096, nums["hash-offset"]
		return t, superblockOffset(t.HashOffset, hashPath)
	}
	if o.changed("salt") {
		if o.salt == "-" || o.salt == "" { // popt's empty value: no salt, as "-"
			t.Salt = []byte{}
		} else if salt, err := cli.ParseHex("salt", o.salt); err != nil || len(salt) == 0 {
			// (A salt over 256 bytes is format's to refuse, later.)
			return t, fail(exitEINVAL, "Invalid salt string specified.")
		} else {
			t.Salt = salt
		}
	}
	if f := nums["format"]; f > 1 {
		return t, fail(exitEINVAL, "Unsupported VERITY hash type %d.", f)
	}
	t.LegacyFormat = nums["format"] == 0
	for _, name := range []string{"data-block-size", "hash-block-size"} {
		v := nums[name]
		if v > 1<<30 || merkle.CheckBlockSize(int(v)) != nil {
			return t, fail(exitEINVAL, "Unsupported VERITY block size.")
		}
	}
	t.DataBlockSize, t.HashBlockSize = int(nums["data-block-size"]), int(nums["hash-block-size"])
	t.DataBlocks = nums["data-blocks"]
	t.HashOffset = nums["hash-offset"]
	// Offsets past what a file holds fail later (hashAreaFits, or the
	// writes), as veritysetup's do.
	if t.HashOffset%merkle.SuperblockSize != 0 {
		return t, fail(exitEINVAL, "Unsupported VERITY hash offset.")
	}
	if nums["fec-offset"]%merkle.SuperblockSize != 0 {
		return t, fail(exitEINVAL, "Unsupported VERITY FEC offset.")
	}
	t.NoSuperblock = o.noSuperblock
	if hooks.afterOffsets != nil {
		if err := hooks.afterOffsets(&t); err != nil {
			return t, err
		}
	}
	_, refusedLate := opensslOnly[strings.ToLower(o.hash)]
	if _, err = hashes.Lookup(o.hash); (err != nil || notInOpenSSL(o.hash)) && !refusedLate {
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
	if refusedLate {
		// veritysetup knows it: its checks of the areas come first, and
		// the front refuses only where veritysetup would hash.
		return t, fail(exitEINVAL, "Hash algorithm %s not supported.", o.hash)
	}
	if o.noSuperblock {
		// Without superblock veritysetup starts the tree at the hash
		// block the offset falls in (VERITY_hash_offset_block).
		t.HashOffset -= t.HashOffset % uint64(t.HashBlockSize)
	}
	if o.changed("uuid") && !o.noSuperblock { // veritysetup ignores it without superblock
		u, err := cli.ParseUUID(o.uuid)
		if err != nil {
			return t, fail(exitEINVAL, "Wrong VERITY UUID format provided on device %s.", hashPath)
		}
		t.UUID = &u
	}
	return t, nil
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
			} else if err := checkDataSize(dataPath); err != nil {
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
			if !o.withFEC() || skip {
				return nil
			}
			fecOffset := numberOr0(o.fecOffset) // checked by tree
			tree := hashBlocks(t.HashBlockSize, digestSize(t.Hash), t.DataBlocks) * uint64(t.HashBlockSize)
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
	h := o.overlapHooks(dataPath, hashPath, false)
	overlaps := h.afterHash
	h.afterHash = func(t *verity.TreeOptions) error {
		if o.withFEC() {
			if err := checkDevice(o.fecDevice); err != nil {
				// crypt_format fails its allocation with ENOMEM.
				err.(*failure).code = exitENOMEM
				return err
			}
		}
		return overlaps(t)
	}
	return h
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
	if !o.withFEC() {
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

// hashAreaFits fails as veritysetup's VERITY_create does before it writes
// anything, for a tree whose levels cannot be counted (no whole data
// block) or whose end is past 2^64 bytes.
func hashAreaFits(t *verity.TreeOptions, dataPath string) error {
	if over, _ := bits.Mul64(t.DataBlocks, uint64(t.DataBlockSize)); over != 0 {
		return fail(exitEINVAL, "Device offset overflow.")
	}
	blocks := t.DataBlocks
	if blocks == 0 {
		blocks = deviceSize(dataPath) / uint64(t.DataBlockSize)
	}
	size := digestSize(t.Hash)
	if size == 0 {
		return nil // refused already
	}
	hbs := uint64(t.HashBlockSize)
	start := t.HashOffset / hbs
	if !t.NoSuperblock {
		if t.HashOffset > math.MaxUint64-merkle.SuperblockSize-hbs+1 {
			// veritysetup's count of the tree's first block wraps
			// around to 0: it writes the tree at byte 0 and no
			// superblock, and reports success.
			return fail(exitEINVAL, "Device offset overflow.")
		}
		start = (t.HashOffset + merkle.SuperblockSize + hbs - 1) / hbs
	}
	_, _, end, ok := hashLevels(t.HashBlockSize, size, blocks, start)
	if !ok {
		return fail(exitEINVAL, "Hash area overflow.")
	}
	if over, _ := bits.Mul64(end, hbs); over != 0 {
		return fail(exitEINVAL, "Device offset overflow.")
	}
	if end*hbs > cli.MaxFileOffset {
		// Past what a file can hold: the seek fails.
		return fail(exitEINVAL, msgCreateIO)
	}
	return nil
}

// msgCreateIO is veritysetup's message for a tree it cannot write.
const msgCreateIO = "Input/output error while creating hash area."

// checkDataSize fails as veritysetup does (crypt_check_data_device_size)
// for a DATA shorter than a sector.
func checkDataSize(path string) error {
	if deviceSize(path) < 512 {
		return fail(exitEINVAL, "Header detected but device %s is too small.", path)
	}
	return nil
}

// formatOutputsOpenable checks what veritysetup format opens first:
// it creates HASH and the FEC device (if missing) and opens HASH before
// it looks at any option; the front checks that it could and writes
// nothing yet.
func (o *options) formatOutputsOpenable(hashPath string) error {
	if err := creatable(hashPath, "hash"); err != nil {
		return err
	}
	if o.withFEC() {
		if err := creatable(o.fecDevice, "FEC"); err != nil {
			return err
		}
	}
	if _, err := os.Stat(hashPath); err == nil {
		return checkDevice(hashPath)
	}
	return nil
}

// formatRootHashFile is the --root-hash-file format writes, or "" and
// the failure veritysetup reports after it has written the tree and
// printed it, when the file cannot be created.
func (o *options) formatRootHashFile() (string, error) {
	p := o.rootHashFile
	if !o.withRootHashFile() {
		return p, nil
	}
	info, err := os.Stat(p)
	if dir, derr := os.Stat(filepath.Dir(p)); p == "" || derr != nil || !dir.IsDir() || err == nil && info.IsDir() {
		return "", fail(exitEINVAL, "Cannot create root hash file %s for writing.", p)
	}
	return p, nil
}

func (o *options) formatAction(ctx context.Context, dataPath, hashPath string, stdout, stderr io.Writer) error {
	if _, err := o.numbers(); err != nil {
		return err
	}
	if err := o.formatOutputsOpenable(hashPath); err != nil {
		return err
	}
	hooks := o.overlapHooks(dataPath, hashPath, true)
	var fecOffset uint64
	var fecRoots int
	hooks.beforeUUID = func(t *verity.TreeOptions) (err error) {
		if len(t.Salt) > merkle.MaxSaltSize {
			return &failure{code: exitEINVAL} // veritysetup's VERITY_create fails without a word
		}
		if t.DataBlockSize > 4096 {
			// veritysetup's words, with its page size on the machines it
			// runs on, once the areas are checked.
			fmt.Fprintln(stderr, "WARNING: Kernel cannot activate device if data block size exceeds page size (4096).")
		}
		if err := hashAreaFits(t, dataPath); err != nil {
			return err
		}
		if t.DataBlocks != 0 && deviceSize(dataPath)/uint64(t.DataBlockSize) < t.DataBlocks {
			// veritysetup fails to read DATA while it writes the tree,
			// before it checks the FEC options and the UUID.
			return fail(exitEINVAL, msgCreateIO)
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
	rootHashFile, rootFileErr := o.formatRootHashFile()
	// Raw: veritysetup reads an Android sparse image as the bytes it is;
	// InPlace: it writes its outputs in place.
	// No Warn: veritysetup warns of none of the library's cases (a
	// partial last block, ...).
	opts := &verity.FormatOptions{TreeOptions: t, HashOffsetSet: o.changed("hash-offset"), Raw: true, InPlace: true,
		FECDevice: o.fecDevice, FECOffset: fecOffset, FECRoots: fecRoots, RootHashFile: rootHashFile}
	fr, err := verity.Format(ctx, dataPath, hashPath, opts)
	if err != nil {
		return formatError(err)
	}
	g := fr.Layout.Geometry
	h := cli.NewHeader(g, hashPath)
	h.Algorithm = o.hash // veritysetup prints the name given, as given
	if o.changed("uuid") && !o.noSuperblock {
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
			// VERITY_dump "assumes" the parity right after the tree,
			// wherever --fec-offset put it.
			h.HashDeviceSize = (walkTreeOf(g).hashStart + g.HashBlocks + f.ParityBlocks) * uint64(g.HashBlockSize)
		case !f.InHash && !f.InData && f.Offset == 0:
			h.FECDeviceSize = f.Size
		}
	}
	h.Print(stdout)
	return rootFileErr
}

// creatable fails as veritysetup does when it cannot create the file
// (what names it: "hash", "FEC") where it is missing.
func creatable(path, what string) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if dir, err := os.Stat(filepath.Dir(path)); path == "" || err != nil || !dir.IsDir() {
		return fail(exitEINVAL, "Cannot create %s image %s for writing.", what, path)
	}
	return nil
}

// formatError words the library's format errors as veritysetup's.
func formatError(err error) error {
	var e *verity.Error
	if errors.As(err, &e) && e.Kind == verity.KindParam {
		switch e.Field {
		case "DataBlocks":
			return fail(exitEINVAL, msgCreateIO)
		case "HashOffset":
			return fail(exitEINVAL, "Data area overlaps with hash area.")
		}
	}
	if errors.Is(err, syscall.EFBIG) {
		// A write past what the file system holds.
		return fail(exitEINVAL, msgCreateIO)
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
	return &failure{code: code, lines: []string{flags.Message(err) + "."}}
}

// flags is how veritysetup spells the library's options: as veritygen
// and veritycheck spell the ones it shares with them.
var flags = cli.NewSpelling(cli.SharedFlags...)

func (o *options) dumpAction(hashPath string, stdout, stderr io.Writer) error {
	offset, err := number(o.hashOffset)
	if err != nil {
		return err
	}
	if err := checkDevice(hashPath); err != nil {
		return err
	}
	if err := superblockOffset(offset, hashPath); err != nil {
		return err
	}
	var h *cli.Header
	if g, err := verity.ReadSuperblock(hashPath, offset); err == nil {
		h = cli.NewHeader(g, hashPath)
		if g.HashOffset == 0 {
			h.HashDeviceSize, h.ShowHashDeviceSize = g.HashEnd(), true
		}
	} else {
		sb, err := refusedSuperblock(err, hashPath, offset)
		if err != nil {
			return err
		}
		h = sb.header(hashPath)
	}
	if o.withFEC() {
		if err := o.dumpFEC(h, hashPath, offset, stderr); err != nil {
			return err
		}
	}
	h.Print(stdout)
	return nil
}

// dumpFEC adds to h the parity --fec-device describes, as veritysetup's
// dump loads and prints it (crypt_load, VERITY_FEC_blocks): the device
// must open; block sizes that differ or roots out of range are reported
// and the parity left out; the parity covers the data and HASH from the
// tree on (to the parity's offset when it is in HASH, else to HASH's
// end), whatever the device holds.
func (o *options) dumpFEC(h *cli.Header, hashPath string, hashOffset uint64, stderr io.Writer) error {
	if err := checkDevice(o.fecDevice); err != nil {
		f := err.(*failure)
		f.lines = append(f.lines, fmt.Sprintf("Device %s is not a valid VERITY device.", hashPath))
		return f
	}
	roots := numberOr0(o.fecRoots) // checked by the parse
	if h.DataBlockSize != h.HashBlockSize {
		fmt.Fprintln(stderr, "Block sizes must match for FEC.")
		return nil
	}
	if roots < fec.MinRoots || roots > fec.MaxRoots {
		fmt.Fprintln(stderr, "Invalid number of parity bytes.")
		return nil
	}
	fecOffset := numberOr0(o.fecOffset)
	dbs := uint64(h.DataBlockSize)
	blocks := deviceSize(hashPath)
	inHash := identical(hashPath, o.fecDevice)
	if inHash {
		blocks = fecOffset
	}
	// uint64 arithmetic, wrapping as veritysetup's does
	if blocks /= dbs; blocks != 0 {
		blocks -= hashOffset / dbs
	}
	p := fec.Params{Roots: int(roots), BlockSize: h.DataBlockSize, Blocks: blocks + h.DataBlocks}
	h.FECRoots, h.FECBlocks = p.Roots, p.ParityBlocks()
	switch {
	case inHash && h.ShowHashDeviceSize:
		// as format's: the parity counted right after the tree
		h.HashDeviceSize += p.ParityBlocks() * uint64(h.HashBlockSize)
	case !inHash && fecOffset == 0:
		h.FECDeviceSize = p.ParitySize()
	}
	return nil
}

func (o *options) verifyAction(ctx context.Context, dataPath, hashPath, rootText string, stderr io.Writer) error {
	if err := o.verifyDevices(dataPath, hashPath, rootText); err != nil {
		return err
	}
	t, err := o.tree(hashPath, o.verifyHooks(dataPath, hashPath), !o.noSuperblock)
	if err != nil {
		return err
	}
	// The tree is verified without the parity first, as veritysetup does.
	v, err := o.verifyTarget(t, hashPath)
	if err != nil {
		return err
	}
	root, err := o.verifyRoot(rootText, t, v.digestSize)
	if err != nil {
		return err
	}
	if v.walker != nil && len(v.walker.salt) > merkle.MaxSaltSize {
		// No tree has such a salt but veritysetup verifies with it; the
		// library does not take it.
		if lines, code := v.walker.walk(dataPath, hashPath, root); code != exitOK {
			return &failure{code: code, lines: lines}
		}
		return nil
	}
	// The library verifies; where it finds a problem, what veritysetup
	// reports is found by walking the tree in its order (walk).
	var lines []string
	var code int
	var verr *verity.Error
	res, err := verity.Verify(ctx, dataPath, hashPath, root, v.vo)
	switch {
	case err == nil:
		defer res.Close()
		v.g = res.Geometry
		if res.Verified {
			return nil
		}
		lines, code = v.walker.walk(dataPath, hashPath, root)
	case errors.As(err, &verr) && verr.Field == "root":
		return fail(exitEINVAL, "Invalid root hash string specified.")
	case errors.Is(err, verity.ErrInput) && v.walker.short(dataPath, hashPath):
		// The library refuses a tree its files cut short; veritysetup
		// verifies up to the cut.
		lines, code = v.walker.walk(dataPath, hashPath, root)
		if v.g == nil {
			v.g = v.walker.geometry(dataPath) // for the parity's checks
		}
	default:
		return err
	}
	if code == exitOK {
		return nil // only what veritysetup does not check (the superblock's reserved bytes)
	}
	rootFailed := lines[0] == msgRootFailed
	if !o.withFEC() || code != exitEPERM && !rootFailed || v.g == nil {
		// veritysetup tries the parity only on damage or a root hash
		// that does not match (not on a read that fails).
		return &failure{code: code, lines: lines}
	}
	return o.verifyFEC(ctx, v, root, lines, code, dataPath, hashPath, stderr)
}

// verifyDevices is verify's first checks, in veritysetup's order: a root
// hash given, the numbers, HASH then DATA opened (before it reads a
// superblock or checks an option), DATA's size.
func (o *options) verifyDevices(dataPath, hashPath, rootText string) error {
	if rootText == "" && !o.withRootHashFile() {
		return fail(exitEINVAL, "Command requires <root_hash> or --root-hash-file option as argument.")
	}
	if _, err := o.numbers(); err != nil {
		return err
	}
	for _, p := range []string{hashPath, dataPath} {
		if err := checkDevice(p); err != nil {
			return err
		}
	}
	if dataPath != hashPath {
		return checkDataSize(dataPath)
	}
	return nil
}

// verifyTarget is what verify checks: the library's options, the tree
// (nil until the library lays it out, without superblock), the root
// hash's length once known (0 before), the tree as veritysetup walks it.
type verifyTarget struct {
	vo         *verity.VerifyOptions
	g          *merkle.Geometry
	digestSize int
	walker     *walkTree
}

// verifyTarget works out verify's target from the options t, or, with a
// superblock, from it (veritysetup ignores the options that give them).
func (o *options) verifyTarget(t verity.TreeOptions, hashPath string) (*verifyTarget, error) {
	v := &verifyTarget{vo: &verity.VerifyOptions{TreeOptions: verity.TreeOptions{HashOffset: t.HashOffset}, Raw: true, MaxProblems: 1}}
	if o.noSuperblock {
		if t.Salt == nil {
			// The tree's salt is recorded nowhere. veritysetup then
			// verifies with a random one of its default size (crypt_format
			// makes one), which fails as a wrong salt does.
			t.Salt = make([]byte, 32)
			if _, err := rand.Read(t.Salt); err != nil {
				return nil, err
			}
		}
		v.vo.TreeOptions = t
		v.vo.UUID = nil
		if a, err := hashes.Lookup(t.Hash); err == nil {
			format := 1
			if t.LegacyFormat {
				format = 0
			}
			v.walker = &walkTree{hash: a, format: format, salt: t.Salt, dbs: t.DataBlockSize, hbs: t.HashBlockSize,
				dataBlocks: t.DataBlocks, hashStart: t.HashOffset / uint64(t.HashBlockSize)}
		}
		return v, nil
	}
	g, err := verity.ReadSuperblock(hashPath, t.HashOffset)
	if err != nil {
		sb, err := refusedSuperblock(err, hashPath, t.HashOffset)
		if err != nil {
			return nil, err
		}
		// One the library refuses and veritysetup reads (0 data blocks,
		// the algorithm in capitals): verified as the tree it
		// describes, without its superblock.
		v.vo.TreeOptions = sb.treeOptions()
		v.digestSize = sb.algorithm.Size()
		w := sb.walkTree()
		v.walker = &w
	} else {
		v.g, v.digestSize = g, g.DigestSize
		w := walkTreeOf(g)
		v.walker = &w
	}
	if o.withFEC() {
		if err := checkDevice(o.fecDevice); err != nil {
			f := err.(*failure)
			f.lines = append(f.lines, fmt.Sprintf("Device %s is not a valid VERITY device.", hashPath))
			return nil, f
		}
	}
	return v, nil
}

// verifyRoot is the root hash verify checks against: the root hash
// file's, which veritysetup takes even with one on the line, or
// rootText's; digestSize is its length from the superblock (0 without).
func (o *options) verifyRoot(rootText string, t verity.TreeOptions, digestSize int) ([]byte, error) {
	var root []byte
	var err error
	if o.withRootHashFile() {
		if a, lerr := hashes.Lookup(t.Hash); lerr == nil && o.noSuperblock {
			digestSize = a.Size()
		}
		if root, err = readRootHashFile(o.rootHashFile, digestSize); err != nil {
			return nil, err
		}
	} else {
		root, err = cli.ParseRootHash("root hash", rootText)
	}
	if err != nil || !o.noSuperblock && len(root) != digestSize {
		return nil, fail(exitEINVAL, "Invalid root hash string specified.")
	}
	return root, nil
}

// verifyFEC is verify's answer for a tree with FEC that did not verify
// (lines and code: what veritysetup reports without the parity):
// veritysetup checks the FEC options only then (fecStage), checks the
// whole image against the parity and says how many bytes it would
// correct, writing nothing.
func (o *options) verifyFEC(ctx context.Context, v *verifyTarget, root []byte, lines []string, code int, dataPath, hashPath string, stderr io.Writer) error {
	rootFailed := lines[0] == msgRootFailed
	for _, l := range lines {
		fmt.Fprintln(stderr, l)
	}
	if msg, twice := o.fecStage(v.g, dataPath, hashPath); msg != "" {
		f := &failure{code: exitEINVAL, lines: []string{msg, "Errors cannot be repaired with FEC device."}}
		if twice {
			f.lines = append([]string{msg}, f.lines...)
		}
		if rootFailed {
			f.code = exitEPERM
		}
		return f
	}
	fo := *v.vo
	fo.FECDevice, fo.FECOffset, fo.FECRoots = o.fecDevice, numberOr0(o.fecOffset), int(min(numberOr0(o.fecRoots), 1<<16))
	res, err := verity.Verify(ctx, dataPath, hashPath, root, &fo)
	if err != nil {
		return err
	}
	defer res.Close()
	if res.Verified || res.Repair == nil {
		return &failure{code: code} // cannot be: it failed without the parity
	}
	rp := res.Repair
	if !rp.Whole() {
		p := res.FEC.Params(v.g)
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

// fecStage is veritysetup's VERITY_FEC_process up to the decoding: the
// checks of the FEC options against the tree g, and the reads of the data
// and hash areas the parity covers. It returns the message of the first
// failure, "" if there is none; twice when veritysetup prints it twice
// (the options' checks: VERITY_FEC_blocks makes them too).
func (o *options) fecStage(g *merkle.Geometry, dataPath, hashPath string) (msg string, twice bool) {
	bs := uint64(g.DataBlockSize)
	roots := numberOr0(o.fecRoots)
	switch {
	case g.DataBlockSize != g.HashBlockSize:
		return "Block sizes must match for FEC.", true
	case roots < fec.MinRoots || roots > fec.MaxRoots:
		return "Invalid number of parity bytes.", true
	}
	// VERITY_FEC_blocks: the data, then HASH from the tree's first block
	// to the parity (FEC in HASH) or to its end.
	start := walkTreeOf(g).hashStart
	blocks := deviceSize(hashPath)
	if identical(hashPath, o.fecDevice) {
		blocks = numberOr0(o.fecOffset)
	}
	blocks /= bs
	if blocks != 0 {
		blocks -= start
	}
	blocks += g.DataBlocks
	type input struct {
		path         string
		start, count uint64
	}
	inputs := []input{{dataPath, 0, g.DataBlocks * bs}, {hashPath, start * bs, (blocks - g.DataBlocks) * bs}}
	if inputs[0].count == 0 {
		return "Invalid FEC segment length.", false
	}
	size := inputs[0].count + inputs[1].count
	rsn := 255 - roots
	rounds := (size/bs + rsn - 1) / rsn
	if size%bs != 0 {
		rounds = (size/bs + 1 + rsn - 1) / rsn
	}
	sizes := []uint64{deviceSize(dataPath), deviceSize(hashPath)}
	for n := uint64(0); n < rounds; n++ {
		for i := uint64(0); i < rsn; i++ {
			off := (i*rounds + n) * bs // FEC_interleave's
			if off >= size {
				continue // zeros
			}
			k := 0
			if off >= inputs[0].count {
				k, off = 1, off-inputs[0].count
			}
			if inputs[k].start+off+bs > sizes[k] {
				return fmt.Sprintf("Failed to read RS block %d byte %d.", n, i), false
			}
		}
	}
	return "", false
}

// msgRootFailed is veritysetup's message for a tree that matches itself
// but not the root hash given.
const msgRootFailed = "Verification of root hash failed."

// readError is a failed read of the front's own, in our words (not Go's
// "open PATH:" or "EOF").
func readError(role, path string, err error) error {
	return fmt.Errorf("reading %s %s: %w", role, path, safefile.Cause(err))
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
