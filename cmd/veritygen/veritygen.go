package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
)

const prog = "veritygen"

// buildTree builds the tree; tests look at what it is given through it.
var buildTree = merkle.Build

const usage = `Usage: veritygen [flags] DATA [HASH]
       veritygen --append [--fec] [flags] DATA

Builds the dm-verity hash tree of DATA and writes it to HASH (default:
DATA.verity), byte for byte as 'veritysetup format DATA HASH' would, then
prints the parameters and the root hash. The flags have veritysetup's names
and meanings.

DATA may be a file or a block device. An Android sparse image (img2simg's
format, known by its magic) is read as the image it expands to, without
expanding it on disk, its CRC32 checksums (if it has any) checked first;
--raw reads it as it is. Holes of a raw file and the FILL and DONT_CARE
chunks of a sparse image are hashed once, not read.

HASH is written under a temporary name and renamed when complete, so an
interrupted run never leaves a partial tree under HASH; a block device is
written in place, and must be large enough. An existing HASH (or FEC file)
is replaced only if it looks like what veritygen writes: empty or zeros, a tree
with its superblock, or (--no-superblock) no longer than the tree and no
filesystem or image by its magic; --force replaces it anyway. Every
output is opened before anything is hashed, so one that cannot be written
fails the run before HASH is replaced. --root-hash-file replaces a regular
file only if it holds a root hash (or nothing); a character device or a
FIFO (with a reader) is written through, never replaced. Files written
are locked (flock) and files read share a lock: a second veritygen or
veritycheck on the same files fails at once rather than mixing its writes
in. Temporary files of a killed run are removed by the next one.

DATA is only read, except:
  - when HASH is DATA itself: the tree goes into DATA at --hash-offset,
    past the data;
  - with --append: DATA is padded with zeros to a whole block, then the
    tree (no superblock) and, with --fec, the error correction are
    appended to it, as avbtool lays out Android images. The image's own
    bytes are not changed. An interrupted --append leaves DATA longer than
    it was: run the same command again with --data-size=<original size>
    (the error message gives it) and the result is that of an
    uninterrupted run. --data-size cuts off only what an --append could
    have written (zero padding, then no more than a whole tree and its
    parity); anything else is refused unless --force.

Examples:
  veritygen system.img                       tree in system.img.verity
  veritygen --root-hash-file=root.hex system.img system.verity
  veritygen --hash=blake2b-256 --salt=- --no-superblock system.img tree.bin
  veritygen --hash-offset=1073741824 --data-blocks=262144 disk.img disk.img
  veritygen --append --fec --ignore-zero-blocks --data-device=/dev/sda5 system.img
  veritygen --json system.img | jq -r .root_hash

Flags:
`

const exitCodes = `
Exit codes:
  0  success
  2  anything else: bad usage, unreadable or bad input, I/O error
  (1 is veritycheck's: the data is not as expected)
`

type options struct {
	tree         cli.TreeFlags
	fecDevice    string
	fecOffset    uint64
	fecRoots     int
	rootHashFile string
	json         bool
	jobs         int
	noProgress   bool
	raw          bool
	appendTree   bool
	fecAppend    bool
	dataSize     uint64
	force        bool
	boot         bootFlags
}

func (o *options) changed(name string) bool { return o.tree.Changed(name) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty io.Writer) int {
	var o options
	// fail reports err on stderr and, with --json, as JSON on stdout.
	fail := func(err error) int {
		cli.Report(stderr, prog, err)
		if o.json {
			cli.ReportJSON(stdout, err)
		}
		return cli.ExitError
	}
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.tree.Register(fs)
	fs.StringVar(&o.fecDevice, "fec-device", "", "also write Reed-Solomon error correction to `FILE` (may be HASH or DATA, with --fec-offset)")
	fs.Uint64Var(&o.fecOffset, "fec-offset", 0, "`bytes` into the FEC device where the parity starts")
	fs.IntVar(&o.fecRoots, "fec-roots", fec.DefaultRoots, "parity bytes per 255-byte codeword, `N` from 2 to 24")
	fs.BoolVar(&o.force, "force", false, "replace HASH or the FEC file even if it does not look like a tree veritygen wrote (and --root-hash-file, and let --data-size cut off any bytes)")
	fs.BoolVar(&o.raw, "raw", false, "read DATA as it is, even if it starts with the Android sparse image magic")
	fs.BoolVar(&o.appendTree, "append", false, "WRITES INTO DATA: pad DATA to a whole block and append the tree (no superblock), as avbtool does")
	fs.BoolVar(&o.fecAppend, "fec", false, "with --append: also append error correction (of the image and the tree) after the tree")
	fs.Uint64Var(&o.dataSize, "data-size", 0, "with --append: DATA's size in `bytes` before a previous, interrupted --append")
	fs.StringVar(&o.rootHashFile, "root-hash-file", "", "also write the root hash to `FILE` (lower-case hex, no newline)")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object; a failure (exit 2) as {\"error\": ..., \"hint\": ...}")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "hash on `N` goroutines; the tree is the same for every N")
	fs.BoolVar(&o.noProgress, "no-progress", false, "never show the progress bar (shown only when stderr is a terminal)")
	o.boot.register(fs)
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return fail(cli.WithHint(err, "see veritygen --help"))
	}
	if *help {
		fmt.Fprint(stdout, usage+fs.FlagUsages()+exitCodes)
		return cli.ExitOK
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return fail(cli.Errorf("usage: veritygen [flags] DATA [HASH]; see veritygen --help",
			"expected DATA and optionally HASH, got %d arguments", fs.NArg()))
	}
	if o.appendTree && fs.NArg() != 1 {
		return fail(cli.Errorf("leave HASH out: veritygen --append [flags] DATA",
			"--append writes the tree into DATA; got a HASH argument (%s) too", fs.Arg(1)))
	}
	if o.jobs < 1 {
		return fail(cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1"))
	}
	data := fs.Arg(0)
	hash := data + ".verity"
	switch {
	case fs.NArg() == 2:
		hash = fs.Arg(1)
	case o.appendTree:
		hash = data
	}
	showProgress := false
	if f, ok := tty.(*os.File); ok && !o.noProgress && !o.json {
		showProgress = cli.IsTerminal(f)
	}
	res, err := generate(ctx, &o, data, hash, fs.NArg() == 2, stderr, showProgress)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted; nothing was written under HASH")
			if o.appendTree {
				err = errors.New("interrupted; nothing was written")
			}
		}
		return fail(err)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fail(fmt.Errorf("writing the report: %w", err))
		}
	} else {
		h := &cli.Header{HashFile: res.HashFile, UUID: res.UUID, HashType: res.Format, DataBlocks: res.DataBlocks,
			DataBlockSize: res.DataBlockSize, HashBlocks: res.HashBlocks, HashBlockSize: res.HashBlockSize,
			Algorithm: res.HashAlgorithm, Salt: res.Salt, RootHash: res.RootHash}
		if res.separate && res.HashOffset == 0 {
			// veritysetup prints the size only for a hash device of its own.
			h.HashDeviceSize, h.ShowHashDeviceSize = res.HashEnd, true
		}
		if f := res.fecResult; f != nil {
			h.FECRoots, h.FECBlocks = f.Roots, f.ParityBlocks
			switch {
			case f.inHash && h.ShowHashDeviceSize:
				h.HashDeviceSize += f.Size // as veritysetup counts it
			case !f.inHash && f.Offset == 0:
				h.FECDeviceSize = f.Size
			}
		}
		h.Print(stdout)
		if a := res.appendResult; a != nil {
			fmt.Fprintf(stdout, "Original size:   \t%d [bytes]\n", a.OriginalSize)
			fmt.Fprintf(stdout, "Hash offset:     \t%d [bytes]\n", res.HashOffset)
			if res.fecResult != nil {
				fmt.Fprintf(stdout, "FEC offset:      \t%d [bytes]\n", res.fecResult.Offset)
			}
			fmt.Fprintf(stdout, "Image size:      \t%d [bytes]\n", a.ImageSize)
		}
		if o.boot.wanted() && res.bootParams != nil {
			fmt.Fprintf(stdout, "Kernel table:    \t%s\n", res.Table)
			fmt.Fprintf(stdout, "dm-mod.create:   \t%s\n", res.DMModCreate)
			fmt.Fprintf(stdout, "Android dm=:     \t%s\n", res.AndroidDM)
		}
	}
	return cli.ExitOK
}

// result is the report, also printed as JSON.
type result struct {
	RootHash string `json:"root_hash"`
	*cli.TreeJSON
	// UncoveredBytes counts the bytes of DATA after the last covered block
	// that the tree does not protect.
	UncoveredBytes uint64 `json:"uncovered_bytes"`
	// DataFormat is "raw", or "android-sparse" for a sparse image read as
	// the image it expands to.
	DataFormat string `json:"data_format"`
	// DataSize is the number of bytes the tree covers (data_blocks times
	// data_block_size).
	DataSize uint64 `json:"data_size"`
	// ExpandedSize is the size of the image a sparse DATA expands to.
	ExpandedSize uint64 `json:"expanded_size,omitempty"`
	// TreeSize is the bytes of the tree, superblock included.
	TreeSize uint64 `json:"tree_size"`
	*fecResult
	*appendResult
	*bootParams
	separate bool
}

// appendResult is what the report says of an --append layout: DATA is the
// image (original_size bytes), zeros up to data_size, the tree at
// hash_offset, the FEC at fec_offset, image_size bytes in all.
type appendResult struct {
	OriginalSize uint64 `json:"original_size"`
	ImageSize    uint64 `json:"image_size"`
}

func generate(ctx context.Context, o *options, dataPath, hashPath string, hashGiven bool, stderr io.Writer, showProgress bool) (*result, error) {
	p, err := o.tree.Params()
	if err != nil {
		return nil, err
	}
	if err := checkModeFlags(o); err != nil {
		return nil, err
	}
	if err := o.boot.check(); err != nil {
		return nil, err
	}

	src, err := cli.OpenData(prog, dataPath, o.raw, stderr)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dataFile, dataSize := src.File, src.Size
	// Shared while DATA is only read; exclusive (below) when it is written.
	if o.appendTree {
		err = cli.LockExclusive(dataFile, "DATA", dataPath)
	} else {
		err = cli.LockShared(dataFile, "DATA", dataPath)
	}
	if err != nil {
		return nil, err
	}
	dataInfo, err := dataFile.Stat()
	if err != nil {
		return nil, cli.Errorf("", "DATA %s: %v", dataPath, cli.UnwrapPath(err))
	}
	if cli.IsBlockDevice(dataInfo) && !hashGiven && !o.appendTree {
		return nil, cli.Errorf(fmt.Sprintf("name HASH, e.g. veritygen %s %s.verity, or put the tree inside the device with --hash-offset", dataPath, filepath.Base(dataPath)),
			"DATA %s is a block device: the default HASH %s would be a new file beside it in %s", dataPath, hashPath, filepath.Dir(dataPath))
	}

	hashInfo, err := os.Stat(hashPath)
	hashExists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, cli.Errorf("", "HASH %s: %v", hashPath, cli.UnwrapPath(err))
	case hashExists && hashInfo.IsDir():
		return nil, cli.Errorf("name a file for the tree, e.g. "+filepath.Join(hashPath, filepath.Base(dataPath)+".verity"),
			"HASH %s is a directory", hashPath)
	case hashExists:
		// The tree is written at offsets, and read back for the parity.
		if err := cli.CheckImageType("HASH", hashPath, hashInfo.Mode(), "written"); err != nil {
			return nil, err
		}
	}
	inPlace := hashExists && os.SameFile(dataInfo, hashInfo)
	if err := checkRootHashFile(o.rootHashFile, dataPath, dataInfo, hashPath, hashInfo); err != nil {
		return nil, err
	}
	if src.Sparse != nil && (inPlace || o.appendTree) {
		return nil, cli.Errorf(fmt.Sprintf("write the tree to a file of its own (veritygen %s %s.verity), or expand the image first: simg2img %s image.raw", dataPath, dataPath, dataPath),
			"DATA %s is an Android sparse image: a tree cannot go inside it", dataPath)
	}

	dbs := uint64(p.DataBlockSize)
	// Where hints put the tree: 4096-aligned, and on a hash block without
	// superblock, as --hash-offset must then be.
	align := uint64(4096)
	if !p.Superblock {
		align = max(align, uint64(p.HashBlockSize))
	}
	var ap *appendResult
	switch {
	case o.appendTree:
		if ap, err = planAppend(o, &p, dataPath, dataInfo, dataSize); err != nil {
			return nil, err
		}
	case inPlace:
		if !o.tree.Changed("hash-offset") {
			return nil, cli.Errorf(fmt.Sprintf("to write the tree into DATA past the data, add --hash-offset=%d (DATA's size rounded up to %d), or use --append", roundUp(uint64(dataSize), align), align),
				"HASH is DATA (%s) and no --hash-offset says where the tree goes", hashPath)
		}
		if !o.tree.Changed("data-blocks") {
			// The tree's own area is not data: cover the blocks before it.
			p.DataBlocks = min(uint64(dataSize), p.HashOffset) / dbs
		}
	case !o.tree.Changed("data-blocks"):
		p.DataBlocks = uint64(dataSize) / dbs
	}
	if p.DataBlocks == 0 {
		if dataSize == 0 {
			return nil, cli.Errorf("", "DATA %s is empty", dataPath)
		}
		if inPlace && uint64(dataSize) >= dbs {
			return nil, cli.Errorf(fmt.Sprintf("put the tree past the data: --hash-offset=%d", roundUp(uint64(dataSize), align)),
				"--hash-offset %d leaves no whole %d-byte data block before the tree in DATA %s", p.HashOffset, dbs, dataPath)
		}
		return nil, cli.Errorf(fmt.Sprintf("use a smaller --data-block-size, or pad the image: truncate -s %d %s", dbs, dataPath),
			"DATA %s is %d bytes, smaller than one %d-byte data block", dataPath, dataSize, dbs)
	}
	if p.DataBlocks > uint64(dataSize)/dbs && ap == nil { // not DataBlocks*dbs, which may overflow
		need := fmt.Sprint(p.DataBlocks * dbs)
		if hi, _ := bits.Mul64(p.DataBlocks, dbs); hi != 0 {
			need = "more than 2^64"
		}
		return nil, cli.Errorf(fmt.Sprintf("DATA has %d whole blocks; leave --data-blocks out to cover them all", uint64(dataSize)/dbs),
			"--data-blocks %d needs %s bytes, but DATA %s has only %d", p.DataBlocks, need, dataPath, dataSize)
	}
	if inPlace && p.DataBlocks*dbs > p.HashOffset {
		hint := fmt.Sprintf("put the tree past the data: --hash-offset=%d", roundUp(p.DataBlocks*dbs, align))
		if p.HashOffset/dbs > 0 {
			hint += fmt.Sprintf(", or cover fewer blocks: --data-blocks=%d", p.HashOffset/dbs)
		}
		return nil, cli.Errorf(hint,
			"the data area (%d blocks of %d bytes, up to byte %d) overlaps the hash area at --hash-offset %d", p.DataBlocks, dbs, p.DataBlocks*dbs, p.HashOffset)
	}

	if p.Salt == nil {
		p.Salt = make([]byte, 32)
		if _, err := rand.Read(p.Salt); err != nil {
			return nil, err
		}
	}
	if p.Superblock && !o.tree.Changed("uuid") {
		if p.UUID, err = cli.RandomUUID(); err != nil {
			return nil, err
		}
	}
	if !p.Superblock && o.tree.Changed("uuid") {
		cli.Warn(stderr, prog, "--uuid is ignored with --no-superblock: only a superblock stores it")
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return nil, err
	}
	fl, err := planFEC(o, g, dataPath, dataInfo, hashPath, hashInfo, inPlace)
	if err != nil {
		return nil, err
	}
	if fl != nil && fl.inData && src.Sparse != nil {
		return nil, cli.Errorf("write the error correction to a file of its own, e.g. --fec-device="+dataPath+".fec",
			"DATA %s is an Android sparse image: error correction cannot go inside it", dataPath)
	}
	if p.DataBlockSize > 4096 {
		cli.Warn(stderr, prog, "Linux refuses data blocks larger than its page size (4096 bytes on most machines); this tree may not open there")
	}
	covered := g.DataSize()
	var uncovered uint64
	switch {
	case ap != nil: // the padding makes the image whole blocks
	case inPlace:
		uncovered = min(uint64(dataSize), p.HashOffset) - covered
	default:
		uncovered = uint64(dataSize) - covered
	}
	if uncovered > 0 && !o.tree.Changed("data-blocks") {
		cli.Warn(stderr, prog, "the last %d bytes of DATA are not a whole %d-byte block: the tree does not cover them", uncovered, dbs)
	}
	// Where the writes to the hash output end: the tree, or the parity
	// after it in the same file.
	outEnd := g.HashEnd()
	if fl != nil && fl.inHash {
		fp, err := g.FECParams(fl.roots, fl.offset)
		if err != nil {
			return nil, err
		}
		outEnd = fl.offset + fp.ParitySize()
	}
	if inPlace || fl != nil && fl.inData {
		if err := cli.LockExclusive(dataFile, "DATA", dataPath); err != nil {
			return nil, err
		}
	}
	if ap != nil {
		if err := checkAppendTail(o, ap, g, dataPath, dataFile, uint64(dataSize), outEnd); err != nil {
			return nil, err
		}
	}
	if err := checkOutputs(o, g, fl, dataPath, dataFile, hashPath, hashInfo, inPlace || ap != nil, outEnd); err != nil {
		return nil, err
	}

	// Every output is opened (and locked) before anything is hashed: one
	// that cannot be written fails the run while nothing has changed.
	var hashOut *output
	if inPlace || ap != nil {
		hashOut, err = openInPlace(dataPath, "DATA")
	} else {
		// Bytes of an existing HASH outside the tree are kept, as
		// veritysetup, which writes in place, keeps them: those before an
		// offset, and all of them when the parity goes into HASH too.
		keepFrom := g.HashOffset
		if fl != nil && fl.inHash {
			keepFrom = 1
		}
		hashOut, err = openReplacement(hashPath, "HASH", hashInfo, keepFrom, stderr)
	}
	if err != nil {
		return nil, err
	}
	defer hashOut.abort()
	var fecOut, rootOut *output
	if fl != nil {
		if fecOut, err = openFECOutput(fl, dataPath, stderr); err != nil {
			return nil, err
		}
		if fecOut != nil {
			defer fecOut.abort()
		}
	}
	if o.rootHashFile != "" {
		if rootOut, err = openRootHashFile(o.rootHashFile, o.force, stderr); err != nil {
			return nil, err
		}
		defer rootOut.abort()
	}
	// merkle.Build writes the superblock before it first looks at ctx, and
	// with several jobs may not notice a cancellation at all: an already
	// canceled run must stop here, before anything is written.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	role := "HASH"
	if inPlace || ap != nil {
		role = "DATA"
	}
	if err := hashOut.checkDeviceRoom(role, outEnd); err != nil {
		return nil, err
	}
	if ap != nil {
		// The padding: zeros from the original end to the tree, written
		// (not only left as a hole) since a previous, interrupted run may
		// have left other bytes there.
		if err := hashOut.zero(ap.OriginalSize, g.HashOffset); err != nil {
			return nil, err
		}
	}
	if line := src.Expansion(g.HashEnd() - g.HashOffset); line != "" {
		fmt.Fprintf(stderr, "%s: %s\n", prog, line)
	}
	bar := cli.NewProgress(stderr, showProgress, src.ProgressLabel("hashing", covered), covered)
	runs := src.Runs(p.DataBlockSize, g.DataBlocks)
	root, err := buildTree(ctx, g, src.R, hashOut.f, &merkle.BuildOptions{Jobs: o.jobs, Progress: bar.Update, Runs: runs})
	var fecRes *fecResult
	if err == nil && fl != nil {
		fecRes, err = writeFEC(ctx, g, fl, dataPath, src.R, hashOut, fecOut, o.jobs)
	}
	if err == nil && ap != nil {
		// Drop what a previous, interrupted or longer, run left past the
		// end: the file ends with the tree or its parity.
		ap.ImageSize = outEnd
		err = hashOut.truncate(outEnd)
	}
	if err == nil {
		err = hashOut.commit()
	}
	bar.Finish()
	if err != nil {
		if hashOut.tmp == "" && errors.Is(err, context.Canceled) {
			// Written in place, not through a temporary file.
			if ap != nil {
				return nil, cli.Errorf(fmt.Sprintf("run the same command again with --data-size=%d to finish it", ap.OriginalSize),
					"interrupted; DATA %s is longer than its original %d bytes, which are unchanged, and its tree is incomplete", dataPath, ap.OriginalSize)
			}
			return nil, cli.Errorf("run veritygen again to write the whole tree",
				"interrupted; the tree in %s from byte %d is incomplete", hashPath, g.HashOffset)
		}
		return nil, err
	}
	rootHex := hex.EncodeToString(root)
	// The tree is committed: a later failure must not lose its root hash.
	afterCommit := func(what string, err error) error {
		where := "in " + hashPath
		if inPlace || ap != nil {
			where = "in DATA " + dataPath
		}
		return cli.Errorf("", "the new tree is %s, root hash %s; %s: %v", where, rootHex, what, err)
	}
	if fecOut != nil {
		if err := fecOut.commit(); err != nil {
			return nil, afterCommit("the error correction", err)
		}
	}
	if rootOut != nil {
		if err := rootOut.writeRootHash(rootHex); err != nil {
			return nil, afterCommit("--root-hash-file", err)
		}
	}
	res := &result{
		RootHash:       rootHex,
		TreeJSON:       cli.NewTreeJSON(g, dataPath, hashPath),
		UncoveredBytes: uncovered,
		DataFormat:     src.Format(),
		DataSize:       covered,
		TreeSize:       g.HashEnd() - g.HashOffset,
		separate:       !inPlace && ap == nil,
		fecResult:      fecRes,
		appendResult:   ap,
	}
	if src.Sparse != nil {
		res.ExpandedSize = uint64(src.Size)
	}
	if devs, err := o.bootDevices(dataPath, hashPath, inPlace || ap != nil, fecRes); err == nil {
		res.bootParams = makeBootParams(g, root, devs, &o.boot, fecRes)
	} else if o.boot.wanted() {
		// The tree is written: say why the boot parameters are missing.
		return nil, cli.WithHint(afterCommit("boot parameters", err), hintOf(err))
	}
	return res, nil
}

// checkModeFlags checks the flags of --append and --raw against the others.
func checkModeFlags(o *options) error {
	if !o.appendTree {
		for _, name := range []string{"fec", "data-size"} {
			if o.changed(name) {
				return cli.Errorf("e.g. veritygen --append --"+name+" ... DATA", "--%s needs --append", name)
			}
		}
		return nil
	}
	for _, c := range []struct{ flag, hint string }{
		{"hash-offset", "the tree goes right after the image, padded to a whole block"},
		{"data-blocks", "--append covers the whole image, padded to a whole block"},
		{"fec-device", "--fec appends the error correction after the tree"},
		{"fec-offset", "--fec appends the error correction after the tree"},
	} {
		if o.changed(c.flag) {
			return cli.Errorf("leave --"+c.flag+" out: "+c.hint, "--%s cannot be used with --append", c.flag)
		}
	}
	if o.changed("data-size") && o.dataSize == 0 {
		return cli.Errorf("give the image's size before the interrupted --append, e.g. --data-size=1073741824", "--data-size must be at least 1")
	}
	return nil
}

// planAppend lays out --append: the tree right after the image padded to a
// whole data and hash block, and fills p in.
func planAppend(o *options, p *merkle.Params, dataPath string, dataInfo fs.FileInfo, size int64) (*appendResult, error) {
	orig := uint64(size)
	if cli.IsBlockDevice(dataInfo) && !o.changed("data-size") {
		return nil, cli.Errorf("give the size of the image on it: --data-size=BYTES",
			"DATA %s is a block device: --append cannot grow it, and needs --data-size to know where the image ends", dataPath)
	}
	if o.changed("data-size") {
		if o.dataSize > orig {
			return nil, cli.Errorf("give the image's size before the interrupted --append, no more than DATA's current size",
				"--data-size %d is more than DATA %s's %d bytes", o.dataSize, dataPath, size)
		}
		orig = o.dataSize
	}
	if orig == 0 {
		return nil, cli.Errorf("", "DATA %s is empty", dataPath)
	}
	// Both block sizes are powers of two: the larger is a multiple of the
	// other.
	align := uint64(max(p.DataBlockSize, p.HashBlockSize))
	padded := roundUp(orig, align)
	if padded < orig || padded > 1<<62 {
		return nil, cli.Errorf("", "DATA %s is too large", dataPath)
	}
	if o.changed("no-superblock") && !o.tree.NoSuperblock {
		return nil, cli.Errorf("leave --no-superblock out: --append writes no superblock, as avbtool", "--append writes no superblock; --no-superblock=false contradicts it")
	}
	p.Superblock = false
	p.HashOffset = padded
	p.DataBlocks = padded / uint64(p.DataBlockSize)
	return &appendResult{OriginalSize: orig}, nil
}

// bootDevices returns the device names for the table: the flags', or the
// paths as given.
func (o *options) bootDevices(dataPath, hashPath string, treeInData bool, f *fecResult) (bootDevices, error) {
	b := &o.boot
	d := bootDevices{data: dataPath, hash: hashPath}
	if b.dataDevice != "" {
		d.data = b.dataDevice
	}
	switch {
	case b.hashDevice != "":
		d.hash = b.hashDevice
	case treeInData:
		d.hash = d.data
	}
	if f != nil {
		switch {
		case f.inHash:
			d.fec = d.hash
		case f.inData:
			d.fec = d.data
		case b.fecDevice != "":
			d.fec = b.fecDevice
		default:
			d.fec = f.Device
		}
	}
	for _, n := range []struct{ role, flag, v string }{{"DATA", "data-device", d.data}, {"HASH", "hash-device", d.hash}, {"the FEC device", "fec-device-name", d.fec}} {
		if n.v == "" && n.role == "the FEC device" {
			continue
		}
		if err := checkDeviceName(n.v); err != nil {
			return d, cli.Errorf(fmt.Sprintf("name the device for the table: --%s=/dev/...", n.flag),
				"the kernel table names %s by its path, and %q %v", n.role, n.v, err)
		}
	}
	return d, nil
}

// checkRootHashFile refuses a --root-hash-file that would replace DATA or
// HASH (written over by the root hash after the tree) or is a directory.
// hashInfo is nil when HASH does not exist yet.
func checkRootHashFile(path, dataPath string, dataInfo fs.FileInfo, hashPath string, hashInfo fs.FileInfo) error {
	if path == "" {
		return nil
	}
	hint := "name another file, e.g. --root-hash-file=" + dataPath + ".roothash"
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return cli.Errorf(hint, "--root-hash-file %s is a directory", path)
	case err == nil && dataInfo != nil && os.SameFile(info, dataInfo):
		return cli.Errorf(hint, "--root-hash-file %s is DATA: the root hash would replace the image", path)
	case err == nil && hashInfo != nil && os.SameFile(info, hashInfo),
		filepath.Clean(path) == filepath.Clean(hashPath):
		return cli.Errorf(hint, "--root-hash-file %s is HASH: the root hash would replace the tree", path)
	}
	// Fail before the build, not after it.
	if dir, err := os.Stat(filepath.Dir(path)); err != nil || !dir.IsDir() {
		return cli.Errorf("", "--root-hash-file %s: its directory %s does not exist", path, filepath.Dir(path))
	}
	return nil
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// hintOf returns err's hint, if it has one.
func hintOf(err error) string {
	var e *cli.Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}

// checkAppendTail refuses an --append --data-size that would cut off DATA
// bytes past the image that are not provably what an earlier --append of
// the same image wrote: the file may end anywhere from the image's end to
// the end of a complete tree and parity (an interrupted run stops anywhere
// in between), and the padding before the tree must be zeros. A block
// device keeps its size and is not checked.
func checkAppendTail(o *options, ap *appendResult, g *merkle.Geometry, dataPath string, f *os.File, size, outEnd uint64) error {
	if size <= ap.OriginalSize || o.force {
		return nil
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return err
	}
	hint := fmt.Sprintf("check --data-size (DATA's size before the earlier --append); to cut DATA at byte %d anyway, add --force", ap.OriginalSize)
	if size > outEnd {
		return cli.Errorf(hint, "DATA %s is %d bytes, more than an --append of its first %d bytes makes (%d): "+
			"the bytes past --data-size are not only an earlier tree, and cutting them off would lose them", dataPath, size, ap.OriginalSize, outEnd)
	}
	pad := make([]byte, min(g.HashOffset, size)-ap.OriginalSize)
	if _, err := f.ReadAt(pad, int64(ap.OriginalSize)); err != nil {
		return cli.Errorf("", "reading DATA %s: %v", dataPath, cli.UnwrapPath(err))
	}
	for i, b := range pad {
		if b != 0 {
			return cli.Errorf(hint, "DATA %s has a non-zero byte at %d, past --data-size %d where an earlier --append wrote only zeros up to byte %d: "+
				"they are not an earlier tree, and cutting them off would lose them", dataPath, ap.OriginalSize+uint64(i), ap.OriginalSize, g.HashOffset)
		}
	}
	return nil
}

// checkOutputs refuses, unless --force, to replace an existing HASH or FEC
// file that is not something veritygen could have written (see
// foreignOutput): a filesystem or image named as HASH by mistake, e.g.
// DATA and HASH swapped. treeInData: the tree goes into DATA, whose bytes
// the user gave over to it with --hash-offset or --append.
func checkOutputs(o *options, g *merkle.Geometry, fl *fecPlan, dataPath string, dataFile *os.File, hashPath string, hashInfo fs.FileInfo, treeInData bool, outEnd uint64) error {
	// FIFOs, sockets and character devices were refused by generate and
	// planFEC (cli.CheckImageType) before anything was opened.
	if o.force {
		return nil
	}
	if !treeInData && hashInfo != nil {
		why, err := foreignOutput(hashPath, hashInfo, int64(g.HashOffset), g.Superblock, outEnd)
		if err != nil {
			return cli.Errorf("", "HASH %s: %v", hashPath, cli.UnwrapPath(err))
		}
		if why != "" {
			hint := "to replace it anyway, add --force"
			if looksLikeTree(dataPath, dataFile) {
				hint = fmt.Sprintf("DATA comes first: did you mean veritygen %s %s?\n", hashPath, dataPath) + hint
			}
			return cli.Errorf(hint, "HASH %s is not a tree veritygen could have written (%s): replacing it would destroy it", hashPath, why)
		}
	}
	if fl == nil || fl.inHash || fl.inData || fl.existing == nil {
		return nil
	}
	// The parity covers the hash output as it will be: the tree, or all of
	// an existing HASH whose bytes are kept.
	hashEnd := g.HashEnd()
	if hashInfo != nil && (g.HashOffset > 0 || !hashInfo.Mode().IsRegular()) {
		if f, err := os.Open(hashPath); err == nil {
			if n, err := cli.Size(f); err == nil {
				hashEnd = max(hashEnd, uint64(n))
			}
			f.Close()
		}
	}
	fp, err := g.FECParams(fl.roots, hashEnd)
	if err != nil {
		return err
	}
	why, err := foreignOutput(fl.path, fl.existing, -1, false, fl.offset+fp.ParitySize())
	if err != nil {
		return cli.Errorf("", "--fec-device %s: %v", fl.path, cli.UnwrapPath(err))
	}
	if why != "" {
		return cli.Errorf("name another file, or add --force to replace it anyway",
			"--fec-device %s is not error correction veritygen could have written (%s): replacing it would destroy it", fl.path, why)
	}
	return nil
}
