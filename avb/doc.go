// Package avb reads and writes Android Verified Boot metadata as AOSP's
// avbtool and libavb do, byte for byte: the footer at the end of a
// partition image, the vbmeta blob (header, authentication block with the
// hash and RSA signature, auxiliary block with the descriptors, the public
// key and its metadata) and its descriptors, and the AVB public key blob.
//
// AddHashtreeFooter is avbtool's add_hashtree_footer as one verb on top of
// verity.Format: the image is hashed once (on every CPU), then the vbmeta
// and the footer are added; the file is avbtool 1.3.0's for the same
// inputs, Android sparse images included. Killed at any moment, it leaves
// the image as it was, the finished image, or an image that the same call
// (or, for a raw image, avbtool itself) finishes into the finished image:
// before it writes anything else, a provisional footer (an unsigned vbmeta
// holding only the property "veritytree.interrupted", and a footer with
// the original image size) goes past everything the file holds and past
// where the finished image ends, so that the file's last block says where
// the image ends until the last step cuts the file at the finished size; a
// sparse image gets a resume record (as verity.Format's Append writes) past
// its last chunk instead, and its header's chunk counts switch from the
// original image to the finished one in one write (see footerrun.go). It is
// PlanHashtreeFooter, which checks everything and lays the run out (a
// FooterPlan: what the image ends in, what is kept, the tree, the parity,
// the vbmeta, the footer, the partition) with nothing written, then
// FooterPlan.Apply. Image.Interrupted reports the
// provisional state; EraseFooter cuts it back to the image. MaxImageSize is its
// --calc_max_image_size, HashtreeFooterOptions.RequiredLibavbMinor its
// --print_required_libavb_version. ReadImageLenient (damaged fields read
// as avbtool reads them), Image.WriteInfo,
// CalculateKernelCmdline, EraseFooter and ExtractPublicKey are its
// info_image, calculate_kernel_cmdline, erase_footer and
// extract_public_key; VBMeta.Verify, CheckHashtreeData and CheckHashData
// are verify_image's checks. VBMetaImage and MakeVBMetaImage are its
// make_vbmeta_image (VBMetaImageOptions.RequiredLibavbMinor its
// --print_required_libavb_version), CalculateVBMetaDigest its
// calculate_vbmeta_digest (libavb's androidboot.vbmeta.digest),
// ExtractVBMetaImage its extract_vbmeta_image, WritePartitionDigests its
// print_partition_digests.
//
// AddHashFooter is add_hash_footer (boot, init_boot, vendor_boot, dtbo...):
// PlanHashFooter, then HashFooterPlan.Apply, on the same PartitionPlan and
// the same kill-safe appends as AddHashtreeFooter (its provisional footer
// names add_hash_footer); the image is hashed in one streaming pass.
// MaxHashImageSize is its --calc_max_image_size,
// HashFooterOptions.RequiredLibavbMinor its
// --print_required_libavb_version. AppendVBMetaImage, ResizeImage and
// ZeroHashtree are append_vbmeta_image, resize_image and zero_hashtree (on
// an Android sparse image, the last two stage the new chunks past the last
// one and then copy them in place; FinishSparseRewrite finishes what a
// killed run left). The vbmeta inputs every verb shares
// (signing, chains, properties, command lines, included images, header
// fields) are VBMetaCommonOptions: HashFooterOptions embeds it,
// HashtreeFooterOptions and VBMetaImageOptions have the same fields.
//
// Deciding about an image is libavb's rule, not avbtool's: the bootloader
// is the authority. Image.VerifyVBMeta (VerifyVBMetaBlob, VBMeta.VerifyWith)
// decides about the vbmeta as libavb's avb_vbmeta_image_verify and
// avb_slot_verify do: nil only when a signature was checked and holds, an
// unsigned vbmeta is ErrNotSigned whatever key it embeds, a vbmeta for a
// newer libavb ErrUnsupportedVersion. Image.CheckMetadata makes libavb's
// checks of what a verified vbmeta holds. Image.CheckFooter holds the
// footer, which no signature covers, to the descriptors of the image's
// partition (VBMeta.Partition), which it does. VerifyHashtree then checks
// the data and the tree against the partition's hashtree descriptor,
// listing every corrupted block, and CheckPartitionDescriptors every other
// hashtree and hash descriptor of the partition. veritycheck calls them in
// this order; LIBAVB.md lists every decision libavb makes and where it is
// made here. VerifySlot checks a device's whole set (the top-level vbmeta,
// the vbmetas it chains to, every hash and hashtree partition) as
// avb_slot_verify does, a verdict for each vbmeta and partition
// (SlotResult), with androidboot.vbmeta.digest, and what avb_slot_verify
// gives the bootloader locked and unlocked (SlotBoot: its result, the
// requested partitions it loads, the kernel command line for the
// hashtree error mode and the device's GUIDs). The avbtool front answers as avbtool does (VBMeta.Verify
// passes an unsigned vbmeta, as avbtool's verify_image does), but nothing
// here cuts image data the partition's descriptor covers because the
// footer says so: EraseFooter, the reruns of AddHashtreeFooter,
// AddHashFooter and AppendVBMetaImage, and ResizeImage refuse.
//
// Parsing checks every size and offset against what holds it before
// anything is read or allocated: a malformed footer, vbmeta or descriptor
// is an error matching ErrMalformed (a *verity.Error of kind
// verity.KindInput), never a panic; vbmeta blobs are read up to
// MaxVBMetaSize. A blob's descriptors are all checked when it is parsed and
// decoded one at a time as VBMeta.Descriptors walks them, so that memory
// stays bounded by the blob's size whatever it holds (a million
// descriptors); WriteInfo writes as it walks. Descriptors of tags this
// package does not know are kept as UnknownDescriptor and encode to the
// same bytes. Keys and property files may be pipes or FIFOs: they are read
// in bounded sizes, and the wait for a FIFO's writer ends with the context
// given.
//
// Signing uses crypto/rsa (PKCS#1 v1.5, whose DigestInfo prefixes are
// avbtool's): SHA256 or SHA512 with RSA 2048, 4096 or 8192, keys in PEM,
// PKCS#1 or PKCS#8. A Signer may sign instead of a key in memory:
// HelperSigner runs an external program as avbtool's --signing_helper and
// --signing_helper_with_files do, so that the key may stay in an HSM.
// Nothing here prints or reads the environment.
package avb
