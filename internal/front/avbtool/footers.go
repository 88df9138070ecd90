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
	"os"

	"github.com/veritytree/veritytree/avb"
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
	if size%bs != 0 {
		return avbErr("Partition size of %d is not a multiple of the image block size %d.", size, bs)
	}
	return nil
}

// wrapAVB words one of avbtool's own messages as the verb's exception
// handler does (prefix, the message, a dot); other errors stay ours.
func wrapAVB(err error, prefix string) error {
	var m avbMessage
	if errors.As(err, &m) {
		return avbErr("%s%s.", prefix, m)
	}
	return err
}

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
	if psize == 0 && !*h.dynamic {
		return nil, nil, false, avbErr("--dynamic_partition_size required when not specifying a partition size")
	}
	if *h.dynamic && *h.calcMax {
		return nil, nil, false, avbErr("--calc_max_image_size not supported with --dynamic_partition_size")
	}
	_, location, err := v.flags32()
	if err != nil {
		return nil, nil, false, err
	}
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
	if !*h.dynamic && psize < hashFooterReserve {
		return nil, nil, false, avbErr("Parition size of %d is too small. Needs to be at least %d", psize, hashFooterReserve)
	}
	if *h.calcMax {
		fmt.Fprintf(t.stdout, "%d\n", psize-hashFooterReserve)
		return nil, nil, true, nil
	}
	if *h.image == "" {
		return nil, nil, false, fmt.Errorf("add_hash_footer needs --image")
	}
	if !*h.dynamic {
		if err := checkPartitionBlocks(*h.image, psize); err != nil {
			return nil, nil, false, err
		}
	}
	s, err := t.hashFooterInputs(o, h, v)
	return o, s, false, wrapAVB(err, "Adding hash_footer failed: ")
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

func (t *tool) appendVBMetaImage(args []string) int {
	const cmd = "append_vbmeta_image"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to append vbmeta blob to")
	fileType(fs, "image", "rw", "image")
	var psize number
	fs.Var(&psize, "partition_size", "Partition size")
	vbmeta := fs.String("vbmeta_image", "", "Image with vbmeta blob to append")
	fileType(fs, "vbmeta_image", "r", "vbmeta_image")
	if code, done := t.parse(cmd, fs, args, "partition_size"); done {
		return code
	}
	if *image == "" || *vbmeta == "" {
		return t.tooFewArguments()
	}
	if err := checkPartitionBlocks(*image, psize.v); err != nil {
		return t.fail(err, false)
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
	img, err := avb.ReadImage(image)
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
	end := (img.Footer.VBMetaOffset + img.Footer.VBMetaSize + bs - 1) / bs * bs
	if psize < end+bs {
		return avbErr("Requested size of %d is too small for an image of size %d.", psize, end+bs)
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
