package veritygen

// --avb: veritygen does avbtool add_hashtree_footer's whole step (tree,
// parity, signed vbmeta, footer) through avb.AddHashtreeFooter, with the
// flags in veritygen's style.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/appendscan"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

const avbUsage = `
Android Verified Boot (--avb, with --append):
  veritygen --append [--fec] --avb [--partition-size=N]
            [--avb-algorithm=ALG --avb-key=KEY.pem] DATA
does what 'avbtool add_hashtree_footer' does, byte for byte: after the tree
(and with --fec the parity) it appends a vbmeta blob with a hashtree
descriptor, signed if asked, and the AVB footer in the partition's last
4096-byte block. DATA is hashed once. Run again on its own output, it starts
from the original image (the footer says where it ends) and writes the same
file. An Android sparse DATA stays sparse (tree and parity appended as RAW
chunks; it expands to what the expanded DATA gets). Any failure, or
Ctrl-C, cuts DATA back to the original image (an earlier footer goes too,
as with avbtool). A run killed outright (kill -9) leaves DATA as it was,
finished, or ending in a provisional footer that gives the original size
(a sparse DATA: a record past its last chunk): run the same command again
to finish it. A DATA that ends in the tree of a plain --append is refused
(cut it off first). --hash defaults to sha256 here
too (avbtool's default is sha1); --salt defaults to random bytes as many as
the digest, --salt=- is none; --data-block-size is avbtool's --block_size
(the hash block size is the same). --check-at-most-once also sets the
descriptor's flag. --data-size, --force, --raw, --root-hash-file and the
kernel-table flags do not apply to --avb. With --calc-max-image-size
(and --partition-size) veritygen only prints the largest image that fits,
as avbtool does, and needs no DATA.

Run under the name avbtool (a symbolic link to veritygen), veritygen takes
avbtool 1.3.0's own command line for every subcommand an Android build or a
signing run calls (add_hash_footer, add_hashtree_footer, make_vbmeta_image,
info_image, verify_image and the other footer and digest subcommands);
generate_test_image, set_ab_metadata and make_atx_* exit 2 naming them, for a
wrapper to fall back on the real avbtool.
`

// avbFlags are the flags of --avb.
type avbFlags struct {
	// mode is --avb's value: "hashtree" (--avb alone), "hash" or
	// "vbmeta"; "" without --avb.
	mode                                 string
	partitionSize                        uint64
	partitionName                        string
	algorithm, key                       string
	props, propsFromFile, kernelCmdlines []string
	rollbackIndex                        uint64
	rollbackIndexLocation                uint32
	doNotUseAB, persistentDigest         bool
	noHashtree, setupAsRootfs            bool
	setupRootfsFrom                      string
	outputVBMeta                         string
	doNotAppendVBMeta, calcMaxImageSize  bool
	fs                                   *pflag.FlagSet
	common                               vbmetaFlags
}

// avbOnlyFlags need --avb.
var avbOnlyFlags = []string{"partition-size", "partition-name", "avb-algorithm", "avb-key", "prop", "prop-from-file",
	"rollback-index", "rollback-index-location", "do-not-use-ab", "use-persistent-digest", "no-hashtree",
	"setup-as-rootfs-from-kernel", "setup-rootfs-from-kernel", "kernel-cmdline", "output-vbmeta-image", "do-not-append-vbmeta-image", "calc-max-image-size",
	"dynamic-partition-size", "chain-partition", "chain-partition-do-not-use-ab", "include-descriptors-from-image",
	"public-key-metadata", "signing-helper", "signing-helper-with-files", "vbmeta-flags", "set-hashtree-disabled-flag",
	"release-string", "append-to-release-string", "padding-size"}

func (a *avbFlags) register(fs *pflag.FlagSet) {
	a.fs = fs
	fs.StringVar(&a.mode, "avb", "", "`KIND` hashtree (alone), hash, vbmeta")
	fs.Lookup("avb").NoOptDefVal = "hashtree"
	fs.Uint64Var(&a.partitionSize, "partition-size", 0, "`BYTES` partition size; 0: just enough")
	fs.StringVar(&a.partitionName, "partition-name", "", "`NAME` the partition's name")
	fs.StringVar(&a.algorithm, "avb-algorithm", "NONE", "`ALG` NONE, SHA256_RSA4096...")
	fs.StringVar(&a.key, "avb-key", "", "`PEM` the RSA private key that signs")
	fs.StringArrayVar(&a.props, "prop", nil, "`KEY:VALUE` add a property (repeatable)")
	fs.StringArrayVar(&a.propsFromFile, "prop-from-file", nil, "`KEY:PATH` the same, from a file")
	fs.Uint64Var(&a.rollbackIndex, "rollback-index", 0, "`N` the rollback index")
	fs.Uint32Var(&a.rollbackIndexLocation, "rollback-index-location", 0, "`N` its location")
	fs.BoolVar(&a.doNotUseAB, "do-not-use-ab", false, "set the do-not-use-A/B flag")
	fs.BoolVar(&a.persistentDigest, "use-persistent-digest", false, "store no root digest")
	fs.BoolVar(&a.noHashtree, "no-hashtree", false, "append no tree")
	fs.BoolVar(&a.setupAsRootfs, "setup-as-rootfs-from-kernel", false, "mount DATA as / (cmdline)")
	fs.StringVar(&a.setupRootfsFrom, "setup-rootfs-from-kernel", "", "`IMAGE` the same for another partition")
	fs.StringArrayVar(&a.kernelCmdlines, "kernel-cmdline", nil, "`CMDLINE` add a kernel command line")
	fs.StringVar(&a.outputVBMeta, "output-vbmeta-image", "", "also write the vbmeta to `FILE`")
	fs.BoolVar(&a.doNotAppendVBMeta, "do-not-append-vbmeta-image", false, "append no vbmeta and footer")
	fs.BoolVar(&a.calcMaxImageSize, "calc-max-image-size", false, "print the largest image that fits")
	a.common.register(fs)
}

// wanted reports whether the command line is an --avb one (or names a flag
// of --avb, which then needs it).
func (a *avbFlags) wanted() bool {
	if a.mode != "" {
		return true
	}
	for _, name := range avbOnlyFlags {
		if a.fs.Changed(name) {
			return true
		}
	}
	return false
}

// runAVB runs the --avb command line: o holds the parsed flags, pos the
// positional arguments.
func runAVB(ctx context.Context, o *options, pos []string, stdout, stderr, tty io.Writer) int {
	fail := avbFailer(o, stdout, stderr)
	a := &o.avb
	if err := o.sign.notWithAVB(); err != nil {
		return fail(err)
	}
	if err := o.notForAVB(); err != nil {
		return fail(err)
	}
	if a.mode == "" {
		for _, name := range avbOnlyFlags {
			if a.fs.Changed(name) {
				return fail(cli.Errorf("e.g. veritygen --append --avb --"+name+" ... DATA", "--%s needs --avb", name))
			}
		}
	}
	switch a.mode {
	case "hashtree":
	case "hash":
		return runAVBHash(ctx, o, pos, stdout, stderr)
	case "vbmeta":
		return runVBMeta(ctx, o, pos, stdout, stderr)
	default:
		return fail(cli.Errorf("--avb (or --avb=hashtree) for system images, --avb=hash for boot images, --avb=vbmeta for vbmeta.img",
			"--avb=%s: not a kind of AVB image veritygen makes", a.mode))
	}
	if err := a.common.onlyFor("hashtree"); err != nil {
		return fail(err)
	}
	hfo, err := o.avbOptions()
	if err != nil {
		return fail(err)
	}
	if a.calcMaxImageSize {
		if len(pos) != 0 {
			return fail(cli.Errorf("veritygen --avb --calc-max-image-size --partition-size=N [--fec] [tree flags]",
				"--calc-max-image-size writes nothing and takes no DATA; got %d arguments", len(pos)))
		}
		n, err := avb.MaxImageSize(hfo)
		if err != nil {
			return fail(err)
		}
		printMaxImageSize(stdout, o.json, n)
		return cli.ExitOK
	}
	data, err := o.appendTarget(pos, "--avb", "DATA")
	if err != nil {
		return fail(err)
	}
	if err := checkNoPlainAppend(data, hfo); err != nil {
		return fail(err)
	}
	c, err := o.vbmetaCommon(ctx)
	if err != nil {
		return fail(err)
	}
	hfo.Key, hfo.Signer, hfo.Properties, hfo.ChainPartitions = c.Key, c.Signer, c.Properties, c.ChainPartitions
	hfo.IncludeDescriptorsFrom, hfo.PublicKeyMetadata, hfo.Flags = c.IncludeDescriptorsFrom, c.PublicKeyMetadata, c.Flags
	hfo.ReleaseString, hfo.AppendToReleaseString = c.ReleaseString, c.AppendToReleaseString
	showProgress := false
	if f, ok := tty.(*os.File); ok && !o.noProgress && !o.json {
		showProgress = cli.IsTerminal(f)
	}
	var total uint64
	if fi, err := os.Stat(data); err == nil {
		total = uint64(fi.Size())
	}
	bar := cli.NewProgress(stderr, showProgress, "hashing", total)
	hfo.Progress = cli.StageProgress(&bar, verity.StageHashing)
	hfo.Warn = func(msg string) { cli.Warn(stderr, prog, "%s", msg) }
	r, err := avb.AddHashtreeFooter(ctx, data, hfo)
	bar.Finish()
	if err != nil {
		return fail(err)
	}
	res, err := newAVBResult(data, hfo, r)
	if err != nil {
		return fail(err)
	}
	res.CheckCommand = res.checkCommand(data, a.key, a.noHashtree)
	return writeAVBReport(o, stdout, stderr, data, res.RootHash, res, res.print)
}

// vbmetaKept refuses --do-not-append-vbmeta-image without a file to keep
// the vbmeta in.
func (a *avbFlags) vbmetaKept() error {
	if a.doNotAppendVBMeta && a.outputVBMeta == "" {
		return cli.Errorf("add --output-vbmeta-image=FILE", "--do-not-append-vbmeta-image without --output-vbmeta-image: the vbmeta would be lost")
	}
	return nil
}

// appendTarget is the one file --append with --avb (flag) writes into,
// named name in the messages.
func (o *options) appendTarget(pos []string, flag, name string) (string, error) {
	usage := "veritygen --append " + flag + " [flags] " + name
	if !o.appendTree {
		return "", cli.Errorf(usage, "%s writes into %s: it needs --append", flag, name)
	}
	if len(pos) != 1 {
		return "", cli.Errorf(usage, "%s takes %s alone; got %d arguments", flag, name, len(pos))
	}
	return pos[0], nil
}

// notForAVB refuses the flags of veritygen's trees that no --avb kind
// takes.
func (o *options) notForAVB() error {
	for _, name := range []string{"data-size", "force", "raw", "root-hash-file", "uuid", "hash-offset", "data-blocks",
		"fec-device", "fec-offset", "boot-params", "data-device", "hash-device", "fec-device-name", "dm-name",
		"ignore-zero-blocks", "ignore-corruption", "restart-on-corruption", "panic-on-corruption"} {
		if o.changed(name) {
			return cli.Errorf(avbHint(name), "--%s does not apply to --avb", name)
		}
	}
	return nil
}

// avbOptions checks the tree flags against --avb and turns them into the
// library's options (without the vbmeta's inputs, read later).
func (o *options) avbOptions() (*avb.HashtreeFooterOptions, error) {
	a := &o.avb
	if o.tree.Format != 1 {
		return nil, cli.Errorf("leave --format out: AVB trees are of type 1", "--format=%d: --avb writes type 1 trees", o.tree.Format)
	}
	if o.changed("no-superblock") && !o.tree.NoSuperblock {
		return nil, cli.Errorf("leave --no-superblock out", "--avb writes no superblock, as avbtool; --no-superblock=false contradicts it")
	}
	if o.changed("hash-block-size") && o.tree.HashBlockSize != o.tree.DataBlockSize {
		return nil, cli.Errorf("leave --hash-block-size out: --data-block-size sets both",
			"--avb uses one block size for data and tree (avbtool's --block_size): --hash-block-size %d is not --data-block-size %d",
			o.tree.HashBlockSize, o.tree.DataBlockSize)
	}
	if !o.fecAppend && o.changed("fec-roots") {
		return nil, cli.Errorf("add --fec to append error correction after the tree", "--fec-roots needs --fec")
	}
	if _, err := hashes.Lookup(o.tree.Hash); err != nil {
		_, err = o.tree.Options()
		return nil, err
	}
	if err := a.keyWithoutAlgorithm(); err != nil {
		return nil, err
	}
	if _, err := avb.AlgorithmByName(a.algorithm); err != nil {
		return nil, err
	}
	hfo := &avb.HashtreeFooterOptions{
		PartitionSize: a.partitionSize, PartitionName: a.partitionName, HashAlgorithm: o.tree.Hash,
		BlockSize: o.tree.DataBlockSize, FEC: o.fecAppend, FECRoots: o.fecRoots,
		Algorithm: a.algorithm, KernelCmdlines: a.kernelCmdlines, SetupAsRootfsFromKernel: a.setupAsRootfs,
		SetupRootfsFromKernel: a.setupRootfsFrom, RollbackIndex: a.rollbackIndex, RollbackIndexLocation: a.rollbackIndexLocation,
		DoNotUseAB: a.doNotUseAB, CheckAtMostOnce: o.boot.checkAtMostOnce, UsePersistentDigest: a.persistentDigest,
		NoHashtree: a.noHashtree, OutputVBMeta: a.outputVBMeta, DoNotAppendVBMeta: a.doNotAppendVBMeta, Jobs: o.jobs,
	}
	if err := a.vbmetaKept(); err != nil {
		return nil, err
	}
	if o.changed("salt") {
		s, err := o.avbSalt()
		if err != nil {
			return nil, err
		}
		hfo.Salt = s
	}
	return hfo, nil
}

// checkNoPlainAppend refuses a DATA that ends in the tree (with or without
// parity) of an earlier veritygen --append without --avb: add_hashtree_footer,
// as avbtool, would take that tree for part of the image.
func checkNoPlainAppend(data string, o *avb.HashtreeFooterOptions) error {
	roots := o.FECRoots
	if roots == 0 {
		roots = fec.DefaultRoots
	}
	tree := verity.TreeOptions{Hash: o.HashAlgorithm, Salt: o.Salt, DataBlockSize: o.BlockSize, HashBlockSize: o.BlockSize, NoSuperblock: true}
	p, err := tree.Params()
	if err != nil {
		return nil // AddHashtreeFooter's to report
	}
	for _, r := range []int{roots, 0} {
		padded, orig, found, err := appendscan.InFile(data, p, r)
		if err != nil || !found {
			continue // errors are AddHashtreeFooter's to report
		}
		what := "tree"
		if r > 0 {
			what = "tree and error correction"
		}
		return cli.Errorf(fmt.Sprintf("cut them off first: truncate -s %d %s (the image's size, as far as DATA tells), then run --avb", orig, data),
			"DATA %s ends in the %s of an earlier --append without --avb (of its first %d bytes): --avb would take them for part of the image", data, what, padded)
	}
	return nil
}

// avbHint says what to do instead of a flag that does not apply to --avb.
func avbHint(name string) string {
	switch name {
	case "data-size":
		return "leave it out: --avb cuts DATA back itself on failure, and on a file with a footer (or left by a killed run) starts from the original image"
	case "root-hash-file":
		return "the root digest is in the vbmeta's descriptor, and in --json's root_hash"
	case "boot-params", "data-device", "hash-device", "fec-device-name", "dm-name", "ignore-zero-blocks",
		"ignore-corruption", "restart-on-corruption", "panic-on-corruption":
		return "the kernel line comes from the vbmeta: --setup-as-rootfs-from-kernel, then avbtool calculate_kernel_cmdline"
	}
	return "leave --" + name + " out"
}

// avbResult is the --avb report, also printed as JSON: the --append
// report's fields and the AVB ones.
type avbResult struct {
	RootHash string `json:"root_hash"`
	*cli.TreeJSON
	DataFormat   string `json:"data_format"`
	TreeSize     uint64 `json:"tree_size"`
	OriginalSize uint64 `json:"original_size"`
	// ImageSize is the partition file's size (expanded, for sparse).
	ImageSize uint64     `json:"image_size"`
	FECRoots  uint32     `json:"fec_roots,omitempty"`
	FECOffset uint64     `json:"fec_offset,omitempty"`
	FECSize   uint64     `json:"fec_size,omitempty"`
	AVB       avbSection `json:"avb"`
	// CheckCommand is the veritycheck command line that checks what was
	// written (see result's); "" when veritycheck cannot (no tree, or an
	// unsigned vbmeta in a sparse image).
	CheckCommand string `json:"check_command,omitempty"`
}

type avbSection struct {
	PartitionName         string      `json:"partition_name"`
	PartitionSize         uint64      `json:"partition_size"`
	Algorithm             string      `json:"algorithm"`
	PublicKeySHA1         string      `json:"public_key_sha1"`
	RollbackIndex         uint64      `json:"rollback_index"`
	RollbackIndexLocation uint32      `json:"rollback_index_location"`
	HashtreeFlags         uint32      `json:"hashtree_flags"`
	RootDigestStored      bool        `json:"root_digest_stored"`
	VBMetaOffset          *uint64     `json:"vbmeta_offset"`
	VBMetaSize            uint64      `json:"vbmeta_size"`
	VBMetaImage           string      `json:"vbmeta_image,omitempty"`
	Footer                *footerJSON `json:"footer"`
	RequiredLibavb        string      `json:"required_libavb_version"`
}

type footerJSON struct {
	OriginalImageSize uint64 `json:"original_image_size"`
	VBMetaOffset      uint64 `json:"vbmeta_offset"`
	VBMetaSize        uint64 `json:"vbmeta_size"`
}

func newAVBResult(data string, o *avb.HashtreeFooterOptions, r *avb.HashtreeFooterResult) (*avbResult, error) {
	ht := r.Descriptor
	h, err := hashes.Lookup(ht.HashAlgorithm)
	if err != nil {
		return nil, err
	}
	bs := int(ht.DataBlockSize)
	g, err := merkle.NewGeometry(merkle.Params{Hash: h, Salt: ht.Salt, DataBlockSize: bs, HashBlockSize: bs,
		DataBlocks: ht.ImageSize / uint64(bs), HashOffset: ht.TreeOffset})
	if err != nil {
		return nil, err
	}
	vb, err := avb.ParseVBMeta(r.VBMeta)
	if err != nil {
		return nil, err
	}
	t := cli.NewTreeJSON(g, data, data)
	// avbtool's tree of one block is empty: the root is the block's digest.
	t.HashBlocks, t.HashEnd = ht.TreeSize/uint64(bs), ht.TreeOffset+ht.TreeSize
	res := &avbResult{RootHash: hex.EncodeToString(r.RootDigest), TreeJSON: t, DataFormat: "raw", TreeSize: ht.TreeSize,
		OriginalSize: r.OriginalSize, ImageSize: r.Size, FECRoots: ht.FECNumRoots, FECOffset: ht.FECOffset, FECSize: ht.FECSize,
		AVB: avbSection{PartitionName: ht.PartitionName, PartitionSize: r.Size, Algorithm: vb.Algorithm.Name,
			RollbackIndex: vb.Header.RollbackIndex, RollbackIndexLocation: vb.Header.RollbackIndexLocation,
			HashtreeFlags: ht.Flags, RootDigestStored: len(ht.RootDigest) > 0, VBMetaSize: uint64(len(r.VBMeta)),
			VBMetaImage:    o.OutputVBMeta,
			RequiredLibavb: fmt.Sprintf("%d.%d", vb.Header.RequiredLibavbMajor, vb.Header.RequiredLibavbMinor)}}
	if r.Sparse {
		res.DataFormat = "android-sparse"
	}
	if len(vb.PublicKey) > 0 {
		res.AVB.PublicKeySHA1 = fmt.Sprintf("%x", sha1.Sum(vb.PublicKey))
	}
	if f := r.Footer; f != nil {
		off := f.VBMetaOffset
		res.AVB.VBMetaOffset = &off
		res.AVB.Footer = &footerJSON{OriginalImageSize: f.OriginalImageSize, VBMetaOffset: f.VBMetaOffset, VBMetaSize: f.VBMetaSize}
	}
	return res, nil
}

// checkCommand is the veritycheck command line that checks what was
// written to data: with a signed vbmeta and its footer, the AVB check with
// the key that signed it; else the tree, as one without superblock
// (libavb refuses an unsigned vbmeta, and veritycheck with it).
func (r *avbResult) checkCommand(data, key string, noHashtree bool) string {
	if r.AVB.Footer != nil && r.AVB.Algorithm != "NONE" && key != "" {
		return cli.CommandLine("veritycheck", []string{"--avb-key=" + key, data})
	}
	if noHashtree || r.DataFormat != "raw" {
		return ""
	}
	args := []string{"--root-hash=" + r.RootHash, "--no-superblock", "--hash=" + r.HashAlgorithm, "--salt=" + r.Salt}
	if r.DataBlockSize != 4096 {
		args = append(args, fmt.Sprintf("--data-block-size=%d", r.DataBlockSize), fmt.Sprintf("--hash-block-size=%d", r.HashBlockSize))
	}
	args = append(args, fmt.Sprintf("--data-blocks=%d", r.DataBlocks), fmt.Sprintf("--hash-offset=%d", r.HashOffset))
	if r.FECRoots > 0 {
		args = append(args, "--fec-device="+data, fmt.Sprintf("--fec-offset=%d", r.FECOffset))
		if r.FECRoots != fec.DefaultRoots {
			args = append(args, fmt.Sprintf("--fec-roots=%d", r.FECRoots))
		}
	}
	return cli.CommandLine("veritycheck", append(args, data, data))
}

// print writes the text report: veritysetup's header for the tree, the
// --append lines, then the AVB ones.
func (r *avbResult) print(w io.Writer) {
	h := &cli.Header{HashFile: r.HashFile, HashType: r.Format, DataBlocks: r.DataBlocks, DataBlockSize: r.DataBlockSize,
		HashBlocks: r.HashBlocks, HashBlockSize: r.HashBlockSize, Algorithm: r.HashAlgorithm, Salt: r.Salt, RootHash: r.RootHash,
		NoSuperblock: true}
	h.Print(w)
	fmt.Fprintf(w, "Original size:   \t%d [bytes]\n", r.OriginalSize)
	fmt.Fprintf(w, "Hash offset:     \t%d [bytes]\n", r.HashOffset)
	if r.FECRoots > 0 {
		fmt.Fprintf(w, "FEC roots:       \t%d\n", r.FECRoots)
		fmt.Fprintf(w, "FEC offset:      \t%d [bytes]\n", r.FECOffset)
	}
	fmt.Fprintf(w, "Image size:      \t%d [bytes]\n", r.ImageSize)
	a := r.AVB
	fmt.Fprintf(w, "Partition name:  \t%s\n", a.PartitionName)
	if a.VBMetaOffset != nil {
		fmt.Fprintf(w, "VBMeta offset:   \t%d [bytes]\n", *a.VBMetaOffset)
	}
	fmt.Fprintf(w, "VBMeta size:     \t%d [bytes]\n", a.VBMetaSize)
	if a.VBMetaImage != "" {
		fmt.Fprintf(w, "VBMeta image:    \t%s\n", a.VBMetaImage)
	}
	fmt.Fprintf(w, "Algorithm:       \t%s\n", a.Algorithm)
	if a.PublicKeySHA1 != "" {
		fmt.Fprintf(w, "Public key (sha1):\t%s\n", a.PublicKeySHA1)
	}
	if a.Footer == nil {
		fmt.Fprintf(w, "Footer:          \tnone (--do-not-append-vbmeta-image)\n")
	}
	if r.CheckCommand != "" {
		fmt.Fprintf(w, "Check with:      \t%s\n", r.CheckCommand)
	}
}
