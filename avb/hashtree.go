package avb

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// The sizes avbtool reserves, conservatively, for the metadata when it
// computes the largest image a partition takes.
const (
	maxVBMetaReserve = 64 << 10
	maxFooterReserve = 4096
)

// imageBlockSize is the unit avbtool appends in: the zero padding, the
// tree, the vbmeta and the footer block are whole 4096-byte blocks
// whatever the tree's block size.
const imageBlockSize = 4096

// maxPropertyFile bounds a property value read from a file.
const maxPropertyFile = 16 << 20

// Property is a property descriptor to add.
type Property struct {
	Key   string
	Value []byte
}

// ParseProperty parses avbtool's --prop KEY:VALUE.
func ParseProperty(spec string) (Property, error) {
	k, v, ok := strings.Cut(spec, ":")
	if !ok {
		return Property{}, paramErr("Properties", "write KEY:VALUE", "malformed property %q", spec)
	}
	return Property{Key: k, Value: []byte(v)}, nil
}

// ParsePropertyFromFile parses avbtool's --prop_from_file KEY:PATH and
// reads the value from PATH.
func ParsePropertyFromFile(spec string) (Property, error) {
	k, path, ok := strings.Cut(spec, ":")
	if !ok {
		return Property{}, paramErr("Properties", "write KEY:PATH", "malformed property %q", spec)
	}
	v, err := readSmall(path, "property file", maxPropertyFile)
	if err != nil {
		return Property{}, err
	}
	return Property{Key: k, Value: v}, nil
}

// ChainPartition is a chain partition descriptor to add.
type ChainPartition struct {
	Name                  string
	RollbackIndexLocation uint32
	// PublicKey is the AVB public key blob the partition is signed with.
	PublicKey []byte
	// DoNotUseAB sets the descriptor's do-not-use-A/B flag.
	DoNotUseAB bool
	// Spec is the NAME:LOCATION:KEY_PATH it was given as, if any: avbtool
	// orders the descriptors by these strings.
	Spec string
}

// ParseChainPartition parses avbtool's --chain_partition (or, with
// doNotUseAB, --chain_partition_do_not_use_ab) NAME:LOCATION:KEY_PATH and
// reads the public key blob from KEY_PATH.
func ParseChainPartition(spec string, doNotUseAB bool) (ChainPartition, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return ChainPartition{}, paramErr("ChainPartitions", "write NAME:ROLLBACK_SLOT:KEY_PATH", "malformed chained partition %q", spec)
	}
	loc, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return ChainPartition{}, paramErr("ChainPartitions", "", "chained partition %q: rollback index location %q is not a number", spec, parts[1])
	}
	key, err := readSmall(parts[2], "public key", maxKeyFile)
	if err != nil {
		return ChainPartition{}, err
	}
	return ChainPartition{Name: parts[0], RollbackIndexLocation: uint32(loc), PublicKey: key, DoNotUseAB: doNotUseAB, Spec: spec}, nil
}

// HashtreeFooterOptions are avbtool add_hashtree_footer's options. The zero
// value is avbtool's defaults, except that FEC is off (avbtool makes it by
// default, with an external tool).
type HashtreeFooterOptions struct {
	// PartitionSize is the size of the partition file made; 0 means just
	// large enough (the footer right after the vbmeta).
	PartitionSize uint64
	PartitionName string
	// HashAlgorithm is the tree's hash; "" means sha1, avbtool's default.
	// Any name hashes.Lookup takes; the descriptor keeps it as given, as
	// avbtool does (its names are hashlib's, which takes OpenSSL's: sha224,
	// sha3-256, ripemd160...), and calculate_kernel_cmdline copies it into
	// the table: the kernel's names (hashes.Algorithm.Name) open there.
	HashAlgorithm string
	// BlockSize is the tree's block size; 0 means 4096.
	BlockSize int
	// Salt: nil means random bytes (as many as the digest), or none with
	// UsePersistentDigest; an empty non-nil slice means none.
	Salt []byte
	// FEC appends Reed-Solomon parity after the tree (FECRoots, 0 means
	// 2), as avbtool does unless --do_not_generate_fec.
	FEC      bool
	FECRoots int

	// Algorithm is the signing algorithm ("" means NONE) and Key its key.
	Algorithm string
	Key       *rsa.PrivateKey
	// Properties, in order: avbtool puts those of --prop before those of
	// --prop_from_file.
	Properties []Property
	// KernelCmdlines are kernel command-line descriptors (flags 0).
	KernelCmdlines []string
	// SetupAsRootfsFromKernel adds the kernel command-line descriptors
	// that set the partition up with dm-verity as the root file system.
	SetupAsRootfsFromKernel bool
	// SetupRootfsFromKernel, if not "", is the path of another image (with
	// a footer, or a vbmeta image): the same two kernel command-line
	// descriptors are made from the first hashtree descriptor of its
	// vbmeta, as avbtool's --setup_rootfs_from_kernel IMAGE makes them. It
	// cannot be the image the footer is added to (avbtool would read it
	// half-written).
	SetupRootfsFromKernel string
	// IncludeDescriptorsFrom are images (or vbmeta images) whose
	// descriptors are copied in, as avbtool's --include_descriptors_from_image.
	IncludeDescriptorsFrom []string
	ChainPartitions        []ChainPartition
	PublicKeyMetadata      []byte
	RollbackIndex          uint64
	RollbackIndexLocation  uint32
	// Flags are the vbmeta image flags.
	Flags uint32
	// The hashtree descriptor's flags, and avbtool's --use_persistent_digest
	// (no root digest stored) and --no_hashtree (no tree written; its
	// root digest is still stored).
	DoNotUseAB, CheckAtMostOnce, UsePersistentDigest, NoHashtree bool
	// ReleaseString replaces avbtool 1.3.0's; AppendToReleaseString is
	// added after a space.
	ReleaseString, AppendToReleaseString string
	// OutputVBMeta, if not "", is a file the vbmeta blob is also written
	// to; DoNotAppendVBMeta leaves the vbmeta and the footer out of the
	// image (the tree is still appended).
	OutputVBMeta      string
	DoNotAppendVBMeta bool

	// Jobs, Progress and Warn are passed to verity.Format.
	Jobs     int
	Progress verity.Progress
	Warn     func(msg string)
}

// HashtreeFooterResult is what AddHashtreeFooter wrote.
type HashtreeFooterResult struct {
	// Descriptor is the hashtree descriptor stored.
	Descriptor *HashtreeDescriptor
	// RootDigest is the tree's root digest (also when the descriptor
	// does not store it).
	RootDigest []byte
	// VBMeta is the vbmeta blob.
	VBMeta []byte
	// Footer is the footer written; nil with DoNotAppendVBMeta.
	Footer *Footer
	// OriginalSize is the image's size before; Size after (both as
	// expanded, for a sparse image).
	OriginalSize, Size uint64
	// Sparse: the image is an Android sparse image, and stays one.
	Sparse bool
}

func (o *HashtreeFooterOptions) hashName() string {
	if o.HashAlgorithm == "" {
		return "sha1"
	}
	return o.HashAlgorithm
}

func (o *HashtreeFooterOptions) blockSize() int {
	if o.BlockSize == 0 {
		return 4096
	}
	return o.BlockSize
}

func (o *HashtreeFooterOptions) fecRoots() int {
	if o.FECRoots == 0 {
		return fec.DefaultRoots
	}
	return o.FECRoots
}

// RequiredLibavbMinor is the minor version of libavb 1.x the options need,
// what avbtool's --print_required_libavb_version prints after "1.".
// Included descriptors may raise it further.
func (o *HashtreeFooterOptions) RequiredLibavbMinor() uint32 {
	var m uint32
	if o.UsePersistentDigest || o.DoNotUseAB || o.CheckAtMostOnce {
		m = 1
	}
	if o.RollbackIndexLocation > 0 {
		m = 2
	}
	for _, c := range o.ChainPartitions {
		if c.DoNotUseAB {
			m = 3
		}
	}
	return m
}

// checkTree checks the tree options and returns the hash.
func (o *HashtreeFooterOptions) checkTree() (*hashes.Algorithm, error) {
	alg, err := hashes.Lookup(o.hashName())
	if err != nil {
		return nil, paramErr("HashAlgorithm", "e.g. sha256 (sha1 is avbtool's default)", "%v", err)
	}
	if err := merkle.CheckBlockSize(o.blockSize()); err != nil {
		return nil, paramErr("BlockSize", "a power of two from 512 to 524288", "block size %d: %v", o.blockSize(), err)
	}
	if o.FEC {
		if r := o.fecRoots(); r < fec.MinRoots || r > fec.MaxRoots {
			return nil, paramErr("FECRoots", "", "FEC roots %d is not from %d to %d", r, fec.MinRoots, fec.MaxRoots)
		}
		if o.blockSize() != imageBlockSize {
			return nil, paramErr("FEC", "use 4096-byte blocks, or leave FEC out",
				"FEC needs a block size of 4096 (avbtool's fec tool works in 4096-byte blocks), not %d", o.blockSize())
		}
	}
	return alg, nil
}

// treeSize is the size of the tree avbtool lays out for size bytes
// (calc_hash_level_offsets): each level's digests in slots of slot bytes,
// padded to a whole block, until a level fits in one block.
func treeSize(size uint64, bs, slot uint64) uint64 {
	var total uint64
	for size > bs {
		level := roundUp((size+bs-1)/bs*slot, bs)
		total += level
		size = level
	}
	return total
}

func digestSlot(n int) uint64 { return 1 << bits.Len(uint(n-1)) }

// FECSize is the size libfec's fec_ecc_get_size gives for the parity of
// size bytes with roots parity bytes per codeword, its 4096-byte header
// included: what avbtool reserves for FEC in a partition.
func FECSize(size uint64, roots int) uint64 {
	blocks := (size + 4095) / 4096
	rounds := (blocks + uint64(255-roots) - 1) / uint64(255-roots)
	return rounds*uint64(roots)*4096 + 4096
}

// MaxImageSize is the largest image that fits, with its tree, parity and
// metadata, in a partition of o.PartitionSize bytes, as avbtool's
// --calc_max_image_size computes it: negative when nothing fits, 0 when
// PartitionSize is 0.
func MaxImageSize(o *HashtreeFooterOptions) (int64, error) {
	alg, err := o.checkTree()
	if err != nil {
		return 0, err
	}
	if o.PartitionSize == 0 {
		return 0, nil
	}
	if o.PartitionSize > 1<<62 {
		return 0, paramErr("PartitionSize", "", "partition size %d is too large", o.PartitionSize)
	}
	var tree, parity uint64
	if !o.NoHashtree {
		tree = treeSize(o.PartitionSize, uint64(o.blockSize()), digestSlot(alg.Size()))
		if o.FEC {
			parity = FECSize(o.PartitionSize, o.fecRoots())
		}
	}
	return int64(o.PartitionSize) - int64(parity+tree+maxVBMetaReserve+maxFooterReserve), nil
}

// prepared is what AddHashtreeFooter reads and checks before it touches the
// image.
type prepared struct {
	hash     *hashes.Algorithm
	salt     []byte
	chains   []Descriptor
	included []Descriptor
	// rootfsFrom are the descriptors made from SetupRootfsFromKernel's image.
	rootfsFrom []Descriptor
	minor      uint32
	release    string
}

func (o *HashtreeFooterOptions) prepare() (*prepared, error) {
	p := &prepared{}
	var err error
	if p.hash, err = o.checkTree(); err != nil {
		return nil, err
	}
	sigAlg, err := AlgorithmByName(o.Algorithm)
	if err != nil {
		return nil, err
	}
	// The key is checked now, not after the hashing, so that a wrong key
	// leaves the image untouched.
	if sigAlg.Type != 0 {
		if o.Key == nil {
			return nil, paramErr("Key", "give the private key (PEM) the image is signed with", "key is required for algorithm %s", sigAlg.Name)
		}
		blob, err := EncodePublicKey(&o.Key.PublicKey)
		if err != nil {
			return nil, err
		}
		if len(blob) != sigAlg.PublicKeySize {
			return nil, paramErr("Key", "use a key of that size, or the algorithm for the key's size",
				"key is wrong size for algorithm %s: %d bits, it needs %d", sigAlg.Name, (len(blob)-8)*4, sigAlg.KeyBits())
		}
	}
	p.salt = o.Salt
	if p.salt == nil {
		p.salt = []byte{}
		if !o.UsePersistentDigest {
			p.salt = make([]byte, p.hash.Size())
			if _, err := rand.Read(p.salt); err != nil {
				return nil, ioErr("drawing a random salt: %w", err)
			}
		}
	}
	if len(p.salt) > merkle.MaxSaltSize {
		return nil, paramErr("Salt", "", "salt of %d bytes: at most %d", len(p.salt), merkle.MaxSaltSize)
	}
	// Chained partitions, ordered as avbtool orders them: by their spec
	// strings; a rollback index location is used once.
	chains := append([]ChainPartition{}, o.ChainPartitions...)
	sort.SliceStable(chains, func(i, j int) bool { return chainKey(chains[i]) < chainKey(chains[j]) })
	used := map[uint32]bool{o.RollbackIndexLocation: true}
	for _, c := range chains {
		if used[c.RollbackIndexLocation] {
			return nil, paramErr("ChainPartitions", "", "rollback index location %d is already in use", c.RollbackIndexLocation)
		}
		used[c.RollbackIndexLocation] = true
		if c.RollbackIndexLocation < 1 {
			return nil, paramErr("ChainPartitions", "", "chained partition %s: rollback index location must be 1 or larger", c.Name)
		}
		d := &ChainPartitionDescriptor{RollbackIndexLocation: c.RollbackIndexLocation, PartitionName: c.Name, PublicKey: c.PublicKey}
		if c.DoNotUseAB {
			d.Flags |= ChainFlagDoNotUseAB
		}
		p.chains = append(p.chains, d)
	}
	p.minor = o.RequiredLibavbMinor()
	if o.SetupRootfsFromKernel != "" {
		if p.rootfsFrom, err = SetupRootfsFromKernelDescriptors(o.SetupRootfsFromKernel); err != nil {
			return nil, err
		}
	}
	// Included descriptors: those without a partition name in order, those
	// with one last, the last of each type and name only, ordered by
	// avbtool's dictionary key (class name, partition name).
	named := map[string]Descriptor{}
	for _, path := range o.IncludeDescriptorsFrom {
		img, err := ReadImage(path)
		if err != nil {
			return nil, err
		}
		p.minor = max(p.minor, img.VBMeta.Header.RequiredLibavbMinor)
		for _, d := range img.VBMeta.Descriptors {
			switch d := d.(type) {
			case *HashtreeDescriptor:
				named["AvbHashtreeDescriptor_"+d.PartitionName] = d
			case *HashDescriptor:
				named["AvbHashDescriptor_"+d.PartitionName] = d
			case *ChainPartitionDescriptor:
				named["AvbChainPartitionDescriptor_"+d.PartitionName] = d
			default:
				p.included = append(p.included, d)
			}
		}
	}
	keys := make([]string, 0, len(named))
	for k := range named {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.included = append(p.included, named[k])
	}
	p.release = o.ReleaseString
	if p.release == "" {
		p.release = ReleaseString
	}
	if o.AppendToReleaseString != "" {
		p.release += " " + o.AppendToReleaseString
	}
	return p, nil
}

func chainKey(c ChainPartition) string {
	if c.Spec != "" {
		return c.Spec
	}
	return fmt.Sprintf("%s:%d:", c.Name, c.RollbackIndexLocation)
}

// AddHashtreeFooter does what `avbtool add_hashtree_footer` does, byte for
// byte: it pads the image at imagePath with zeros, appends its dm-verity
// tree (and with FEC the parity), then a vbmeta blob with a hashtree
// descriptor, signed if asked, and a footer in the partition's last
// 4096-byte block. The image is hashed once (a raw image by verity.Format).
// Run on its own output it finds the footer and starts again from the
// original image, which gives the same file. An Android sparse image gets
// sparse chunks appended, as avbtool appends them: the tree, then the
// parity of its expansion, each one RAW chunk, so that the sparse file
// expands to what the expanded image gets.
//
// Every option, the key and the sizes are checked before the image is
// touched; a failure after that cuts the image back to its original size
// (as avbtool does: an earlier footer is then gone too).
func AddHashtreeFooter(ctx context.Context, imagePath string, o *HashtreeFooterOptions) (*HashtreeFooterResult, error) {
	if o == nil {
		o = &HashtreeFooterOptions{}
	}
	if o.SetupRootfsFromKernel != "" {
		// avbtool reads IMAGE after the tree is appended and before the
		// footer is: for the image itself it finds no vbmeta and fails.
		a, errA := os.Stat(imagePath)
		b, errB := os.Stat(o.SetupRootfsFromKernel)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return nil, paramErr("SetupRootfsFromKernel", "leave it out and set the image up as root with the as-rootfs option (avbtool's --setup_as_rootfs_from_kernel)",
				"the image to set up as root (%s) is the image the footer is added to", o.SetupRootfsFromKernel)
		}
	}
	p, err := o.prepare()
	if err != nil {
		return nil, err
	}
	// The separate vbmeta output is checked (and locked) before the image
	// is touched, and written once the blob is made.
	var vbOut *verity.OutputFile
	if o.OutputVBMeta != "" {
		vbOut, err = verity.OpenOutputFile(o.OutputVBMeta, "output vbmeta image", "a vbmeta image",
			func(head []byte) bool { return bytes.HasPrefix(head, vbmetaMagic) }, false)
		if err != nil {
			return nil, err
		}
		defer vbOut.Abort()
	}
	if o.HashAlgorithm == "" && o.Warn != nil {
		o.Warn("no hash algorithm given: sha1, avbtool's default kept for backwards compatibility; Android wants sha256")
	}
	// Checked before the open too: opening a device or a FIFO is not
	// harmless.
	if fi, err := os.Stat(imagePath); err == nil && !fi.Mode().IsRegular() {
		return nil, inputErr("", "image %s is not a regular file", imagePath)
	}
	f, err := os.OpenFile(imagePath, os.O_RDWR, 0)
	if err != nil {
		return nil, inputErr("", "image %s: %v", imagePath, unwrapPathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr("image %s: %v", imagePath, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, inputErr("", "image %s is not a regular file", imagePath)
	}
	// Locked before anything is read, until the footer is written; Format
	// takes this lock over for the tree.
	if err := verity.LockImage(f, imagePath); err != nil {
		return nil, err
	}
	// ib is the unit avbtool appends in: 4096 bytes, or a sparse image's
	// block size.
	ib := uint64(imageBlockSize)
	var sw *sparseWriter
	var size uint64
	var tailReader io.ReaderAt = f
	if isSparse(f) {
		if sw, err = openSparseWriter(f); err != nil {
			return nil, prefixErr(imagePath, err)
		}
		ib, size = sw.blk, sw.size()
		src, err := verity.OpenSource(imagePath, nil)
		if err != nil {
			return nil, err
		}
		defer src.Close()
		tailReader = src
	} else {
		size = uint64(fi.Size())
	}
	if o.PartitionSize > 0 && o.PartitionSize%ib != 0 {
		return nil, paramErr("PartitionSize", fmt.Sprintf("round it up: %d", roundUp(o.PartitionSize, ib)),
			"partition size of %d is not a multiple of the image block size %d", o.PartitionSize, ib)
	}
	if o.PartitionSize == 0 && size%ib != 0 {
		return nil, inputErr(fmt.Sprintf("give a partition size, or pad the image to a multiple of %d bytes", ib),
			"file size of %d is not a multiple of the image block size %d", size, ib)
	}
	orig := size
	if size >= FooterSize {
		b := make([]byte, FooterSize)
		if _, err := tailReader.ReadAt(b, int64(size-FooterSize)); err != nil {
			return nil, ioErr("image %s: %v", imagePath, err)
		}
		if old, err := ParseFooter(b); err == nil {
			// Everything past the original size goes: only when the footer
			// and the vbmeta it points to are sound, not on 4 bytes that
			// happen to read AVBf.
			if err := old.Check(size); err != nil {
				return nil, prefixErr(imagePath, err)
			}
			if _, err := ReadVBMeta(tailReader, int64(old.VBMetaOffset), old.VBMetaSize); err != nil {
				return nil, prefixErr(imagePath, err)
			}
			orig = old.OriginalImageSize
		}
	}
	if orig == 0 {
		return nil, inputErr("", "image %s is empty", imagePath)
	}
	bs := uint64(o.blockSize())
	rounded := roundUp(orig, bs)
	if o.PartitionSize > 0 {
		maxSize, err := MaxImageSize(o)
		if err != nil {
			return nil, err
		}
		if int64(rounded) > maxSize {
			return nil, inputErr(fmt.Sprintf("a partition of %d bytes takes an image of at most %d bytes", o.PartitionSize, max(maxSize, 0)),
				"image size of %d exceeds maximum image size of %d in order to fit in a partition size of %d", rounded, maxSize, o.PartitionSize)
		}
	}
	// avbtool pads the image to its own blocks too, and lays the tree out
	// for the image rounded to the tree's blocks only: with blocks under
	// 4096 the two sizes can give trees of different sizes, for which
	// avbtool writes a tree the kernel would not read.
	imageSize := roundUp(orig, max(bs, ib))
	slot := digestSlot(p.hash.Size())
	if treeSize(rounded, bs, slot) != treeSize(imageSize, bs, slot) {
		return nil, inputErr(fmt.Sprintf("pad the image with zeros to %d bytes first", imageSize),
			"image of %d bytes: avbtool's tree layout for %d-byte blocks is inconsistent at this size", orig, bs)
	}
	if sw != nil && imageSize != orig {
		return nil, inputErr("", "sparse image of %d bytes is not a multiple of the tree's block size %d", orig, bs)
	}
	if imageSize > 1<<62 {
		return nil, inputErr("", "image %s is too large", imagePath)
	}

	// From here on the image changes: any failure cuts it back.
	var out sink = &rawSink{f: f}
	if sw != nil {
		out = sw
	}
	done := false
	defer func() {
		if !done {
			_ = out.truncate(orig)
		}
	}()
	if err := out.truncate(orig); err != nil {
		return nil, err
	}
	if err := out.truncate(imageSize); err != nil {
		return nil, err
	}
	ht := &HashtreeDescriptor{
		DMVerityVersion: 1, ImageSize: imageSize, TreeOffset: imageSize,
		DataBlockSize: uint32(bs), HashBlockSize: uint32(bs),
		HashAlgorithm: o.hashName(), PartitionName: o.PartitionName, Salt: p.salt, // as given, as avbtool keeps it
	}
	if o.DoNotUseAB {
		ht.Flags |= HashtreeFlagDoNotUseAB
	}
	if o.CheckAtMostOnce {
		ht.Flags |= HashtreeFlagCheckAtMostOnce
	}
	var root []byte
	switch {
	case sw != nil:
		if root, ht.TreeSize, err = sparseTree(ctx, imagePath, sw, o, p, imageSize); err != nil {
			return nil, err
		}
		if o.FEC {
			if err := sparseFEC(ctx, imagePath, sw, o, p, ht); err != nil {
				return nil, err
			}
		}
	case o.NoHashtree:
		if root, err = rootOnly(ctx, verity.NewSource(f, int64(imageSize)), imageSize, bs, p.hash, p.salt, o, discard{}); err != nil {
			return nil, err
		}
		if o.FEC {
			ht.FECNumRoots, ht.FECOffset = uint32(o.fecRoots()), imageSize
		}
	default:
		// The tree goes in through verity.Format, which opens the image
		// itself and takes the lock held here over.
		res, err := verity.Format(ctx, imagePath, "", &verity.FormatOptions{
			TreeOptions: verity.TreeOptions{Hash: p.hash.Name(), Salt: p.salt, DataBlockSize: int(bs), HashBlockSize: int(bs), NoSuperblock: true},
			Append:      true, AppendFEC: o.FEC, FECRoots: o.fecRoots(), Raw: true,
			Jobs: o.Jobs, Progress: o.Progress, Warn: o.Warn,
		})
		if err != nil {
			return nil, err
		}
		root = res.RootHash
		ht.TreeSize = res.Layout.TreeSize()
		end := roundUp(imageSize+ht.TreeSize, ib)
		if res.FEC != nil {
			ht.FECNumRoots, ht.FECOffset, ht.FECSize = uint32(res.FEC.Roots), res.FEC.Offset, res.FEC.Size
			end = roundUp(res.FEC.Offset+res.FEC.Size, ib)
		}
		if err := out.truncate(end); err != nil {
			return nil, err
		}
	}
	if !o.UsePersistentDigest {
		ht.RootDigest = root
	}

	descs := []Descriptor{ht}
	descs = append(descs, p.chains...)
	for _, pr := range o.Properties {
		descs = append(descs, &PropertyDescriptor{Key: pr.Key, Value: pr.Value})
	}
	// avbtool's _generate_vbmeta_blob order: the hashtree descriptor,
	// chained partitions, properties, the lines from
	// --setup_rootfs_from_kernel IMAGE, those of
	// --setup_as_rootfs_from_kernel, --kernel_cmdline, included ones.
	descs = append(descs, p.rootfsFrom...)
	if o.SetupAsRootfsFromKernel {
		descs = append(descs, RootfsCmdlineDescriptors(ht)...)
	}
	for _, c := range o.KernelCmdlines {
		descs = append(descs, &KernelCmdlineDescriptor{Cmdline: c})
	}
	descs = append(descs, p.included...)
	blob, err := MakeVBMeta(&VBMetaOptions{
		Algorithm: o.Algorithm, Key: o.Key, Descriptors: descs, PublicKeyMetadata: o.PublicKeyMetadata,
		RollbackIndex: o.RollbackIndex, Flags: o.Flags, RollbackIndexLocation: o.RollbackIndexLocation,
		ReleaseString: p.release, RequiredLibavbMinor: p.minor,
	})
	if err != nil {
		return nil, err
	}
	end := out.size()
	r := &HashtreeFooterResult{Descriptor: ht, RootDigest: root, VBMeta: blob, OriginalSize: orig, Sparse: sw != nil}
	if vbOut != nil {
		if err := vbOut.Commit(blob); err != nil {
			return nil, err
		}
	}
	if !o.DoNotAppendVBMeta {
		padded := make([]byte, roundUp(uint64(len(blob)), ib))
		copy(padded, blob)
		if err := out.appendRaw(padded); err != nil {
			return nil, err
		}
		if o.PartitionSize > 0 {
			if out.size()+ib > o.PartitionSize {
				return nil, inputErr("", "the image, its tree and metadata take %d bytes, more than the partition size %d", out.size()+ib, o.PartitionSize)
			}
			// Zeros up to the footer's block: a hole, or a DONT_CARE chunk.
			if err := out.appendHole(o.PartitionSize - out.size() - ib); err != nil {
				return nil, err
			}
		}
		r.Footer = NewFooter(orig, end, uint64(len(blob)))
		fb := make([]byte, ib)
		copy(fb[ib-FooterSize:], r.Footer.Encode())
		if err := out.appendRaw(fb); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, ioErr("image %s: %v", imagePath, err)
	}
	r.Size = out.size()
	done = true
	return r, nil
}

// sink is where AddHashtreeFooter appends: a raw file, or an Android
// sparse image (a sparseWriter). Sizes are of the image as expanded.
type sink interface {
	size() uint64
	truncate(size uint64) error
	appendRaw(b []byte) error
	appendHole(n uint64) error
}

type rawSink struct {
	f   *os.File
	end uint64
}

func (s *rawSink) size() uint64 { return s.end }

func (s *rawSink) truncate(n uint64) error {
	if err := s.f.Truncate(int64(n)); err != nil {
		return ioErr("image %s: %v", s.f.Name(), err)
	}
	s.end = n
	return nil
}

func (s *rawSink) appendRaw(b []byte) error {
	if _, err := s.f.WriteAt(b, int64(s.end)); err != nil {
		return ioErr("image %s: %v", s.f.Name(), err)
	}
	s.end += uint64(len(b))
	return nil
}

func (s *rawSink) appendHole(n uint64) error { return s.truncate(s.end + n) }

func (w *sparseWriter) appendHole(n uint64) error { return w.appendDontCare(n) }

// sparseTree hashes the sparse image (as it expands) and appends its tree
// as one RAW chunk; with NoHashtree, or one block, only the root.
func sparseTree(ctx context.Context, path string, sw *sparseWriter, o *HashtreeFooterOptions, p *prepared, imageSize uint64) ([]byte, uint64, error) {
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return nil, 0, err
	}
	defer src.Close()
	bs := uint64(o.blockSize())
	tree := treeSize(imageSize, bs, digestSlot(p.hash.Size()))
	if o.NoHashtree || tree == 0 {
		root, err := rootOnly(ctx, src, imageSize, bs, p.hash, p.salt, o, discard{})
		return root, 0, err
	}
	var root []byte
	err = sw.appendRawFrom(roundUp(tree, sw.blk), func(w io.WriterAt) error {
		var err error
		root, err = rootOnly(ctx, src, imageSize, bs, p.hash, p.salt, o, w)
		return err
	})
	return root, tree, err
}

// sparseFEC appends the parity of the sparse image's expansion (its data
// and tree, as for a raw image) as one RAW chunk, as avbtool appends the
// fec tool's output, and records it in ht. The parity goes into the chunk
// as fec.Encode computes it, a unit at a time: memory stays bounded
// whatever the image's size.
func sparseFEC(ctx context.Context, path string, sw *sparseWriter, o *HashtreeFooterOptions, p *prepared, ht *HashtreeDescriptor) error {
	roots := o.fecRoots()
	offset := sw.size()
	ht.FECNumRoots, ht.FECOffset = uint32(roots), offset
	if o.NoHashtree {
		// No tree, no parity: avbtool appends the empty output of its fec
		// step all the same, as a RAW chunk of no blocks.
		return sw.appendRaw(nil)
	}
	bs := uint64(ht.DataBlockSize)
	g, err := merkle.NewGeometry(merkle.Params{Hash: p.hash, Format: 1, Salt: p.salt, DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: ht.ImageSize / bs, HashOffset: ht.TreeOffset})
	if err != nil {
		return paramErr("", "", "%v", err)
	}
	// The message ends where the parity starts: a tree chunk padded to
	// the sparse block size has its padding covered, as the kernel
	// (fec_blocks = fec_offset / block size) reads it.
	fp, err := verity.FECParams(g, roots, offset)
	if err != nil {
		return err
	}
	// Opened now, so that it sees the tree's chunk.
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	msg := verity.FECMessage(g, fp, src, src)
	size := fp.ParitySize()
	err = sw.appendRawFrom(roundUp(size, sw.blk), func(w io.WriterAt) error {
		if o.Progress != nil {
			o.Progress(verity.StageFEC, 0, size)
			w = &fecProgress{w: w, total: size, progress: o.Progress}
		}
		if err := fec.Encode(ctx, fp, msg, w, 0, o.Jobs); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return ioErr("error correction: %v", err)
		}
		if o.Progress != nil {
			o.Progress(verity.StageFEC, size, size)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ht.FECSize = size
	return nil
}

// fecProgress reports StageFEC progress as the parity is written
// (fec.Encode serializes its writes, one unit each).
type fecProgress struct {
	w        io.WriterAt
	done     uint64
	total    uint64
	progress verity.Progress
}

func (p *fecProgress) WriteAt(b []byte, off int64) (int, error) {
	n, err := p.w.WriteAt(b, off)
	p.done += uint64(n)
	if p.done < p.total { // the end is reported once, after the last write
		p.progress(verity.StageFEC, p.done, p.total)
	}
	return n, err
}

// rootOnly builds the tree of the first imageSize bytes of src into w
// (at offset 0, no superblock) and returns its root digest; w is discard{}
// for avbtool's --no_hashtree.
func rootOnly(ctx context.Context, src *verity.Source, imageSize, bs uint64, h *hashes.Algorithm, salt []byte, o *HashtreeFooterOptions, w io.WriterAt) ([]byte, error) {
	g, err := merkle.NewGeometry(merkle.Params{Hash: h, Format: 1, Salt: salt, DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: imageSize / bs})
	if err != nil {
		return nil, paramErr("", "", "%v", err)
	}
	bo := &merkle.BuildOptions{Jobs: o.Jobs, Runs: src.Runs(int(bs), imageSize/bs)}
	if o.Progress != nil {
		bo.Progress = func(done uint64) { o.Progress(verity.StageHashing, done, imageSize) }
	}
	root, err := merkle.Build(ctx, g, src, w, bo)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, ioErr("hashing: %v", err)
	}
	return root, nil
}

type discard struct{}

func (discard) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
