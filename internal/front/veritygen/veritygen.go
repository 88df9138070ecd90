// Package veritygen is the veritygen command line: it builds a dm-verity
// hash tree for an image, byte for byte as `veritysetup format` does.
package veritygen

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/verity"
)

const prog = "veritygen"

// beforeHashing, if set, is called when everything is checked and the
// outputs are open, just before hashing: tests look at that moment.
var beforeHashing func(*verity.Layout)

const usage = `Usage: veritygen [flags] DATA [HASH]
       veritygen --append [--fec] [flags] DATA

Builds the dm-verity hash tree of DATA and writes it to HASH (default:
DATA.verity), byte for byte as 'veritysetup format DATA HASH' would, then
prints the parameters and the root hash. The flags have veritysetup's names
and meanings.

`

// examples and details follow the flags in --help.
const examples = `Examples:
  veritygen system.img                       tree in system.img.verity
  veritygen --root-hash-file=root.hex system.img system.verity
  veritygen --hash=blake2b-256 --salt=- --no-superblock system.img tree.bin
  veritygen --hash-offset=1073741824 --data-blocks=262144 disk.img disk.img
  veritygen --append --fec --ignore-zero-blocks system.img
  veritygen --json system.img | jq -r .root_hash
`

const details = `DATA may be a file or a block device. An Android sparse image (img2simg's
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
  - when HASH is DATA itself (or a link to it, or another node of the
    same device): the tree goes into DATA at --hash-offset, past the data.
    Without --data-blocks the data is all of DATA, as for veritysetup, so
    the tree goes there only over zeros or holes (room left for it) or an
    earlier tree of ours and its parity, and then covers the blocks before
    the offset; over anything else it is refused, naming --data-blocks=N
    (hash only the N whole blocks before the offset, and give the rest
    over to the tree), a --hash-offset past DATA's end, and --force;
  - with --append: DATA is padded with zeros to a whole block, then the
    tree (no superblock) and, with --fec, the error correction are
    appended to it, as avbtool lays out Android images. The image's own
    bytes are not changed. Ctrl-C or an error cuts DATA back to the image;
    a killed --append leaves DATA ending in a record of its original size:
    run the same command again and the result is that of an uninterrupted
    run. Run again on its own output, --append finds the tree (and parity)
    it would append already there: with the same --salt it writes it again
    in place (the same bytes), without --salt it refuses. An image ending
    in an AVB footer is refused: use --avb, or avbtool erase_footer first.
    --data-size=<original size> says where the image ends; it cuts off only
    what an --append could have written (zero padding, then zeros or a tree
    of the image and its parity, no more than whole ones); anything else
    is refused unless --force. An Android sparse DATA stays sparse: the
    tree and parity go in as RAW chunks after its last one, as with --avb,
    and it expands to what --append makes of the expanded image (not with
    --data-size, --force, --root-hash-file or the kernel-table flags).

veritysetup's command line works too: -h is --hash and -s is --salt, as in
veritysetup (help is --help, or -h alone), so that a script's "-h sha512"
builds a sha512 tree instead of printing help and writing nothing; and
'veritygen format DATA HASH' is 'veritygen DATA HASH'.

--no-superblock with a random salt (no --salt) is refused when stdout is a
pipe (unless --json) or /dev/null: the salt is printed only there, and a
tree without superblock cannot be checked without it. Give --salt (or
--salt=-), or let the report go to a terminal or a file.

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
	avb          avbFlags
	sign         signFlags
}

func (o *options) changed(name string) bool { return o.tree.Changed(name) }

// Main runs veritygen's command line args (after argv0, which it does not
// use: the messages name veritygen) and returns the exit code.
func Main(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr, stderr)
}

// run is Main with the writer of the progress bar apart from stderr, so that
// tests can see both.
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
	fs, help := o.flagSet()
	if cli.HelpAlone(args) {
		fmt.Fprint(stdout, helpText(fs))
		return cli.ExitOK
	}
	if err := fs.Parse(args); err != nil {
		o.json = o.json || cli.WantsJSON(args)
		return fail(cli.WithHint(cli.FlagError(err), "see veritygen --help"))
	}
	if *help {
		fmt.Fprint(stdout, helpText(fs))
		return cli.ExitOK
	}
	if o.avb.wanted() {
		return runAVB(ctx, &o, fs.Args(), stdout, stderr, tty)
	}
	data, hash, hashGiven, err := o.files(args, fs.Args(), stdout)
	if err != nil {
		return fail(err)
	}
	showProgress := false
	if f, ok := tty.(*os.File); ok && !o.noProgress && !o.json {
		showProgress = cli.IsTerminal(f)
	}
	res, err := generate(ctx, &o, data, hash, hashGiven, stderr, showProgress)
	if err != nil {
		return fail(err)
	}
	out := &reportWriter{w: stdout}
	if o.json {
		cli.WriteJSON(out, res) // its error is out.err
	} else {
		res.print(out, &o)
	}
	if out.err != nil {
		return fail(reportFailed(res.HashFile, res.RootHash, out.err))
	}
	return cli.ExitOK
}

// helpGroups are the headings of --help's flags, the common ones first.
var helpGroups = []cli.HelpGroup{
	{Title: "Common flags", Flags: []string{"hash", "salt", "root-hash-file", "json", "append", "fec", "fec-device", "no-superblock", "help"}},
	{Title: "Tree parameters (as veritysetup format's)", Flags: []string{"uuid", "format", "data-block-size", "hash-block-size", "data-blocks", "hash-offset"}},
	{Title: "Error correction", Flags: []string{"fec-offset", "fec-roots"}},
	{Title: "Input and output", Flags: []string{"force", "raw", "data-size", "jobs", "no-progress"}},
	{Title: "Root hash signature", Flags: []string{"root-hash-signature", "root-hash-signature-json", "sign-key", "sign-cert", "sign-digest", "sign-embed-cert"}},
	{Title: "Boot parameters (the kernel table; in --json always)", Flags: []string{"boot-params", "data-device", "hash-device", "fec-device-name", "dm-name",
		"ignore-zero-blocks", "check-at-most-once", "ignore-corruption", "restart-on-corruption", "panic-on-corruption"}},
	{Title: "Android Verified Boot (--avb, --avb=hash, --avb=vbmeta; see below)", Flags: []string{"avb", "partition-size",
		"dynamic-partition-size", "partition-name", "avb-algorithm", "avb-key", "signing-helper", "signing-helper-with-files",
		"output-vbmeta-image", "do-not-append-vbmeta-image", "calc-max-image-size", "padding-size", "no-hashtree",
		"use-persistent-digest", "do-not-use-ab"}},
	{Title: "AVB descriptors and header", Flags: []string{"prop", "prop-from-file", "kernel-cmdline", "setup-as-rootfs-from-kernel",
		"setup-rootfs-from-kernel", "chain-partition", "chain-partition-do-not-use-ab", "include-descriptors-from-image",
		"rollback-index", "rollback-index-location", "public-key-metadata", "vbmeta-flags", "set-hashtree-disabled-flag",
		"release-string", "append-to-release-string"}},
}

// helpText is --help: the usage, the flags in groups, the hash
// algorithms, examples, then the details.
func helpText(fs *pflag.FlagSet) string {
	return usage + cli.FlagHelp(fs, helpGroups) + "\n" + cli.HashHelp() + "\n" + examples + "\n" + details + signUsage + avbUsage + avbKindsUsage + exitCodes
}

// flagSet registers veritygen's flags into o; help is --help.
func (o *options) flagSet() (fs *pflag.FlagSet, help *bool) {
	fs = pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.tree.Register(fs)
	fs.StringVar(&o.fecDevice, "fec-device", "", "also write Reed-Solomon parity to `FILE`")
	fs.Uint64Var(&o.fecOffset, "fec-offset", 0, "`BYTES` into the FEC device where the parity starts")
	fs.IntVar(&o.fecRoots, "fec-roots", fec.DefaultRoots, "`N` parity bytes per codeword, 2 to 24")
	fs.BoolVar(&o.force, "force", false, "replace or cut outputs not made by us")
	fs.BoolVar(&o.raw, "raw", false, "read a sparse image as it is, not as its expansion")
	fs.BoolVar(&o.appendTree, "append", false, "WRITES INTO DATA: append the tree, as avbtool")
	fs.BoolVar(&o.fecAppend, "fec", false, "with --append: also append error correction")
	fs.Uint64Var(&o.dataSize, "data-size", 0, "`BYTES` DATA's size before an interrupted --append")
	fs.StringVar(&o.rootHashFile, "root-hash-file", "", "also write the root hash to `FILE` (hex, no newline)")
	o.sign.register(fs)
	fs.BoolVar(&o.json, "json", false, "print the result (or error) as one JSON object")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "`N` goroutines hashing")
	fs.BoolVar(&o.noProgress, "no-progress", false, "no progress bar (shown when stderr is a terminal)")
	o.boot.register(fs)
	o.avb.register(fs)
	help = fs.Bool("help", false, "show this help (so does -h alone; -h is --hash)")
	return fs, help
}

// files checks the positional arguments rest (of the command line args)
// and the flags that bear on them, and returns DATA and HASH (DATA.verity
// by default, DATA itself with --append); hashGiven is whether HASH was.
func (o *options) files(args, rest []string, stdout io.Writer) (data, hash string, hashGiven bool, err error) {
	pos, err := nativeArgs(args, rest)
	if err != nil {
		return "", "", false, err
	}
	if len(pos) < 1 || len(pos) > 2 {
		if _, err := hashes.Lookup(o.tree.Hash); err != nil {
			// "-h DATA": -h took DATA as the algorithm.
			_, err = o.tree.Options()
			return "", "", false, err
		}
		return "", "", false, cli.Errorf("usage: veritygen [flags] DATA [HASH]; see veritygen --help",
			"expected DATA and optionally HASH, got %d arguments", len(pos))
	}
	if o.appendTree && len(pos) != 1 {
		return "", "", false, cli.Errorf("leave HASH out: veritygen --append [flags] DATA",
			"--append writes the tree into DATA; got a HASH argument (%s) too", pos[1])
	}
	if o.jobs < 1 {
		return "", "", false, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1")
	}
	if err := checkSaltKept(o, stdout); err != nil {
		return "", "", false, err
	}
	data = pos[0]
	hash = data + ".verity"
	switch {
	case len(pos) == 2:
		hash = pos[1]
	case o.appendTree:
		hash = data
	}
	return data, hash, len(pos) == 2, nil
}

// print writes the report as veritysetup format prints it, and what
// veritygen adds (the signature, the appended layout, the boot lines).
func (res *result) print(stdout io.Writer, o *options) {
	h := &cli.Header{HashFile: res.HashFile, UUID: res.UUID, HashType: res.Format, DataBlocks: res.DataBlocks,
		DataBlockSize: res.DataBlockSize, HashBlocks: res.HashBlocks, HashBlockSize: res.HashBlockSize,
		Algorithm: o.tree.Hash, Salt: res.Salt, RootHash: res.RootHash, // the name given, as veritysetup prints it
		NoSuperblock: !res.Superblock}
	if res.separate && res.HashOffset == 0 {
		// veritysetup prints the size only for a hash device of its own.
		h.HashDeviceSize, h.ShowHashDeviceSize = res.HashEnd, true
	}
	if f := res.FECInfo; f != nil {
		h.FECRoots, h.FECBlocks = f.Roots, f.ParityBlocks
		switch {
		case f.InHash && h.ShowHashDeviceSize:
			h.HashDeviceSize += f.Size // as veritysetup counts it
		case !f.InHash && f.Offset == 0:
			h.FECDeviceSize = f.Size
		}
	}
	h.Print(stdout)
	res.RootHashSignature.print(stdout)
	if a := res.appendResult; a != nil {
		fmt.Fprintf(stdout, "Original size:   \t%d [bytes]\n", a.OriginalSize)
		fmt.Fprintf(stdout, "Hash offset:     \t%d [bytes]\n", res.HashOffset)
		if res.FECInfo != nil {
			fmt.Fprintf(stdout, "FEC offset:      \t%d [bytes]\n", res.FECInfo.Offset)
		}
		fmt.Fprintf(stdout, "Image size:      \t%d [bytes]\n", a.ImageSize)
	}
	if o.boot.wanted() && res.BootParams != nil {
		fmt.Fprintf(stdout, "Kernel table:    \t%s\n", res.Table)
		fmt.Fprintf(stdout, "dm-mod.create:   \t%s\n", res.DMModCreate)
		fmt.Fprintf(stdout, "Android dm=:     \t%s\n", res.AndroidDM)
	}
	fmt.Fprintf(stdout, "Check with:      \t%s\n", res.CheckCommand)
}

// reportWriter is stdout for the report, remembering its first failed
// write (stdout full, a closed pipe): the tree is written then, and the
// report may be the only place the root hash was going to.
type reportWriter struct {
	w   io.Writer
	err error
}

func (r *reportWriter) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.w.Write(p)
	r.err = err
	return n, err
}

// reportFailed is the error of a report that could not be written, with
// what it was to say first.
func reportFailed(hashFile, rootHash string, err error) error {
	return cli.Errorf("", "the new tree is in %s, root hash %s; writing the report on stdout: %v", hashFile, rootHash, safefile.Cause(err))
}

// nativeArgs returns the positional arguments pos of the command line args
// with veritysetup's verbs answered: "format DATA HASH" is "DATA HASH" (and
// "format DATA" is "DATA", when no file is named format); verify and dump
// are veritycheck's, and the error says exactly what to type.
func nativeArgs(args, pos []string) ([]string, error) {
	if len(pos) == 0 {
		return pos, nil
	}
	verb := pos[0]
	switch verb {
	case "format":
		switch {
		case len(pos) == 3 || len(pos) == 2 && !cli.Exists(verb):
			return pos[1:], nil
		case len(pos) == 2:
			return nil, cli.Errorf(fmt.Sprintf("for the tree of %s (veritysetup's verb): %s; for the tree of the file named format: ./format",
				pos[1], cli.CommandLine(prog, cli.Without(args, verb))),
				"format is veritysetup's verb and also a file here: which is DATA?")
		case len(pos) == 1 && !cli.Exists(verb):
			return nil, cli.Errorf("veritygen [flags] DATA [HASH] (veritysetup's format DATA HASH)", "format: DATA missing")
		}
	case "verify", "dump":
		if len(pos) > 2 || !cli.Exists(verb) {
			return nil, cli.Errorf("veritycheck does that: "+cli.CommandLine("veritycheck", args),
				"%s is veritysetup's verb; veritygen only builds trees (veritysetup format)", verb)
		}
	case "open", "close", "status", "create", "remove":
		if len(pos) > 2 || !cli.Exists(verb) {
			return nil, cli.Errorf("use veritysetup "+verb+" for the device-mapper device; veritygen builds trees, veritycheck verifies them",
				"%s is veritysetup's verb; veritygen only builds trees (veritysetup format)", verb)
		}
	}
	return pos, nil
}

// checkSaltKept refuses a --no-superblock tree with a random salt when the
// report, the only place that salt is written, goes to a pipe or nowhere
// (/dev/null): without its salt the tree cannot be checked again. A
// terminal or a regular file keeps the report; so does a writer that is
// not a file (a caller's buffer), and so does a pipe with --json: the
// JSON is for a program to read, salt included (jq picks the root hash
// from it, and may as well pick the salt). Refusing was chosen over writing the
// salt to a file of our own: veritygen writes only what it is told to,
// and a script that discards the report would not know of that file.
func checkSaltKept(o *options, stdout io.Writer) error {
	if !o.tree.NoSuperblock || o.changed("salt") {
		return nil
	}
	f, ok := stdout.(*os.File)
	if !ok || cli.IsTerminal(f) {
		return nil
	}
	if fi, err := f.Stat(); err == nil && (fi.Mode().IsRegular() || o.json && fi.Mode()&os.ModeNamedPipe != 0) {
		return nil
	}
	return cli.Errorf("give the salt: --salt=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'), or --salt=- for none",
		"--no-superblock with a random salt, and stdout is not a terminal or a file: the salt, printed only there, would be lost and the tree could not be checked")
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
	// FECInfo is the parity written (its JSON names are the report's).
	*verity.FECInfo
	*appendResult
	*verity.BootParams
	RootHashSignature *signResult `json:"root_hash_signature,omitempty"`
	// CheckCommand is the veritycheck command line that checks what was
	// just written, every parameter it needs given, shell-quoted: a tree
	// without superblock, or appended to DATA, cannot be checked without
	// them.
	CheckCommand string `json:"check_command"`
	separate     bool
}

// appendResult is what the report says of an --append layout: DATA is the
// image (original_size bytes), zeros up to data_size, the tree at
// hash_offset, the FEC at fec_offset, image_size bytes in all.
type appendResult struct {
	OriginalSize uint64 `json:"original_size"`
	ImageSize    uint64 `json:"image_size"`
}

// generate checks the flags that concern only flags, formats through
// verity.Format and builds the report (with the boot parameters, which
// only --boot-params and its companions make a failure).
func generate(ctx context.Context, o *options, dataPath, hashPath string, hashGiven bool, stderr io.Writer, showProgress bool) (*result, error) {
	t, err := o.tree.Options()
	if err != nil {
		return nil, err
	}
	if err := checkModeFlags(o, hashPath); err != nil {
		return nil, err
	}
	if err := o.boot.check(); err != nil {
		return nil, err
	}
	if o.appendTree && !o.raw && isSparseFile(dataPath) {
		return generateSparse(ctx, o, dataPath, stderr, showProgress)
	}
	sign, err := o.sign.signing(ctx)
	if err != nil {
		return nil, err
	}
	opts := o.formatOptions(t, stderr)
	opts.Sign = sign
	var bar *cli.Progress
	opts.OnLayout = func(l *verity.Layout) {
		if line := cli.Expansion(l.DataPath, l.SourceFormat, l.SourceFileSize, l.SourceSize, l.TreeSize()); line != "" {
			fmt.Fprintf(stderr, "%s: %s\n", prog, line)
		}
		bar = cli.NewProgress(stderr, showProgress, cli.ProgressLabel("hashing", l.SourceFormat, l.CoveredBytes), l.CoveredBytes)
		if beforeHashing != nil {
			beforeHashing(l)
		}
	}
	opts.Progress = cli.StageProgress(&bar, verity.StageHashing)
	if !hashGiven {
		hashPath = "" // the library's default: DATA.verity, or DATA with --append
	}
	fr, err := verity.Format(ctx, dataPath, hashPath, opts)
	bar.Finish()
	if err != nil {
		return nil, formatHint(err)
	}
	l := fr.Layout
	g := l.Geometry
	res := &result{
		RootHash:       hex.EncodeToString(fr.RootHash),
		TreeJSON:       cli.NewTreeJSON(g, dataPath, l.HashPath),
		UncoveredBytes: l.UncoveredBytes,
		DataFormat:     l.SourceFormat,
		DataSize:       l.CoveredBytes,
		TreeSize:       l.TreeSize(),
		FECInfo:        fr.FEC,
		separate:       !l.TreeInData,
	}
	res.RootHashSignature = newSignResult(sign, strings.ToLower(o.sign.digest))
	if l.SourceFormat == "android-sparse" {
		res.ExpandedSize = uint64(l.SourceSize)
	}
	if a := l.Append; a != nil {
		res.appendResult = &appendResult{OriginalSize: a.OriginalSize, ImageSize: a.ImageSize}
	}
	res.CheckCommand = checkCommand(res, dataPath, o.raw)
	devs, err := o.bootDevices(dataPath, l.HashPath, l.TreeInData, fr.FEC)
	if err == nil {
		res.BootParams, err = fr.Table(o.boot.tableOptions(devs))
	}
	if err != nil && o.boot.wanted() {
		// The tree is written: say why the boot parameters are missing.
		where := "in " + l.HashPath
		if l.TreeInData {
			where = "in DATA " + dataPath
		}
		return nil, cli.Errorf(hintOf(err), "the new tree is %s, root hash %s; boot parameters: %v", where, res.RootHash, err)
	}
	return res, nil
}

// checkCommand is the veritycheck command line that checks res, the tree
// of dataPath (read as it is with raw): the root hash, and what
// veritycheck cannot read from a superblock or take by default.
func checkCommand(res *result, dataPath string, raw bool) string {
	args := []string{"--root-hash=" + res.RootHash}
	if !res.Superblock {
		args = append(args, "--no-superblock", "--hash="+res.HashAlgorithm, "--salt="+res.Salt)
		if res.Format != 1 {
			args = append(args, fmt.Sprintf("--format=%d", res.Format))
		}
		if res.DataBlockSize != 4096 {
			args = append(args, fmt.Sprintf("--data-block-size=%d", res.DataBlockSize))
		}
		if res.HashBlockSize != 4096 {
			args = append(args, fmt.Sprintf("--hash-block-size=%d", res.HashBlockSize))
		}
		// DATA may hold more than the tree covers: the tree itself, with
		// --append or at --hash-offset.
		args = append(args, fmt.Sprintf("--data-blocks=%d", res.DataBlocks))
	}
	if res.HashOffset != 0 {
		args = append(args, fmt.Sprintf("--hash-offset=%d", res.HashOffset))
	}
	if f := res.FECInfo; f != nil {
		args = append(args, "--fec-device="+f.Path)
		if f.Offset != 0 {
			args = append(args, fmt.Sprintf("--fec-offset=%d", f.Offset))
		}
		if f.Roots != fec.DefaultRoots {
			args = append(args, fmt.Sprintf("--fec-roots=%d", f.Roots))
		}
	}
	if raw {
		args = append(args, "--raw")
	}
	args = append(args, dataPath)
	if res.HashFile != dataPath+".verity" {
		args = append(args, res.HashFile)
	}
	return cli.CommandLine("veritycheck", args)
}

// formatOptions turns the flags into the library's options; t is the
// tree flags' (TreeFlags.Options).
func (o *options) formatOptions(t verity.TreeOptions, stderr io.Writer) *verity.FormatOptions {
	opts := &verity.FormatOptions{TreeOptions: t, HashOffsetSet: o.changed("hash-offset"),
		Append: o.appendTree, AppendFEC: o.fecAppend, FECDevice: o.fecDevice, FECOffset: o.fecOffset, FECRoots: o.fecRoots,
		RootHashFile: o.rootHashFile, Force: o.force, Raw: o.raw, Jobs: o.jobs,
		Warn: func(msg string) { cli.Warn(stderr, prog, "%s", cli.Flags.Say(msg)) },
		Note: func(msg string) { fmt.Fprintf(stderr, "%s: %s\n", prog, cli.Flags.Say(msg)) },
	}
	if o.changed("data-size") {
		n := o.dataSize
		opts.OriginalSize = &n
	}
	return opts
}

// checkModeFlags checks the flags of --append, --fec and --raw against
// the others: the checks that need no file. hashPath is HASH's path, for
// hints.
func checkModeFlags(o *options, hashPath string) error {
	if !o.appendTree {
		for _, name := range []string{"fec", "data-size"} {
			if o.changed(name) {
				return cli.Errorf("e.g. veritygen --append --"+name+" ... DATA", "--%s needs --append", name)
			}
		}
	} else {
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
		if o.changed("no-superblock") && !o.tree.NoSuperblock {
			return cli.Errorf("leave --no-superblock out: --append writes no superblock, as avbtool", "--append writes no superblock; --no-superblock=false contradicts it")
		}
		if !o.fecAppend && o.changed("fec-roots") {
			return cli.Errorf("add --fec to append error correction after the tree", "--fec-roots needs --fec with --append")
		}
	}
	if o.fecDevice == "" && !o.fecAppend {
		for _, name := range []string{"fec-roots", "fec-offset"} {
			if o.changed(name) {
				return cli.Errorf("e.g. --fec-device="+hashPath+".fec (or --append --fec to append it to DATA)", "--%s needs --fec-device", name)
			}
		}
		return nil
	}
	if o.fecRoots < fec.MinRoots || o.fecRoots > fec.MaxRoots {
		return cli.Errorf("2 (the default) corrects one lost byte in 253, 24 one in ten",
			"--fec-roots %d is not from %d to %d", o.fecRoots, fec.MinRoots, fec.MaxRoots)
	}
	return nil
}

// adviceHint words the advice of the first *verity.Error in err's chain
// that has one, "" if none does.
func adviceHint(err error) string {
	var e *verity.Error
	for errors.As(err, &e) && e.Advice == verity.AdviceNone {
		err = e.Err
	}
	if e == nil || e.Advice == verity.AdviceNone {
		return ""
	}
	switch e.Advice {
	case verity.AdviceAgain:
		if e.Field != "" {
			return fmt.Sprintf("run the same command again with %s=%d to finish it", cli.Flags.Say("FormatOptions."+e.Field), e.Value)
		}
		return "run veritygen again to write the whole tree"
	case verity.AdviceSwapped:
		return fmt.Sprintf("DATA comes first: did you mean veritygen %s %s?\nto replace it anyway, add --force", e.Path, e.DataPath)
	case verity.AdviceAVBInterrupted:
		return "finish that run: run the same command again (veritygen --append --avb, or avbtool add_hashtree_footer); or cut DATA back to its image first: avbtool erase_footer --image " + e.Path
	case verity.AdviceAVB:
		return "to build its tree and footer again, add --avb (veritygen --append --avb ...); for a tree without AVB, remove the footer first: avbtool erase_footer --image " + e.Path
	}
	return ""
}

// hintOf returns err's hint, if it has one.
func hintOf(err error) string {
	var e *cli.Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return cli.LibraryHint(err)
}

// formatHint adds veritygen's hint to a library error that says an option
// is only taken with --append, or that --append takes no HASH: how the
// command line goes; and words the library's advice (verity.Advice) as
// veritygen's and avbtool's command lines.
func formatHint(err error) error {
	if hint := adviceHint(err); hint != "" {
		return cli.WithHint(err, hint)
	}
	var e *verity.Error
	if !errors.As(err, &e) || e.Kind != verity.KindParam {
		return err
	}
	switch {
	case e.Requires == "Append" && e.Hint == "":
		return cli.WithHint(err, "e.g. veritygen --append "+cli.Flags.Say("FormatOptions."+e.Field)+" ... DATA")
	case e.Field == "Append" && e.Requires == "":
		return cli.WithHint(err, "leave HASH out: veritygen --append [flags] DATA")
	}
	return err
}
