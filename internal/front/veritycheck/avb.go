package veritycheck

// Android Verified Boot images: a partition image that ends in an AVB
// footer carries its own signed root digest (the vbmeta's hashtree
// descriptor), so it is checked from the image alone.

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

const avbUsage = `
An Android Verified Boot image (from 'avbtool add_hashtree_footer' or
add_hash_footer) is checked from the image alone: 'veritycheck IMAGE'. It
decides as libavb (the bootloader) does: the vbmeta must be signed, and
with --avb-key signed with that key (the key's SHA-1 is always shown, as
'avbtool info_image' shows it); a vbmeta a bootloader refuses outright (a
newer libavb required, a malformed header) is refused. Then the footer,
which no signature covers, must agree with the partition's descriptors,
the data and the tree must match the hashtree descriptor (every corrupted
block listed as above), and every other hashtree or hash descriptor of the
partition must match; --repair rebuilds corrupted blocks from the FEC
parity the descriptor points at (no --fec-device needed; an image with
hash descriptors only is checked, with a warning: it has no parity). An Android
sparse image is checked as the image it expands to; --repair is refused
for it (expand it first with simg2img). A signature that does not verify
(or not with --avb-key) is exit 1, and the tree is then not checked:
nothing in it can be trusted. An unsigned vbmeta is checked through and is
exit 1 too: libavb's OK_NOT_SIGNED is a verification error, which a locked
device does not boot. What no bootloader boots (malformed or inconsistent
metadata, a libavb version it lacks) is exit 2. avb/LIBAVB.md lists every
decision. This AVB check is chosen when DATA ends in an AVB footer and
neither HASH nor a root hash is given: without a root hash there is nothing
else to check against. With a root hash (or HASH) the tree is checked as
any other; --avb asks for the AVB check explicitly (an error without a
footer). The report lists the first 1000 descriptors and counts the rest,
names and values cut to 1 KiB.`

// avbFlagConflicts are the flags that give what an AVB image's vbmeta
// says itself.
var avbFlagConflicts = append([]string{"root-hash", "root-hash-file", "hash-offset", "no-superblock",
	"fec-device", "fec-offset", "fec-roots", "raw", "dump", "root-hash-signature", "sign-cert"}, treeFlagNames...)

// avbJSON is the "avb" part of the JSON report.
type avbJSON struct {
	OriginalImageSize uint64 `json:"original_image_size"`
	VBMetaOffset      uint64 `json:"vbmeta_offset"`
	VBMetaSize        uint64 `json:"vbmeta_size"`
	Algorithm         string `json:"algorithm"`
	// PublicKeySHA1 is the SHA-1 of the embedded AVB public key blob
	// ("" when the vbmeta embeds none).
	PublicKeySHA1 string `json:"public_key_sha1"`
	KeyGiven      bool   `json:"key_given"`
	// Signed: the algorithm is not NONE. SignatureVerified: a signature
	// was checked and holds (made with the key given, if any); never for
	// an unsigned vbmeta, whatever key it embeds. VBMetaVerifyResult is
	// libavb's avb_vbmeta_image_verify result (OK, OK_NOT_SIGNED,
	// HASH_MISMATCH, SIGNATURE_MISMATCH).
	Signed                bool   `json:"signed"`
	SignatureVerified     bool   `json:"signature_verified"`
	VBMetaVerifyResult    string `json:"vbmeta_verify_result"`
	SignatureError        string `json:"signature_error,omitempty"`
	RollbackIndex         uint64 `json:"rollback_index"`
	RollbackIndexLocation uint32 `json:"rollback_index_location"`
	Flags                 uint32 `json:"flags"`
	ReleaseString         string `json:"release_string"`
	// PartitionName is the image's partition: that of the vbmeta's first
	// hashtree or hash descriptor.
	PartitionName string `json:"partition_name"`
	// PersistentDigest: the partition's hashtree descriptor stores no root
	// digest; the tree is checked against the root it has itself.
	PersistentDigest bool `json:"persistent_digest"`
	// TreeVerified: the data and the tree match the partition's first
	// hashtree descriptor (false when it has none).
	TreeVerified bool `json:"tree_verified"`
	// DescriptorChecks are the checks of the partition's other
	// descriptors: further hashtree descriptors, hash descriptors.
	DescriptorChecks []descriptorCheckJSON `json:"descriptor_checks"`
	// Descriptors lists the first maxListedDescriptors descriptors;
	// DescriptorCount counts them all, DescriptorsNotListed the rest.
	Descriptors          []descriptorJSON `json:"descriptors"`
	DescriptorCount      int              `json:"descriptor_count"`
	DescriptorsNotListed int              `json:"descriptors_not_listed"`
}

// maxListedDescriptors bounds the descriptors the reports list, and
// maxDescribed the bytes of a name, a command line or a value they show:
// a vbmeta of 16 MiB holds a million descriptors, or one of 16 MiB.
const (
	maxListedDescriptors = 1000
	maxDescribed         = 1024
)

type descriptorCheckJSON struct {
	Index   int    `json:"index"` // among the descriptors, from 1
	Type    string `json:"type"`  // hashtree or hash
	Matches bool   `json:"matches"`
	Problem string `json:"problem,omitempty"`
	Note    string `json:"note,omitempty"`
}

// accepted says whether the vbmeta is signed and verified and every
// descriptor of the partition matches: what "verified" needs besides the
// tree.
func (aj *avbJSON) accepted() bool {
	return aj == nil || aj.SignatureVerified && aj.descriptorsMatch()
}

func (aj *avbJSON) descriptorsMatch() bool {
	for _, c := range aj.DescriptorChecks {
		if !c.Matches {
			return false
		}
	}
	return true
}

type descriptorJSON struct {
	Type          string `json:"type"` // hashtree, hash, property, kernel_cmdline, chain_partition, unknown
	PartitionName string `json:"partition_name,omitempty"`
	// Text is the rest, as the text report shows it.
	Text string `json:"text"`
}

// wantsAVB says whether the command line asks for the AVB check: --avb or
// --avb-key, or else one argument that ends in an AVB footer and no root
// hash given. The error is that of an image another process is writing:
// whether it will end in a footer cannot be known yet.
func wantsAVB(o *options, args []string) (bool, error) {
	if o.avb || o.tree.Changed("avb-key") {
		return true, nil
	}
	if len(args) != 1 || o.tree.Changed("root-hash") || o.tree.Changed("root-hash-file") || o.rootPositional || o.sign.wanted() {
		return false, nil
	}
	src, err := verity.OpenSource(args[0], nil)
	if errors.Is(err, verity.ErrLocked) {
		return false, err
	}
	if err != nil {
		return false, nil // the plain check says what is wrong with DATA
	}
	defer src.Close()
	_, err = avb.ReadFooter(src, src.Size())
	// A footer that does not parse is still one: it is reported as such.
	return !errors.Is(err, avb.ErrNoFooter) && (err == nil || errors.Is(err, avb.ErrMalformed)), nil
}

// readAVBKey reads --avb-key: an RSA key in PEM (public or private) or an
// AVB public key blob (avbtool extract_public_key), and returns the blob.
// It may be a pipe or a FIFO, whose wait for a writer ends with ctx.
func readAVBKey(ctx context.Context, path string) ([]byte, error) {
	// An 8192-bit key in PEM is under 7 KiB: a larger file is not a key.
	b, err := safefile.ReadSmall(ctx, path, 1<<20)
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, safefile.Interrupted(ctx, "--avb-key "+path)
	case errors.Is(err, fs.ErrNotExist):
		return nil, cli.Errorf("", "--avb-key %s does not exist", path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, cli.Errorf("give the key in PEM or as avbtool extract_public_key writes it", "--avb-key %s: larger than 1 MiB, not a key", path)
	default:
		return nil, cli.Errorf("", "--avb-key %s: %s", path, safefile.Message(err))
	}
	if bytes.Contains(b, []byte("-----BEGIN")) {
		// Wrapped: the library's hint says what the key should be.
		pub, err := avb.ParsePublicKeyPEM(b)
		if err != nil {
			return nil, fmt.Errorf("--avb-key %s: %w", path, err)
		}
		blob, err := avb.EncodePublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("--avb-key %s: %w", path, err)
		}
		return blob, nil
	}
	if _, err := avb.DecodePublicKey(b); err != nil {
		return nil, cli.Errorf("give an RSA key in PEM (public or private) or an AVB public key blob (avbtool extract_public_key)",
			"--avb-key %s: neither PEM nor an AVB public key: %v", path, err)
	}
	return b, nil
}

func sha1Hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// checkAVB checks an AVB partition image as libavb decides about it (the
// bootloader is the authority; see avb/LIBAVB.md): the vbmeta's signature
// and what it holds, the footer against the partition's descriptors, then
// the data and the tree against its hashtree descriptor and every other
// descriptor of the partition. An unsigned vbmeta (without --avb-key) is
// checked through and then fails: libavb's OK_NOT_SIGNED is a verification
// error, which a locked device does not boot.
func checkAVB(ctx context.Context, o *options, args []string, stdout, stderr io.Writer, showProgress bool) (int, error) {
	path, key, err := avbArgs(ctx, o, args)
	if err != nil {
		return cli.ExitError, err
	}
	// Locked shared from the metadata read to the end of the check (the
	// later opens of the image share this lock): no writer comes between.
	held, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image", Raw: true})
	if err != nil {
		return cli.ExitError, err
	}
	defer held.Close()
	img, err := avb.ReadImage(path)
	if err != nil {
		return cli.ExitError, err
	}
	if img.Interrupted() {
		return cli.ExitError, cli.Errorf(fmt.Sprintf("run the same command again to finish it (or cut it back to the image: avbtool erase_footer --image %s)", path),
			"%s: an interrupted add_hashtree_footer (veritygen --avb, or avbtool) left only its provisional footer: there is no tree to check yet; the image is its first %d bytes",
			path, img.Footer.OriginalImageSize)
	}
	if img.Footer == nil {
		return cli.ExitError, cli.Errorf(fmt.Sprintf("a vbmeta image holds no partition data; check the set it signs: veritycheck --avb-slot %s [DIR]", path),
			"%s: no AVB footer: it is a vbmeta image, not a partition image", path)
	}
	aj := newAVBJSON(img, key)
	o.avbReport = aj
	if code, err := avbSignature(o, img, aj, path, key, stdout); err != nil {
		return code, err
	}
	if err := avbMetadata(path, img); err != nil {
		return cli.ExitError, err
	}
	p := img.VBMeta.Partition()
	if p.NumHashtrees == 0 && p.NumHashes == 0 {
		return cli.ExitError, cli.Errorf("", "%s: the vbmeta has no hashtree or hash descriptor: there is nothing of the image to check", path)
	}
	if err := avbRepairable(o, img, p, path, stderr); err != nil {
		return cli.ExitError, err
	}
	var res *verity.VerifyResult
	if p.NumHashtrees > 0 {
		vo := &verity.VerifyOptions{Repair: o.repair, Jobs: o.jobs, MaxProblems: o.maxProblems}
		if o.maxProblems == 0 {
			vo.MaxProblems = 1 // 0 would be the library's default; none is listed
		}
		finish := reportTo(vo, stderr, showProgress, &o.warnings)
		res, err = avb.VerifyHashtree(ctx, path, img, vo)
		finish()
		if err != nil {
			return cli.ExitError, err
		}
		defer res.Close()
		aj.TreeVerified = res.Verified
	}
	checks, err := avb.CheckPartitionDescriptors(ctx, path, img, o.jobs)
	if err != nil {
		return cli.ExitError, err
	}
	for _, c := range checks {
		aj.DescriptorChecks = append(aj.DescriptorChecks, descriptorCheckJSON{Index: c.Index, Type: descriptorType(c.Descriptor),
			Matches: c.Matches, Problem: c.Problem, Note: c.Note})
	}
	if !o.json {
		printChecks(stdout, aj)
	}
	return avbVerdict(o, res, p, aj, path, stdout)
}

// avbArgs checks the AVB check's command line and reads --avb-key.
func avbArgs(ctx context.Context, o *options, args []string) (string, []byte, error) {
	for _, name := range avbFlagConflicts {
		if o.tree.Changed(name) {
			return "", nil, cli.Errorf("the AVB check takes the tree's parameters, root digest and FEC from the vbmeta; leave --"+name+" out, or give a root hash to check the tree as any other",
				"--%s does not go with the AVB check", name)
		}
	}
	if len(args) != 1 {
		return "", nil, cli.Errorf("usage: veritycheck [--avb-key KEY] [--repair] IMAGE",
			"the AVB check takes one argument, IMAGE (the tree and the parity are in it); got %d", len(args))
	}
	if o.jobs < 1 {
		return "", nil, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1")
	}
	if o.avbKey == "" {
		return args[0], nil, nil
	}
	key, err := readAVBKey(ctx, o.avbKey)
	return args[0], key, err
}

func newAVBJSON(img *avb.Image, key []byte) *avbJSON {
	v := img.VBMeta
	aj := &avbJSON{OriginalImageSize: img.Footer.OriginalImageSize, VBMetaOffset: img.Footer.VBMetaOffset, VBMetaSize: img.Footer.VBMetaSize,
		Algorithm: v.Algorithm.Name, KeyGiven: key != nil, Signed: v.Algorithm.Type != 0, RollbackIndex: v.Header.RollbackIndex,
		RollbackIndexLocation: v.Header.RollbackIndexLocation, Flags: v.Header.Flags, ReleaseString: v.Header.ReleaseString,
		DescriptorChecks: []descriptorCheckJSON{}}
	if len(v.PublicKey) > 0 {
		aj.PublicKeySHA1 = sha1Hex(v.PublicKey)
	}
	p := v.Partition()
	aj.PartitionName = clip(p.Name)
	if p.FirstHashtree != nil {
		aj.PersistentDigest = len(p.FirstHashtree.RootDigest) == 0
	}
	aj.Descriptors, aj.DescriptorCount = describeDescriptors(v, p.Name), v.NumDescriptors()
	aj.DescriptorsNotListed = aj.DescriptorCount - len(aj.Descriptors)
	return aj
}

// avbSignature decides about the vbmeta's signature as libavb does and
// prints what the footer and the vbmeta say. A signature that fails (or
// is not made with --avb-key, or is missing when --avb-key asks for one)
// ends the check, exit 1: nothing in the vbmeta can be trusted. An
// unsigned vbmeta without --avb-key goes on, to fail at the end.
func avbSignature(o *options, img *avb.Image, aj *avbJSON, path string, key []byte, stdout io.Writer) (int, error) {
	res, _ := avb.VerifyVBMetaBlob(img.VBMeta.Raw)
	aj.VBMetaVerifyResult = res.String()
	switch sigErr := img.VerifyVBMeta(key); {
	case sigErr == nil:
		aj.SignatureVerified = true
	case errors.Is(sigErr, avb.ErrNotSigned) && key == nil:
	case errors.Is(sigErr, avb.ErrNotSigned), errors.Is(sigErr, avb.ErrSignature):
		aj.SignatureError = prefixPath(path, sigErr).Error()
	default: // malformed, or a libavb too old for it: no bootloader goes on
		return cli.ExitError, prefixPath(path, sigErr)
	}
	if !o.json {
		printAVB(stdout, path, img, aj, o.avbKey)
	}
	if aj.SignatureError == "" {
		return cli.ExitOK, nil
	}
	hint := "the tree was not checked: a vbmeta that does not verify vouches for nothing; to check the tree anyway give the root hash you trust (--root-hash) and the tree's parameters"
	err := cli.WithHint(errors.New(aj.SignatureError), hint)
	if o.json {
		if werr := writeAVBJSON(stdout, aj, err, hint); werr != nil {
			return cli.ExitError, werr
		}
	}
	return cli.ExitCorrupt, err
}

// writeAVBJSON is the JSON report of an AVB check that checked no tree.
func writeAVBJSON(w io.Writer, aj *avbJSON, err error, hint string) error {
	out := struct {
		Verified bool     `json:"verified"`
		AVB      *avbJSON `json:"avb"`
		Error    string   `json:"error,omitempty"`
		Hint     string   `json:"hint,omitempty"`
	}{Verified: err == nil, AVB: aj, Hint: cli.Flags.Say(hint)}
	if err != nil {
		out.Error = cli.Flags.Message(err)
	}
	return cli.WriteJSON(w, out)
}

// avbMetadata makes libavb's checks of what the vbmeta holds, and checks
// the footer (which no signature covers) against the partition's
// descriptors.
func avbMetadata(path string, img *avb.Image) error {
	if err := img.CheckMetadata(); err != nil {
		return prefixPath(path, err)
	}
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	// Each hashtree descriptor's own sense first (its sizes within the
	// image): a footer is judged against descriptors that hold together.
	for _, d := range img.VBMeta.Partition().Hashtrees() {
		if _, _, err := img.HashtreeCheck(d); err != nil {
			return prefixPath(path, err)
		}
	}
	if err := img.CheckFooter(src); err != nil {
		return prefixPath(path, err)
	}
	return nil
}

func avbRepairable(o *options, img *avb.Image, p *avb.Partition, path string, stderr io.Writer) error {
	if !o.repair {
		return nil
	}
	if p.NumHashtrees == 0 {
		// A hash-footer image (boot.img) in a --repair run over a
		// device's images: checked, with nothing to repair it from.
		cli.Warn(stderr, prog, "--repair: %s has no hashtree descriptor, so no parity to rebuild blocks from: it is only checked", path)
		o.repair = false
		return nil
	}
	if img.Sparse {
		// A repair writes blocks of the expansion in place: in a sparse
		// file they may be FILL or DONT_CARE chunks, with no bytes to
		// write into.
		return cli.Errorf(fmt.Sprintf("expand it first (simg2img %s image.raw), then veritycheck --repair image.raw (and img2simg it again if a sparse image is needed)", path),
			"--repair: %s is an Android sparse image, and a repair cannot write into it", path)
	}
	if ht := p.FirstHashtree; ht.FECNumRoots == 0 || ht.FECSize == 0 {
		return cli.Errorf("nothing to rebuild corrupted blocks from: the image was made without FEC (avbtool --do_not_generate_fec)",
			"--repair: the hashtree descriptor of %s points at no FEC parity", path)
	}
	return nil
}

// avbVerdict reports the tree (when there is one) and gives the exit code:
// 0 only when the tree, every descriptor of the partition and the
// signature hold.
func avbVerdict(o *options, res *verity.VerifyResult, p *avb.Partition, aj *avbJSON, path string, stdout io.Writer) (int, error) {
	var root []byte
	if res != nil {
		root = p.FirstHashtree.RootDigest
		if err := report(o, res, root, path, path, stdout); err != nil {
			return cli.ExitError, err
		}
		if !res.Verified {
			code, err := verdict(o, res, root, stdout)
			if d := res.RootDiagnosis; d != nil && d.Match != nil && len(d.Changed) > 0 {
				// The parameters are the signed descriptor's, not flags.
				err = cli.Errorf("the image was made with other parameters than its signed descriptor says: the kernel, which sets the tree up from the descriptor, would refuse it",
					"verification failed: the tree is not the one the hashtree descriptor's parameters give: its top block matches the root digest with %s", strings.Join(d.Changed, " "))
			}
			return code, err
		}
	}
	err := avbFailure(aj, path)
	if res == nil && o.json {
		hint := ""
		var ce *cli.Error
		if errors.As(err, &ce) {
			hint = ce.Hint
		}
		if werr := writeAVBJSON(stdout, aj, err, hint); werr != nil {
			return cli.ExitError, werr
		}
	}
	switch {
	case err != nil && !o.json && aj.descriptorsMatch():
		// All that fails is the signature: say what holds.
		fmt.Fprintf(stdout, "not signed: %s, but nothing vouches for it\n", avbVerifiedWhat(res, p, root))
		return cli.ExitCorrupt, err
	case err != nil:
		return cli.ExitCorrupt, err
	case !o.json:
		fmt.Fprintf(stdout, "verified: %s; the vbmeta signature verifies\n", avbVerifiedWhat(res, p, root))
	}
	return cli.ExitOK, nil
}

// avbFailure is why an image whose tree (if any) holds is not verified:
// a descriptor of the partition that does not match, an unsigned vbmeta.
func avbFailure(aj *avbJSON, path string) error {
	for _, c := range aj.DescriptorChecks {
		if !c.Matches {
			hint := "libavb checks every hash descriptor of a partition it loads: a locked device does not boot this image"
			if c.Type == "hashtree" {
				hint = "any hashtree descriptor of the partition may be the one the device sets dm-verity up with: each must be the image's"
			}
			return cli.Errorf(hint, "%s: %s descriptor %d of partition %q does not match the image: %s", path, c.Type, c.Index, aj.PartitionName, c.Problem)
		}
	}
	if !aj.SignatureVerified {
		return cli.Errorf("sign it (veritygen --avb --avb-key KEY, avbtool --algorithm and --key); --avb-key KEY requires a signature by KEY\n"+
			"if a signed vbmeta includes its descriptors (vbmeta.img, vbmeta_system.img), the device checks those: veritycheck --avb-slot vbmeta.img",
			"%s: %v: the data matches its descriptors, but libavb's verdict is OK_NOT_SIGNED, a verification error: a locked device does not boot it", path, avb.ErrNotSigned)
	}
	return nil
}

func avbVerifiedWhat(res *verity.VerifyResult, p *avb.Partition, root []byte) string {
	var parts []string
	if res != nil {
		g := res.Geometry
		against := fmt.Sprintf("the root digest %x of the hashtree descriptor", root)
		if len(root) == 0 {
			against = "the tree's own root (the descriptor stores none: persistent digest)"
		}
		parts = append(parts, fmt.Sprintf("%d data blocks of %d bytes and %d hash blocks match %s", g.DataBlocks, g.DataBlockSize, g.HashBlocks, against))
	}
	for _, d := range p.Hashes() {
		parts = append(parts, fmt.Sprintf("the %s digest of the %d bytes of partition %q matches its hash descriptor", d.HashAlgorithm, d.ImageSize, clip(p.Name)))
	}
	if n := p.NumHashtrees; n > 1 {
		parts = append(parts, fmt.Sprintf("the partition's %d other hashtree descriptors match too", n-1))
	}
	return strings.Join(parts, "; ")
}

// printChecks prints the checks of the partition's other descriptors.
func printChecks(w io.Writer, aj *avbJSON) {
	for _, c := range aj.DescriptorChecks {
		switch {
		case !c.Matches:
			fmt.Fprintf(w, "avb: check: %s descriptor %d: DOES NOT MATCH: %s\n", c.Type, c.Index, c.Problem)
		case c.Note != "":
			fmt.Fprintf(w, "avb: check: %s descriptor %d: matches (%s)\n", c.Type, c.Index, c.Note)
		default:
			fmt.Fprintf(w, "avb: check: %s descriptor %d: matches\n", c.Type, c.Index)
		}
	}
}

func descriptorType(d avb.Descriptor) string {
	if _, ok := d.(*avb.HashDescriptor); ok {
		return "hash"
	}
	return "hashtree"
}

// prefixPath names the image in an error that does not name it yet (its
// Path says whether it does).
func prefixPath(path string, err error) error {
	var ve *verity.Error
	var pe *fs.PathError
	if errors.As(err, &ve) && ve.Path == path || errors.As(err, &pe) && pe.Path == path {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// printAVB prints what the footer and the vbmeta say, one "avb:" line each.
func printAVB(w io.Writer, path string, img *avb.Image, aj *avbJSON, keyPath string) {
	f := img.Footer
	fmt.Fprintf(w, "avb: footer: original image %d bytes, vbmeta at byte %d (%d bytes) of %d\n",
		f.OriginalImageSize, f.VBMetaOffset, f.VBMetaSize, img.Size)
	key := "no public key"
	if aj.PublicKeySHA1 != "" {
		key = "public key (sha1) " + aj.PublicKeySHA1
	}
	fmt.Fprintf(w, "avb: vbmeta: algorithm %s, %s, rollback index %d (location %d), flags %d, release %q\n",
		aj.Algorithm, key, aj.RollbackIndex, aj.RollbackIndexLocation, aj.Flags, aj.ReleaseString)
	switch {
	case aj.SignatureError != "":
		fmt.Fprintf(w, "avb: signature: DOES NOT VERIFY: %s\n", strings.TrimPrefix(aj.SignatureError, path+": "))
	case !aj.SignatureVerified:
		fmt.Fprintf(w, "avb: signature: none (not signed): the vbmeta vouches for nothing, and libavb's OK_NOT_SIGNED is a verification error\n")
	case aj.KeyGiven:
		fmt.Fprintf(w, "avb: signature: verified, made with the key of %s\n", keyPath)
	default:
		fmt.Fprintf(w, "avb: signature: verified with the embedded key (--avb-key checks that it is the key expected)\n")
	}
	if aj.Flags&avb.FlagHashtreeDisabled != 0 {
		fmt.Fprintf(w, "avb: note: the vbmeta flags disable the hashtree (the bootloader will not set up dm-verity)\n")
	}
	if aj.Flags&avb.FlagVerificationDisabled != 0 {
		fmt.Fprintf(w, "avb: note: the vbmeta flags disable verification (libavb then checks no descriptor; this check still does)\n")
	}
	for _, d := range img.VBMeta.Partition().Hashtrees() {
		if d.DataBlockSize > 4096 {
			fmt.Fprintf(w, "avb: note: blocks of %d bytes: the kernel's dm-verity takes blocks up to its page size (4096 bytes on most machines)\n", d.DataBlockSize)
			break
		}
	}
	if aj.Flags != 0 {
		fmt.Fprintf(w, "avb: note: libavb refuses a chained vbmeta with flags set: this one is good only as the top-level vbmeta\n")
	}
	for _, d := range aj.Descriptors {
		fmt.Fprintf(w, "avb: descriptor: %s: %s\n", strings.ReplaceAll(d.Type, "_", " "), d.Text)
	}
	if aj.DescriptorsNotListed > 0 {
		fmt.Fprintf(w, "avb: descriptors: %d more not listed (%d in all; avbtool info_image lists them all)\n",
			aj.DescriptorsNotListed, aj.DescriptorCount)
	}
}

// describeDescriptors summarises the first maxListedDescriptors
// descriptors of v, walked one at a time; partition is the image's own.
func describeDescriptors(v *avb.VBMeta, partition string) []descriptorJSON {
	ds := []descriptorJSON{}
	for d := range v.Descriptors() {
		if len(ds) == maxListedDescriptors {
			break
		}
		ds = append(ds, describeDescriptor(d, partition))
	}
	return ds
}

// clip cuts s to maxDescribed bytes (on a character boundary), saying how
// long it was.
func clip(s string) string {
	if len(s) <= maxDescribed {
		return s
	}
	n := maxDescribed
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:n], len(s))
}

// clipHex is b in hex, cut to maxDescribed/2 bytes.
func clipHex(b []byte) string {
	if len(b) <= maxDescribed/2 {
		return hex.EncodeToString(b)
	}
	return fmt.Sprintf("%x... (%d bytes)", b[:maxDescribed/2], len(b))
}

// describeDescriptor summarises a descriptor for the reports; partition
// is the image's own (the others' images are not checked).
func describeDescriptor(d avb.Descriptor, partition string) descriptorJSON {
	other := func(name string) string {
		if name == partition {
			return ""
		}
		return " (not checked: another partition's image)"
	}
	switch d := d.(type) {
	case *avb.HashtreeDescriptor:
		fecText := "no FEC"
		if d.FECNumRoots > 0 {
			fecText = fmt.Sprintf("FEC %d roots at byte %d (%d bytes)", d.FECNumRoots, d.FECOffset, d.FECSize)
		}
		root := "none (persistent digest)"
		if len(d.RootDigest) > 0 {
			root = clipHex(d.RootDigest)
		}
		salt := "-"
		if len(d.Salt) > 0 {
			salt = clipHex(d.Salt)
		}
		return descriptorJSON{Type: "hashtree", PartitionName: clip(d.PartitionName),
			Text: fmt.Sprintf("partition %q, %s, %d-byte blocks, data %d bytes, tree at byte %d (%d bytes), %s, salt %s, root digest %s, flags %d%s",
				clip(d.PartitionName), d.HashAlgorithm, d.DataBlockSize, d.ImageSize, d.TreeOffset, d.TreeSize, fecText, salt, root, d.Flags, other(d.PartitionName))}
	case *avb.HashDescriptor:
		digest := "persistent digest"
		if len(d.Digest) > 0 {
			digest = clipHex(d.Digest)
		}
		return descriptorJSON{Type: "hash", PartitionName: clip(d.PartitionName),
			Text: fmt.Sprintf("partition %q, %s of %d bytes: %s%s", clip(d.PartitionName), d.HashAlgorithm, d.ImageSize, digest, other(d.PartitionName))}
	case *avb.PropertyDescriptor:
		return descriptorJSON{Type: "property", Text: fmt.Sprintf("%s = %s", clip(d.Key), propertyValue(d.Value))}
	case *avb.KernelCmdlineDescriptor:
		return descriptorJSON{Type: "kernel_cmdline", Text: fmt.Sprintf("flags %d: %s", d.Flags, clip(d.Cmdline))}
	case *avb.ChainPartitionDescriptor:
		return descriptorJSON{Type: "chain_partition", PartitionName: clip(d.PartitionName),
			Text: fmt.Sprintf("partition %q, rollback index location %d, public key (sha1) %s, flags %d (not checked: its own vbmeta)",
				clip(d.PartitionName), d.RollbackIndexLocation, sha1Hex(d.PublicKey), d.Flags)}
	case *avb.UnknownDescriptor:
		return descriptorJSON{Type: "unknown", Text: fmt.Sprintf("tag %d, %d bytes", d.TagValue, len(d.Data))}
	}
	return descriptorJSON{Type: "unknown", Text: fmt.Sprintf("tag %d", d.Tag())}
}

// propertyValue shows a property's value as avbtool info_image does: the
// text in quotes when it is printable, else its size.
func propertyValue(v []byte) string {
	if len(v) >= 256 { // as avbtool info_image
		return fmt.Sprintf("(%d bytes)", len(v))
	}
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("(%d bytes)", len(v))
		}
	}
	return "'" + string(v) + "'"
}
