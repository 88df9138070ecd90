package avbtool

// make_vbmeta_image, and what every subcommand that makes a vbmeta shares
// (avbtool's _add_common_args): the options, their checks in avbtool's
// order with avbtool's messages, the signing key or helper.

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// vbmetaFlags are avbtool's common vbmeta options.
type vbmetaFlags struct {
	algorithm, key, signingHelper, signingHelperWithFiles, publicKeyMetadata *string
	rollbackIndex, rollbackIndexLocation, flags                              number
	internalRelease, appendRelease                                           *string
	props, propsFromFile, kernelCmdlines, include, chains, chainsNoAB        *[]string
	// unnamedDescriptor: add_hash_footer without --partition_name, whose
	// descriptor avbtool then fails to encode (after the chains, before
	// the properties).
	unnamedDescriptor bool
	// One destination for both names, as argparse has it: the last given
	// wins.
	setupRootfs                     string
	printRequired, hashtreeDisabled *bool
	fs                              *pflag.FlagSet
}

// addVBMetaFlags adds the common vbmeta options to fs, in avbtool's order
// (its usage lists them so).
func addVBMetaFlags(fs *pflag.FlagSet) *vbmetaFlags {
	v := &vbmetaFlags{fs: fs}
	v.algorithm = fs.String("algorithm", "NONE", "Algorithm to use (default: NONE)")
	v.key = fs.String("key", "", "Path to RSA private key file")
	v.signingHelper = fs.String("signing_helper", "", "Path to helper used for signing")
	metavar(fs, "signing_helper", "APP")
	v.signingHelperWithFiles = fs.String("signing_helper_with_files", "", "Path to helper used for signing using files")
	metavar(fs, "signing_helper_with_files", "APP")
	v.publicKeyMetadata = fs.String("public_key_metadata", "", "Path to public key metadata file")
	metavar(fs, "public_key_metadata", "KEY_METADATA")
	// Numbers argparse takes that the header cannot hold are refused
	// late, where avbtool packs the header (checkHeaderNumbers).
	v.rollbackIndex.late, v.rollbackIndexLocation.late, v.flags.late = true, true, true
	fs.Var(&v.rollbackIndex, "rollback_index", "Rollback Index")
	fs.Var(&v.rollbackIndexLocation, "rollback_index_location", "Location of main vbmeta Rollback Index")
	v.internalRelease = fs.String("internal_release_string", "", "")
	_ = fs.MarkHidden("internal_release_string")
	v.appendRelease = fs.String("append_to_release_string", "", "Text to append to release string")
	metavar(fs, "append_to_release_string", "STR")
	v.props = fs.StringArray("prop", nil, "Add property")
	metavar(fs, "prop", "KEY:VALUE")
	v.propsFromFile = fs.StringArray("prop_from_file", nil, "Add property from file")
	metavar(fs, "prop_from_file", "KEY:PATH")
	v.kernelCmdlines = fs.StringArray("kernel_cmdline", nil, "Add kernel cmdline")
	metavar(fs, "kernel_cmdline", "CMDLINE")
	fs.StringVar(&v.setupRootfs, "setup_rootfs_from_kernel", "", "Adds kernel cmdline to set up IMAGE")
	metavar(fs, "setup_rootfs_from_kernel", "IMAGE")
	fileType(fs, "setup_rootfs_from_kernel", "r", "setup_rootfs_from_kernel/--generate_dm_verity_cmdline_from_hashtree")
	fs.StringVar(&v.setupRootfs, "generate_dm_verity_cmdline_from_hashtree", "", "old name of --setup_rootfs_from_kernel")
	_ = fs.MarkHidden("generate_dm_verity_cmdline_from_hashtree")
	fileType(fs, "generate_dm_verity_cmdline_from_hashtree", "r", "setup_rootfs_from_kernel/--generate_dm_verity_cmdline_from_hashtree")
	v.include = fs.StringArray("include_descriptors_from_image", nil, "Include descriptors from image")
	metavar(fs, "include_descriptors_from_image", "IMAGE")
	fileType(fs, "include_descriptors_from_image", "r", "include_descriptors_from_image")
	v.printRequired = fs.Bool("print_required_libavb_version", false, "Don't store the footer - instead calculate the required libavb version for the given options.")
	v.chains = fs.StringArray("chain_partition", nil, "Allow signed integrity-data for partition")
	metavar(fs, "chain_partition", "PART_NAME:ROLLBACK_SLOT:KEY_PATH")
	v.chainsNoAB = fs.StringArray("chain_partition_do_not_use_ab", nil, "Allow signed integrity-data for partition does not use A/B")
	metavar(fs, "chain_partition_do_not_use_ab", "PART_NAME:ROLLBACK_SLOT:KEY_PATH")
	fs.Var(&v.flags, "flags", "VBMeta flags")
	v.hashtreeDisabled = fs.Bool("set_hashtree_disabled_flag", false, "Set the HASHTREE_DISABLED flag")
	return v
}

// release returns the release string options as avbtool has them: nil
// for one not given (argparse's None), an empty one kept empty.
func (v *vbmetaFlags) release() (internal, appended *string) {
	if v.fs.Changed("internal_release_string") {
		internal = v.internalRelease
	}
	if v.fs.Changed("append_to_release_string") {
		appended = v.appendRelease
	}
	return internal, appended
}

// flags32 returns the vbmeta flags and the rollback index location as the
// 32-bit numbers the header holds; one past 32 bits (checkHeaderNumbers
// refuses it before anything is written) counts as the largest, for the
// libavb version it needs.
func (v *vbmetaFlags) flags32() (flags, location uint32) {
	flags = uint32(min(v.flags.v, math.MaxUint32))
	if *v.hashtreeDisabled {
		flags |= avb.FlagHashtreeDisabled
	}
	return flags, uint32(min(v.rollbackIndexLocation.v, math.MaxUint32))
}

// checkHeaderNumbers refuses, as avbtool's packing of the vbmeta header
// does once every other input is read, a rollback index, flags or
// rollback index location that its field cannot hold (argparse took
// negative ones, and numbers past 64 bits): the struct.error avbtool's
// handlers quote, for the first in the header's order.
func (v *vbmetaFlags) checkHeaderNumbers() error {
	for _, f := range []struct {
		name string
		n    *number
		max  uint64
	}{{"rollback_index", &v.rollbackIndex, math.MaxUint64}, {"flags", &v.flags, math.MaxUint32},
		{"rollback_index_location", &v.rollbackIndexLocation, math.MaxUint32}} {
		var py string
		switch {
		case f.n.bad == "" && f.n.v <= f.max:
			continue
		case f.max == math.MaxUint64:
			py = "int too large to convert" // Python's words for 'Q', negative or not
		case strings.HasPrefix(strings.TrimSpace(f.n.bad), "-"):
			py = "argument out of range"
		default:
			py = "'L' format requires 0 <= number <= 4294967295"
		}
		given := f.n.bad
		if given == "" {
			given = f.n.String()
		}
		return &pyErr{fmt.Errorf("--%s %s: a number from 0 to %d is needed", f.name, given, f.max), py}
	}
	return nil
}

// pyLocation is --rollback_index_location as avbtool holds it (a negative
// number too), for the check that a chained partition's differs.
func (v *vbmetaFlags) pyLocation() string {
	return v.rollbackIndexLocation.signed()
}

// chainPartitions checks and reads the chained partitions as avbtool's
// _generate_vbmeta_blob does, in its order and with its messages: those
// of --chain_partition, then of --chain_partition_do_not_use_ab; each is
// split, its location read as Python's int(), checked unused and at least
// 1, then its key file read.
func (t *tool) chainPartitions(v *vbmetaFlags) ([]avb.ChainPartition, error) {
	used := map[string]bool{v.pyLocation(): true}
	var out []avb.ChainPartition
	for _, spec := range append(append([]string(nil), *v.chains...), *v.chainsNoAB...) {
		tok := strings.Split(spec, ":")
		if len(tok) != 3 {
			return nil, avbErr("Malformed chained partition \"%s\".", spec)
		}
		n, ok := pyInt10(tok[1])
		if !ok {
			return nil, &pyErr{fmt.Errorf("chained partition %q: rollback index location %q is not a number", spec, tok[1]),
				"invalid literal for int() with base 10: " + pyStr(tok[1])}
		}
		loc := strconv.FormatInt(n, 10)
		if used[loc] {
			return nil, avbErr("Rollback Index Location %d is already in use.", n)
		}
		used[loc] = true
		if n < 1 {
			return nil, avbErr("Rollback index location must be 1 or larger.")
		}
		if n > math.MaxUint32 {
			// avbtool fails packing it, once everything else is read.
			return nil, fmt.Errorf("chained partition %q: rollback index location %d is past 32 bits", spec, n)
		}
		key, err := t.readSmallFile(tok[2], "public key", maxChainKey)
		if err != nil {
			return nil, err
		}
		// avbtool flags a partition given in both lists in both.
		out = append(out, avb.ChainPartition{Name: tok[0], RollbackIndexLocation: uint32(n), PublicKey: key,
			DoNotUseAB: contains(*v.chainsNoAB, spec), Spec: spec})
	}
	return out, nil
}

// pyInt10 reads s as Python's int(s) does (base 10): spaces around, a
// sign, decimal digits (Unicode ones too; leading zeros taken) with single
// underscores between them. A number past int64 is refused as if it were
// not one (no location is that large).
func pyInt10(s string) (int64, bool) {
	s = strings.TrimSpace(pyASCII(s)) // Unicode spaces and digits as Python reads them
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	prevDigit := false
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			prevDigit = true
		case r == '_' && prevDigit && i+1 < len(s):
			prevDigit = false
		default:
			return 0, false
		}
	}
	if !prevDigit {
		return 0, false // empty, or ending with '_'
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// maxPropertyFile bounds a property value read from a file (the avb
// package's bound).
const maxPropertyFile = 16 << 20

// properties reads --prop and --prop_from_file as avbtool does: every
// --prop (one without a colon refused), then every --prop_from_file, each
// checked then its file read.
func (t *tool) properties(v *vbmetaFlags) ([]avb.Property, error) {
	var out []avb.Property
	for _, p := range *v.props {
		k, val, ok := strings.Cut(p, ":")
		if !ok {
			return nil, avbErr("Malformed property \"%s\".", p)
		}
		out = append(out, avb.Property{Key: k, Value: []byte(val)})
	}
	for _, p := range *v.propsFromFile {
		k, path, ok := strings.Cut(p, ":")
		if !ok {
			return nil, avbErr("Malformed property \"%s\".", p)
		}
		val, err := t.readSmallFile(path, "property file", maxPropertyFile)
		if err != nil {
			return nil, err
		}
		out = append(out, avb.Property{Key: k, Value: val})
	}
	return out, nil
}

// signing returns what signs for alg, as avbtool checks it: nothing for
// NONE (no key is read), else the key is required and its size must be
// the algorithm's before anything signs. A signing helper (with files
// first, as avbtool prefers it) gets the key's path as given, which may
// then be a public key.
func (t *tool) signing(v *vbmetaFlags, alg *avb.Algorithm) (*avbSigning, error) {
	s := &avbSigning{}
	if alg.Type == 0 {
		return s, nil
	}
	if *v.key == "" {
		return nil, avbErr("Key is required for algorithm %s", alg.Name)
	}
	pub, err := avb.LoadPublicKey(t.ctx, *v.key)
	if err != nil {
		return nil, err
	}
	blob, err := avb.EncodePublicKey(pub)
	if err != nil {
		return nil, err // an exponent other than 65537: not a wrong size
	}
	if len(blob) != alg.PublicKeySize {
		return nil, avbErr("Key is wrong size for algorithm %s", alg.Name)
	}
	switch {
	case *v.signingHelperWithFiles != "":
		// Its stderr passes through, as avbtool lets it.
		s.signer = &avb.HelperSigner{Program: *v.signingHelperWithFiles, KeyPath: *v.key, Public: pub, WithFiles: true, Stderr: t.stderr}
		s.withFiles = true
	case *v.signingHelper != "":
		s.signer = &avb.HelperSigner{Program: *v.signingHelper, KeyPath: *v.key, Public: pub}
	default:
		if s.key, err = avb.LoadPrivateKey(t.ctx, *v.key); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// avbSigning is the key or the signing helper that signs.
type avbSigning struct {
	key       *rsa.PrivateKey
	signer    avb.Signer
	withFiles bool
}

// signingMessage is avbtool's message for a signing helper's failure
// (its stderr quoted as Python prints bytes; with files, it passed
// through), or "" for any other error.
func signingMessage(err error, withFiles bool) string {
	var he *avb.HelperError
	if !errors.As(err, &he) || errors.Is(err, verity.ErrParam) {
		return "" // could not be run: avbtool's is a traceback
	}
	switch {
	case he.ExitCode != 0 && withFiles:
		return "Error signing"
	case he.ExitCode != 0:
		return "Error signing: " + pyBytes(he.Stderr)
	}
	return "Error signing: Invalid length of signature"
}

// fail reports an error of a subcommand that answers with avbtool's
// messages: avbtool's own as it prints them ("argv0: message", exit 1),
// a signing helper's failure as avbtool words it, anything else in our
// words (where avbtool has a Python traceback).
func (t *tool) fail(err error, withFiles bool) int {
	if t.ctx.Err() != nil {
		return t.failed(err)
	}
	if msg := signingMessage(err, withFiles); msg != "" {
		fmt.Fprintf(t.stderr, "%s: %s\n", t.prog, msg)
		return exitFailed
	}
	var m avbMessage
	if errors.As(err, &m) {
		fmt.Fprintf(t.stderr, "%s: %s\n", t.prog, m)
		return exitFailed
	}
	return t.failed(err)
}

func (t *tool) makeVBMetaImage(args []string) int {
	const cmd = "make_vbmeta_image"
	fs := t.flagSet(cmd)
	output := fs.String("output", "", "Output file name")
	fileType(fs, "output", "w", "output")
	var padding number
	fs.Var(&padding, "padding_size", "If non-zero, pads output with NUL bytes so its size is a multiple of NUMBER (default: 0)")
	metavar(fs, "padding_size", "NUMBER")
	v := addVBMetaFlags(fs)
	if code, done := t.parse(cmd, fs, args); done {
		return code
	}
	o, s, err := t.vbmetaImageOptions(v, *output)
	if err != nil || o == nil {
		if err != nil {
			return t.fail(err, false)
		}
		return exitOK // printed the required version
	}
	o.PaddingSize = padding.v
	if *output == "-" {
		err = t.writeVBMetaToStdout(o)
	} else {
		err = avb.MakeVBMetaImage(t.ctx, *output, o)
	}
	if err != nil {
		if errors.Is(err, avb.ErrNoHashtree) {
			err = avbErr("No hashtree descriptor in given image") // --setup_rootfs_from_kernel's image
		}
		return t.fail(err, s.withFiles)
	}
	return exitOK
}

// vbmetaImageOptions makes make_vbmeta_image's options of v, checked in
// avbtool's order; nil options (and no error) when it only printed the
// required libavb version.
func (t *tool) vbmetaImageOptions(v *vbmetaFlags, output string) (*avb.VBMetaImageOptions, *avbSigning, error) {
	// avbtool reads the included images first, for the libavb version
	// they need (also when that is all it prints).
	if err := checkIncluded(*v.include); err != nil {
		return nil, nil, err
	}
	_, location := v.flags32()
	if *v.printRequired {
		o := &avb.VBMetaImageOptions{RollbackIndexLocation: location, IncludeDescriptorsFrom: *v.include}
		// avbtool counts these before reading anything.
		for range *v.chainsNoAB {
			o.ChainPartitions = append(o.ChainPartitions, avb.ChainPartition{DoNotUseAB: true})
		}
		m, err := o.RequiredLibavbMinor()
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(t.stdout, "1.%d\n", m)
		return nil, nil, nil
	}
	if output == "" {
		return nil, nil, avbErr("No output file given")
	}
	c, s, err := t.vbmetaCommon(v)
	if err != nil {
		return nil, nil, err
	}
	return &avb.VBMetaImageOptions{
		Algorithm: c.Algorithm, Key: c.Key, Signer: c.Signer, ChainPartitions: c.ChainPartitions, Properties: c.Properties,
		SetupRootfsFromKernel: c.SetupRootfsFromKernel, KernelCmdlines: c.KernelCmdlines,
		IncludeDescriptorsFrom: c.IncludeDescriptorsFrom, PublicKeyMetadata: c.PublicKeyMetadata,
		RollbackIndex: c.RollbackIndex, RollbackIndexLocation: c.RollbackIndexLocation, Flags: c.Flags,
		ReleaseString: c.ReleaseString, AppendToReleaseString: c.AppendToReleaseString,
	}, s, nil
}

// vbmetaCommon reads the common vbmeta options as avbtool's
// _generate_vbmeta_blob does, in its order and with its messages: the
// algorithm, the chained partitions, the properties, the image of
// --setup_rootfs_from_kernel, the included images, the public key
// metadata, then the key or the signing helper.
func (t *tool) vbmetaCommon(v *vbmetaFlags) (*avb.VBMetaCommonOptions, *avbSigning, error) {
	flags, location := v.flags32()
	c := &avb.VBMetaCommonOptions{
		Algorithm: *v.algorithm, RollbackIndex: v.rollbackIndex.v, RollbackIndexLocation: location, Flags: flags,
		SetupRootfsFromKernel: v.setupRootfs, KernelCmdlines: *v.kernelCmdlines, IncludeDescriptorsFrom: *v.include,
	}
	c.ReleaseString, c.AppendToReleaseString = v.release()
	alg, err := avb.AlgorithmByName(*v.algorithm)
	if err != nil || *v.algorithm == "" {
		// (The library reads "" as NONE; avbtool knows no such name.)
		return nil, nil, avbErr("Unknown algorithm with name %s", *v.algorithm)
	}
	if c.ChainPartitions, err = t.chainPartitions(v); err != nil {
		return nil, nil, err
	}
	if v.unnamedDescriptor {
		return nil, nil, avbErr("--partition_name is required")
	}
	if c.Properties, err = t.properties(v); err != nil {
		return nil, nil, err
	}
	if v.setupRootfs != "" {
		img, err := readVBMetaOf(v.setupRootfs)
		if err != nil {
			return nil, nil, err
		}
		if img.VBMeta.FirstHashtree() == nil {
			return nil, nil, avbErr("No hashtree descriptor in given image")
		}
	}
	// (The kernel command lines come next: nothing to check.)
	if err := checkIncluded(*v.include); err != nil {
		return nil, nil, err
	}
	if *v.publicKeyMetadata != "" {
		if c.PublicKeyMetadata, err = t.readSmallFile(*v.publicKeyMetadata, "public key metadata", maxPublicKeyMetadata); err != nil {
			return nil, nil, err
		}
	}
	s, err := t.signing(v, alg)
	if err != nil {
		return nil, nil, err
	}
	if err := v.checkHeaderNumbers(); err != nil {
		return nil, nil, err
	}
	c.Key, c.Signer = s.key, s.signer
	return c, s, nil
}

// checkIncluded reads the --include_descriptors_from_image images as
// avbtool does before it copies their descriptors: one that holds no
// vbmeta fails in avbtool's words.
func checkIncluded(paths []string) error {
	for _, p := range paths {
		if _, err := readVBMetaOf(p); err != nil {
			return err
		}
	}
	return nil
}

// readVBMetaOf reads the vbmeta of an image another names (included,
// --setup_rootfs_from_kernel, append_vbmeta_image's): avbtool's words for
// one that holds none, and for one too short to hold any the Python
// exception its handlers quote.
func readVBMetaOf(path string) (*avb.Image, error) {
	img, err := avb.ReadImage(path)
	if notVBMeta(err) {
		return nil, avbErr("Given image does not look like a vbmeta image.")
	}
	if err != nil {
		// (No vbmeta fits in fewer bytes than its header.)
		if py := shortImageError(path, sourceSize(path)); py != "" {
			return nil, &pyErr{err, py}
		}
	}
	return img, err
}

// shortImageError is the Python exception avbtool's ImageHandler and
// _parse_image meet in a file too short for a vbmeta (expanded: its size,
// a sparse image's expansion): the sparse header's 28 bytes unpacked, the
// footer's seek 64 bytes from the end, the header's 256 bytes unpacked.
func shortImageError(path string, expanded int64) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil || expanded < 0 || expanded >= avb.HeaderSize:
		return ""
	case fi.Size() < 28:
		return "unpack requires a buffer of 28 bytes"
	case expanded < avb.FooterSize:
		return fmt.Sprintf("Seeking with negative offset: %d", expanded-avb.FooterSize)
	}
	return fmt.Sprintf("unpack requires a buffer of %d bytes", avb.HeaderSize)
}

// writeVBMetaToStdout writes the image to stdout (--output -): the blob,
// then the padding's zeros.
func (t *tool) writeVBMetaToStdout(o *avb.VBMetaImageOptions) error {
	blob, err := avb.VBMetaImage(t.ctx, o)
	if err != nil {
		return err
	}
	return t.writePadded(blob, o.PaddingSize)
}

// writePadded writes b and zeros to a multiple of padding (0: none, at
// most 1 GiB) to stdout.
func (t *tool) writePadded(b []byte, padding uint64) error {
	if padding > 1<<30 {
		return fmt.Errorf("--padding_size %d is larger than 1 GiB", padding)
	}
	if _, err := t.stdout.Write(b); err != nil {
		return err
	}
	if padding == 0 {
		return nil
	}
	left := (uint64(len(b))+padding-1)/padding*padding - uint64(len(b))
	zeros := make([]byte, min(left, 64<<10))
	w := safefile.ContextWriter(t.ctx, t.stdout)
	for left > 0 {
		n := min(left, uint64(len(zeros)))
		if _, err := w.Write(zeros[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}
