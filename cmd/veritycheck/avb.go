package main

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
	"os"
	"strings"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/verity"
)

const avbUsage = `
An Android Verified Boot image (from 'avbtool add_hashtree_footer') is
checked from the image alone: 'veritycheck IMAGE'. veritycheck reads the
AVB footer at its end and the vbmeta blob it points to, checks the
vbmeta's signature (with --avb-key: also that it is made with that key;
the key's SHA-1 is always shown, as 'avbtool info_image' shows it), then
the data and the tree against the hashtree descriptor's root digest,
listing every corrupted block as above; --repair rebuilds them from the FEC
parity the descriptor points at (no --fec-device needed). An Android sparse
image is checked as the image it expands to, tree and parity included;
--repair is refused for it (expand it first with simg2img). A vbmeta that
does not verify is exit 1, and the tree is then not checked: nothing in it
can be trusted. A malformed footer or vbmeta is exit 2. This AVB check is
chosen when DATA ends in an AVB footer and neither HASH nor a root hash is
given: without a root hash there is nothing else to check against. With a
root hash (or HASH) the tree is checked as any other; --avb asks for the
AVB check explicitly (an error without a footer).`

// avbFlagConflicts are the flags that give what an AVB image's vbmeta
// says itself.
var avbFlagConflicts = append([]string{"root-hash", "root-hash-file", "hash-offset", "no-superblock",
	"fec-device", "fec-offset", "fec-roots", "raw", "dump"}, treeFlagNames...)

// avbJSON is the "avb" part of the JSON report.
type avbJSON struct {
	OriginalImageSize uint64 `json:"original_image_size"`
	VBMetaOffset      uint64 `json:"vbmeta_offset"`
	VBMetaSize        uint64 `json:"vbmeta_size"`
	Algorithm         string `json:"algorithm"`
	// PublicKeySHA1 is the SHA-1 of the embedded AVB public key blob
	// ("" when the vbmeta is not signed).
	PublicKeySHA1 string `json:"public_key_sha1"`
	KeyGiven      bool   `json:"key_given"`
	// Signed: the algorithm is not NONE; SignatureVerified: signed and
	// verified (with the key given, if any), or not signed and no key
	// given.
	Signed                bool   `json:"signed"`
	SignatureVerified     bool   `json:"signature_verified"`
	SignatureError        string `json:"signature_error,omitempty"`
	RollbackIndex         uint64 `json:"rollback_index"`
	RollbackIndexLocation uint32 `json:"rollback_index_location"`
	Flags                 uint32 `json:"flags"`
	ReleaseString         string `json:"release_string"`
	// PartitionName is that of the hashtree descriptor checked.
	PartitionName string `json:"partition_name"`
	// PersistentDigest: the descriptor stores no root digest; the tree
	// is checked against the root it has itself.
	PersistentDigest bool             `json:"persistent_digest"`
	Descriptors      []descriptorJSON `json:"descriptors"`
}

type descriptorJSON struct {
	Type          string `json:"type"` // hashtree, hash, property, kernel_cmdline, chain_partition, unknown
	PartitionName string `json:"partition_name,omitempty"`
	// Text is the rest, as the text report shows it.
	Text string `json:"text"`
}

// wantsAVB says whether the command line asks for the AVB check: --avb or
// --avb-key, or else one argument that ends in an AVB footer and no root
// hash given.
func wantsAVB(o *options, args []string) bool {
	if o.avb || o.tree.Changed("avb-key") {
		return true
	}
	if len(args) != 1 || o.tree.Changed("root-hash") || o.tree.Changed("root-hash-file") || o.rootPositional {
		return false
	}
	src, err := verity.OpenSource(args[0], nil)
	if err != nil {
		return false // the plain check says what is wrong with DATA
	}
	defer src.Close()
	_, err = avb.ReadFooter(src, src.Size())
	// A footer that does not parse is still one: it is reported as such.
	return !errors.Is(err, avb.ErrNoFooter) && (err == nil || errors.Is(err, avb.ErrMalformed))
}

// readAVBKey reads --avb-key: an RSA key in PEM (public or private) or an
// AVB public key blob (avbtool extract_public_key), and returns the blob.
func readAVBKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.Errorf("", "--avb-key: %v", err)
	}
	defer f.Close()
	// An 8192-bit key in PEM is under 7 KiB: a larger file is not a key.
	b, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, cli.Errorf("", "--avb-key: %v", err)
	}
	if len(b) > 1<<20 {
		return nil, cli.Errorf("give the key in PEM or as avbtool extract_public_key writes it", "--avb-key %s: larger than 1 MiB, not a key", path)
	}
	if bytes.Contains(b, []byte("-----BEGIN")) {
		pub, err := avb.ParsePublicKeyPEM(b)
		if err != nil {
			return nil, cli.Errorf("", "--avb-key %s: %v", path, err)
		}
		blob, err := avb.EncodePublicKey(pub)
		if err != nil {
			return nil, cli.Errorf("", "--avb-key %s: %v", path, err)
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

// checkAVB checks an AVB partition image: the vbmeta's signature, then
// the data and the tree against its hashtree descriptor.
func checkAVB(ctx context.Context, o *options, args []string, stdout, stderr io.Writer, showProgress bool) (int, error) {
	for _, name := range avbFlagConflicts {
		if o.tree.Changed(name) {
			return cli.ExitError, cli.Errorf("the AVB check takes the tree's parameters, root digest and FEC from the vbmeta; leave --"+name+" out, or give a root hash to check the tree as any other",
				"--%s does not go with the AVB check", name)
		}
	}
	if len(args) != 1 {
		return cli.ExitError, cli.Errorf("usage: veritycheck [--avb-key KEY] [--repair] IMAGE",
			"the AVB check takes one argument, IMAGE (the tree and the parity are in it); got %d", len(args))
	}
	if o.jobs < 1 {
		return cli.ExitError, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1")
	}
	path := args[0]
	var key []byte
	if o.avbKey != "" {
		var err error
		if key, err = readAVBKey(o.avbKey); err != nil {
			return cli.ExitError, err
		}
	}
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
		return cli.ExitError, cli.Errorf("a vbmeta image holds no partition data; check the partition image it describes",
			"%s: no AVB footer: it is a vbmeta image, not a partition image", path)
	}
	v := img.VBMeta
	aj := &avbJSON{OriginalImageSize: img.Footer.OriginalImageSize, VBMetaOffset: img.Footer.VBMetaOffset, VBMetaSize: img.Footer.VBMetaSize,
		Algorithm: v.Algorithm.Name, KeyGiven: key != nil, Signed: v.Algorithm.Type != 0, RollbackIndex: v.Header.RollbackIndex,
		RollbackIndexLocation: v.Header.RollbackIndexLocation, Flags: v.Header.Flags, ReleaseString: v.Header.ReleaseString}
	if len(v.PublicKey) > 0 {
		aj.PublicKeySHA1 = sha1Hex(v.PublicKey)
	}
	hts := v.HashtreeDescriptors()
	if len(hts) > 0 {
		aj.PartitionName, aj.PersistentDigest = hts[0].PartitionName, len(hts[0].RootDigest) == 0
	}
	for _, d := range v.Descriptors {
		aj.Descriptors = append(aj.Descriptors, describeDescriptor(d))
	}
	o.avbReport = aj

	switch sigErr := img.VerifyVBMeta(key); {
	case sigErr == nil:
		aj.SignatureVerified = true
	case key != nil && v.Algorithm.Type == 0:
		aj.SignatureError = path + ": the vbmeta is not signed (algorithm NONE), so not with the --avb-key given"
	case errors.Is(sigErr, avb.ErrSignature):
		aj.SignatureError = prefixPath(path, sigErr).Error()
	default: // a malformed key or blob
		return cli.ExitError, prefixPath(path, sigErr)
	}
	if !o.json {
		printAVB(stdout, path, img, aj, o.avbKey)
	}
	if !aj.SignatureVerified {
		hint := "the tree was not checked: a vbmeta that does not verify vouches for nothing; to check the tree anyway give the root hash you trust (--root-hash) and the tree's parameters"
		err := cli.WithHint(errors.New(aj.SignatureError), hint)
		if o.json {
			out := struct {
				Verified bool     `json:"verified"`
				AVB      *avbJSON `json:"avb"`
				Error    string   `json:"error"`
				Hint     string   `json:"hint"`
			}{false, aj, err.Error(), hint}
			if werr := cli.WriteJSON(stdout, out); werr != nil {
				return cli.ExitError, werr
			}
		}
		return cli.ExitCorrupt, err
	}
	if len(hts) == 0 {
		return cli.ExitError, cli.Errorf("", "%s: the vbmeta has no hashtree descriptor: there is no tree to check", path)
	}
	if o.repair && img.Sparse {
		// A repair writes blocks of the expansion in place: in a sparse
		// file they may be FILL or DONT_CARE chunks, with no bytes to
		// write into.
		return cli.ExitError, cli.Errorf(fmt.Sprintf("expand it first (simg2img %s image.raw), then veritycheck --repair image.raw (and img2simg it again if a sparse image is needed)", path),
			"--repair: %s is an Android sparse image, and a repair cannot write into it", path)
	}
	if o.repair && (hts[0].FECNumRoots == 0 || hts[0].FECSize == 0) {
		return cli.ExitError, cli.Errorf("nothing to rebuild corrupted blocks from: the image was made without FEC (avbtool --do_not_generate_fec)",
			"--repair: the hashtree descriptor of %s points at no FEC parity", path)
	}

	vo := &verity.VerifyOptions{Repair: o.repair, Jobs: o.jobs, MaxProblems: o.maxProblems}
	if o.maxProblems == 0 {
		vo.MaxProblems = 1 // 0 would be the library's default; none is listed
	}
	finish := reportTo(vo, stderr, showProgress)
	res, err := avb.VerifyHashtree(ctx, path, img, vo)
	finish()
	if err != nil {
		return cli.ExitError, err
	}
	defer res.Close()
	root := hts[0].RootDigest
	if err := report(o, res, root, path, path, stdout); err != nil {
		return cli.ExitError, err
	}
	if res.Verified && !o.json {
		g := res.Geometry
		against := fmt.Sprintf("the root digest %x of the hashtree descriptor", root)
		if len(root) == 0 {
			against = "the tree's own root (the descriptor stores none: persistent digest)"
		}
		signature := "the vbmeta signature verifies"
		if !aj.Signed {
			signature = "the vbmeta is not signed"
		}
		fmt.Fprintf(stdout, "verified: %d data blocks of %d bytes and %d hash blocks match %s; %s\n",
			g.DataBlocks, g.DataBlockSize, g.HashBlocks, against, signature)
		return cli.ExitOK, nil
	}
	return verdict(o, res, root, stdout)
}

// prefixPath names the image in an error that does not name it yet.
func prefixPath(path string, err error) error {
	if strings.Contains(err.Error(), path) {
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
	case !aj.SignatureVerified:
		fmt.Fprintf(w, "avb: signature: DOES NOT VERIFY: %s\n", strings.TrimPrefix(aj.SignatureError, path+": "))
	case aj.Algorithm == "NONE":
		fmt.Fprintf(w, "avb: signature: none (not signed): the vbmeta vouches for nothing\n")
	case aj.KeyGiven:
		fmt.Fprintf(w, "avb: signature: verified, made with the key of %s\n", keyPath)
	default:
		fmt.Fprintf(w, "avb: signature: verified with the embedded key (--avb-key checks that it is the key expected)\n")
	}
	if aj.Flags&avb.FlagHashtreeDisabled != 0 {
		fmt.Fprintf(w, "avb: note: the vbmeta flags disable the hashtree (the bootloader will not set up dm-verity)\n")
	}
	if aj.Flags&avb.FlagVerificationDisabled != 0 {
		fmt.Fprintf(w, "avb: note: the vbmeta flags disable verification\n")
	}
	for _, d := range aj.Descriptors {
		fmt.Fprintf(w, "avb: descriptor: %s: %s\n", strings.ReplaceAll(d.Type, "_", " "), d.Text)
	}
}

// describeDescriptor summarises a descriptor for the reports.
func describeDescriptor(d avb.Descriptor) descriptorJSON {
	switch d := d.(type) {
	case *avb.HashtreeDescriptor:
		fecText := "no FEC"
		if d.FECNumRoots > 0 {
			fecText = fmt.Sprintf("FEC %d roots at byte %d (%d bytes)", d.FECNumRoots, d.FECOffset, d.FECSize)
		}
		root := "none (persistent digest)"
		if len(d.RootDigest) > 0 {
			root = hex.EncodeToString(d.RootDigest)
		}
		return descriptorJSON{Type: "hashtree", PartitionName: d.PartitionName,
			Text: fmt.Sprintf("partition %q, %s, %d-byte blocks, data %d bytes, tree at byte %d (%d bytes), %s, salt %s, root digest %s, flags %d",
				d.PartitionName, d.HashAlgorithm, d.DataBlockSize, d.ImageSize, d.TreeOffset, d.TreeSize, fecText, cli.FormatSalt(d.Salt), root, d.Flags)}
	case *avb.HashDescriptor:
		return descriptorJSON{Type: "hash", PartitionName: d.PartitionName,
			Text: fmt.Sprintf("partition %q, %s of %d bytes: %x (not checked: another partition's image)", d.PartitionName, d.HashAlgorithm, d.ImageSize, d.Digest)}
	case *avb.PropertyDescriptor:
		return descriptorJSON{Type: "property", Text: fmt.Sprintf("%s = %s", d.Key, propertyValue(d.Value))}
	case *avb.KernelCmdlineDescriptor:
		return descriptorJSON{Type: "kernel_cmdline", Text: fmt.Sprintf("flags %d: %s", d.Flags, d.Cmdline)}
	case *avb.ChainPartitionDescriptor:
		return descriptorJSON{Type: "chain_partition", PartitionName: d.PartitionName,
			Text: fmt.Sprintf("partition %q, rollback index location %d, public key (sha1) %s, flags %d (not checked: its own vbmeta)",
				d.PartitionName, d.RollbackIndexLocation, sha1Hex(d.PublicKey), d.Flags)}
	case *avb.UnknownDescriptor:
		return descriptorJSON{Type: "unknown", Text: fmt.Sprintf("tag %d, %d bytes", d.TagValue, len(d.Data))}
	}
	return descriptorJSON{Type: "unknown", Text: fmt.Sprintf("tag %d", d.Tag())}
}

// propertyValue shows a property's value as avbtool info_image does: the
// text in quotes when it is printable, else its size.
func propertyValue(v []byte) string {
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("(%d bytes)", len(v))
		}
	}
	return "'" + string(v) + "'"
}
