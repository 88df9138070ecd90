package avb

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
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
// reads the value from PATH (a file, a pipe or a FIFO, whose wait ends
// with ctx).
func ParsePropertyFromFile(ctx context.Context, spec string) (Property, error) {
	k, path, ok := strings.Cut(spec, ":")
	if !ok {
		return Property{}, paramErr("Properties", "write KEY:PATH", "malformed property %q", spec)
	}
	v, err := readSmall(ctx, path, "property file", maxPropertyFile)
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
	// Spec is the NAME:LOCATION:KEY_PATH it was given as, if any (kept
	// for the messages; avbtool 1.3.0 keeps the order given).
	Spec string
}

// ParseChainPartition parses avbtool's --chain_partition (or, with
// doNotUseAB, --chain_partition_do_not_use_ab) NAME:LOCATION:KEY_PATH and
// reads the public key blob from KEY_PATH (a file, a pipe or a FIFO, whose
// wait ends with ctx).
func ParseChainPartition(ctx context.Context, spec string, doNotUseAB bool) (ChainPartition, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return ChainPartition{}, paramErr("ChainPartitions", "write NAME:ROLLBACK_SLOT:KEY_PATH", "malformed chained partition %q", spec)
	}
	loc, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return ChainPartition{}, paramErr("ChainPartitions", "", "chained partition %q: rollback index location %q is not a number", spec, parts[1])
	}
	key, err := readSmall(ctx, parts[2], "public key", maxKeyFile)
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
	// HashAlgorithm is the tree's hash; "" means sha1, avbtool's default
	// (in package verity, TreeOptions.Hash "" means sha256, veritysetup's).
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

	// Algorithm is the signing algorithm ("" means NONE); Key or Signer
	// signs (Signer wins if both are given). These and the fields down to
	// AppendToReleaseString are VBMetaCommonOptions'.
	Algorithm string
	Key       *rsa.PrivateKey
	Signer    Signer
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
	// ReleaseString, if not nil, replaces avbtool 1.3.0's release string
	// (new("") leaves none, as avbtool's --internal_release_string '');
	// AppendToReleaseString, if not nil, is added after a space, even
	// when empty, as avbtool adds it. nil is an option not given.
	ReleaseString, AppendToReleaseString *string
	// OutputVBMeta, if not "", is a file the vbmeta blob is also written
	// to; DoNotAppendVBMeta leaves the vbmeta and the footer out of the
	// image (the tree is still appended).
	OutputVBMeta      string
	DoNotAppendVBMeta bool
	// VerityAppend makes the run, with DoNotAppendVBMeta, an append of the
	// tree and parity alone to an Android sparse image, as veritygen
	// --append makes one (avbtool's layout, without vbmeta and footer),
	// rather than add_hashtree_footer: the record a killed run leaves past
	// the chunks names that verb, so that only such a run finishes it, and
	// such a run refuses what a killed footer verb left. A raw image's
	// append is verity.Format's (FormatOptions.Append).
	VerityAppend bool

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
	return requiredLibavbMinor(m, o.RollbackIndexLocation, o.ChainPartitions)
}

// checkSizeOptions checks the options sizes are computed from, the hash
// and the block size, and returns the hash.
func (o *HashtreeFooterOptions) checkSizeOptions() (*hashes.Algorithm, error) {
	alg, err := LookupHash(o.hashName())
	if err != nil {
		return nil, paramErr("HashAlgorithm", "e.g. sha256 (sha1 is avbtool's default)", "%v", err)
	}
	if err := merkle.CheckBlockSize(o.blockSize()); err != nil {
		return nil, paramErr("BlockSize", "e.g. 4096", "%v", err) // it names the size
	}
	return alg, nil
}

// checkTree checks the tree options and returns the hash.
func (o *HashtreeFooterOptions) checkTree() (*hashes.Algorithm, error) {
	alg, err := o.checkSizeOptions()
	if err != nil {
		return nil, err
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

// maxPartitionSize bounds the partition sizes taken, so that every offset
// in the partition fits in 63 bits with room to spare.
const maxPartitionSize = 1 << 62

// checkPartitionSize refuses a partition size beyond maxPartitionSize, or
// one that is not a multiple of the image block size ib, with a hint that
// names one that would do.
func checkPartitionSize(size, ib uint64) error {
	if err := checkPartitionSizeLimit(size); err != nil {
		return err
	}
	if size%ib != 0 {
		hint := fmt.Sprintf("round it up: %d", roundUp(size, ib))
		if roundUp(size, ib) > maxPartitionSize {
			hint = fmt.Sprintf("round it down: %d", size-size%ib)
		}
		return paramErr("PartitionSize", hint, "partition size of %d is not a multiple of the image block size %d", size, ib)
	}
	return nil
}

// checkPartitionSizeLimit refuses a partition size beyond
// maxPartitionSize.
func checkPartitionSizeLimit(size uint64) error {
	if size > maxPartitionSize {
		return paramErr("PartitionSize", fmt.Sprintf("at most %d (2^62)", uint64(maxPartitionSize)),
			"partition size %d is too large", size)
	}
	return nil
}

// prepared is what AddHashtreeFooter reads and checks before it touches the
// image.
type prepared struct {
	hash   *hashes.Algorithm
	salt   []byte
	chains []Descriptor
	// included are the descriptors of IncludeDescriptorsFrom, encoded
	// (see include).
	included [][]byte
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
	if p.salt, err = drawSalt(o.Salt, o.UsePersistentDigest, p.hash.Size()); err != nil {
		return nil, err
	}
	p.minor = o.RequiredLibavbMinor()
	own := &HashtreeDescriptor{PartitionName: o.PartitionName, Salt: p.salt}
	if err := o.common().prepareVBMeta(p, own); err != nil {
		return nil, err
	}
	return p, nil
}

// drawSalt returns salt; nil means random bytes (size of them), or none
// with persistent.
func drawSalt(salt []byte, persistent bool, size int) ([]byte, error) {
	if salt == nil {
		salt = []byte{}
		if !persistent {
			salt = make([]byte, size)
			if _, err := rand.Read(salt); err != nil {
				return nil, ioErr("drawing a random salt: %w", err)
			}
		}
	}
	if len(salt) > merkle.MaxSaltSize {
		return nil, paramErr("Salt", "", "salt of %d bytes: at most %d", len(salt), merkle.MaxSaltSize)
	}
	return salt, nil
}

// common returns the options' vbmeta inputs.
func (o *HashtreeFooterOptions) common() *VBMetaCommonOptions {
	return &VBMetaCommonOptions{
		Algorithm: o.Algorithm, Key: o.Key, Signer: o.Signer, ChainPartitions: o.ChainPartitions, Properties: o.Properties,
		KernelCmdlines: o.KernelCmdlines, SetupRootfsFromKernel: o.SetupRootfsFromKernel, IncludeDescriptorsFrom: o.IncludeDescriptorsFrom,
		PublicKeyMetadata: o.PublicKeyMetadata, RollbackIndex: o.RollbackIndex, RollbackIndexLocation: o.RollbackIndexLocation,
		Flags: o.Flags, ReleaseString: o.ReleaseString, AppendToReleaseString: o.AppendToReleaseString,
	}
}

// AddHashtreeFooter does what `avbtool add_hashtree_footer` does, byte for
// byte: it pads the image at imagePath with zeros, appends its dm-verity
// tree (and with FEC the parity), then a vbmeta blob with a hashtree
// descriptor, signed if asked, and a footer in the partition's last
// 4096-byte block. The image is hashed once. Run on its own output it finds
// the footer and starts again from the original image, which gives the
// same file. An Android sparse image gets sparse chunks appended, as
// avbtool appends them: the tree, then the parity of its expansion, each
// one RAW chunk, so that the sparse file expands to what the expanded
// image gets.
//
// It is PlanHashtreeFooter, then Apply: every option, the key and the
// sizes are checked, and everything is laid out, before the image is
// touched. Killed at any moment, the run leaves
// the image as it was, the finished image, or an image the same call
// finishes (see the package documentation); a failure cuts the image back
// to its original size (as avbtool does: an earlier footer is then gone
// too).
func AddHashtreeFooter(ctx context.Context, imagePath string, o *HashtreeFooterOptions) (*HashtreeFooterResult, error) {
	pl, err := PlanHashtreeFooter(imagePath, o)
	if err != nil {
		return nil, err
	}
	defer pl.Close()
	return pl.Apply(ctx)
}

// sink is what EraseFooter cuts: a raw file, or an Android sparse image
// (a sparseWriter). Sizes are of the image as expanded.
type sink interface {
	truncate(size uint64) error
}

type rawSink struct{ f *os.File }

func (s *rawSink) truncate(n uint64) error {
	if err := s.f.Truncate(int64(n)); err != nil {
		return ioErr("image %s: %v", s.f.Name(), err)
	}
	return nil
}

// rootOnly builds the tree of the first imageSize bytes of src into w
// (at offset 0, no superblock) and returns its root digest; w is discard{}
// for avbtool's --no_hashtree. With zeroPad, bytes past src's end read
// as zeros (the padding avbtool appends to a sparse image); without it,
// they fail the read.
func rootOnly(ctx context.Context, src *verity.Source, zeroPad bool, imageSize, bs uint64, h *hashes.Algorithm, salt []byte, o *HashtreeFooterOptions, w io.WriterAt) ([]byte, error) {
	g, err := merkle.NewGeometry(merkle.Params{Hash: h, Salt: salt, DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: imageSize / bs})
	if err != nil {
		return nil, paramErr("", "", "%v", err)
	}
	var data io.ReaderAt = src
	if zeroPad {
		data = zeroPadded(src)
	}
	bo := &merkle.BuildOptions{Jobs: o.Jobs, Runs: src.Runs(int(bs), imageSize/bs)}
	if o.Progress != nil {
		bo.Progress = func(done uint64) { o.Progress(verity.StageHashing, done, imageSize) }
	}
	root, err := merkle.Build(ctx, g, data, w, bo)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, keepPath(ioErr("hashing: %v", err), err)
	}
	return root, nil
}

type discard struct{}

func (discard) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// zeroPadded reads src, and zeros past its end: the zeros avbtool
// appends to an image whose size is not a multiple of the tree's block
// size (an Android sparse image of smaller blocks) before it hashes it.
func zeroPadded(src *verity.Source) io.ReaderAt { return &zeroTail{r: src, size: src.Size()} }

type zeroTail struct {
	r    io.ReaderAt
	size int64
}

func (z *zeroTail) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < z.size {
		m := int(min(int64(len(p)), z.size-off))
		k, err := z.r.ReadAt(p[:m], off)
		if k < m {
			return k, err
		}
		n = m
	}
	clear(p[n:])
	return len(p), nil
}
