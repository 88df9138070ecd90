// Package veritycheck is the veritycheck command line: it checks an image and
// its dm-verity hash tree against a root hash, as `veritysetup verify` does,
// and reports every corrupted block.
package veritycheck

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

const prog = "veritycheck"

const usage = `Usage: veritycheck --root-hash HEX [flags] DATA [HASH]
       veritycheck [flags] DATA HASH ROOT
       veritycheck --root-hash HEX --fec-device FEC --repair [flags] DATA [HASH]
       veritycheck [--avb] [--avb-key KEY] [--repair] [flags] IMAGE
       veritycheck --avb-slot [--avb-key KEY] [flags] VBMETA [DIR]
       veritycheck --dump [--hash-offset BYTES] HASH

Checks DATA and its dm-verity hash tree in HASH (default: DATA.verity)
against a root hash, as 'veritysetup verify' does, but finds every
corrupted block, not just the first: each data block against the tree, each
hash block against its parent, the top block against the root hash, and the
zero padding of hash blocks and superblock. DATA and HASH are only read,
except with --repair.

`

// examples and details follow the flags in --help.
const examples = `Examples:
  veritycheck --root-hash=$(cat root.hex) system.img
  veritycheck --root-hash-file=root.hex system.img system.verity
  veritycheck --no-superblock --hash=blake2b-256 --salt=- \
              --root-hash-file=root.hex system.img tree.bin
  veritycheck --hash-offset=1073741824 --root-hash-file=root.hex \
              disk.img disk.img
  veritycheck --json --root-hash-file=root.hex system.img | jq .problems
  veritycheck --root-hash-file=root.hex --fec-device=system.fec system.img
  veritycheck --root-hash-file=root.hex --fec-device=system.fec --repair \
              system.img
  veritycheck --avb-key=avb.pem system.img
  veritycheck --avb-slot --avb-key=avb.pem out/vbmeta.img
  veritycheck --dump system.img.verity
`

const details = `DATA may be an Android sparse image (found by its magic; --raw reads it as
it is): it is checked as the image it expands to, as veritygen builds the
tree. Holes of a raw file and the FILL and DONT_CARE chunks of a sparse
image are checked as the content they stand for, without being read.

The tree's parameters come from the superblock at --hash-offset in HASH; a
tree made with --no-superblock needs them given again (same flags as
veritygen, and --salt is then required).

With --fec-device, the Reed-Solomon parity that veritygen or 'veritysetup
format' wrote there (same --fec-device, --fec-offset and --fec-roots; the
parity may be in its own file, in HASH past the tree, or in DATA) rebuilds
the corrupted blocks: each codeword of a damaged round is decoded with the
corrupted blocks as erasures (up to roots of them per round), or else with
errors at unknown places (up to roots/2 damaged bytes per codeword, as the
kernel and veritysetup decode). A corrupted hash block is rebuilt first,
then the blocks under it are checked against it. Every rebuilt block is
checked against the tree before it is trusted, so wrong parity or
parameters can only end in "cannot recover". veritycheck then says what it
can repair. --repair writes the rebuilt blocks back into DATA and HASH, in
place, and reads them back to check them against the tree: it is
the only time veritycheck writes, and it writes only when every corrupted
block can be rebuilt (otherwise it names those it cannot recover and writes
nothing). The parity does not cover the superblock (in veritysetup's format
it starts at the tree): its reserved and padding bytes, and the zeros up to
the tree, are restored from the superblock's own fields.

--dump prints the superblock as 'veritysetup dump' does.
` + avbUsage + `

veritysetup's command line works too: 'veritycheck verify DATA HASH ROOT'
and 'veritycheck DATA HASH ROOT' (a third argument that is the hex of a
digest is the root hash), 'veritycheck dump HASH' (--dump HASH); -h is
--hash and -s is --salt, as in veritysetup (help is --help, or -h alone).

When the top of the tree does not match the root hash, veritycheck tries
the top block with the other algorithms of that digest size, the other
format, no salt, other hash block sizes and --hash-offset 0, and names the
parameters with which it matches: a tree without superblock checked with
a wrong parameter is reported as that, not as corruption.

`

const exitCodes = `
Exit codes:
  0  verified: DATA and HASH are exactly what the root hash vouches for
     (with --repair: are so again after the repair)
  1  corruption found (and not repaired), or the root hash is not this tree's,
     or an AVB image's vbmeta is not signed, or its signature does not verify
     (or not with --avb-key), or a descriptor of its partition does not match,
     or (--avb-slot) a vbmeta or a partition of the set does not verify,
     or the root hash signature does not verify (or not with --sign-cert)
  2  anything else: bad usage, unreadable, malformed or inconsistent input
     (an AVB footer that disagrees with the vbmeta, a vbmeta for a newer
     libavb), I/O error
`

type options struct {
	tree         cli.TreeFlags
	rootHex      string
	rootHashFile string
	dump         bool
	json         bool
	jobs         int
	maxProblems  int
	noProgress   bool
	fecDevice    string
	fecOffset    uint64
	fecRoots     int
	repair       bool
	raw          bool
	// kernel: ask the kernel (kernel.go).
	kernel bool
	// rootPositional: the root hash was the third argument, in rootHex.
	rootPositional bool
	// The AVB check (avb.go): --avb, --avb-key, and what the vbmeta said,
	// for the JSON report.
	avb       bool
	avbKey    string
	avbReport *avbJSON
	// The whole-set check (slot.go); jsonWritten: its JSON report is out,
	// whatever the exit code.
	slot        slotFlags
	jsonWritten bool
	// The root hash signature check (sign.go), and what it found.
	sign      signCheck
	sigReport *signatureJSON
	// warnings: what the check warned of on stderr, for the JSON report.
	warnings []string
}

// Main runs veritycheck's command line args (after argv0, which it does not
// use: the messages name veritycheck) and returns the exit code.
func Main(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr, stderr)
}

// run is Main with the writer of the progress bar apart from stderr, so that
// tests can see both.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty io.Writer) int {
	var o options
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVar(&o.rootHex, "root-hash", "", "the expected root hash, `hex`")
	fs.StringVar(&o.rootHashFile, "root-hash-file", "", "read the expected root hash from `FILE` (hex)")
	o.sign.register(fs)
	fs.BoolVar(&o.dump, "dump", false, "print the superblock of HASH (veritysetup dump)")
	o.tree.RegisterForCheck(fs)
	fs.StringVar(&o.fecDevice, "fec-device", "", "rebuild corrupted blocks from the parity in `FILE`")
	fs.Uint64Var(&o.fecOffset, "fec-offset", 0, "`BYTES` into the FEC device where the parity starts")
	fs.IntVar(&o.fecRoots, "fec-roots", fec.DefaultRoots, "`N` parity bytes per codeword, 2 to 24")
	fs.BoolVar(&o.repair, "repair", false, "write the rebuilt blocks back (the only writing)")
	fs.BoolVar(&o.kernel, "kernel", false, "read DATA through the kernel's dm-verity (root)")
	fs.BoolVar(&o.raw, "raw", false, "read a sparse image as it is, not as its expansion")
	fs.BoolVar(&o.avb, "avb", false, "check as an AVB image (default for one)")
	fs.StringVar(&o.avbKey, "avb-key", "", "`FILE` the key (PEM or AVB blob) that must sign")
	o.slot.register(fs)
	fs.BoolVar(&o.json, "json", false, "print the result (or error) as one JSON object")
	fs.IntVar(&o.maxProblems, "max-problems", 20, "list at most `N` corrupted blocks; -1: all")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "`N` goroutines hashing")
	fs.BoolVar(&o.noProgress, "no-progress", false, "no progress bar (shown when stderr is a terminal)")
	help := fs.Bool("help", false, "show this help (so does -h alone; -h is --hash)")
	if cli.HelpAlone(args) {
		fmt.Fprint(stdout, helpText(fs))
		return cli.ExitOK
	}
	if err := fs.Parse(args); err != nil {
		err = cli.WithHint(cli.FlagError(err), "see veritycheck --help")
		cli.Report(stderr, prog, err)
		if o.json || cli.WantsJSON(args) {
			cli.ReportJSON(stdout, err)
		}
		return cli.ExitError
	}
	if *help {
		fmt.Fprint(stdout, helpText(fs))
		return cli.ExitOK
	}
	code := cli.ExitOK
	pos, err := o.nativeArgs(args, fs.Args())
	switch {
	case err != nil:
	case o.dump:
		err = dump(&o, pos, stdout)
	default:
		showProgress := false
		if f, ok := tty.(*os.File); ok && !o.noProgress && !o.json {
			showProgress = cli.IsTerminal(f)
		}
		code, err = check(ctx, &o, pos, stdout, stderr, showProgress)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		cli.Report(stderr, prog, err)
		if code == cli.ExitOK {
			code = cli.ExitError
		}
		if o.json && code == cli.ExitError && !o.jsonWritten {
			// Exit 1 printed its report; exit 2 printed nothing yet.
			cli.ReportJSON(stdout, err)
		}
	}
	return code
}

// helpGroups are the headings of --help's flags, the common ones first.
var helpGroups = []cli.HelpGroup{
	{Title: "Common flags", Flags: []string{"root-hash", "root-hash-file", "json", "fec-device", "repair", "kernel", "dump", "help"}},
	{Title: "Tree parameters (for a tree made with --no-superblock)", Flags: []string{"no-superblock", "hash", "salt", "format",
		"data-block-size", "hash-block-size", "data-blocks", "hash-offset"}},
	{Title: "Error correction", Flags: []string{"fec-offset", "fec-roots"}},
	{Title: "Signatures", Flags: []string{"root-hash-signature", "sign-cert", "avb", "avb-key"}},
	{Title: "A device's set of AVB images", Flags: slotFlagNames},
	{Title: "Input and output", Flags: []string{"raw", "max-problems", "jobs", "no-progress"}},
}

// helpText is --help: the usage, the flags in groups, the hash
// algorithms, examples, then the details.
func helpText(fs *pflag.FlagSet) string {
	return usage + cli.FlagHelp(fs, helpGroups) + "\n" + cli.HashHelp() + "\n" + examples + "\n" + details + slotUsage + signUsage + kernelUsage + exitCodes
}

// nativeArgs returns the positional arguments pos of the command line args
// with veritysetup's spellings answered: "verify DATA HASH [ROOT]" is
// "DATA HASH [ROOT]", "dump HASH" is --dump HASH, and a third argument that
// is the hex of a digest (20, 32 or 64 bytes) is the root hash, as
// veritysetup takes it. A verb is one when no file has its name, or when
// the arguments leave no doubt; format is veritygen's, and the error says
// what to type.
func (o *options) nativeArgs(args, pos []string) ([]string, error) {
	if len(pos) > 0 {
		switch verb := pos[0]; verb {
		case "verify":
			if len(pos) > 3 || !cli.Exists(verb) {
				pos = pos[1:]
			} else if len(pos) > 1 {
				return nil, cli.Errorf(fmt.Sprintf("to check %s (veritysetup's verb): %s; to check the file named verify: ./verify",
					pos[1], cli.CommandLine(prog, cli.Without(args, verb))),
					"verify is veritysetup's verb and also a file here: which is DATA?")
			}
		case "dump":
			switch {
			case len(pos) == 2 && !cli.Exists(verb):
				o.dump = true
				return pos[1:], nil
			case len(pos) == 2:
				return nil, cli.Errorf(fmt.Sprintf("to dump %s: veritycheck --dump %s; to check the file named dump: ./dump", pos[1], pos[1]),
					"dump is veritysetup's verb and also a file here: which is DATA?")
			}
		case "format":
			if len(pos) > 2 || !cli.Exists(verb) {
				return nil, cli.Errorf("veritygen does that: "+cli.CommandLine("veritygen", args),
					"format is veritysetup's verb; veritycheck only checks trees (veritysetup verify) and dumps them")
			}
		case "open", "close", "status", "create", "remove":
			if len(pos) > 2 || !cli.Exists(verb) {
				return nil, cli.Errorf("use veritysetup "+verb+" for the device-mapper device; veritycheck checks trees, veritygen builds them",
					"%s is veritysetup's verb; veritycheck only checks trees (veritysetup verify) and dumps them", verb)
			}
		}
	}
	if len(pos) == 3 && !o.dump {
		if !isDigestHex(pos[2]) && isDigestHex(pos[0]) {
			return nil, cli.Errorf("the root hash comes last, as in veritysetup verify: "+cli.CommandLine(prog, reorderRootFirst(args, pos[0])),
				"expected DATA HASH ROOT, got the root hash first")
		}
		if !isDigestHex(pos[2]) {
			return nil, cli.Errorf(fmt.Sprintf("a third argument is the root hash, as in veritysetup: hex of 20, 32 or 64 bytes, which %q is not; a file of it: --root-hash-file=%s", pos[2], pos[2]),
				"expected DATA and optionally HASH, got 3 arguments")
		}
		if o.tree.Changed("root-hash") || o.tree.Changed("root-hash-file") {
			return nil, cli.Errorf("keep one of them", "root hash given both as the third argument and with --root-hash or --root-hash-file")
		}
		o.rootHex, o.rootPositional = pos[2], true
		pos = pos[:2]
	}
	return pos, nil
}

// isDigestHex reports whether s is the hex of a digest of one of the
// supported algorithms.
func isDigestHex(s string) bool {
	if _, err := hex.DecodeString(s); err != nil {
		return false
	}
	for _, name := range hashes.Names() {
		if a, err := hashes.Lookup(name); err == nil && len(s) == 2*a.Size() {
			return true
		}
	}
	return false
}

// treeFlagNames are the flags that give the parameters a superblock holds.
var treeFlagNames = []string{"hash", "salt", "uuid", "format", "data-block-size", "hash-block-size", "data-blocks"}

// givenTreeFlags reports whether a flag giving a superblock's parameter
// is on the line.
func givenTreeFlags(o *options) bool {
	for _, name := range treeFlagNames {
		if o.tree.Changed(name) {
			return true
		}
	}
	return false
}

// agreesWithSuperblock checks the tree flags given against HASH's
// superblock: a value that agrees is accepted, one that conflicts is
// refused. A superblock that cannot be read is left for Verify to report.
func agreesWithSuperblock(o *options, hashPath string) error {
	g, err := verity.ReadSuperblock(hashPath, o.tree.HashOffset)
	if err != nil {
		return nil
	}
	to, err := o.tree.Options()
	if err != nil {
		return err
	}
	p, err := to.Params()
	if err != nil {
		return err
	}
	conflict := func(name, given, sb string) error {
		return cli.Errorf("leave --"+name+" out (the superblock gives it), or add --no-superblock to give all parameters yourself",
			"--%s %s given, but HASH's superblock says %s", name, given, sb)
	}
	t := o.tree
	switch {
	case t.Changed("hash") && p.Hash.Name() != g.Hash.Name():
		return conflict("hash", t.Hash, g.Hash.Name())
	case t.Changed("salt") && !bytes.Equal(p.Salt, g.Salt):
		return conflict("salt", t.Salt, saltText(g.Salt))
	case t.Changed("uuid") && p.UUID != g.UUID:
		return conflict("uuid", t.UUID, cli.FormatUUID(g.UUID))
	case t.Changed("format") && p.Format() != g.Format():
		return conflict("format", strconv.Itoa(p.Format()), strconv.Itoa(g.Format()))
	case t.Changed("data-block-size") && p.DataBlockSize != g.DataBlockSize:
		return conflict("data-block-size", strconv.Itoa(p.DataBlockSize), strconv.Itoa(g.DataBlockSize))
	case t.Changed("hash-block-size") && p.HashBlockSize != g.HashBlockSize:
		return conflict("hash-block-size", strconv.Itoa(p.HashBlockSize), strconv.Itoa(g.HashBlockSize))
	case t.Changed("data-blocks") && p.DataBlocks != g.DataBlocks:
		return conflict("data-blocks", strconv.FormatUint(p.DataBlocks, 10), strconv.FormatUint(g.DataBlocks, 10))
	}
	return nil
}

// saltText is a salt as --salt takes it.
func saltText(salt []byte) string {
	if len(salt) == 0 {
		return "-"
	}
	return hex.EncodeToString(salt)
}

func dump(o *options, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return cli.Errorf("usage: veritycheck --dump HASH", "--dump takes one argument, HASH; got %d", len(args))
	}
	for _, name := range append(treeFlagNames, "no-superblock", "root-hash", "root-hash-file", "fec-device", "fec-offset", "fec-roots", "repair", "avb", "avb-key", "root-hash-signature", "sign-cert") {
		if o.tree.Changed(name) {
			return cli.Errorf("--dump reads everything from the superblock; only --hash-offset and --json apply", "--%s does not go with --dump", name)
		}
	}
	hashPath := args[0]
	g, err := verity.ReadSuperblock(hashPath, o.tree.HashOffset)
	if err != nil {
		if kind := fileKind(hashPath); kind != "" {
			// Its magic says more than the bytes where a superblock is not.
			return cli.Errorf("--dump reads a tree (HASH), e.g. veritycheck --dump "+hashPath+".verity; a tree inside the image: add --hash-offset",
				"HASH %s is %s, not a dm-verity tree: no verity superblock at byte %d", hashPath, kind, o.tree.HashOffset)
		}
		return err
	}
	if o.json {
		return cli.WriteJSON(stdout, cli.NewTreeJSON(g, "", hashPath))
	}
	h := cli.NewHeader(g, hashPath)
	// veritysetup prints the hash device size only for a tree at offset 0:
	// past an offset it cannot know what else the device holds.
	if g.HashOffset == 0 {
		h.HashDeviceSize, h.ShowHashDeviceSize = g.HashEnd(), true
	}
	h.Print(stdout)
	return nil
}

// fileKind names the kind of image the file at path is by its magic ("an
// ext2/3/4 filesystem"), or "" when it cannot tell. Only a regular file
// or a block device is opened: opening a FIFO would wait for a writer.
func fileKind(path string) string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() && fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	return safefile.DetectFormat(f, size)
}

// rootHash reads the expected root hash from --root-hash or --root-hash-file.
func rootHash(ctx context.Context, o *options, fs interface{ Changed(string) bool }) ([]byte, error) {
	given, fromFile := fs.Changed("root-hash") || o.rootPositional, fs.Changed("root-hash-file")
	switch {
	case given && fromFile:
		return nil, cli.Errorf("keep one of them", "--root-hash and --root-hash-file both given")
	case !given && !fromFile:
		return nil, cli.Errorf("e.g. --root-hash-file=root.hex (as written by veritygen --root-hash-file), or --root-hash=HEX",
			"no root hash: give --root-hash or --root-hash-file")
	case fromFile:
		return cli.ReadRootHashFile(ctx, o.rootHashFile)
	}
	if o.rootPositional {
		return cli.ParseRootHash("the root hash argument", o.rootHex)
	}
	return cli.ParseRootHash("--root-hash", o.rootHex)
}

// result is the JSON report of a check.
type result struct {
	Verified bool `json:"verified"`
	*cli.TreeJSON
	// DataFormat is "raw", or "android-sparse" for a sparse image read as
	// the image it expands to.
	DataFormat   string `json:"data_format"`
	RootHash     string `json:"root_hash"`
	RootMismatch bool   `json:"root_mismatch"`
	// RootHint says what likely explains a root mismatch.
	RootHint            string          `json:"root_mismatch_hint,omitempty"`
	CorruptDataBlocks   uint64          `json:"corrupt_data_blocks"`
	CorruptHashBlocks   uint64          `json:"corrupt_hash_blocks"`
	CorruptHeaderBytes  uint64          `json:"corrupt_superblock_bytes"`
	UncheckedDataBlocks uint64          `json:"unchecked_data_blocks"`
	UncheckedHashBlocks uint64          `json:"unchecked_hash_blocks"`
	Problems            json.RawMessage `json:"problems"` // streamed: see writeResult
	ProblemsTruncated   bool            `json:"problems_truncated"`
	// AVB: what the vbmeta of an AVB image says (the AVB check only).
	AVB *avbJSON `json:"avb,omitempty"`
	// RootHashSignature: who signed the root hash (--root-hash-signature).
	RootHashSignature *signatureJSON `json:"root_hash_signature,omitempty"`
	// Warnings are the warnings printed on stderr, each as its text.
	Warnings []string `json:"warnings,omitempty"`
	*repairJSON
}

type problem struct {
	Where  string `json:"where"` // data, hash or superblock
	Level  *int   `json:"level,omitempty"`
	Index  uint64 `json:"index"`
	Offset uint64 `json:"offset"`
	Reason string `json:"reason"`
	// Unchecked: for a hash block, the blocks under it that could not be
	// checked (none once error correction rebuilt it).
	Unchecked []blockRange `json:"unchecked,omitempty"`
}

// verifyOptions checks the flags and turns them into the library's
// options, before anything is read.
func verifyOptions(o *options) (*verity.VerifyOptions, error) {
	if o.jobs < 1 {
		return nil, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1")
	}
	if err := fecFlagsWithoutDevice(o); err != nil {
		return nil, err
	}
	vo := &verity.VerifyOptions{TreeOptions: verity.TreeOptions{HashOffset: o.tree.HashOffset, NoSuperblock: o.tree.NoSuperblock},
		Raw: o.raw, FECDevice: o.fecDevice, FECOffset: o.fecOffset, Repair: o.repair, Jobs: o.jobs, MaxProblems: o.maxProblems}
	if o.fecDevice != "" {
		vo.FECRoots = o.fecRoots
	}
	if o.maxProblems == 0 {
		vo.MaxProblems = 1 // 0 would be the library's default; none is listed
	}
	if o.tree.NoSuperblock {
		t, err := o.tree.Options()
		if err != nil {
			return nil, err
		}
		vo.TreeOptions = t
	} else if givenTreeFlags(o) {
		// Given with a superblock, they must agree with it (a script may
		// give the same values to veritysetup and to veritycheck):
		// checked once the superblock is read (agreesWithSuperblock).
		if _, err := o.tree.Options(); err != nil {
			return nil, err
		}
	}
	_, err := vo.Check()
	var ve *verity.Error
	if o.fecDevice != "" && o.fecRoots == 0 && (err == nil || errors.As(err, &ve) && ve.Field == "FECOffset") {
		// 0 is the library's default; here it is a wrong --fec-roots,
		// checked before --fec-offset.
		return nil, cli.Errorf("give the --fec-roots the parity was made with (veritysetup's default is 2)",
			"--fec-roots 0 is not from %d to %d", fec.MinRoots, fec.MaxRoots)
	}
	return vo, err
}

func check(ctx context.Context, o *options, args []string, stdout, stderr io.Writer, showProgress bool) (int, error) {
	if len(args) < 1 || len(args) > 2 {
		return cli.ExitError, cli.Errorf("usage: veritycheck --root-hash HEX [flags] DATA [HASH]; see veritycheck --help",
			"expected DATA and optionally HASH, got %d arguments", len(args))
	}
	if wantsSlot(o, args) {
		return checkSlot(ctx, o, args, stdout, stderr, showProgress)
	}
	if o.kernel {
		if err := kernelFlags(o); err != nil {
			return cli.ExitError, err
		}
	}
	if isAVB, err := wantsAVB(o, args); err != nil {
		return cli.ExitError, err
	} else if isAVB {
		return checkAVB(ctx, o, args, stdout, stderr, showProgress)
	}
	dataPath := args[0]
	hashPath := dataPath + ".verity"
	if len(args) == 2 {
		hashPath = args[1]
	}
	// Every flag is checked before anything is read, the root hash file
	// included.
	vo, err := verifyOptions(o)
	if err != nil {
		return cli.ExitError, err
	}
	sigFile, trusted, err := o.sign.load(ctx)
	if err != nil {
		return cli.ExitError, err
	}
	root, err := signatureRoot(ctx, o, sigFile)
	if err != nil {
		// Without a root hash, DATA and HASH given the other way round are
		// the likelier mistake: adding the root hash would only lead to it.
		if noRoot(o, sigFile) && len(args) == 2 && !o.tree.NoSuperblock && !o.tree.Changed("hash-offset") {
			if swapErr := notSwapped(dataPath, hashPath, true); swapErr != nil {
				return cli.ExitError, swapErr
			}
		}
		return cli.ExitError, err
	}
	if o.kernel {
		return checkKernel(ctx, o, dataPath, hashPath, root, vo, stdout)
	}
	if sigFile != nil {
		var code int
		if o.sigReport, code, err = checkSignature(o, sigFile, trusted, root, stdout); err != nil {
			return code, err
		}
	}
	if err := superblockSense(o, dataPath, hashPath, len(args) == 2); err != nil {
		return cli.ExitError, err
	}
	finish := reportTo(vo, stderr, showProgress, &o.warnings)
	res, err := verity.Verify(ctx, dataPath, hashPath, root, vo)
	finish()
	if err != nil {
		return cli.ExitError, verifyError(err, hashPath, len(args) == 2)
	}
	defer res.Close()
	if note := fecRootsNote(res.FEC); note != "" && !unrecoverable(res) {
		warn(stderr, &o.warnings, note)
	}
	if err := report(o, res, root, dataPath, hashPath, stdout); err != nil {
		return cli.ExitError, err
	}
	return verdict(o, res, root, stdout)
}

// fecRootsNote says, when the FEC device ends exactly where the parity of
// another --fec-roots would (the library's SizeRoots), that the parity
// may be of that one; "" otherwise.
func fecRootsNote(f *verity.FECInfo) string {
	if f == nil || f.SizeRoots == 0 {
		return ""
	}
	return fmt.Sprintf("FEC device %s ends exactly where the parity of --fec-roots=%d would, not where that of --fec-roots=%d does (byte %d): was it made with --fec-roots=%d?",
		f.Path, f.SizeRoots, f.Roots, f.Offset+f.Size, f.SizeRoots)
}

// unrecoverable reports whether verdict fails for corruption the parity
// cannot repair (its last case).
func unrecoverable(res *verity.VerifyResult) bool {
	rp := res.Repair
	return !res.Verified && !res.Repaired && rp != nil && !rp.Whole()
}

// superblockSense checks, before a tree with a superblock is read, that
// DATA and HASH are not swapped (hashNamed: HASH was given) and that the
// tree flags given agree with the superblock.
func superblockSense(o *options, dataPath, hashPath string, hashNamed bool) error {
	if o.tree.NoSuperblock {
		return nil
	}
	if hashNamed && !o.tree.Changed("hash-offset") {
		if err := notSwapped(dataPath, hashPath, o.rootPositional); err != nil {
			return err
		}
	}
	if givenTreeFlags(o) {
		return agreesWithSuperblock(o, hashPath)
	}
	return nil
}

// verifyError adds veritycheck's hints to an error of Verify: the hash
// file to name when the default one is missing, where the parity comes
// from.
func verifyError(err error, hashPath string, hashNamed bool) error {
	var ve *verity.Error
	if _, statErr := os.Stat(hashPath); !hashNamed && statErr != nil && errors.As(err, &ve) && ve.Role == verity.RoleHash {
		err = cli.WithHint(err, "name the hash file: veritycheck [flags] DATA HASH")
	}
	// In the words of the commands that write it.
	if errors.As(err, &ve) && ve.Kind == verity.KindParam && ve.Requires == "FECDevice" && ve.Hint == "" {
		err = cli.WithHint(err, "e.g. --fec-device=HASH.fec, the file given to veritygen or veritysetup format as --fec-device")
	}
	return err
}

// report prints the problems and what error correction can do, as text or
// JSON.
func report(o *options, res *verity.VerifyResult, root []byte, dataPath, hashPath string, stdout io.Writer) error {
	g, rep, rp := res.Geometry, res.Report, res.Repair
	total := rep.CorruptDataBlocks + rep.CorruptHashBlocks + rep.CorruptHeaderBytes
	truncated := o.maxProblems >= 0 && total > uint64(o.maxProblems)
	listed := 0
	each := func(fn func(*merkle.CorruptionError)) error {
		for pr, err := range res.Problems() {
			if err != nil {
				return err
			}
			if o.maxProblems >= 0 && listed >= o.maxProblems {
				break
			}
			listed++
			fn(pr)
		}
		return nil
	}
	if !o.json {
		err := each(func(pr *merkle.CorruptionError) { printProblem(stdout, g, rp, pr, dataPath, hashPath) })
		if err != nil {
			return err
		}
		if truncated {
			fmt.Fprintf(stdout, "... and %d more (%d in all; --max-problems=-1 lists all)\n", total-uint64(listed), total)
		}
		if rp != nil {
			printRepair(stdout, rp, res.Repaired, o.maxProblems, dataPath, hashPath, res.FEC.Path)
		}
		return nil
	}
	out := &result{Verified: res.Verified && o.avbReport.accepted(), TreeJSON: cli.NewTreeJSON(g, dataPath, hashPath), DataFormat: res.DataFormat, RootHash: hex.EncodeToString(root),
		RootMismatch: rep.RootMismatch, CorruptDataBlocks: rep.CorruptDataBlocks, CorruptHashBlocks: rep.CorruptHashBlocks,
		CorruptHeaderBytes: rep.CorruptHeaderBytes, UncheckedDataBlocks: rep.UncheckedDataBlocks,
		UncheckedHashBlocks: rep.UncheckedHashBlocks, ProblemsTruncated: truncated, AVB: o.avbReport, RootHashSignature: o.sigReport,
		Warnings: o.warnings}
	if d := res.RootDiagnosis; d != nil {
		out.RootHint = cli.Flags.Say(d.Hint)
	}
	if res.FEC != nil {
		out.repairJSON = newRepairJSON(res.FEC, rp, res.Repaired, o.maxProblems)
	}
	return writeResult(stdout, out, func(emit func(problem) error) error {
		var emitErr error
		err := each(func(pr *merkle.CorruptionError) {
			p := toProblem(pr)
			if pr.Level >= 0 && !rp.IsRebuilt(pr.Level, pr.Index) {
				p.Unchecked = rangesBelow(g, pr.Level, pr.Index)
			}
			if emitErr == nil {
				emitErr = emit(p)
			}
		})
		if err == nil {
			err = emitErr
		}
		return err
	})
}

// verdict is the exit code, and the error that says why it is not 0.
func verdict(o *options, res *verity.VerifyResult, root []byte, stdout io.Writer) (int, error) {
	g, rep, rp := res.Geometry, res.Report, res.Repair
	switch {
	case res.Verified:
		if !o.json {
			fmt.Fprintf(stdout, "verified: %d data blocks of %d bytes and %d hash blocks match root hash %x\n",
				g.DataBlocks, g.DataBlockSize, g.HashBlocks, root)
		}
		return cli.ExitOK, nil
	case res.Repaired:
		return cli.ExitCorrupt, cli.WithHint(fmt.Errorf("the repair was written, but verification still fails: %v", summary(res.AfterRepair)),
			"run veritycheck again to list what is left")
	case rp == nil:
		return cli.ExitCorrupt, rootSummary(res)
	case rp.Whole() && res.DataFormat == "android-sparse":
		// --repair refuses to write into a sparse file.
		return cli.ExitCorrupt, cli.Errorf("--repair does not write into an Android sparse image: expand it first (simg2img) and run veritycheck --repair on the expanded image to fix "+repairCount(rp),
			"%v; the FEC parity can fix all of it: %s", summary(rep), describeRepair(rp, res.FEC.Path))
	case rp.Whole():
		return cli.ExitCorrupt, cli.Errorf("run again with --repair to fix "+repairCount(rp),
			"%v; --repair can fix all of it: %s", summary(rep), describeRepair(rp, res.FEC.Path))
	}
	hint := "nothing was written"
	if !o.repair {
		hint = "nothing can be written back: --repair would refuse too"
	}
	if d := res.RootDiagnosis; d != nil {
		hint += "\n" + d.Hint
	}
	if rp.Unchecked() > 0 {
		hint += fmt.Sprintf("\n%d more blocks under the unrecoverable hash blocks could not be checked", rp.Unchecked())
	}
	if note := fecRootsNote(res.FEC); note != "" && o.fecDevice != "" {
		// Only the roots given (not an AVB descriptor's) may be wrong.
		hint += "\n" + note
	}
	return cli.ExitCorrupt, cli.Errorf(hint, "%v; the FEC parity in %s cannot recover %s: %s",
		summary(rep), res.FEC.Path, describeLost(rp), lostReasons(rp))
}

func toProblem(pr *merkle.CorruptionError) problem {
	out := problem{Index: pr.Index, Offset: pr.Offset, Reason: pr.Reason}
	switch pr.Level {
	case merkle.DataLevel:
		out.Where = "data"
	case merkle.HeaderLevel:
		out.Where = "superblock"
	default:
		out.Where = "hash"
		level := int(pr.Level)
		out.Level = &level
	}
	return out
}

func printProblem(w io.Writer, g *merkle.Geometry, rp *verity.RepairPlan, pr *merkle.CorruptionError, dataPath, hashPath string) {
	switch pr.Level {
	case merkle.DataLevel:
		fmt.Fprintf(w, "corrupted: data block %d (byte %d of %s): %s\n", pr.Index, pr.Offset, dataPath, pr.Reason)
	case merkle.HeaderLevel:
		fmt.Fprintf(w, "corrupted: superblock area, byte %d of %s: %s\n", pr.Offset, hashPath, pr.Reason)
	default:
		fmt.Fprintf(w, "corrupted: hash block %d of level %d (byte %d of %s): %s\n", pr.Index, pr.Level, pr.Offset, hashPath, pr.Reason)
		if !rp.IsRebuilt(pr.Level, pr.Index) {
			fmt.Fprintf(w, "unchecked: %s\n", describeBelow(g, pr.Level, pr.Index, dataPath))
		}
	}
}

// rootSummary is summary, but when the top block does not match the root
// hash says first what likely explains it: for a tree without superblock,
// the parameters with which it matches, if the library found them (a
// parameter mistake, not corruption).
func rootSummary(res *verity.VerifyResult) error {
	d := res.RootDiagnosis
	if d == nil {
		return cli.WithHint(summary(res.Report), anotherImage(res))
	}
	if d.Match != nil && len(d.Changed) > 0 {
		return cli.Errorf(d.Hint, "verification failed: the tree was not made with the parameters given: its top block matches the root hash with %s",
			strings.Join(d.Changed, " "))
	}
	return cli.WithHint(summary(res.Report), d.Hint)
}

// anotherImage is the hint for a check in which (nearly) every data block
// fails its digest while the tree above them is sound: corruption rarely
// spares the tree, so HASH is likely another image's tree, or DATA another
// image; "" for any other outcome.
func anotherImage(res *verity.VerifyResult) string {
	rep, blocks := res.Report, res.Geometry.DataBlocks
	if rep.RootMismatch || rep.CorruptHashBlocks+rep.CorruptHeaderBytes+rep.UncheckedDataBlocks > 0 ||
		rep.CorruptDataBlocks < 16 || rep.CorruptDataBlocks < blocks-blocks/10 {
		return ""
	}
	return fmt.Sprintf("%d of the %d data blocks fail while the tree above them is sound: HASH looks like the tree of another image "+
		"(or DATA is not the image the tree was made of); check the files before any --repair", rep.CorruptDataBlocks, blocks)
}

// notSwapped refuses DATA and HASH given the other way round: HASH without
// a superblock where DATA starts with one.
func notSwapped(dataPath, hashPath string, rootPositional bool) error {
	if dataPath == hashPath {
		return nil
	}
	if _, err := os.Stat(hashPath); err != nil {
		return nil // the check says what is missing
	}
	if _, err := verity.ReadSuperblock(hashPath, 0); err == nil {
		return nil
	}
	if _, err := verity.ReadSuperblock(dataPath, 0); err != nil {
		return nil
	}
	root := ""
	if rootPositional {
		root = " ROOT"
	}
	return cli.Errorf(fmt.Sprintf("DATA comes first, then HASH: %s [flags] %s%s", prog, cli.CommandLine("", []string{hashPath, dataPath})[1:], root),
		"DATA %s starts with a verity superblock and HASH %s has none: DATA and HASH swapped?", dataPath, hashPath)
}

// noRoot reports whether no root hash was given in any form.
func noRoot(o *options, sigFile *verity.RootHashSignatureFile) bool {
	return sigFile == nil && !o.rootPositional && !o.tree.Changed("root-hash") && !o.tree.Changed("root-hash-file")
}

// reorderRootFirst is args with the root hash given first moved to the
// end, where veritysetup verify (and veritycheck) take it.
func reorderRootFirst(args []string, root string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a != root {
			out = append(out, a)
		}
	}
	return append(out, root)
}

// summary is the one-line error for a failed check.
func summary(rep *merkle.VerifyReport) error {
	var parts []string
	plural := func(n uint64, what string) {
		if n > 0 {
			s := "s"
			if n == 1 {
				s = ""
			}
			parts = append(parts, fmt.Sprintf("%d %s%s", n, what, s))
		}
	}
	plural(rep.CorruptDataBlocks, "corrupted data block")
	plural(rep.CorruptHashBlocks, "corrupted hash block")
	plural(rep.CorruptHeaderBytes, "corrupted superblock byte")
	msg := "verification failed: " + strings.Join(parts, ", ")
	if rep.UncheckedDataBlocks+rep.UncheckedHashBlocks > 0 {
		msg += fmt.Sprintf("; %d data and %d hash blocks under corrupted hash blocks could not be checked",
			rep.UncheckedDataBlocks, rep.UncheckedHashBlocks)
	}
	hint := ""
	if rep.RootMismatch {
		hint = "the top of the tree does not match the root hash: check that it is this tree's root hash (veritygen printed it)"
	}
	return cli.Errorf(hint, "%s", msg)
}

// warn prints msg as a warning and, unless warnings is nil, adds it to
// *warnings for the JSON report.
func warn(stderr io.Writer, warnings *[]string, msg string) {
	cli.Warn(stderr, prog, "%s", msg)
	if warnings != nil {
		*warnings = append(*warnings, msg)
	}
}

// reportTo makes a check print on stderr as it goes: warnings, what a
// sparse DATA expands to, and (when showProgress) the progress lines. The
// returned func ends the progress display. Warnings are also added to
// *warnings, unless it is nil.
func reportTo(vo *verity.VerifyOptions, stderr io.Writer, showProgress bool, warnings *[]string) (finish func()) {
	var bar *cli.Progress
	vo.Warn = func(msg string) { warn(stderr, warnings, cli.Flags.Say(msg)) }
	vo.OnStart = func(g *merkle.Geometry, src *verity.Source) {
		if line := cli.Expansion(src.Path(), src.Format(), src.FileSize(), src.Size(), 0); line != "" {
			fmt.Fprintf(stderr, "%s: %s\n", prog, line)
		}
		bar = cli.NewProgress(stderr, showProgress, cli.ProgressLabel("checking", src.Format(), g.DataSize()), g.DataSize())
	}
	vo.Progress = cli.StageProgress(&bar, verity.StageHashing)
	return func() { bar.Finish() }
}
