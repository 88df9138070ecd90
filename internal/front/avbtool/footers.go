package avbtool

// add_hash_footer, append_vbmeta_image, resize_image and zero_hashtree:
// avbtool's checks in its order with its messages, then the avb package's
// verbs, which check again and write as they do.

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"syscall"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/sparse"
	"github.com/veritytree/veritytree/verity"
)

// hashFooterReserve is what avbtool's add_hash_footer keeps for the
// metadata in a partition: MAX_VBMETA_SIZE and MAX_FOOTER_SIZE.
const hashFooterReserve = 64<<10 + 4096

// imageBlockSize is avbtool's ImageHandler block size: an Android sparse
// image's own, else 4096.
func imageBlockSize(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h [28]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || binary.LittleEndian.Uint32(h[:]) != 0xed26ff3a {
		return 4096, nil
	}
	if bs := binary.LittleEndian.Uint32(h[12:]); bs > 0 {
		return uint64(bs), nil
	}
	return 4096, nil
}

// checkPartitionBlocks is avbtool's check that the partition is whole
// blocks of the image.
func checkPartitionBlocks(image string, size uint64) error {
	bs, err := imageBlockSize(image)
	if err != nil {
		return err
	}
	if err := sparseReadable(image); err != nil {
		return err
	}
	return checkPartitionUnit(size, bs)
}

// sparseReadable refuses, before the partition size is checked, the
// sparse images avbtool's ImageHandler dies on as it opens them: malformed
// ones, and those with bytes after their last chunk (unless the bytes end
// in the record of an interrupted run of ours, which the verb finishes).
func sparseReadable(image string) error {
	f, err := os.Open(image)
	if err != nil {
		return nil // the verb reports it
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !sparse.IsSparse(f) || safefile.ReadResumeRecord(f, fi.Size()) != nil {
		return nil
	}
	src, err := verity.OpenSource(image, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return err
	}
	defer src.Close()
	if n := src.Trailing(); n > 0 {
		return fmt.Errorf("%s is an Android sparse image with %d bytes after its last chunk", image, n)
	}
	return nil
}

// avbtool's messages on the footer paths. Those it raises within the
// verb's try block (the image's size, the salt, the hash of
// add_hash_footer, everything of the vbmeta) it words again as "Adding
// hash_footer failed: MESSAGE." (a message that ends in a period then
// ends in two); the others it prints as they are.
const (
	hashFailed     = "Adding hash_footer failed: "
	hashtreeFailed = "Adding hashtree_footer failed: "
)

func checkPartitionUnit(size, unit uint64) error {
	if size%unit != 0 {
		return avbErr("Partition size of %d is not a multiple of the image block size %d.", size, unit)
	}
	return nil
}

func fileSizeNotWhole(size, unit uint64) error {
	return avbErr("File size of %d is not a multiple of the image block size %d.", size, unit)
}

func imageTooLarge(size uint64, max int64, partitionSize uint64) error {
	return avbErr("Image size of %d exceeds maximum image size of %d in order to fit in a partition size of %d.", size, max, partitionSize)
}

// probeImage opens the image as avbtool's ImageHandler does, before any
// other input is read; avbtool dies of a traceback on a raw one shorter
// than a sparse header (an empty sparse image it takes).
func probeImage(path, verb string) (*avb.FooterImage, error) {
	img, err := avb.ProbeFooterImage(path, verb)
	if err == nil && !img.Sparse && img.FoundSize < sparseHeaderSize {
		err = imageTooShort(path, img.FoundSize)
	}
	return img, err
}

// sparseHeaderSize is what avbtool's ImageHandler reads of every image
// first, to tell a sparse one.
const sparseHeaderSize = 28

// imageTooShort refuses an image avbtool's ImageHandler dies on ("unpack
// requires a buffer of 28 bytes").
func imageTooShort(path string, size uint64) error {
	if size == 0 {
		return fmt.Errorf("image %s is empty", path)
	}
	return fmt.Errorf("image %s is %d bytes: too short for an image (avbtool dies reading its first %d)", path, size, sparseHeaderSize)
}

// wrapAVB words one of avbtool's own messages, or a Python exception
// avbtool's handler catches, as the verb's exception handler does (prefix,
// the message, a dot), and so Python's OSError of a file avbtool opens
// itself there (a property file, the public key metadata, a chained
// partition's key; not the signing key, which openssl reads: keyPath);
// other errors stay ours.
func wrapAVB(err error, prefix, keyPath string) error {
	var m avbMessage
	if errors.As(err, &m) {
		return avbErr("%s%s.", prefix, m)
	}
	var pe *pyErr
	if errors.As(err, &pe) && !isKeyError(err, keyPath) {
		return avbErr("%s%s.", prefix, pe.py)
	}
	if msg := pathOSError(err); msg != "" && !isKeyError(err, keyPath) {
		return avbErr("%s%s.", prefix, msg)
	}
	return err
}

// pathOSError is Python's str() of the OSError open() raises for err, a
// system call's failure on a path, or "".
func pathOSError(err error) string {
	var pe *fs.PathError
	var errno syscall.Errno
	if !errors.As(err, &pe) || !errors.As(pe.Err, &errno) || errno == 0 {
		return ""
	}
	return pyOSError(errno, pe.Path)
}

func isKeyError(err error, keyPath string) bool {
	var pe *fs.PathError
	return keyPath != "" && errors.As(err, &pe) && pe.Path == keyPath
}

// causeErr is a message of ours that keeps its cause for errors.As.
type causeErr struct {
	msg   string
	cause error
}

func (e causeErr) Error() string { return e.msg }
func (e causeErr) Unwrap() error { return e.cause }

// unhexlify is Python's binascii.unhexlify, with its messages.
func unhexlify(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		return nil, avbErr("Odd-length string")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, avbErr("Non-hexadecimal digit found")
	}
	return b, nil
}

// hashFooterFlags are add_hash_footer's own options.
type hashFooterFlags struct {
	image, partitionName, hashAlg, salt, outputVBMeta  *string
	partitionSize                                      number
	dynamic, calcMax, noAppend, persistent, doNotUseAB *bool
	saltSet                                            bool
}

func (t *tool) addHashFooter(args []string) int {
	const cmd = "add_hash_footer"
	fs := t.flagSet(cmd)
	h := &hashFooterFlags{}
	h.image = fs.String("image", "", "Image to add hashes to")
	fileType(fs, "image", "rw", "image")
	fs.Var(&h.partitionSize, "partition_size", "Partition size")
	h.partitionSize.late = true // a negative one is too small (hashFooterOptions)
	h.dynamic = fs.Bool("dynamic_partition_size", false, "Calculate partition size based on image size")
	h.partitionName = fs.String("partition_name", "", "Partition name")
	h.hashAlg = fs.String("hash_algorithm", "sha256", "Hash algorithm to use (default: sha256)")
	h.salt = fs.String("salt", "", "Salt in hex (default: /dev/urandom)")
	h.calcMax = fs.Bool("calc_max_image_size", false, "Don't store the footer - instead calculate the maximum image size leaving enough room for metadata with the given partition size.")
	h.outputVBMeta = fs.String("output_vbmeta_image", "", "Also write vbmeta struct to file")
	fileType(fs, "output_vbmeta_image", "w", "output_vbmeta_image")
	h.noAppend = fs.Bool("do_not_append_vbmeta_image", false, "Do not append vbmeta struct or footer to the image")
	v := addVBMetaFlags(fs)
	h.persistent = fs.Bool("use_persistent_digest", false, usePersistentDigestHelp)
	h.doNotUseAB = fs.Bool("do_not_use_ab", false, doNotUseABHelp)
	if code, done := t.parse(cmd, fs, args); done {
		return code
	}
	h.saltSet = fs.Changed("salt")
	v.unnamedDescriptor = !fs.Changed("partition_name")
	o, s, done, err := t.hashFooterOptions(h, v)
	switch {
	case err != nil:
		return t.fail(err, false)
	case done:
		return exitOK
	}
	pl, err := avb.PlanHashFooter(*h.image, o)
	if err != nil {
		return t.fail(err, s.withFiles)
	}
	defer pl.Close()
	if _, err := pl.Apply(t.ctx); err != nil {
		if msg := signingMessage(err, s.withFiles); msg != "" && t.ctx.Err() == nil {
			err = avbErr("Adding hash_footer failed: %s.", msg)
		}
		return t.fail(err, s.withFiles)
	}
	return exitOK
}

// hashFooterOptions checks add_hash_footer's options as avbtool does, in
// its order and with its messages, and reads what they name; done when it
// only printed (the required libavb version, the maximum image size).
func (t *tool) hashFooterOptions(h *hashFooterFlags, v *vbmetaFlags) (*avb.HashFooterOptions, *avbSigning, bool, error) {
	psize := h.partitionSize.v
	if h.partitionSize.bad != "" && !h.partitionSize.negative() {
		return nil, nil, false, h.partitionSize.outOfRange("partition_size")
	}
	if psize == 0 && h.partitionSize.bad == "" && !*h.dynamic {
		return nil, nil, false, avbErr("--dynamic_partition_size required when not specifying a partition size")
	}
	if *h.dynamic && *h.calcMax {
		return nil, nil, false, avbErr("--calc_max_image_size not supported with --dynamic_partition_size")
	}
	_, location := v.flags32()
	o := &avb.HashFooterOptions{PartitionSize: psize, DynamicPartitionSize: *h.dynamic, PartitionName: *h.partitionName,
		HashAlgorithm: *h.hashAlg, UsePersistentDigest: *h.persistent, DoNotUseAB: *h.doNotUseAB,
		OutputVBMeta: *h.outputVBMeta, DoNotAppendVBMeta: *h.noAppend}
	if *v.printRequired {
		o.RollbackIndexLocation = location
		for range *v.chainsNoAB {
			o.ChainPartitions = append(o.ChainPartitions, avb.ChainPartition{DoNotUseAB: true})
		}
		fmt.Fprintf(t.stdout, "1.%d\n", o.RequiredLibavbMinor())
		return nil, nil, true, nil
	}
	if !*h.dynamic && (h.partitionSize.negative() || psize < hashFooterReserve) {
		return nil, nil, false, avbErr("Parition size of %s is too small. Needs to be at least %d", h.partitionSize.signed(), hashFooterReserve)
	}
	if *h.calcMax {
		fmt.Fprintf(t.stdout, "%d\n", psize-hashFooterReserve)
		return nil, nil, true, nil
	}
	if *h.image == "" {
		return nil, nil, false, fmt.Errorf("add_hash_footer needs --image")
	}
	img, err := probeImage(*h.image, "add_hash_footer")
	if err != nil {
		return nil, nil, false, err
	}
	if !*h.dynamic {
		if err := checkPartitionUnit(psize, img.Unit); err != nil {
			return nil, nil, false, err
		}
		// Within avbtool's handler: the image as it is, without an earlier
		// footer, not padded.
		if max := int64(psize - hashFooterReserve); int64(img.OriginalSize) > max {
			return nil, nil, false, wrapAVB(imageTooLarge(img.OriginalSize, max, psize), hashFailed, "")
		}
	}
	s, err := t.hashFooterInputs(o, h, v)
	return o, s, false, wrapAVB(err, hashFailed, *v.key)
}

// hashFooterInputs is what avbtool does within its exception handler: the
// hash, the salt, then the vbmeta's inputs.
func (t *tool) hashFooterInputs(o *avb.HashFooterOptions, h *hashFooterFlags, v *vbmetaFlags) (*avbSigning, error) {
	if _, err := avb.LookupHash(*h.hashAlg); err != nil {
		return nil, avbErr("unsupported hash type %s", *h.hashAlg)
	}
	if h.saltSet {
		// An empty salt is none, as avbtool takes it.
		salt, err := unhexlify(*h.salt)
		if err != nil {
			return nil, err
		}
		o.Salt = salt
	}
	c, s, err := t.vbmetaCommon(v)
	if err != nil {
		return nil, err
	}
	o.VBMetaCommonOptions = *c
	return s, nil
}

// hashtreeFooterOptions checks add_hashtree_footer's options as avbtool
// does, in its order and with its messages, and reads into o what they
// name; done when it only printed the maximum image size. withFiles: the
// signing helper is --signing_helper_with_files.
func (t *tool) hashtreeFooterOptions(o *avb.HashtreeFooterOptions, image string, calcMax, saltSet bool, salt string, v *vbmetaFlags) (done, withFiles bool, err error) {
	// The tree's hash and the sizes come first, outside avbtool's handler
	// (an unknown hash is a traceback there: ours are our words).
	maxSize, err := avb.MaxImageSize(o)
	if err != nil {
		return false, false, err
	}
	if calcMax {
		fmt.Fprintf(t.stdout, "%d\n", maxSize)
		return true, false, nil
	}
	if image == "" {
		return false, false, fmt.Errorf("add_hashtree_footer needs --image")
	}
	img, err := probeImage(image, "add_hashtree_footer")
	if err != nil {
		return false, false, err
	}
	psize := o.PartitionSize
	switch {
	case psize > 0:
		err = checkPartitionUnit(psize, img.Unit)
	case img.WholeBlocks%img.Unit != 0:
		err = fileSizeNotWhole(img.WholeBlocks, img.Unit)
	}
	if err != nil {
		return false, false, err
	}
	withFiles, err = t.hashtreeFooterInputs(o, img, maxSize, saltSet, salt, v)
	return false, withFiles, wrapAVB(err, hashtreeFailed, *v.key)
}

// hashtreeFooterInputs is what avbtool does within its exception handler:
// the image's size padded to whole tree blocks against the partition's
// room, the salt, then the vbmeta's inputs.
func (t *tool) hashtreeFooterInputs(o *avb.HashtreeFooterOptions, img *avb.FooterImage, maxSize int64, saltSet bool, salt string, v *vbmetaFlags) (withFiles bool, err error) {
	if o.PartitionSize > 0 {
		if maxSize < 0 {
			// avbtool says the image "exceeds maximum image size of -N", a
			// size no image has (a deliberate difference: the trust issue's
			// messages in our words).
			return false, cli.Errorf("give a larger partition size",
				"a partition size of %d leaves no room for any image: the tree, FEC and metadata reserved for it take %d bytes or more",
				o.PartitionSize, int64(o.PartitionSize)-maxSize)
		}
		bs := uint64(o.BlockSize)
		if size := (img.OriginalSize + bs - 1) / bs * bs; int64(size) > maxSize {
			return false, imageTooLarge(size, maxSize, o.PartitionSize)
		}
	}
	if saltSet {
		// An empty salt is none, as avbtool takes it.
		if o.Salt, err = unhexlify(salt); err != nil {
			return false, err
		}
	}
	c, s, err := t.vbmetaCommon(v)
	if err != nil {
		return false, err
	}
	o.Algorithm, o.Key, o.Signer = c.Algorithm, c.Key, c.Signer
	o.ChainPartitions, o.Properties, o.KernelCmdlines = c.ChainPartitions, c.Properties, c.KernelCmdlines
	o.SetupRootfsFromKernel, o.IncludeDescriptorsFrom, o.PublicKeyMetadata = c.SetupRootfsFromKernel, c.IncludeDescriptorsFrom, c.PublicKeyMetadata
	o.RollbackIndex, o.RollbackIndexLocation, o.Flags = c.RollbackIndex, c.RollbackIndexLocation, c.Flags
	o.ReleaseString, o.AppendToReleaseString = c.ReleaseString, c.AppendToReleaseString
	return s.withFiles, nil
}

func (t *tool) appendVBMetaImage(args []string) int {
	const cmd = "append_vbmeta_image"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to append vbmeta blob to")
	fileType(fs, "image", "rw", "image")
	var psize number
	fs.Var(&psize, "partition_size", "Partition size")
	psize.late = true // after the files avbtool needs first (below)
	vbmeta := fs.String("vbmeta_image", "", "Image with vbmeta blob to append")
	fileType(fs, "vbmeta_image", "r", "vbmeta_image")
	if code, done := t.parse(cmd, fs, args, "partition_size"); done {
		return code
	}
	if *image == "" || *vbmeta == "" {
		return t.tooFewArguments()
	}
	if psize.bad != "" {
		return t.failed(psize.outOfRange("partition_size"))
	}
	// avbtool opens the image first (ImageHandler).
	if fi, err := os.Stat(*image); err == nil && fi.Mode().IsRegular() && fi.Size() < sparseHeaderSize {
		return t.fail(imageTooShort(*image, uint64(fi.Size())), false)
	}
	if err := checkPartitionBlocks(*image, psize.v); err != nil {
		return t.fail(err, false)
	}
	// avbtool reads the vbmeta image first within its handler.
	if _, err := readVBMetaOf(*vbmeta); err != nil {
		return t.fail(wrapAVB(err, "Appending VBMeta image failed: ", ""), false)
	}
	if psize.v == 0 {
		return t.fail(appendToNothing(*image), false)
	}
	if _, err := avb.AppendVBMetaImage(t.ctx, *image, *vbmeta, psize.v); err != nil {
		if notVBMeta(err) {
			// The vbmeta image's, within avbtool's handler.
			err = avbErr("Appending VBMeta image failed: Given image does not look like a vbmeta image..")
		}
		return t.fail(err, false)
	}
	return exitOK
}

// appendToNothing is avbtool's failure appending to a partition of 0
// bytes: it cuts a raw image to -4096 bytes (EINVAL), or packs a sparse
// image's chunk of minus that many blocks (struct's "argument out of
// range"); it puts the image back.
func appendToNothing(image string) error {
	if isSparseFile(image) {
		return avbErr("Appending VBMeta image failed: argument out of range.")
	}
	return avbErr("Appending VBMeta image failed: [Errno 22] Invalid argument.")
}

// isSparseFile says whether path starts with the Android sparse magic.
func isSparseFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var m [4]byte
	_, err = io.ReadFull(f, m[:])
	return err == nil && binary.LittleEndian.Uint32(m[:]) == 0xed26ff3a
}

func (t *tool) resizeImage(args []string) int {
	const cmd = "resize_image"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image with a footer")
	fileType(fs, "image", "rw", "image")
	var psize number
	fs.Var(&psize, "partition_size", "New partition size")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	if !fs.Changed("partition_size") {
		return t.fail(fmt.Errorf("resize_image needs --partition_size"), false)
	}
	// What a killed run left is finished before the checks read the image.
	if _, err := avb.FinishSparseRewrite(*image); err != nil {
		return t.fail(err, false)
	}
	if err := t.checkResize(*image, psize.v); err != nil {
		return t.fail(err, false)
	}
	if err := avb.ResizeImage(t.ctx, *image, psize.v); err != nil {
		if errors.Is(err, avb.ErrNoFooter) {
			err = avbErr("Given image does not have a footer.")
		}
		return t.fail(err, false)
	}
	return exitOK
}

// checkResize makes avbtool's checks of resize_image, with its messages.
func (t *tool) checkResize(image string, psize uint64) error {
	if err := checkPartitionBlocks(image, psize); err != nil {
		return err
	}
	// Read as avbtool reads it: a footer's damaged (unsigned) fields are
	// moved as they are (avb.ResizeImage reads it so too).
	img, err := avb.ReadImageLenient(image)
	if err != nil {
		return err
	}
	if img.Footer == nil {
		return avbErr("Given image does not have a footer.")
	}
	bs, err := imageBlockSize(image)
	if err != nil {
		return err
	}
	// In Python's numbers, which do not wrap.
	end := new(big.Int).SetUint64(img.Footer.VBMetaOffset)
	end.Add(end, new(big.Int).SetUint64(img.Footer.VBMetaSize))
	b := new(big.Int).SetUint64(bs)
	end.Add(end, new(big.Int).SetUint64(bs-1)).Div(end, b).Mul(end, b).Add(end, b)
	if new(big.Int).SetUint64(psize).Cmp(end) < 0 {
		return avbErr("Requested size of %d is too small for an image of size %s.", psize, end)
	}
	return nil
}

func (t *tool) zeroHashtree(args []string) int {
	const cmd = "zero_hashtree"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image with a footer")
	fileType(fs, "image", "rw", "image")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	// What a killed run left is finished before the checks read the image.
	if _, err := avb.FinishSparseRewrite(*image); err != nil {
		return t.fail(err, false)
	}
	img, err := avb.ReadImage(*image)
	if err != nil {
		return t.fail(err, false)
	}
	ht := img.VBMeta.FirstHashtree()
	switch {
	case img.Footer == nil:
		err = avbErr("Given image does not have a footer.")
	case ht == nil:
		err = avbErr("No hashtree descriptor was found.")
	case ht.FECOffset > 0 && ht.FECOffset != ht.TreeOffset+ht.TreeSize:
		err = avbErr("Hash-tree and FEC data must be adjacent.")
	default:
		err = avb.ZeroHashtree(t.ctx, *image)
	}
	if err != nil {
		return t.fail(err, false)
	}
	return exitOK
}
