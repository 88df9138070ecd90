package avb

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/veritytree/veritytree/verity"
)

// HashtreeDataCheck is what CheckHashtreeData found.
type HashtreeDataCheck struct {
	// Root is the root digest of the data as the descriptor's parameters
	// hash it.
	Root []byte
	// RootMatches: the descriptor stores no root digest (a persistent
	// digest) or stores Root.
	RootMatches bool
	// TreeMatches: the tree stored at the descriptor's tree offset is,
	// byte for byte, the tree of the data.
	TreeMatches bool
	// Zeroed: the stored tree is empty or starts with avbtool
	// zero_hashtree's mark (ZeRoHaSH).
	Zeroed bool
}

// zeroHashMark is what avbtool zero_hashtree writes at the start of a tree.
var zeroHashMark = []byte("ZeRoHaSH")

// CheckHashtreeData checks the image at path (raw or Android sparse) against
// a hashtree descriptor as avbtool verify_image does: it hashes the
// descriptor's ImageSize bytes of data with its parameters, compares the
// root with the descriptor's and the tree it builds with the bytes stored at
// TreeOffset. The tree is compared as it is built, so memory stays bounded
// whatever the image's size. A tree whose size is not the one the
// parameters give (avbtool --no_hashtree writes none) does not match.
// An error means the check could not be made (unknown hash, sizes beyond
// the file, I/O); a mismatch is not an error.
func CheckHashtreeData(ctx context.Context, path string, ht *HashtreeDescriptor, jobs int) (*HashtreeDataCheck, error) {
	alg, err := LookupHash(ht.HashAlgorithm)
	if err != nil {
		return nil, inputErr("", "hashtree descriptor: unknown hash algorithm %q", ht.HashAlgorithm)
	}
	bs := uint64(ht.DataBlockSize)
	if err := checkBlockSizes(ht); err != nil {
		return nil, prefixErr(path, err)
	}
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	size := uint64(src.Size())
	if err := checkImageSize(ht, size, "the file's %d bytes"); err != nil {
		return nil, prefixErr(path, err)
	}
	res := &HashtreeDataCheck{}
	want := treeSize(ht.ImageSize, bs, digestSlot(alg.Size()))
	inFile := ht.TreeOffset <= size && ht.TreeSize <= size-ht.TreeOffset
	if ht.TreeSize == 0 {
		res.Zeroed = true
	} else if inFile {
		mark := make([]byte, len(zeroHashMark))
		if n, _ := src.ReadAt(mark, int64(ht.TreeOffset)); n == len(mark) && bytes.Equal(mark, zeroHashMark) {
			res.Zeroed = true
		}
	}
	cmp := &treeComparer{src: src, base: ht.TreeOffset, size: ht.TreeSize, ok: want == ht.TreeSize && inFile}
	var w io.WriterAt = cmp
	if want == 0 || !cmp.ok {
		w = discard{} // one block (no tree), or nothing to compare with
	}
	res.Root, err = rootOnly(ctx, src, false, ht.ImageSize, bs, alg, ht.Salt, &HashtreeFooterOptions{Jobs: jobs}, w)
	if err != nil {
		return nil, err
	}
	res.RootMatches = len(ht.RootDigest) == 0 || bytes.Equal(res.Root, ht.RootDigest)
	res.TreeMatches = cmp.ok
	return res, nil
}

// treeComparer is the io.WriterAt the tree is built into: each block
// written is compared with the bytes stored at base+offset.
type treeComparer struct {
	src        io.ReaderAt
	base, size uint64
	mu         sync.Mutex
	buf        []byte
	ok         bool
}

func (c *treeComparer) WriteAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok {
		return len(p), nil
	}
	if off < 0 || uint64(off) > c.size || uint64(len(p)) > c.size-uint64(off) {
		c.ok = false
		return len(p), nil
	}
	if cap(c.buf) < len(p) {
		c.buf = make([]byte, len(p))
	}
	b := c.buf[:len(p)]
	if n, err := c.src.ReadAt(b, int64(c.base)+off); n != len(b) && err != nil {
		return 0, ioErr("reading the stored tree: %v", err)
	}
	if !bytes.Equal(b, p) {
		c.ok = false
	}
	return len(p), nil
}

// CheckHashData checks the image at path against a hash descriptor as
// avbtool verify_image does: the digest of the salt and the first
// ImageSize bytes must be the descriptor's (when it stores one). It reports
// whether they match; an error means the check could not be made. The
// image may be large (a 64 GiB boot image): the hashing ends with ctx.
func CheckHashData(ctx context.Context, path string, d *HashDescriptor) (bool, error) {
	got, err := hashDigest(ctx, path, d)
	if err != nil {
		return false, err
	}
	return len(d.Digest) == 0 || bytes.Equal(got, d.Digest), nil
}

// hashDigest is the digest of the salt and the first ImageSize bytes of the
// image at path (its expansion, if sparse) with the descriptor's hash.
func hashDigest(ctx context.Context, path string, d *HashDescriptor) ([]byte, error) {
	// Any name add_hash_footer takes (avbtool's hashlib.new); what libavb
	// accepts is CheckMetadata's to decide.
	h, err := LookupHash(d.HashAlgorithm)
	if err != nil {
		return nil, inputErr("", "hash descriptor: hash algorithm %q is not supported", d.HashAlgorithm)
	}
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if d.ImageSize > uint64(src.Size()) {
		return nil, prefixErr(path, inputErr("", "hash descriptor: image size %d is beyond the file's %d bytes", d.ImageSize, src.Size()))
	}
	hh := h.New()
	hh.Write(d.Salt)
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(hh, &ctxReader{ctx, io.NewSectionReader(src, 0, int64(d.ImageSize))}, buf); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, prefixErr(path, ioErr("%v", err))
	}
	return hh.Sum(nil), nil
}

// ctxReader is r, its reads failing once ctx ends: a copy of gigabytes
// stops at the next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
