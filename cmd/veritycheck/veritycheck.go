package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
)

const prog = "veritycheck"

const usage = `Usage: veritycheck --root-hash HEX [flags] DATA [HASH]
       veritycheck --root-hash HEX --fec-device FEC [--repair] [flags] DATA [HASH]
       veritycheck --dump [--hash-offset BYTES] HASH

Checks DATA and its dm-verity hash tree in HASH (default: DATA.verity)
against a root hash, as 'veritysetup verify' does, but finds every
corrupted block, not just the first: each data block against the tree, each
hash block against its parent, the top block against the root hash, and the
zero padding of hash blocks and superblock. DATA and HASH are only read,
except with --repair.

DATA may be an Android sparse image (found by its magic; --raw reads it as
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

Examples:
  veritycheck --root-hash=$(cat root.hex) system.img
  veritycheck --root-hash-file=root.hex system.img system.verity
  veritycheck --no-superblock --hash=blake2b-256 --salt=- --root-hash-file=root.hex system.img tree.bin
  veritycheck --hash-offset=1073741824 --root-hash-file=root.hex disk.img disk.img
  veritycheck --json --root-hash-file=root.hex system.img | jq .problems
  veritycheck --root-hash-file=root.hex --fec-device=system.fec --fec-roots=8 system.img
  veritycheck --root-hash-file=root.hex --fec-device=system.fec --fec-roots=8 --repair system.img
  veritycheck --dump system.img.verity

Flags:
`

const exitCodes = `
Exit codes:
  0  verified: DATA and HASH are exactly what the root hash vouches for
     (with --repair: are so again after the repair)
  1  corruption found (and not repaired), or the root hash is not this tree's
  2  anything else: bad usage, unreadable or malformed input, I/O error
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
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty io.Writer) int {
	var o options
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVar(&o.rootHex, "root-hash", "", "the expected root hash, `hex`")
	fs.StringVar(&o.rootHashFile, "root-hash-file", "", "read the expected root hash from `FILE` (hex; at most 4096 bytes; a pipe, as <(...) gives, works too)")
	fs.BoolVar(&o.dump, "dump", false, "print the superblock of HASH and exit")
	o.tree.Register(fs)
	fs.StringVar(&o.fecDevice, "fec-device", "", "rebuild corrupted blocks from the error-correction parity in `FILE` (may be HASH or DATA, with --fec-offset)")
	fs.Uint64Var(&o.fecOffset, "fec-offset", 0, "`bytes` into the FEC device where the parity starts")
	fs.IntVar(&o.fecRoots, "fec-roots", fec.DefaultRoots, "parity bytes per 255-byte codeword the parity was made with, `N` from 2 to 24")
	fs.BoolVar(&o.repair, "repair", false, "write the rebuilt blocks back into DATA and HASH (needs --fec-device; the only time veritycheck writes)")
	fs.BoolVar(&o.raw, "raw", false, "read DATA as it is, even if it starts with the Android sparse image magic")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object; a failure (exit 2) as {\"error\": ..., \"hint\": ...}")
	fs.IntVar(&o.maxProblems, "max-problems", 20, "list at most `N` corrupted blocks (all are counted); -1 lists all")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "hash on `N` goroutines")
	fs.BoolVar(&o.noProgress, "no-progress", false, "never show the progress bar (shown only when stderr is a terminal)")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		cli.Report(stderr, prog, cli.WithHint(err, "see veritycheck --help"))
		return cli.ExitError
	}
	if *help {
		fmt.Fprint(stdout, usage+fs.FlagUsages()+exitCodes)
		return cli.ExitOK
	}
	var err error
	code := cli.ExitOK
	if o.dump {
		err = dump(&o, fs.Args(), stdout)
	} else {
		showProgress := false
		if f, ok := tty.(*os.File); ok && !o.noProgress && !o.json {
			showProgress = cli.IsTerminal(f)
		}
		code, err = check(ctx, &o, fs.Args(), stdout, stderr, showProgress)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		cli.Report(stderr, prog, err)
		if code == cli.ExitOK {
			code = cli.ExitError
		}
		if o.json && code == cli.ExitError {
			// Exit 1 printed its report; exit 2 printed nothing yet.
			cli.ReportJSON(stdout, err)
		}
	}
	return code
}

// treeFlagNames are the flags that give the parameters a superblock holds.
var treeFlagNames = []string{"hash", "salt", "uuid", "format", "data-block-size", "hash-block-size", "data-blocks"}

// checkSuperblockOffset checks --hash-offset where a superblock is to be
// read, before its hash block size is known.
func checkSuperblockOffset(offset uint64) error {
	if offset%merkle.SuperblockSize != 0 {
		return cli.Errorf("", "--hash-offset %d is not a multiple of 512", offset)
	}
	return cli.CheckHashOffset(offset, merkle.MinBlockSize)
}

// checkFECFlags checks the --fec-* flags that need no file, before any is
// read; openFEC checks the rest against the tree.
func checkFECFlags(o *options) error {
	if o.fecRoots < fec.MinRoots || o.fecRoots > fec.MaxRoots {
		return cli.Errorf("give the --fec-roots the parity was made with (veritysetup's default is 2)",
			"--fec-roots %d is not from %d to %d", o.fecRoots, fec.MinRoots, fec.MaxRoots)
	}
	// At least one block of parity must fit before the end of a file.
	if o.fecOffset > cli.MaxFileOffset-merkle.MinBlockSize+1 {
		return cli.FECOffsetTooLarge(o.fecOffset)
	}
	return nil
}

// readSuperblock reads and decodes the superblock at the hash offset.
func readSuperblock(hashFile *os.File, hashPath string, offset uint64) (merkle.Params, error) {
	b := make([]byte, merkle.SuperblockSize)
	if n, err := hashFile.ReadAt(b, int64(offset)); n < len(b) {
		if err == nil || err == io.EOF {
			return merkle.Params{}, cli.Errorf("if the tree has no superblock, add --no-superblock and its parameters",
				"HASH %s ends before a superblock at byte %d", hashPath, offset)
		}
		return merkle.Params{}, cli.Errorf("", "reading the superblock of %s at byte %d: %v", hashPath, offset, cli.UnwrapPath(err))
	}
	p, err := merkle.DecodeSuperblock(b)
	if err != nil {
		hint := "if the tree was made with --no-superblock, add --no-superblock and its parameters (--hash, --salt, ...)"
		if offset == 0 {
			hint += "\nif the tree is inside the image, give its place with --hash-offset"
		}
		return merkle.Params{}, cli.Errorf(hint, "HASH %s has no valid verity superblock at byte %d: %v", hashPath, offset, err)
	}
	p.HashOffset = offset
	return p, nil
}

func dump(o *options, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return cli.Errorf("usage: veritycheck --dump HASH", "--dump takes one argument, HASH; got %d", len(args))
	}
	for _, name := range append(treeFlagNames, "no-superblock", "root-hash", "root-hash-file", "fec-device", "fec-offset", "fec-roots", "repair") {
		if o.tree.Changed(name) {
			return cli.Errorf("--dump reads everything from the superblock; only --hash-offset and --json apply", "--%s does not go with --dump", name)
		}
	}
	if err := checkSuperblockOffset(o.tree.HashOffset); err != nil {
		return err
	}
	hashPath := args[0]
	f, _, err := cli.OpenImage("HASH", hashPath)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := readSuperblock(f, hashPath, o.tree.HashOffset)
	if err != nil {
		return err
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return cli.Errorf("", "HASH %s: the superblock describes an impossible tree: %v", hashPath, err)
	}
	if o.json {
		return writeJSON(stdout, cli.NewTreeJSON(g, "", hashPath))
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// maxRootHashFile bounds what is read of --root-hash-file: a root hash is
// at most 128 hex digits, and room is left for spaces and a newline.
const maxRootHashFile = 4096

// rootHash reads the expected root hash from --root-hash or --root-hash-file.
func rootHash(ctx context.Context, o *options, fs interface{ Changed(string) bool }) ([]byte, error) {
	given, fromFile := fs.Changed("root-hash"), fs.Changed("root-hash-file")
	switch {
	case given && fromFile:
		return nil, cli.Errorf("keep one of them", "--root-hash and --root-hash-file both given")
	case !given && !fromFile:
		return nil, cli.Errorf("e.g. --root-hash-file=root.hex (as written by veritygen --root-hash-file), or --root-hash=HEX",
			"no root hash: give --root-hash or --root-hash-file")
	}
	text := o.rootHex
	what := "--root-hash"
	if fromFile {
		b, err := cli.ReadSmallFile(ctx, "--root-hash-file", o.rootHashFile, maxRootHashFile)
		if errors.Is(err, cli.ErrTooLarge) {
			return nil, cli.Errorf("the file holds the root hash in hex, as veritygen --root-hash-file writes it",
				"--root-hash-file %s is larger than any root hash (more than %d bytes): is it the right file?", o.rootHashFile, maxRootHashFile)
		}
		if err != nil {
			return nil, err
		}
		text = strings.TrimSpace(string(b))
		what = "root hash in " + o.rootHashFile
	}
	root, err := cli.ParseHex(what, text)
	if err != nil {
		return nil, cli.WithHint(err, "the root hash is the hex string veritygen prints as \"Root hash\"")
	}
	if len(root) == 0 {
		return nil, cli.Errorf("", "%s is empty", what)
	}
	return root, nil
}

// result is the JSON report of a check.
type result struct {
	Verified bool `json:"verified"`
	*cli.TreeJSON
	// DataFormat is "raw", or "android-sparse" for a sparse image read as
	// the image it expands to.
	DataFormat          string          `json:"data_format"`
	RootHash            string          `json:"root_hash"`
	RootMismatch        bool            `json:"root_mismatch"`
	CorruptDataBlocks   uint64          `json:"corrupt_data_blocks"`
	CorruptHashBlocks   uint64          `json:"corrupt_hash_blocks"`
	CorruptHeaderBytes  uint64          `json:"corrupt_superblock_bytes"`
	UncheckedDataBlocks uint64          `json:"unchecked_data_blocks"`
	UncheckedHashBlocks uint64          `json:"unchecked_hash_blocks"`
	Problems            json.RawMessage `json:"problems"` // streamed: see writeResult
	ProblemsTruncated   bool            `json:"problems_truncated"`
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

func check(ctx context.Context, o *options, args []string, stdout, stderr io.Writer, showProgress bool) (int, error) {
	if len(args) < 1 || len(args) > 2 {
		return cli.ExitError, cli.Errorf("usage: veritycheck --root-hash HEX [flags] DATA [HASH]; see veritycheck --help",
			"expected DATA and optionally HASH, got %d arguments", len(args))
	}
	if o.jobs < 1 {
		return cli.ExitError, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1")
	}
	if err := fecFlagsWithoutDevice(o); err != nil {
		return cli.ExitError, err
	}
	dataPath := args[0]
	hashPath := dataPath + ".verity"
	if len(args) == 2 {
		hashPath = args[1]
	}

	// Every flag is checked before anything is read, the root hash file
	// included.
	var p merkle.Params
	var err error
	if o.tree.NoSuperblock {
		if p, err = o.tree.Params(); err != nil {
			return cli.ExitError, err
		}
		if !o.tree.Changed("salt") {
			return cli.ExitError, cli.Errorf("give the salt the tree was made with, e.g. --salt=4f2a..., or --salt=- for none",
				"--no-superblock needs --salt: without a superblock nothing records it")
		}
		if o.tree.Changed("data-blocks") {
			// The data blocks must fit in a file too.
			if _, err := merkle.NewGeometry(p); err != nil {
				return cli.ExitError, cli.Errorf("", "%v", err)
			}
		}
	} else {
		for _, name := range treeFlagNames {
			if o.tree.Changed(name) {
				return cli.ExitError, cli.Errorf("leave --"+name+" out, or add --no-superblock to give all parameters yourself",
					"--%s given, but the parameters come from HASH's superblock", name)
			}
		}
		if err := checkSuperblockOffset(o.tree.HashOffset); err != nil {
			return cli.ExitError, err
		}
	}
	if o.fecDevice != "" {
		if err := checkFECFlags(o); err != nil {
			return cli.ExitError, err
		}
	}
	root, err := rootHash(ctx, o, &o.tree)
	if err != nil {
		return cli.ExitError, err
	}

	src, err := cli.OpenData(prog, dataPath, o.raw, stderr)
	if err != nil {
		return cli.ExitError, err
	}
	defer src.Close()
	dataFile, dataSize := src.File, src.Size
	hashFile, hashSize, err := cli.OpenImage("HASH", hashPath)
	if err != nil {
		if _, statErr := os.Stat(hashPath); len(args) == 1 && statErr != nil {
			err = cli.WithHint(err, "name the hash file: veritycheck [flags] DATA HASH")
		}
		return cli.ExitError, err
	}
	defer hashFile.Close()
	// A writer (veritygen, another --repair) must not change what is being
	// checked; --repair converts these to exclusive locks to write.
	for _, l := range []struct {
		f          *os.File
		role, path string
	}{{dataFile, "DATA", dataPath}, {hashFile, "HASH", hashPath}} {
		if err := cli.LockShared(l.f, l.role, l.path); err != nil {
			return cli.ExitError, err
		}
	}
	dataInfo, _ := dataFile.Stat()
	hashInfo, _ := hashFile.Stat()
	inPlace := os.SameFile(dataInfo, hashInfo)
	if inPlace && !o.tree.Changed("hash-offset") {
		return cli.ExitError, cli.Errorf("give the tree's place in DATA with --hash-offset", "HASH is DATA (%s) and no --hash-offset says where the tree is", hashPath)
	}
	if src.Sparse != nil {
		switch {
		case inPlace:
			return cli.ExitError, cli.Errorf(fmt.Sprintf("expand the image first (simg2img %s image.raw) and check that, or add --raw if it is a raw image that merely starts with the sparse magic", dataPath),
				"DATA %s is an Android sparse image: no tree can be inside it", dataPath)
		case o.repair:
			return cli.ExitError, cli.Errorf(fmt.Sprintf("expand the image (simg2img %s image.raw) and repair that", dataPath),
				"DATA %s is an Android sparse image: --repair cannot write into it", dataPath)
		}
	}

	if !o.tree.NoSuperblock {
		if p, err = readSuperblock(hashFile, hashPath, o.tree.HashOffset); err != nil {
			return cli.ExitError, err
		}
	} else if !o.tree.Changed("data-blocks") {
		avail := uint64(dataSize)
		if inPlace {
			avail = min(avail, p.HashOffset)
		}
		p.DataBlocks = avail / uint64(p.DataBlockSize)
		if p.DataBlocks == 0 && inPlace {
			return cli.ExitError, cli.Errorf("", "--hash-offset %d leaves no whole %d-byte data block before the tree in DATA %s", p.HashOffset, p.DataBlockSize, dataPath)
		}
		if p.DataBlocks == 0 {
			return cli.ExitError, cli.Errorf("", "DATA %s holds no whole %d-byte block", dataPath, p.DataBlockSize)
		}
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return cli.ExitError, cli.Errorf("", "%v", err)
	}
	if len(root) != g.DigestSize {
		return cli.ExitError, cli.Errorf(fmt.Sprintf("a %s root hash is %d hex digits", g.Hash.Name(), 2*g.DigestSize),
			"the root hash is %d bytes, but %s digests are %d bytes", len(root), g.Hash.Name(), g.DigestSize)
	}
	if g.DataSize() > uint64(dataSize) {
		return cli.ExitError, cli.Errorf("", "DATA %s is %d bytes, shorter than the %d blocks of %d bytes the tree covers (%d bytes): truncated?",
			dataPath, dataSize, g.DataBlocks, g.DataBlockSize, g.DataSize())
	}
	if inPlace && g.DataSize() > g.HashOffset {
		return cli.ExitError, cli.Errorf("", "the data area (up to byte %d) overlaps the hash area at --hash-offset %d", g.DataSize(), g.HashOffset)
	}
	if g.HashEnd() > uint64(hashSize) {
		return cli.ExitError, cli.Errorf("", "HASH %s is %d bytes, but the tree ends at byte %d: truncated, or not this tree's hash file?",
			hashPath, hashSize, g.HashEnd())
	}

	var parity *fecSetup
	if o.fecDevice != "" {
		if parity, err = openFEC(o, g, dataInfo, src.Sparse != nil, hashInfo, hashPath, hashSize); err != nil {
			return cli.ExitError, err
		}
		defer parity.close()
	}

	// The problems go to a spool (up to --max-problems of them, in bounded
	// memory for any number), and with error correction to the repair's
	// marks, which find every corrupted block: Verify's own list is not
	// used (0 would mean its default).
	spool := newProblemSpool(o.maxProblems)
	defer spool.close()
	var marks blockMarks
	onProblem := spool.add
	if parity != nil {
		marks = newBlockMarks(g, parity)
		onProblem = func(p *merkle.CorruptionError) {
			spool.add(p)
			if p.Level != merkle.HeaderLevel {
				marks.set(msgIndex(g, p.Level, p.Index), markBad|markReported)
			}
		}
	}
	if line := src.Expansion(0); line != "" {
		fmt.Fprintf(stderr, "%s: %s\n", prog, line)
	}
	bar := cli.NewProgress(stderr, showProgress, src.ProgressLabel("checking", g.DataSize()), g.DataSize())
	rep, err := verifyTree(ctx, g, src.R, hashFile, root, &merkle.VerifyOptions{
		Jobs: o.jobs, Progress: bar.Update, MaxProblems: 1, OnProblem: onProblem, Runs: src.Runs(g.DataBlockSize, g.DataBlocks)})
	bar.Finish()
	if err != nil {
		return cli.ExitError, err
	}

	// Error correction: plan (nothing written), then with --repair write
	// and verify again from the disk.
	var rp *repairPlan
	var after *merkle.VerifyReport
	if parity != nil && !rep.OK() {
		if rp, err = planRepair(ctx, g, parity, src.R, hashFile, root, rep, marks, o.jobs); err != nil {
			return cli.ExitError, err
		}
		defer rp.close()
		rp.updateReport(rep)
		// The decoders' buffers are garbage now: collected here, they do
		// not set how far the heap grows while the report is written.
		runtime.GC()
		if o.repair && rp.whole() {
			if err := ctx.Err(); err != nil {
				return cli.ExitError, err
			}
			if err := writeRepair(g, rp, dataPath, hashPath, inPlace); err != nil {
				return cli.ExitError, err
			}
			if after, err = verifyWritten(ctx, g, parity, src.R, hashFile, root, rp); err != nil {
				return cli.ExitError, cli.WithHint(err, "the repair was written; run veritycheck again")
			}
		}
	}
	verified := rep.OK() || after != nil && after.OK()

	rep.Problems = nil
	total := rep.CorruptDataBlocks + rep.CorruptHashBlocks + rep.CorruptHeaderBytes
	rep.Truncated = o.maxProblems >= 0 && total > uint64(o.maxProblems)
	if o.json {
		res := &result{Verified: verified, TreeJSON: cli.NewTreeJSON(g, dataPath, hashPath), DataFormat: src.Format(), RootHash: hex.EncodeToString(root),
			RootMismatch: rep.RootMismatch, CorruptDataBlocks: rep.CorruptDataBlocks, CorruptHashBlocks: rep.CorruptHashBlocks,
			CorruptHeaderBytes: rep.CorruptHeaderBytes, UncheckedDataBlocks: rep.UncheckedDataBlocks,
			UncheckedHashBlocks: rep.UncheckedHashBlocks, ProblemsTruncated: rep.Truncated}
		if parity != nil {
			res.repairJSON = newRepairJSON(parity, rp, after != nil, o.maxProblems)
		}
		err := writeResult(stdout, res, func(emit func(problem) error) error {
			var emitErr error
			err := eachProblem(g, spool, rp, o.maxProblems, func(pr *merkle.CorruptionError) {
				p := toProblem(pr)
				if pr.Level >= 0 && !rp.rebuiltBlock(g, pr.Level, pr.Index) {
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
		if err != nil {
			return cli.ExitError, err
		}
	} else {
		if err := printProblems(stdout, rep, g, spool, rp, o.maxProblems, dataPath, hashPath); err != nil {
			return cli.ExitError, err
		}
		if rp != nil {
			printRepair(stdout, rp, after != nil, o.maxProblems, dataPath, hashPath, parity.path)
		}
	}
	switch {
	case verified:
		if !o.json {
			fmt.Fprintf(stdout, "verified: %d data blocks of %d bytes and %d hash blocks match root hash %x\n",
				g.DataBlocks, g.DataBlockSize, g.HashBlocks, root)
		}
		return cli.ExitOK, nil
	case after != nil:
		return cli.ExitCorrupt, cli.WithHint(fmt.Errorf("the repair was written, but verification still fails: %v", summary(after)),
			"run veritycheck again to list what is left")
	case rp == nil:
		return cli.ExitCorrupt, summary(rep)
	case rp.whole():
		return cli.ExitCorrupt, cli.Errorf("run again with --repair to fix "+rp.count(),
			"%v; --repair can fix all of it: %s", summary(rep), rp.describe(parity.path))
	}
	hint := "nothing was written"
	if !o.repair {
		hint = "nothing can be written back: --repair would refuse too"
	}
	if rep.RootMismatch {
		hint += "\nthe top of the tree does not match the root hash: check that it is this tree's root hash (veritygen printed it)"
	}
	if rp.unchecked > 0 {
		hint += fmt.Sprintf("\n%d more blocks under the unrecoverable hash blocks could not be checked", rp.unchecked)
	}
	return cli.ExitCorrupt, cli.Errorf(hint, "%v; the FEC parity in %s cannot recover %s: %s",
		summary(rep), parity.path, rp.describeLost(), rp.lostReasons())
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
		level := pr.Level
		out.Level = &level
	}
	return out
}

func printProblems(w io.Writer, rep *merkle.VerifyReport, g *merkle.Geometry, spool *problemSpool, rp *repairPlan, limit int, dataPath, hashPath string) error {
	listed := uint64(0)
	err := eachProblem(g, spool, rp, limit, func(pr *merkle.CorruptionError) {
		listed++
		switch pr.Level {
		case merkle.DataLevel:
			fmt.Fprintf(w, "corrupted: data block %d (byte %d of %s): %s\n", pr.Index, pr.Offset, dataPath, pr.Reason)
		case merkle.HeaderLevel:
			fmt.Fprintf(w, "corrupted: superblock area, byte %d of %s: %s\n", pr.Offset, hashPath, pr.Reason)
		default:
			fmt.Fprintf(w, "corrupted: hash block %d of level %d (byte %d of %s): %s\n", pr.Index, pr.Level, pr.Offset, hashPath, pr.Reason)
			if !rp.rebuiltBlock(g, pr.Level, pr.Index) {
				fmt.Fprintf(w, "unchecked: %s\n", describeBelow(g, pr.Level, pr.Index, dataPath))
			}
		}
	})
	if err != nil {
		return err
	}
	total := rep.CorruptDataBlocks + rep.CorruptHashBlocks + rep.CorruptHeaderBytes
	if rep.Truncated {
		fmt.Fprintf(w, "... and %d more (%d in all; --max-problems=-1 lists all)\n", total-listed, total)
	}
	return nil
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

// verifyTree is merkle.Verify; tests wrap it to see the options given.
var verifyTree = merkle.Verify
