package veritygen

// --avb=hash and --avb=vbmeta: avbtool's add_hash_footer (boot, dtbo...)
// and make_vbmeta_image (vbmeta.img) in veritygen's style, through the avb
// package; and the vbmeta inputs every --avb kind shares.

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
)

const avbKindsUsage = `
--avb=hash and --avb=vbmeta (boot images and vbmeta.img):
  veritygen --append --avb=hash --partition-size=N|--dynamic-partition-size
            [--partition-name=boot] [signing flags] IMAGE
does what 'avbtool add_hash_footer' does, byte for byte: one digest of the
whole IMAGE (--hash, default sha256; --salt) in a hash descriptor, a signed
vbmeta and the footer at the partition's end. Run again on its output, it
starts from the original image.
  veritygen --avb=vbmeta [--chain-partition=NAME:LOCATION:KEY.avbpubkey]...
            [--include-descriptors-from-image=IMAGE]... [signing flags] OUT
does what 'avbtool make_vbmeta_image --output OUT' does: a vbmeta image of
the descriptors named (chains first, then properties, command lines and the
included images' descriptors, as avbtool orders them), padded with zeros to
a multiple of --padding-size. OUT is replaced only if it is empty or a
vbmeta image, and only once the new one is made.
Signing flags (every kind): --avb-algorithm and --avb-key; --signing-helper
APP (or --signing-helper-with-files APP) signs instead of the key, which may
then be the public key: APP is run as avbtool runs it. --public-key-metadata,
--vbmeta-flags, --set-hashtree-disabled-flag, --release-string and
--append-to-release-string set the header's fields.
`

// vbmetaFlags are the vbmeta inputs of every --avb kind besides those
// --avb has had from the start (avbtool's common options).
type vbmetaFlags struct {
	chains, chainsNoAB, include           []string
	publicKeyMetadata                     string
	signingHelper, signingHelperWithFiles string
	flags                                 uint32
	hashtreeDisabled                      bool
	releaseString, appendRelease          string
	dynamicPartitionSize                  bool
	paddingSize                           uint64
	fs                                    *pflag.FlagSet
}

func (v *vbmetaFlags) register(fs *pflag.FlagSet) {
	v.fs = fs
	fs.BoolVar(&v.dynamicPartitionSize, "dynamic-partition-size", false, "--avb=hash: size from the image")
	fs.StringArrayVar(&v.chains, "chain-partition", nil, "`SPEC` NAME:LOCATION:KEY.avbpubkey")
	fs.StringArrayVar(&v.chainsNoAB, "chain-partition-do-not-use-ab", nil, "`SPEC` the same, not A/B")
	fs.StringArrayVar(&v.include, "include-descriptors-from-image", nil, "`IMAGE` copy its descriptors")
	fs.StringVar(&v.publicKeyMetadata, "public-key-metadata", "", "`FILE` the key's metadata")
	fs.StringVar(&v.signingHelper, "signing-helper", "", "`APP` signs, not the key")
	fs.StringVar(&v.signingHelperWithFiles, "signing-helper-with-files", "", "`APP` the same, by file")
	fs.Uint32Var(&v.flags, "vbmeta-flags", 0, "`N` the header's flags")
	fs.BoolVar(&v.hashtreeDisabled, "set-hashtree-disabled-flag", false, "flag 1: hashtrees off")
	fs.StringVar(&v.releaseString, "release-string", "", "`TEXT` instead of "+avb.ReleaseString)
	fs.StringVar(&v.appendRelease, "append-to-release-string", "", "`TEXT` after the release")
	fs.Uint64Var(&v.paddingSize, "padding-size", 0, "`BYTES` --avb=vbmeta: pad OUT")
}

// kindFlags are the --avb flags that apply to some kinds only.
var kindFlags = map[string][]string{
	"dynamic-partition-size":      {"hash"},
	"padding-size":                {"vbmeta"},
	"partition-size":              {"hashtree", "hash"},
	"partition-name":              {"hashtree", "hash"},
	"use-persistent-digest":       {"hashtree", "hash"},
	"do-not-use-ab":               {"hashtree", "hash"},
	"output-vbmeta-image":         {"hashtree", "hash"},
	"do-not-append-vbmeta-image":  {"hashtree", "hash"},
	"calc-max-image-size":         {"hashtree", "hash"},
	"no-hashtree":                 {"hashtree"},
	"setup-as-rootfs-from-kernel": {"hashtree"},
	"check-at-most-once":          {"hashtree"},
	"fec":                         {"hashtree"},
	"fec-roots":                   {"hashtree"},
	"data-block-size":             {"hashtree"},
	"hash-block-size":             {"hashtree"},
	"hash":                        {"hashtree", "hash"},
	"salt":                        {"hashtree", "hash"},
	"no-superblock":               {"hashtree"},
	"format":                      {"hashtree"},
	"jobs":                        {"hashtree"},
	"no-progress":                 {"hashtree"},
}

// onlyFor refuses a flag that does not apply to --avb=kind.
func (v *vbmetaFlags) onlyFor(kind string) error {
	for _, name := range avbFlagOrder {
		kinds, ok := kindFlags[name]
		if !ok || !v.fs.Changed(name) {
			continue
		}
		applies := false
		for _, k := range kinds {
			applies = applies || k == kind
		}
		if !applies {
			return cli.Errorf("leave --"+name+" out, or use --avb="+kinds[0], "--%s does not apply to --avb=%s", name, kind)
		}
	}
	return nil
}

// avbFlagOrder is kindFlags' keys in a fixed order, so that the first
// flag refused is always the same.
var avbFlagOrder = []string{"dynamic-partition-size", "padding-size", "partition-size", "partition-name",
	"use-persistent-digest", "do-not-use-ab", "output-vbmeta-image", "do-not-append-vbmeta-image", "calc-max-image-size",
	"no-hashtree", "setup-as-rootfs-from-kernel", "check-at-most-once", "fec", "fec-roots", "data-block-size",
	"hash-block-size", "hash", "salt", "no-superblock", "format", "jobs", "no-progress"}

// vbmetaCommon turns the signing flags and the vbmeta inputs into the
// library's options, the key or the signing helper included, reading
// every input they name; the waits for a FIFO's writer end with ctx.
func (o *options) vbmetaCommon(ctx context.Context) (*avb.VBMetaCommonOptions, error) {
	a, v := &o.avb, &o.avb.common
	alg, err := avb.AlgorithmByName(a.algorithm)
	if err != nil {
		return nil, err
	}
	helper := v.signingHelperWithFiles
	if helper == "" {
		helper = v.signingHelper
	}
	if err := a.keyWithoutAlgorithm(); err != nil {
		return nil, err
	}
	switch {
	case helper != "" && alg.Type == 0:
		return nil, cli.Errorf("e.g. --avb-algorithm=SHA256_RSA4096", "a signing helper without --avb-algorithm: the vbmeta would not be signed")
	case helper != "" && a.key == "":
		return nil, cli.Errorf("add --avb-key=KEY.pem: the helper is given its path, and the public key is read from it",
			"a signing helper needs --avb-key naming the key it signs with")
	}
	c := &avb.VBMetaCommonOptions{Algorithm: alg.Name, RollbackIndex: a.rollbackIndex, RollbackIndexLocation: a.rollbackIndexLocation,
		Flags: v.flags, KernelCmdlines: a.kernelCmdlines, SetupRootfsFromKernel: a.setupRootfsFrom,
		IncludeDescriptorsFrom: v.include}
	// Given empty, they are empty, as avbtool's: no release string, a
	// space appended.
	if v.fs.Changed("release-string") {
		c.ReleaseString = &v.releaseString
	}
	if v.fs.Changed("append-to-release-string") {
		c.AppendToReleaseString = &v.appendRelease
	}
	if v.hashtreeDisabled {
		c.Flags |= avb.FlagHashtreeDisabled
	}
	if c.ChainPartitions, err = v.chainPartitions(ctx, a.rollbackIndexLocation); err != nil {
		return nil, err
	}
	if c.Properties, err = o.avbProperties(ctx); err != nil {
		return nil, err
	}
	if v.publicKeyMetadata != "" {
		if c.PublicKeyMetadata, err = readSmallInput(ctx, v.publicKeyMetadata, "--public-key-metadata", avb.MaxVBMetaSize); err != nil {
			return nil, err
		}
	}
	if alg.Type == 0 || a.key == "" {
		return c, nil // a key the algorithm needs and lacks: the library says so
	}
	if helper == "" {
		c.Key, err = avb.LoadPrivateKey(ctx, a.key)
		return c, err
	}
	pub, err := avb.LoadPublicKey(ctx, a.key)
	if err != nil {
		return nil, err
	}
	c.Signer = &avb.HelperSigner{Program: helper, KeyPath: a.key, Public: pub, WithFiles: v.signingHelperWithFiles != ""}
	return c, nil
}

// keyWithoutAlgorithm refuses --avb-key with the algorithm NONE.
func (a *avbFlags) keyWithoutAlgorithm() error {
	if a.key != "" && a.algorithm == "NONE" {
		return cli.Errorf("e.g. --avb-algorithm=SHA256_RSA4096", "--avb-key without --avb-algorithm: the vbmeta would not be signed")
	}
	return nil
}

// chainPartitions reads --chain-partition and then
// --chain-partition-do-not-use-ab, each rollback index location used
// once (the vbmeta's own, main, included) and 1 or more, as avbtool
// checks them: libavb would take two chains of one location for one.
func (v *vbmetaFlags) chainPartitions(ctx context.Context, main uint32) ([]avb.ChainPartition, error) {
	used := map[uint32]string{main: "the vbmeta's own (--rollback-index-location)"}
	var out []avb.ChainPartition
	for i, spec := range append(append([]string(nil), v.chains...), v.chainsNoAB...) {
		cp, err := avb.ParseChainPartition(ctx, spec, i >= len(v.chains))
		if err != nil {
			return nil, err
		}
		if cp.RollbackIndexLocation < 1 {
			return nil, cli.Errorf("give it a location from 1 to 31", "chained partition %s: rollback index location 0 is the top-level vbmeta's", spec)
		}
		if by, ok := used[cp.RollbackIndexLocation]; ok {
			return nil, cli.Errorf("give each chained partition a location of its own",
				"chained partition %s: rollback index location %d is already %s", spec, cp.RollbackIndexLocation, by)
		}
		used[cp.RollbackIndexLocation] = "that of " + spec
		out = append(out, cp)
	}
	return out, nil
}

// avbProperties reads --prop then --prop-from-file, as avbtool orders
// them.
func (o *options) avbProperties(ctx context.Context) ([]avb.Property, error) {
	var out []avb.Property
	for _, p := range o.avb.props {
		pr, err := avb.ParseProperty(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	for _, p := range o.avb.propsFromFile {
		pr, err := avb.ParsePropertyFromFile(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// readSmallInput reads a small input named by flag: a file, a pipe or a
// FIFO, whose wait for a writer ends with ctx.
func readSmallInput(ctx context.Context, path, flag string, limit int) ([]byte, error) {
	b, err := safefile.ReadSmall(ctx, path, limit)
	switch {
	case err == nil:
		return b, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, safefile.Interrupted(ctx, flag+" "+path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, cli.Errorf("", "%s %s is larger than %d bytes", flag, path, limit)
	}
	return nil, cli.Errorf("", "%s %s: %s", flag, path, safefile.Message(err))
}

// runAVBHash is --avb=hash: avbtool add_hash_footer.
func runAVBHash(ctx context.Context, o *options, pos []string, stdout, stderr io.Writer) int {
	fail := avbFailer(o, stdout, stderr)
	a := &o.avb
	if err := a.common.onlyFor("hash"); err != nil {
		return fail(err)
	}
	hfo := &avb.HashFooterOptions{PartitionSize: a.partitionSize, DynamicPartitionSize: a.common.dynamicPartitionSize,
		PartitionName: a.partitionName, HashAlgorithm: o.tree.Hash, UsePersistentDigest: a.persistentDigest,
		DoNotUseAB: a.doNotUseAB, OutputVBMeta: a.outputVBMeta, DoNotAppendVBMeta: a.doNotAppendVBMeta}
	if a.calcMaxImageSize {
		if len(pos) != 0 || a.common.dynamicPartitionSize || a.partitionSize == 0 {
			return fail(cli.Errorf("veritygen --avb=hash --calc-max-image-size --partition-size=N",
				"--calc-max-image-size writes nothing: it takes --partition-size and no IMAGE"))
		}
		n, err := avb.MaxHashImageSize(a.partitionSize)
		if err != nil {
			return fail(err)
		}
		printMaxImageSize(stdout, o.json, n)
		return cli.ExitOK
	}
	image, err := o.appendTarget(pos, "--avb=hash", "IMAGE")
	if err != nil {
		return fail(err)
	}
	if a.partitionSize == 0 && !a.common.dynamicPartitionSize {
		return fail(cli.Errorf("add --partition-size=N (the partition's size), or --dynamic-partition-size",
			"--avb=hash needs the partition's size"))
	}
	if err := a.vbmetaKept(); err != nil {
		return fail(err)
	}
	if o.changed("salt") {
		salt, err := o.avbSalt()
		if err != nil {
			return fail(err)
		}
		hfo.Salt = salt
	}
	c, err := o.vbmetaCommon(ctx)
	if err != nil {
		return fail(err)
	}
	hfo.VBMetaCommonOptions = *c
	r, err := avb.AddHashFooter(ctx, image, hfo)
	if err != nil {
		return fail(err)
	}
	vb, err := avb.ParseVBMeta(r.VBMeta)
	if err != nil {
		return fail(err)
	}
	res := &hashFooterResult{Image: image, Digest: hex.EncodeToString(r.Digest), HashAlgorithm: r.Descriptor.HashAlgorithm,
		Salt: hex.EncodeToString(r.Descriptor.Salt), DigestStored: len(r.Descriptor.Digest) > 0, DataFormat: "raw",
		OriginalSize: r.OriginalSize, ImageSize: r.Size, PartitionName: r.Descriptor.PartitionName,
		VBMeta: newVBMetaJSON(vb, a.outputVBMeta)}
	if r.Sparse {
		res.DataFormat = "android-sparse"
	}
	if f := r.Footer; f != nil {
		res.Footer = &footerJSON{OriginalImageSize: f.OriginalImageSize, VBMetaOffset: f.VBMetaOffset, VBMetaSize: f.VBMetaSize}
	}
	return writeAVBReport(o, stdout, stderr, image, res.Digest, res, res.print)
}

// runVBMeta is --avb=vbmeta: avbtool make_vbmeta_image.
func runVBMeta(ctx context.Context, o *options, pos []string, stdout, stderr io.Writer) int {
	fail := avbFailer(o, stdout, stderr)
	a := &o.avb
	if err := a.common.onlyFor("vbmeta"); err != nil {
		return fail(err)
	}
	if o.appendTree {
		return fail(cli.Errorf("leave --append out: veritygen --avb=vbmeta [flags] OUT", "--avb=vbmeta writes a new vbmeta image, not into an image"))
	}
	if len(pos) != 1 {
		return fail(cli.Errorf("veritygen --avb=vbmeta [flags] OUT", "--avb=vbmeta takes the vbmeta image to write, OUT, alone; got %d arguments", len(pos)))
	}
	if a.common.paddingSize > 1<<30 {
		return fail(cli.Errorf("e.g. --padding-size=4096", "--padding-size %d is larger than 1 GiB", a.common.paddingSize))
	}
	c, err := o.vbmetaCommon(ctx)
	if err != nil {
		return fail(err)
	}
	vo := &avb.VBMetaImageOptions{Algorithm: c.Algorithm, Key: c.Key, Signer: c.Signer, ChainPartitions: c.ChainPartitions,
		Properties: c.Properties, SetupRootfsFromKernel: c.SetupRootfsFromKernel, KernelCmdlines: c.KernelCmdlines,
		IncludeDescriptorsFrom: c.IncludeDescriptorsFrom, PublicKeyMetadata: c.PublicKeyMetadata, RollbackIndex: c.RollbackIndex,
		RollbackIndexLocation: c.RollbackIndexLocation, Flags: c.Flags, ReleaseString: c.ReleaseString,
		AppendToReleaseString: c.AppendToReleaseString, PaddingSize: a.common.paddingSize}
	out := pos[0]
	if err := avb.MakeVBMetaImage(ctx, out, vo); err != nil {
		return fail(err)
	}
	// The report is of what was written: read it back.
	f, err := os.Open(out)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	vb, err := avb.ReadVBMeta(f, 0, avb.MaxVBMetaSize)
	if err != nil {
		return fail(err)
	}
	res := &vbmetaResult{Output: out, VBMeta: newVBMetaJSON(vb, "")}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		res.ImageSize = uint64(fi.Size())
	}
	if len(c.ChainPartitions) == 0 {
		// With no chain, androidboot.vbmeta.digest is this blob's own
		// sha256; with chains it takes their images too (avbtool
		// calculate_vbmeta_digest, once they are made).
		sum := sha256.Sum256(vb.Raw)
		res.VBMetaDigest = hex.EncodeToString(sum[:])
	}
	return writeAVBReport(o, stdout, stderr, out, "", res, res.print)
}

// avbFailer reports err as every --avb kind does and returns the exit
// code.
func avbFailer(o *options, stdout, stderr io.Writer) func(error) int {
	return func(err error) int {
		cli.Report(stderr, prog, err)
		if o.json {
			cli.ReportJSON(stdout, err)
		}
		return cli.ExitError
	}
}

// writeAVBReport prints res as JSON or as text (print), and fails as a
// report that could not be written does.
func writeAVBReport(o *options, stdout, stderr io.Writer, path, digest string, res any, print func(io.Writer)) int {
	out := &reportWriter{w: stdout}
	if o.json {
		cli.WriteJSON(out, res)
	} else {
		print(out)
	}
	if out.err != nil {
		return avbFailer(o, stdout, stderr)(reportFailed(path, digest, out.err))
	}
	return cli.ExitOK
}

// printMaxImageSize is --calc-max-image-size's answer.
func printMaxImageSize(w io.Writer, asJSON bool, n int64) {
	if asJSON {
		fmt.Fprintf(w, "{\n  \"max_image_size\": %d\n}\n", n)
	} else {
		fmt.Fprintf(w, "%d\n", n)
	}
}

// avbSalt is --salt as the AVB kinds take it: hex, or - for none.
func (o *options) avbSalt() ([]byte, error) {
	if o.tree.Salt == "-" {
		return []byte{}, nil
	}
	s, err := cli.ParseHex("--salt", o.tree.Salt)
	if err != nil {
		return nil, cli.Errorf("e.g. --salt=5eedf00d (hex), or --salt=- for none", "%v", err)
	}
	return s, nil
}

// vbmetaJSON describes a vbmeta blob written, in every --avb=hash and
// --avb=vbmeta report.
type vbmetaJSON struct {
	Size                  uint64 `json:"vbmeta_size"`
	Image                 string `json:"vbmeta_image,omitempty"`
	Algorithm             string `json:"algorithm"`
	PublicKeySHA1         string `json:"public_key_sha1"`
	RollbackIndex         uint64 `json:"rollback_index"`
	RollbackIndexLocation uint32 `json:"rollback_index_location"`
	Flags                 uint32 `json:"flags"`
	Descriptors           int    `json:"descriptors"`
	RequiredLibavb        string `json:"required_libavb_version"`
}

func newVBMetaJSON(vb *avb.VBMeta, image string) vbmetaJSON {
	j := vbmetaJSON{Size: uint64(len(vb.Raw)), Image: image, Algorithm: vb.Algorithm.Name, RollbackIndex: vb.Header.RollbackIndex,
		RollbackIndexLocation: vb.Header.RollbackIndexLocation, Flags: vb.Header.Flags, Descriptors: vb.NumDescriptors(),
		RequiredLibavb: fmt.Sprintf("%d.%d", vb.Header.RequiredLibavbMajor, vb.Header.RequiredLibavbMinor)}
	if len(vb.PublicKey) > 0 {
		j.PublicKeySHA1 = fmt.Sprintf("%x", sha1.Sum(vb.PublicKey))
	}
	return j
}

func (j *vbmetaJSON) print(w io.Writer) {
	fmt.Fprintf(w, "VBMeta size:     \t%d [bytes]\n", j.Size)
	if j.Image != "" {
		fmt.Fprintf(w, "VBMeta image:    \t%s\n", j.Image)
	}
	fmt.Fprintf(w, "Algorithm:       \t%s\n", j.Algorithm)
	if j.PublicKeySHA1 != "" {
		fmt.Fprintf(w, "Public key (sha1):\t%s\n", j.PublicKeySHA1)
	}
	fmt.Fprintf(w, "Rollback index:  \t%d (location %d)\n", j.RollbackIndex, j.RollbackIndexLocation)
	if j.Flags != 0 {
		fmt.Fprintf(w, "Flags:           \t%d\n", j.Flags)
	}
	fmt.Fprintf(w, "Descriptors:     \t%d\n", j.Descriptors)
	fmt.Fprintf(w, "Required libavb: \t%s\n", j.RequiredLibavb)
}

// hashFooterResult is the --avb=hash report.
type hashFooterResult struct {
	Image         string      `json:"image"`
	Digest        string      `json:"digest"`
	HashAlgorithm string      `json:"hash_algorithm"`
	Salt          string      `json:"salt"`
	DigestStored  bool        `json:"digest_stored"`
	DataFormat    string      `json:"data_format"`
	OriginalSize  uint64      `json:"original_size"`
	ImageSize     uint64      `json:"image_size"`
	PartitionName string      `json:"partition_name"`
	Footer        *footerJSON `json:"footer"`
	VBMeta        vbmetaJSON  `json:"avb"`
}

func (r *hashFooterResult) print(w io.Writer) {
	fmt.Fprintf(w, "Image:           \t%s\n", r.Image)
	fmt.Fprintf(w, "Partition name:  \t%s\n", r.PartitionName)
	fmt.Fprintf(w, "Hash algorithm:  \t%s\n", r.HashAlgorithm)
	salt := r.Salt
	if salt == "" {
		salt = "-"
	}
	fmt.Fprintf(w, "Salt:            \t%s\n", salt)
	stored := ""
	if !r.DigestStored {
		stored = " (not stored: persistent digest)"
	}
	fmt.Fprintf(w, "Digest:          \t%s%s\n", r.Digest, stored)
	fmt.Fprintf(w, "Original size:   \t%d [bytes]\n", r.OriginalSize)
	fmt.Fprintf(w, "Image size:      \t%d [bytes]\n", r.ImageSize)
	if r.Footer != nil {
		fmt.Fprintf(w, "VBMeta offset:   \t%d [bytes]\n", r.Footer.VBMetaOffset)
	} else {
		fmt.Fprintf(w, "Footer:          \tnone (--do-not-append-vbmeta-image)\n")
	}
	r.VBMeta.print(w)
}

// vbmetaResult is the --avb=vbmeta report.
type vbmetaResult struct {
	Output    string `json:"output"`
	ImageSize uint64 `json:"image_size,omitempty"`
	// VBMetaDigest is androidboot.vbmeta.digest, when the vbmeta chains
	// no partition (else it depends on their images).
	VBMetaDigest string     `json:"vbmeta_digest,omitempty"`
	VBMeta       vbmetaJSON `json:"avb"`
}

func (r *vbmetaResult) print(w io.Writer) {
	fmt.Fprintf(w, "VBMeta image:    \t%s\n", r.Output)
	if r.ImageSize != 0 {
		fmt.Fprintf(w, "Image size:      \t%d [bytes]\n", r.ImageSize)
	}
	r.VBMeta.print(w)
	if r.VBMetaDigest != "" {
		fmt.Fprintf(w, "VBMeta digest:   \t%s\n", r.VBMetaDigest)
	}
}
