// Package avbtool is the avbtool front: cmd/avbtool, or veritygen run under
// the name avbtool (or avbtool.py), takes avbtool 1.3.0's command line for
// add_hash_footer, add_hashtree_footer, make_vbmeta_image,
// append_vbmeta_image, resize_image, zero_hashtree, erase_footer,
// info_image, verify_image, extract_public_key, extract_vbmeta_image,
// calculate_kernel_cmdline, calculate_vbmeta_digest,
// print_partition_digests and version (signing helpers included), writes
// the files avbtool writes, prints what it prints and exits as it does (0;
// 1 with avbtool's message when avbtool reports an error; 2, with
// argparse's usage, for a command line argparse refuses). What it does not
// do (another subcommand) exits 2 naming it, so that a wrapper can fall
// back to the real avbtool.
package avbtool

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// Exit codes of the avbtool front: avbtool's.
const (
	exitOK     = 0
	exitFailed = 1 // avbtool's AvbError: bad input, failed verification
	exitUsage  = 2 // argparse's usage errors; also what this front does not do
)

// CalledAs reports whether argv0 names the avbtool front.
func CalledAs(argv0 string) bool {
	b := filepath.Base(argv0)
	return b == "avbtool" || b == "avbtool.py"
}

var commands = []string{"add_hash_footer", "add_hashtree_footer", "append_vbmeta_image", "calculate_kernel_cmdline",
	"calculate_vbmeta_digest", "erase_footer", "extract_public_key", "extract_vbmeta_image", "info_image",
	"make_vbmeta_image", "print_partition_digests", "resize_image", "verify_image", "version", "zero_hashtree"}

// Main runs avbtool's command line args (after argv0); messages are
// prefixed with argv0 as given, as avbtool prefixes them with sys.argv[0].
func Main(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int {
	t := &tool{ctx: ctx, prog: argv0, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		t.usage(stderr)
		fmt.Fprintf(stderr, "%s: error: too few arguments\n", argv0)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help":
		t.usage(stdout)
		return exitOK
	case "add_hashtree_footer":
		return t.addHashtreeFooter(args[1:])
	case "info_image":
		return t.infoImage(args[1:])
	case "verify_image":
		return t.verifyImage(args[1:])
	case "erase_footer":
		return t.eraseFooter(args[1:])
	case "extract_public_key":
		return t.extractPublicKey(args[1:])
	case "calculate_kernel_cmdline":
		return t.calculateKernelCmdline(args[1:])
	case "make_vbmeta_image":
		return t.makeVBMetaImage(args[1:])
	case "calculate_vbmeta_digest":
		return t.calculateVBMetaDigest(args[1:])
	case "extract_vbmeta_image":
		return t.extractVBMetaImage(args[1:])
	case "print_partition_digests":
		return t.printPartitionDigests(args[1:])
	case "add_hash_footer":
		return t.addHashFooter(args[1:])
	case "append_vbmeta_image":
		return t.appendVBMetaImage(args[1:])
	case "resize_image":
		return t.resizeImage(args[1:])
	case "zero_hashtree":
		return t.zeroHashtree(args[1:])
	case "version":
		return t.version(args[1:])
	}
	fmt.Fprintf(stderr, "%s: error: %s is not one of veritygen's avbtool subcommands (%s); run the real avbtool for it\n",
		argv0, args[0], strings.Join(commands, ", "))
	return exitUsage
}

// version is avbtool's version: its parser takes -h alone.
func (t *tool) version(args []string) int {
	fs := t.flagSet("version")
	if code, done := t.parse("version", fs, args); done {
		return code
	}
	fmt.Fprintln(t.stdout, avb.ReleaseString)
	return exitOK
}

type tool struct {
	ctx            context.Context
	prog           string
	stdout, stderr io.Writer
	// fs and required are the subcommand's options, for its usage.
	fs       *pflag.FlagSet
	required []string
}

func (t *tool) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s {%s} ...\n", t.prog, strings.Join(commands, ","))
	fmt.Fprintf(w, "(veritygen's avbtool front: avbtool %s's command line for these subcommands; others need the real avbtool)\n",
		strings.TrimPrefix(avb.ReleaseString, "avbtool "))
}

// usageErr reports a command-line error as argparse does: the
// subcommand's usage, the message, exit 2.
func (t *tool) usageErr(cmd, format string, args ...any) int {
	if t.fs != nil {
		fmt.Fprint(t.stderr, t.argparseUsage(cmd, t.fs, t.required))
	} else {
		fmt.Fprintf(t.stderr, "usage: %s %s [-h]\n", filepath.Base(t.prog), cmd)
	}
	fmt.Fprintf(t.stderr, "%s %s: error: %s\n", filepath.Base(t.prog), cmd, fmt.Sprintf(format, args...))
	return exitUsage
}

// unsupported reports what this front does not do: exit 2.
func (t *tool) unsupported(format string, args ...any) int {
	fmt.Fprintf(t.stderr, "%s: error: %s\n", t.prog, fmt.Sprintf(format, args...))
	fmt.Fprintf(t.stderr, "%s: hint: veritygen's avbtool front does not do this; run the real avbtool\n", t.prog)
	return exitUnsupported
}

// exitUnsupported is the exit code of what the front does not do.
const exitUnsupported = exitUsage

// avbMessage is an error worded as avbtool words it (capitals, final dot).
type avbMessage string

func (m avbMessage) Error() string { return string(m) }

func avbErr(format string, args ...any) error { return avbMessage(fmt.Sprintf(format, args...)) }

// failed reports an error avbtool would report: exit 1. A run ended by
// SIGINT or SIGTERM (nothing half-written left) says so and exits as
// avbtool, which the signal kills, shows in a shell: 128 + the signal's
// number (130, 143).
func (t *tool) failed(err error) int {
	if in := cli.InterruptedBy(t.ctx); in != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintf(t.stderr, "%s: %v\n", t.prog, in)
		return in.ExitCode()
	}
	if m, ok := err.(avbMessage); ok {
		fmt.Fprintf(t.stderr, "%s: %s\n", t.prog, m) // avbtool's own words, as its AvbError
		return exitFailed
	}
	if notVBMeta(err) {
		fmt.Fprintf(t.stderr, "%s: Given image does not look like a vbmeta image.\n", t.prog)
		return exitFailed
	}
	if errors.Is(err, safefile.ErrForeign) {
		// The library's hint names veritygen's --force, which this front
		// does not take (avbtool would overwrite the file).
		fmt.Fprintf(t.stderr, "%s: error: %v\n%s: hint: name another file, or remove this one first\n", t.prog, err, t.prog)
		return exitFailed
	}
	if errors.Is(err, avb.ErrNotAVB) && notAVBSize(err) < 0 {
		// avbtool's words for it, which scripts match, where the file
		// cannot be sized (one shorter than a vbmeta header is a
		// traceback in avbtool, said in our words).
		fmt.Fprintf(t.stderr, "%s: Given image does not look like a vbmeta image.\n", t.prog)
		return exitFailed
	}
	cli.Report(t.stderr, t.prog, err)
	return exitFailed
}

// notVBMeta says whether err is about a file with no AVB footer and no
// vbmeta blob that avbtool reports in its own words, whichever file (the
// image, an included one) it is: one of at least a vbmeta header's size,
// a sparse image's expansion too (avbtool dies of a traceback reading a
// shorter one).
func notVBMeta(err error) bool {
	return errors.Is(err, avb.ErrNotAVB) && notAVBSize(err) >= avb.HeaderSize
}

// notAVBSize returns the size (a sparse image's expanded size) of the file
// an error names, or -1 when it names none or that cannot be opened.
func notAVBSize(err error) int64 {
	var ve *verity.Error
	if !errors.As(err, &ve) || ve.Path == "" {
		return -1
	}
	return sourceSize(ve.Path)
}

// sourceSize returns the size of an image (a sparse image's expanded
// size), or -1 if it cannot be opened.
func sourceSize(path string) int64 {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return -1
	}
	defer src.Close()
	return src.Size()
}

// flagSet returns a flag set for subcommand cmd; parse parses args into it,
// returning an exit code when it is done (an error, or -h).
func (t *tool) flagSet(cmd string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(t.prog+" "+cmd, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.BoolP("help", "h", false, "show this help message and exit")
	// Reported with the extra arguments, after the required options, as
	// argparse reports them.
	fs.ParseErrorsAllowlist.UnknownFlagsHandling = pflag.PassUnknownFlagToArgs
	t.fs = fs
	return fs
}

func (t *tool) parse(cmd string, fs *pflag.FlagSet, args []string, required ...string) (int, bool) {
	t.required = required
	p := newArgParser(fs)
	p.onValue = checkFileTypeFlag
	p.onHelp = func() { fmt.Fprint(t.stdout, t.argparseHelp(cmd, fs, required)) }
	extras, err := p.parse(args)
	if errors.Is(err, errHelp) {
		return exitOK, true
	}
	if err != nil {
		return t.usageErr(cmd, "%v", err), true
	}
	var missing []string
	for _, name := range required {
		if !fs.Changed(name) {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		return t.usageErr(cmd, "the following arguments are required: %s", strings.Join(missing, ", ")), true
	}
	if len(extras) > 0 {
		// The subcommand's parser hands them back to avbtool's, which
		// reports them with its own usage.
		fmt.Fprint(t.stderr, t.mainUsage())
		fmt.Fprintf(t.stderr, "%s: error: unrecognized arguments: %s\n", filepath.Base(t.prog), strings.Join(extras, " "))
		return exitUsage, true
	}
	var bad error
	fs.VisitAll(func(f *pflag.Flag) {
		if n, ok := f.Value.(*number); ok && n.bad != "" && !n.late && bad == nil {
			bad = n.outOfRange(f.Name)
			if f.Name == "block_size" {
				bad = blockSizeErr(n.bad) // as any other block size refused
			}
		}
	})
	if bad != nil {
		return t.failed(bad), true
	}
	return 0, false
}

// The help of the options both add_*_footer take, as avbtool's --help
// prints it.
const (
	usePersistentDigestHelp = "Use a persistent digest on device instead of storing the digest in the descriptor. This " +
		"cannot be used with A/B so must be combined with --do_not_use_ab when an A/B suffix is expected at runtime."
	doNotUseABHelp = "The partition does not use A/B even when an A/B suffix is present. This must not be used " +
		"for vbmeta or chained partitions."
)

// blockSizeErr refuses a --block_size (given as n) the front does not
// take.
func blockSizeErr(n string) error {
	return cli.Errorf("e.g. --block_size 4096", "block size %s: must be a power of two from %d to %d", n, merkle.MinBlockSize, merkle.MaxBlockSize)
}

func (t *tool) addHashtreeFooter(args []string) int {
	const cmd = "add_hashtree_footer"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to add hashtree to")
	fileType(fs, "image", "rw", "image")
	var partitionSize, blockSize, fecRoots number
	blockSize.v, fecRoots.v = 4096, 2
	fs.Var(&partitionSize, "partition_size", "Partition size")
	partitionSize.late = true // a negative one is none (below)
	partitionName := fs.String("partition_name", "", "Partition name")
	hashAlg := fs.String("hash_algorithm", "sha1", "Hash algorithm to use (default: sha1)")
	salt := fs.String("salt", "", "Salt in hex (default: /dev/urandom)")
	fs.Var(&blockSize, "block_size", "Block size (default: 4096)")
	generateFEC := fs.Bool("generate_fec", false, "deprecated: FEC is generated by default")
	_ = fs.MarkHidden("generate_fec")
	noFEC := fs.Bool("do_not_generate_fec", false, "Do not generate forward-error-correction codes")
	fs.Var(&fecRoots, "fec_num_roots", "Number of roots for FEC (default: 2)")
	calcMax := fs.Bool("calc_max_image_size", false, "Don't store the hashtree or footer - instead calculate the maximum image size leaving enough room for hashtree and metadata with the given partition size.")
	outputVBMeta := fs.String("output_vbmeta_image", "", "Also write vbmeta struct to file")
	fileType(fs, "output_vbmeta_image", "w", "output_vbmeta_image")
	noAppend := fs.Bool("do_not_append_vbmeta_image", false, "Do not append vbmeta struct or footer to the image")
	asRootfs := fs.Bool("setup_as_rootfs_from_kernel", false, "Adds kernel cmdline for setting up rootfs")
	noHashtree := fs.Bool("no_hashtree", false, "Do not append hashtree")
	camo := fs.Bool("check_at_most_once", false, "Set to verify data block only once")
	v := addVBMetaFlags(fs)
	persistent := fs.Bool("use_persistent_digest", false, usePersistentDigestHelp)
	doNotUseAB := fs.Bool("do_not_use_ab", false, doNotUseABHelp)
	if code, done := t.parse(cmd, fs, args); done {
		return code
	}
	if *generateFEC {
		fmt.Fprint(t.stderr, "The --generate_fec option is deprecated since FEC is now generated by default. Use the option --do_not_generate_fec to not generate FEC.\n")
	}
	if partitionSize.bad != "" {
		if !partitionSize.negative() {
			return t.failed(partitionSize.outOfRange("partition_size"))
		}
		// avbtool sizes the partition only when `partition_size > 0`.
		partitionSize.v, partitionSize.bad = 0, ""
	}
	// Numbers past what an int holds (on 32-bit machines too) are refused
	// here, with the number given; and 0, which the library reads as its
	// default (avbtool dies dividing by it).
	if blockSize.v == 0 || blockSize.v > merkle.MaxBlockSize {
		return t.failed(blockSizeErr(strconv.FormatUint(blockSize.v, 10)))
	}
	if !*noFEC && fecRoots.v > 254 {
		return t.failed(cli.Errorf("2 (the default) to 24", "FEC roots %d: a Reed-Solomon codeword has 255 bytes", fecRoots.v))
	}
	// avbtool hands 0 to AOSP's fec, which refuses it (exit 1); the
	// package's 0 means the default, 2.
	if !*noFEC && !*noHashtree && fecRoots.v == 0 {
		return t.failed(cli.Errorf("2 (the default) to 24", "FEC roots 0: no parity without roots"))
	}
	o := &avb.HashtreeFooterOptions{
		PartitionSize: partitionSize.v, PartitionName: *partitionName, HashAlgorithm: *hashAlg,
		BlockSize: int(blockSize.v), FEC: !*noFEC, FECRoots: int(min(fecRoots.v, 254)),
		SetupAsRootfsFromKernel: *asRootfs,
		DoNotUseAB:              *doNotUseAB, CheckAtMostOnce: *camo, UsePersistentDigest: *persistent, NoHashtree: *noHashtree,
		OutputVBMeta: *outputVBMeta, DoNotAppendVBMeta: *noAppend,
	}
	o.ReleaseString, o.AppendToReleaseString = v.release()
	o.Flags, o.RollbackIndexLocation = v.flags32()
	// avbtool counts these before reading anything.
	for _, spec := range *v.chainsNoAB {
		o.ChainPartitions = append(o.ChainPartitions, avb.ChainPartition{DoNotUseAB: true, Spec: spec})
	}
	if *v.printRequired {
		fmt.Fprintf(t.stdout, "1.%d\n", o.RequiredLibavbMinor())
		return exitOK
	}
	o.ChainPartitions = nil
	done, withFiles, err := t.hashtreeFooterOptions(o, *image, *calcMax, fs.Changed("salt"), *salt, v)
	switch {
	case err != nil:
		return t.fail(err, false) // avbtool's own messages as avbtool prints them
	case done:
		return exitOK
	}
	if o.FEC && !o.NoHashtree {
		if o.BlockSize != 4096 {
			return t.unsupported("FEC with --block_size %d is not done here (only 4096); add --do_not_generate_fec", o.BlockSize)
		}
	}
	// o.Warn stays nil: avbtool warns of nothing here (blocks larger than
	// the page size included), and scripts read its stderr.
	if _, err := avb.AddHashtreeFooter(t.ctx, *image, o); err != nil {
		if msg := signingMessage(err, withFiles); msg != "" && t.ctx.Err() == nil {
			fmt.Fprintf(t.stderr, "%s: %s%s.\n", t.prog, hashtreeFailed, msg)
			return exitFailed
		}
		return t.failed(err)
	}
	return exitOK
}

// Bounds of the small inputs read: public key metadata goes into a vbmeta
// (at most 16 MiB); a public key blob of 8192 bits takes 2 KiB.
const (
	maxPublicKeyMetadata = avb.MaxVBMetaSize
	maxChainKey          = 1 << 20
)

// readSmallFile reads a small input (a key, metadata) of at most limit
// bytes, from a file, a pipe or a FIFO, whose wait for a writer ends with
// the front's context.
func (t *tool) readSmallFile(path, what string, limit int) ([]byte, error) {
	b, err := safefile.ReadSmall(t.ctx, path, limit)
	switch {
	case err == nil:
		return b, nil
	case t.ctx.Err() != nil && errors.Is(err, t.ctx.Err()):
		return nil, safefile.Interrupted(t.ctx, what+" "+path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("%s %s is larger than %d bytes", what, path, limit)
	}
	// The cause stays wrapped (see pathOSError).
	ours := causeErr{fmt.Sprintf("%s %s: %s", what, path, safefile.Message(err)), err}
	if errors.Is(err, safefile.ErrNotFile) && isDir(path) {
		err = syscall.EISDIR // Python's open() of a directory
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		// Python's open() failing: an OSError
		return nil, &pyErr{ours, pyOSError(errno, path)}
	}
	return nil, ours
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// pyErr is an error avbtool meets as a Python exception other than its
// AvbError (an OSError opening a file, a ValueError reading a number): py
// is Python's str() of it, which avbtool's handlers quote ("Adding
// hash_footer failed: [Errno 2] No such file or directory: 'x'."); where
// avbtool dies of a traceback instead, the front says err, in its words.
type pyErr struct {
	err error
	py  string
}

func (e *pyErr) Error() string { return e.err.Error() }
func (e *pyErr) Unwrap() error { return e.err }

// writeOutput writes b where a subcommand's --output goes: stdout for ""
// or "-", else the file, which may replace an existing one only if ours
// recognizes it as holding what the subcommand writes (what).
func (t *tool) writeOutput(path, what string, ours func(head []byte) bool, b []byte) error {
	if path == "" || path == "-" {
		_, err := t.stdout.Write(b)
		return err
	}
	out, err := t.openOutput(path, what, ours)
	if err != nil {
		return err
	}
	defer out.Abort()
	return out.Commit(b)
}

// openOutput opens a subcommand's --output file. Not os.WriteFile: a
// mistyped --output must not destroy an image, a device or a link (see
// safefile.OpenOutputFile).
func (t *tool) openOutput(path, what string, ours func(head []byte) bool) (*safefile.OutputFile, error) {
	return safefile.OpenOutputFile(path, "--output", what, ours, false)
}

// isPublicKey says whether an existing --output holds an AVB public key.
func isPublicKey(head []byte) bool { _, err := avb.DecodePublicKey(head); return err == nil }

// isCmdline says whether an existing --output holds a kernel command line
// (one line of text).
func isCmdline(head []byte) bool {
	return utf8.Valid(head) && !bytes.ContainsAny(head, "\x00\n")
}

func (t *tool) infoImage(args []string) int {
	const cmd = "info_image"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to show information about")
	output := fs.String("output", "", "Write info to file")
	fileType(fs, "image", "r", "image")
	fileType(fs, "output", "w", "output")
	atx := fs.Bool("atx", false, "Show information about Android Things eXtension (ATX).")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	// Read as avbtool reads it: damaged fields are printed, not refused.
	img, err := avb.ReadImageLenient(*image)
	if err == nil {
		err = releaseNotUTF8(*image, img)
	}
	if err != nil {
		return t.failed(err)
	}
	if *atx && img.VBMeta.Header.PublicKeyMetadataSize > 0 {
		return t.unsupported("--atx: the Android Things eXtension metadata is not decoded here")
	}
	// Written as the descriptors are walked: the text of a million of
	// them is never held in memory.
	if *output == "" || *output == "-" {
		if err := img.WriteInfo(safefile.ContextWriter(t.ctx, t.stdout)); err != nil {
			return t.failed(err)
		}
		return exitOK
	}
	out, err := t.openOutput(*output, "an info_image text", isInfoText)
	if err != nil {
		return t.failed(err)
	}
	defer out.Abort()
	if err := img.WriteInfo(out.Writer(t.ctx)); err != nil {
		return t.failed(err)
	}
	if err := out.Commit(nil); err != nil {
		return t.failed(err)
	}
	return exitOK
}

// isInfoText says whether an existing --output holds what info_image
// writes, so that it may be replaced.
func isInfoText(head []byte) bool {
	return bytes.HasPrefix(head, []byte("Footer version:")) || bytes.HasPrefix(head, []byte("Minimum libavb version:"))
}

func (t *tool) eraseFooter(args []string) int {
	const cmd = "erase_footer"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image with a footer")
	fileType(fs, "image", "rw", "image")
	keep := fs.Bool("keep_hashtree", false, "Keep the hashtree and FEC in the image")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	if err := avb.EraseFooter(*image, *keep); err != nil {
		if errors.Is(err, avb.ErrNoHashtree) {
			err = avbErr("Requested to keep hashtree but no hashtree descriptor was found.")
		}
		return t.failed(err)
	}
	return exitOK
}

func (t *tool) extractPublicKey(args []string) int {
	const cmd = "extract_public_key"
	fs := t.flagSet(cmd)
	key := fs.String("key", "", "Path to RSA private key file")
	output := fs.String("output", "", "Output file name")
	fileType(fs, "output", "w", "output")
	if code, done := t.parse(cmd, fs, args, "key", "output"); done {
		return code
	}
	b, err := avb.ExtractPublicKey(t.ctx, *key)
	if err != nil {
		return t.failed(err)
	}
	if err := t.writeOutput(*output, "an AVB public key", isPublicKey, b); err != nil {
		return t.failed(err)
	}
	return exitOK
}

func (t *tool) calculateKernelCmdline(args []string) int {
	const cmd = "calculate_kernel_cmdline"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to calculate kernel cmdline for")
	fileType(fs, "image", "r", "image")
	disabled := fs.Bool("hashtree_disabled", false, "Return the cmdline for hashtree disabled")
	output := fs.String("output", "", "Write cmdline to file (default: stdout)")
	fileType(fs, "output", "w", "output")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	s, err := avb.CalculateKernelCmdline(t.ctx, *image, *disabled)
	if err != nil {
		return t.failed(err)
	}
	if err := t.writeOutput(*output, "a kernel command line", isCmdline, []byte(s)); err != nil {
		return t.failed(err)
	}
	return exitOK
}

// expectedChain is one --expected_chain_partition.
type expectedChain struct {
	location uint32
	key      []byte
}

func (t *tool) verifyImage(args []string) int {
	const cmd = "verify_image"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to verify")
	fileType(fs, "image", "r", "image")
	key := fs.String("key", "", "Check embedded public key matches KEY")
	expected := fs.StringArray("expected_chain_partition", nil, "Expected chain partition")
	metavar(fs, "expected_chain_partition", "PART_NAME:ROLLBACK_SLOT:KEY_PATH")
	follow := fs.Bool("follow_chain_partitions", false, "Follows chain partitions even when not specified with the --expected_chain_partition option")
	acceptZeroed := fs.Bool("accept_zeroed_hashtree", false, "Accept images where the hashtree or FEC data is zeroed out")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	chains := map[string]expectedChain{}
	for _, spec := range *expected {
		parts := strings.Split(spec, ":")
		if len(parts) != 3 {
			return t.failed(avbErr("Malformed chained partition \"%s\".", spec))
		}
		loc, err := strconv.ParseUint(parts[1], 10, 32)
		if err != nil {
			return t.failed(fmt.Errorf("chained partition %q: rollback index location %q is not a number", spec, parts[1]))
		}
		b, err := t.readSmallFile(parts[2], "public key", maxChainKey)
		if err != nil {
			return t.failed(err)
		}
		chains[parts[0]] = expectedChain{uint32(loc), b}
	}
	if err := t.verify(*image, *key, chains, *follow, *acceptZeroed, 0, 0); err != nil {
		var m avbMessage
		if errors.As(err, &m) {
			// avbtool's own words, printed as its AvbError: argv[0], the
			// message, nothing else.
			fmt.Fprintf(t.stderr, "%s: %s\n", t.prog, m)
			return exitFailed
		}
		return t.failed(err)
	}
	return exitOK
}

// errDescriptor: a descriptor did not verify (avbtool printed why).
var errDescriptor = avbErr("Error verifying descriptor.")

// maxChainDepth bounds --follow_chain_partitions through chains that loop,
// and maxHeldVBMeta the bytes of the vbmetas held while a chain is
// followed (each is walked as its chains are): under the memory bound,
// whatever the images.
const (
	maxChainDepth = 32
	maxHeldVBMeta = 24 << 20
)

// verify is avbtool's verify_image on one image, following chains; held
// is the size of the vbmetas of the images that chain to it.
func (t *tool) verify(path, keyPath string, chains map[string]expectedChain, follow, acceptZeroed bool, depth int, held uint64) error {
	if depth > maxChainDepth {
		return fmt.Errorf("%s: chained partitions nest deeper than %d", path, maxChainDepth)
	}
	var keyBlob []byte
	if keyPath != "" {
		fmt.Fprintf(t.stdout, "Verifying image %s using key at %s\n", path, keyPath)
		pub, err := avb.LoadPublicKey(t.ctx, keyPath)
		if err != nil {
			return err
		}
		if keyBlob, err = avb.EncodePublicKey(pub); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(t.stdout, "Verifying image %s using embedded public key\n", path)
	}
	// Locked shared from the metadata to the last descriptor's check (the
	// later opens share this lock): no writer comes between.
	locked, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image", Raw: true})
	if err != nil {
		return err
	}
	defer locked.Close()
	img, err := readForVerify(path)
	if err == nil {
		err = releaseNotUTF8(path, img)
	}
	if err != nil {
		return err
	}
	if held += uint64(len(img.VBMeta.Raw)); held > maxHeldVBMeta {
		return fmt.Errorf("%s: the vbmetas of the chained partitions followed take more than %d bytes", path, maxHeldVBMeta)
	}
	alg := img.VBMeta.Algorithm.Name
	if err := img.VBMeta.Verify(); err != nil {
		if errors.Is(err, avb.ErrSignature) {
			if storedHashMatches(img.VBMeta) {
				// avbtool's verify_vbmeta_signature says so on stderr when
				// the hash matched and only the RSA check failed.
				fmt.Fprintln(t.stderr, "Signature not correct")
			}
			return avbErr("Signature check failed for %s vbmeta struct %s", alg, path)
		}
		return err
	}
	if keyBlob != nil && !bytes.Equal(keyBlob, img.VBMeta.PublicKey) {
		return avbErr("Embedded public key does not match given key.")
	}
	if img.Footer != nil {
		fmt.Fprintf(t.stdout, "vbmeta: Successfully verified footer and %s vbmeta struct in %s\n", alg, path)
	} else {
		fmt.Fprintf(t.stdout, "vbmeta: Successfully verified %s vbmeta struct in %s\n", alg, path)
	}
	dir, ext := pyDirname(path), pyExt(path)
	for d := range img.VBMeta.Descriptors() {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		cd, isChain := d.(*avb.ChainPartitionDescriptor)
		if _, expected := chains[cdName(cd)]; isChain && follow && !expected {
			// Followed below without being checked against anything.
			fmt.Fprintf(t.stdout, "%s: Chained but ROLLBACK_SLOT (which is %d) and KEY (which has sha1 %x) not specified\n",
				cd.PartitionName, cd.RollbackIndexLocation, sha1.Sum(cd.PublicKey))
		} else if err := t.verifyDescriptor(d, path, dir, ext, chains, acceptZeroed); err != nil {
			return err
		}
		if isChain && follow {
			fmt.Fprintln(t.stdout, "--")
			if err := t.verify(pyJoin(dir, cd.PartitionName+ext), keyPath, nil, false, acceptZeroed, depth+1, held); err != nil {
				return err
			}
		}
	}
	return nil
}

// storedHashMatches says whether the vbmeta's stored hash is that of its
// header and auxiliary block, as avbtool computes it before the RSA check.
func storedHashMatches(v *avb.VBMeta) bool {
	if v.Algorithm.Hash == 0 || !v.Algorithm.Hash.Available() {
		return false
	}
	h := v.Algorithm.Hash.New()
	h.Write(v.Raw[:avb.HeaderSize])
	h.Write(v.Raw[avb.HeaderSize+v.Header.AuthenticationBlockSize:])
	return bytes.Equal(h.Sum(nil), v.Hash)
}

// readForVerify reads path's AVB metadata as avbtool's verify_image
// reads it: of the footer, only the magic and the vbmeta's offset count;
// its version, the original image size and the vbmeta's size are neither
// signed nor read by avbtool, so a footer damaged there still verifies
// when the descriptors do (veritycheck refuses such a footer). The vbmeta
// must still lie between that offset and the footer, as its header says.
func readForVerify(path string) (*avb.Image, error) {
	img, strictErr := avb.ReadImage(path)
	if strictErr == nil || !errors.Is(strictErr, avb.ErrMalformed) {
		return img, strictErr
	}
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return nil, strictErr
	}
	defer src.Close()
	size := src.Size()
	if size < avb.FooterSize+avb.HeaderSize {
		return nil, strictErr
	}
	b := make([]byte, avb.FooterSize)
	if _, err := src.ReadAt(b, size-avb.FooterSize); err != nil {
		return nil, strictErr
	}
	f, err := avb.ParseFooter(b)
	end := uint64(size - avb.FooterSize)
	if err != nil || f.VBMetaOffset > end-avb.HeaderSize {
		return nil, strictErr
	}
	// avbtool's words for no vbmeta where the footer points.
	magic := make([]byte, 4)
	if _, err := src.ReadAt(magic, int64(f.VBMetaOffset)); err != nil || string(magic) != "AVB0" {
		return nil, avbErr("Given image does not look like a vbmeta image.")
	}
	vb, err := avb.ReadVBMeta(src, int64(f.VBMetaOffset), min(end-f.VBMetaOffset, avb.MaxVBMetaSize))
	if err != nil {
		return nil, strictErr
	}
	return &avb.Image{Footer: f, VBMeta: vb, Size: uint64(size), Sparse: src.Format() == "android-sparse"}, nil
}

func cdName(cd *avb.ChainPartitionDescriptor) string {
	if cd == nil {
		return ""
	}
	return cd.PartitionName
}

// verifyDescriptor is avbtool's Descriptor.verify: errDescriptor when the
// descriptor does not verify (with avbtool's line on stderr).
func (t *tool) verifyDescriptor(d avb.Descriptor, path, dir, ext string, chains map[string]expectedChain, acceptZeroed bool) error {
	partitionFile := func(name string) string {
		if name == "" {
			return path
		}
		return pyJoin(dir, name+ext)
	}
	switch d := d.(type) {
	case *avb.HashtreeDescriptor:
		file := partitionFile(d.PartitionName)
		c, err := avb.CheckHashtreeData(t.ctx, file, d, 0)
		if err != nil {
			return err
		}
		if !c.RootMatches {
			fmt.Fprintf(t.stderr, "hashtree of %s does not match descriptor\n", file)
			return errDescriptor
		}
		if c.Zeroed && acceptZeroed {
			fmt.Fprintf(t.stdout, "%s: skipping verification since hashtree is zeroed and --accept_zeroed_hashtree was given\n", d.PartitionName)
			return nil
		}
		if !c.TreeMatches {
			fmt.Fprintf(t.stderr, "hashtree of %s contains invalid data\n", file)
			return errDescriptor
		}
		fmt.Fprintf(t.stdout, "%s: Successfully verified %s hashtree of %s for image of %d bytes\n", d.PartitionName, d.HashAlgorithm, file, d.ImageSize)
	case *avb.HashDescriptor:
		file := partitionFile(d.PartitionName)
		ok, err := avb.CheckHashData(t.ctx, file, d)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(t.stderr, "%s digest of %s does not match digest in descriptor\n", d.HashAlgorithm, file)
			return errDescriptor
		}
		fmt.Fprintf(t.stdout, "%s: Successfully verified %s hash of %s for image of %d bytes\n", d.PartitionName, d.HashAlgorithm, file, d.ImageSize)
	case *avb.ChainPartitionDescriptor:
		want, ok := chains[d.PartitionName]
		switch {
		case !ok:
			fmt.Fprintf(t.stderr, "No expected chain partition for partition %s. Use --expected_chain_partition to specify expected contents or --follow_chain_partitions.\n", d.PartitionName)
			return errDescriptor
		case want.location != d.RollbackIndexLocation:
			fmt.Fprintf(t.stderr, "Expected rollback_index_location %d does not match %d in descriptor for partition %s\n", want.location, d.RollbackIndexLocation, d.PartitionName)
			return errDescriptor
		case !bytes.Equal(want.key, d.PublicKey):
			fmt.Fprintf(t.stderr, "Expected public key blob does not match public key blob in descriptor for partition %s\n", d.PartitionName)
			return errDescriptor
		}
		fmt.Fprintf(t.stdout, "%s: Successfully verified chain partition descriptor matches expected data\n", d.PartitionName)
	}
	return nil
}

// pyDirname, pyExt and pyJoin are Python's os.path.dirname, splitext's
// extension and join, by which avbtool names a partition's image.
func pyDirname(p string) string {
	i := strings.LastIndexByte(p, '/') + 1
	head := p[:i]
	if head != "" && strings.Trim(head, "/") != "" {
		head = strings.TrimRight(head, "/")
	}
	return head
}

func pyExt(p string) string {
	base := p[strings.LastIndexByte(p, '/')+1:]
	i := strings.LastIndexByte(base, '.')
	if i <= 0 || strings.Trim(base[:i], ".") == "" {
		return ""
	}
	return base[i:]
}

func pyJoin(dir, name string) string {
	if dir == "" || strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
