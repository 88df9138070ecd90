package avb

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/verity"
)

// hashFooterReserve is what avbtool's add_hash_footer reserves in a
// partition for the metadata: 64 KiB for the vbmeta, 4 KiB for the footer.
const hashFooterReserve = maxVBMetaReserve + maxFooterReserve

// HashFooterOptions are avbtool add_hash_footer's options.
type HashFooterOptions struct {
	// PartitionSize is the partition's size, a multiple of 4096 (or of a
	// sparse image's block size) of at least 69632 bytes;
	// DynamicPartitionSize makes it the image's size plus 68 KiB, rounded
	// up to a whole block, and wins over PartitionSize.
	PartitionSize        uint64
	DynamicPartitionSize bool
	PartitionName        string
	// HashAlgorithm is the image's hash; "" means sha256, avbtool's
	// default. The descriptor keeps the name as given.
	HashAlgorithm string
	// Salt: nil means random bytes (as many as the digest), or none with
	// UsePersistentDigest; an empty non-nil slice means none.
	Salt []byte
	// UsePersistentDigest stores no digest (the device keeps it);
	// DoNotUseAB sets the descriptor's do-not-use-A/B flag.
	UsePersistentDigest, DoNotUseAB bool
	// OutputVBMeta, if not "", is a file the vbmeta blob is also written
	// to; DoNotAppendVBMeta leaves the vbmeta and the footer out of the
	// image (an earlier footer is still taken off).
	OutputVBMeta      string
	DoNotAppendVBMeta bool
	VBMetaCommonOptions
}

// HashFooterResult is what AddHashFooter wrote.
type HashFooterResult struct {
	// Descriptor is the hash descriptor stored.
	Descriptor *HashDescriptor
	// Digest is the image's digest (also when the descriptor does not
	// store it).
	Digest []byte
	// VBMeta is the vbmeta blob.
	VBMeta []byte
	// Footer is the footer written; nil with DoNotAppendVBMeta.
	Footer *Footer
	// OriginalSize is the image's size before (without an earlier
	// footer's metadata); Size after (both as expanded, for a sparse
	// image).
	OriginalSize, Size uint64
	// Sparse: the image is an Android sparse image, and stays one.
	Sparse bool
}

func (o *HashFooterOptions) hashName() string {
	if o.HashAlgorithm == "" {
		return "sha256"
	}
	return o.HashAlgorithm
}

// RequiredLibavbMinor is the minor version of libavb 1.x the options need,
// what avbtool's add_hash_footer --print_required_libavb_version prints
// after "1." (it does not read the included images for it).
func (o *HashFooterOptions) RequiredLibavbMinor() uint32 {
	var m uint32
	if o.UsePersistentDigest || o.DoNotUseAB {
		m = 1
	}
	return requiredLibavbMinor(m, o.RollbackIndexLocation, o.ChainPartitions)
}

// MaxHashImageSize is the largest image that fits with its metadata in a
// partition of partitionSize bytes, as avbtool's add_hash_footer
// --calc_max_image_size computes it: partitionSize less 68 KiB. A
// partition smaller than that is refused.
func MaxHashImageSize(partitionSize uint64) (int64, error) {
	if err := checkHashPartitionSize(partitionSize); err != nil {
		return 0, err
	}
	return maxImageSize(partitionSize, 0), nil
}

func checkHashPartitionSize(size uint64) error {
	if err := checkPartitionSizeLimit(size); err != nil {
		return err
	}
	if size < hashFooterReserve {
		return paramErr("PartitionSize", fmt.Sprintf("at least %d (the metadata's %d, and the image)", hashFooterReserve+imageBlockSize, hashFooterReserve),
			"partition size of %d is too small: the metadata alone takes %d", size, hashFooterReserve)
	}
	return nil
}

// HashFooterPlan is one AddHashFooter, decided before a byte is written:
// the image as found and what is kept of it, the vbmeta's size and the
// footer's place. PlanHashFooter makes it, with the image open and
// locked; Apply writes it, or Close lets the image go untouched.
type HashFooterPlan struct {
	PartitionPlan
	// Descriptor is the hash descriptor the vbmeta will hold, but for its
	// digest, known once the image is hashed.
	Descriptor HashDescriptor
	// RequiredLibavbMinor is the minor version of libavb 1.x the vbmeta
	// will require: the options', raised by included descriptors.
	RequiredLibavbMinor uint32

	o     *HashFooterOptions
	p     *prepared
	vbOut *outputFile
	done  bool
}

// PlanHashFooter checks everything AddHashFooter checks (the options, the
// key, the included images, the image and its sizes) and lays out what it
// would write, without writing. The image (and the separate vbmeta
// output, if any) stays open and locked until Apply or Close.
func PlanHashFooter(imagePath string, o *HashFooterOptions) (*HashFooterPlan, error) {
	if o == nil {
		o = &HashFooterOptions{}
	}
	p, err := o.prepare()
	if err != nil {
		return nil, err
	}
	pl := &HashFooterPlan{o: o, p: p}
	if err := pl.open(imagePath); err != nil {
		pl.Close()
		return nil, err
	}
	return pl, nil
}

// prepare checks the options and reads what the vbmeta needs.
func (o *HashFooterOptions) prepare() (*prepared, error) {
	if !o.DynamicPartitionSize {
		if o.PartitionSize == 0 {
			return nil, paramErr("PartitionSize", "give the partition's size, or ask for HashFooterOptions.DynamicPartitionSize",
				"no partition size given")
		}
		if err := checkHashPartitionSize(o.PartitionSize); err != nil {
			return nil, err
		}
	}
	p := &prepared{}
	var err error
	if p.hash, err = LookupHash(o.hashName()); err != nil {
		return nil, paramErr("HashAlgorithm", "e.g. sha256 (the default)", "%v", err)
	}
	if p.salt, err = drawSalt(o.Salt, o.UsePersistentDigest, p.hash.Size()); err != nil {
		return nil, err
	}
	p.minor = o.RequiredLibavbMinor()
	if err := o.prepareVBMeta(p, o.descriptor(p, make([]byte, p.hash.Size()))); err != nil {
		return nil, err
	}
	return p, nil
}

// descriptor is the hash descriptor for the image's digest, but for the
// image's size (set by the plan).
func (o *HashFooterOptions) descriptor(p *prepared, digest []byte) *HashDescriptor {
	d := &HashDescriptor{HashAlgorithm: o.hashName(), PartitionName: o.PartitionName, Salt: p.salt}
	if o.DoNotUseAB {
		d.Flags |= 1 // AVB_HASH_DESCRIPTOR_FLAGS_DO_NOT_USE_AB
	}
	if !o.UsePersistentDigest {
		d.Digest = digest
	}
	return d
}

// open opens (and locks) the separate vbmeta output and the image, and
// lays the run out.
func (pl *HashFooterPlan) open(imagePath string) error {
	o := pl.o
	if o.OutputVBMeta != "" {
		var err error
		pl.vbOut, err = openOutputFile(o.OutputVBMeta, "output vbmeta image", "a vbmeta image", isVBMetaImage, false)
		if err != nil {
			return err
		}
	}
	t, err := openTarget(imagePath, "add_hash_footer")
	if err != nil {
		return err
	}
	pp, err := planPartition(t, o.partitionSize(t))
	if err != nil {
		t.f.Close()
		return err
	}
	pl.PartitionPlan = *pp
	pl.verb = "add_hash_footer"
	return pl.lay()
}

// partitionSize is the partition's size for the image t.
func (o *HashFooterOptions) partitionSize(t *target) uint64 {
	if o.DynamicPartitionSize {
		return roundUp(t.orig+hashFooterReserve, t.ib)
	}
	return o.PartitionSize
}

// lay checks the image's size and places the vbmeta (past the image,
// padded to whole blocks when it is appended, as avbtool pads it) and the
// footer.
func (pl *HashFooterPlan) lay() error {
	t := pl.t
	// The image as it is, as avbtool checks it: padded, it fits the
	// same, the largest image being a whole number of blocks.
	if err := pl.checkFits(t.orig, 0); err != nil {
		return err
	}
	d := pl.o.descriptor(pl.p, make([]byte, pl.p.hash.Size()))
	d.ImageSize = t.orig
	vbSize, err := vbmetaSize(pl.o.vbmetaOptions(pl.p, pl.o.descriptors(pl.p, []Descriptor{d}, nil)))
	if err != nil {
		return err
	}
	vbOff := t.orig
	if !pl.o.DoNotAppendVBMeta {
		vbOff = roundUp(t.orig, t.ib)
	}
	if err := pl.place(vbOff, vbSize, !pl.o.DoNotAppendVBMeta); err != nil {
		return err
	}
	d.Digest = nil
	pl.Descriptor, pl.RequiredLibavbMinor = *d, pl.p.minor
	return nil
}

// Close releases the image and the vbmeta output; after Apply it does
// nothing.
func (pl *HashFooterPlan) Close() error {
	if pl.done {
		return nil
	}
	pl.done = true
	if pl.vbOut != nil {
		pl.vbOut.Abort()
	}
	if pl.t != nil {
		return pl.t.f.Close()
	}
	return nil
}

// Apply writes what was planned, as AddHashtreeFooter's Apply writes (see
// footerrun.go: killed at any moment, the image is the original, the
// finished one, or one the same call finishes), cutting the image back to
// its original size if anything fails, and releases the image. A plan is
// applied once.
func (pl *HashFooterPlan) Apply(ctx context.Context) (*HashFooterResult, error) {
	if pl.done {
		return nil, errors.New("avb: the footer plan was already applied or closed")
	}
	defer pl.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var d *HashDescriptor
	var digest []byte
	blob, ft, err := pl.write(func(src *verity.Source) ([]byte, error) {
		var err error
		if digest, err = hashImage(ctx, src, pl.t.orig, pl.p.hash, pl.p.salt); err != nil {
			return nil, err
		}
		var blob []byte
		d, blob, err = pl.vbmeta(ctx, digest)
		return blob, err
	})
	if err != nil {
		return nil, err
	}
	if pl.o.DoNotAppendVBMeta {
		ft = nil
	}
	return &HashFooterResult{Descriptor: d, Digest: digest, VBMeta: blob, Footer: ft,
		OriginalSize: pl.t.orig, Size: pl.Size, Sparse: pl.t.sw != nil}, nil
}

// vbmeta makes the vbmeta blob for the image's digest, and writes it to
// the separate vbmeta output if there is one.
func (pl *HashFooterPlan) vbmeta(ctx context.Context, digest []byte) (*HashDescriptor, []byte, error) {
	d := pl.o.descriptor(pl.p, digest)
	d.ImageSize = pl.t.orig
	blob, err := MakeVBMetaContext(ctx, pl.o.vbmetaOptions(pl.p, pl.o.descriptors(pl.p, []Descriptor{d}, nil)))
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(blob)) != pl.VBMetaSize {
		return nil, nil, fmt.Errorf("avb: internal error: vbmeta of %d bytes, %d planned", len(blob), pl.VBMetaSize)
	}
	if pl.vbOut != nil {
		if err := pl.vbOut.Commit(blob); err != nil {
			return nil, nil, err
		}
	}
	return d, blob, nil
}

// AddHashFooter does what `avbtool add_hash_footer` does, byte for byte:
// it hashes the image at imagePath (the salt, then the image), and appends
// a vbmeta blob with a hash descriptor, signed if asked, padded to whole
// blocks, and a footer in the partition's last block (unless
// DoNotAppendVBMeta). Run on its own output it finds the footer and starts
// again from the original image, which gives the same file. An Android
// sparse image stays one: the vbmeta, a DONT_CARE chunk up to the
// partition's last block, and the footer are appended as chunks, as
// avbtool appends them.
//
// It is PlanHashFooter, then Apply: every option, the key and the sizes
// are checked, and everything is laid out, before the image is touched.
// Killed at any moment, the run leaves the image as it was, the finished
// image, or an image the same call finishes; a failure cuts the image back
// to its original size (as avbtool does: an earlier footer is then gone
// too). The image is read once, in one pass, and the hashing ends with
// ctx.
func AddHashFooter(ctx context.Context, imagePath string, o *HashFooterOptions) (*HashFooterResult, error) {
	pl, err := PlanHashFooter(imagePath, o)
	if err != nil {
		return nil, err
	}
	defer pl.Close()
	return pl.Apply(ctx)
}

// write appends to the image, raw or sparse, what fill returns (the
// vbmeta, after it has read the image from src) and the footer, cutting
// the image back to its original size if anything fails.
func (pp *PartitionPlan) write(fill func(src *verity.Source) ([]byte, error)) ([]byte, *Footer, error) {
	t := pp.t
	if t.sw == nil {
		blob, ft, err := pp.appendRaw(fill)
		if err != nil {
			_ = t.f.Truncate(int64(t.orig))
		}
		return blob, ft, err
	}
	cut, err := t.sw.planCut(t.orig)
	if err != nil {
		return nil, nil, prefixErr(t.path, err)
	}
	blob, ft, err := pp.appendSparse(cut, nil, func(src *verity.Source, _ []int64) ([]byte, error) { return fill(src) })
	if err != nil {
		if t.sw.applyCut(cut) == nil {
			_ = t.f.Truncate(cut.end)
		}
	}
	return blob, ft, err
}

// hashBuffer is the size of each of the two buffers the image is hashed
// through, one read while the other is hashed: 1 MiB, since the first
// touch of a larger buffer costs more in page faults than its fewer reads
// save (64 MiB boot image: 0.07 s against 0.10 s with 4 MiB).
const hashBuffer = 1 << 20

// hashImage returns the digest of salt followed by the first size bytes
// of r, read in one pass, a buffer ahead of the hashing; it ends with ctx.
func hashImage(ctx context.Context, r io.ReaderAt, size uint64, alg *hashes.Algorithm, salt []byte) ([]byte, error) {
	h := alg.New()
	h.Write(salt)
	type chunk struct {
		b   []byte
		err error
	}
	full := make(chan chunk, 1)
	free := make(chan []byte, 2)
	free <- make([]byte, hashBuffer)
	free <- make([]byte, hashBuffer)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(full)
		for off := uint64(0); off < size; {
			var b []byte
			select {
			case b = <-free:
			case <-stop:
				return
			}
			n := min(uint64(len(b)), size-off)
			got, err := r.ReadAt(b[:n], int64(off))
			switch {
			case uint64(got) == n:
				err = nil // io.EOF may come with the last bytes
			case err == io.EOF || err == nil:
				err = ioErr("the image ends at %d bytes, before its %d bytes: it changed while it was read", off+uint64(got), size)
			default:
				err = ioErr("reading the image: %v", err)
			}
			select {
			case full <- chunk{b[:n], err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
			off += n
		}
	}()
	for c := range full {
		if c.err != nil {
			return nil, c.err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h.Write(c.b)
		free <- c.b[:cap(c.b)]
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
