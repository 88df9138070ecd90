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
	// Spec is the NAME:LOCATION:KEY_PATH it was given as, if any: avbtool
	// orders the descriptors by these strings.
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
		return nil, paramErr("BlockSize", "e.g. 4096", "%v", err) // it names the size
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
	if err := checkPartitionSizeLimit(o.PartitionSize); err != nil {
		return 0, err
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
	if err := p.include(o.IncludeDescriptorsFrom); err != nil {
		return nil, err
	}
	if err := o.checkVBMetaSize(p, sigAlg); err != nil {
		return nil, err
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
// 4096-byte block. The image is hashed once. Run on its own output it finds
// the footer and starts again from the original image, which gives the
// same file. An Android sparse image gets sparse chunks appended, as
// avbtool appends them: the tree, then the parity of its expansion, each
// one RAW chunk, so that the sparse file expands to what the expanded
// image gets.
//
// Every option, the key and the sizes are checked, and everything is laid
// out, before the image is touched. Killed at any moment, the run leaves
// the image as it was, the finished image, or an image the same call
// finishes (see the package documentation); a failure cuts the image back
// to its original size (as avbtool does: an earlier footer is then gone
// too).
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
	r := &footerRun{o: o, p: p}
	// The separate vbmeta output is checked (and locked) before the image
	// is touched, and written once the blob is made.
	if o.OutputVBMeta != "" {
		r.vbOut, err = openOutputFile(o.OutputVBMeta, "output vbmeta image", "a vbmeta image",
			func(head []byte) bool { return bytes.HasPrefix(head, vbmetaMagic) }, false)
		if err != nil {
			return nil, err
		}
		defer r.vbOut.Abort()
	}
	if o.HashAlgorithm == "" && o.Warn != nil {
		o.Warn("no hash algorithm given: sha1, avbtool's default kept for backwards compatibility; Android wants sha256")
	}
	if r.t, err = openTarget(imagePath); err != nil {
		return nil, err
	}
	defer r.t.f.Close()
	if r.pl, err = o.plan(p, r.t); err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// run writes what was planned, cutting the image back to its original
// size if anything fails.
func (r *footerRun) run(ctx context.Context) (*HashtreeFooterResult, error) {
	t := r.t
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var res *HashtreeFooterResult
	var err error
	if t.sw == nil {
		if res, err = r.writeRaw(ctx); err != nil {
			_ = t.f.Truncate(int64(t.orig))
		}
		return res, err
	}
	cut, err := t.sw.planCut(t.orig)
	if err != nil {
		return nil, prefixErr(t.path, err)
	}
	if res, err = r.writeSparse(ctx, cut); err != nil {
		if t.sw.applyCut(cut) == nil {
			_ = t.f.Truncate(cut.end)
		}
	}
	return res, err
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
