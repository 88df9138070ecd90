// Package appendscan recognises, at the end of an image, the tree (and
// parity) that verity.Format's Append wrote there, and an AVB footer:
// what Format checks before it appends, and veritygen --avb before
// add_hashtree_footer, so that neither takes an earlier run's output for
// data.
package appendscan

import (
	"bytes"
	"io"
	"os"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/fecmsg"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// An Append run again on its own output (a build script run twice) would
// take the tree it appended for data and append a second tree. Without a
// record of where the image ended (the finished file must stay byte for
// byte what it was), Find recognises the tree (and parity)
// this run would append at the end of DATA: the size first (only one
// padded image size gives an Append ending exactly at DATA's end), then the
// shape of the tree (the zero padding of each level's last block, and no
// digest all zeros), then, with the salt given, the digests of a few data
// blocks and of the hash blocks above them; when neither proves anything
// (no salt, and every level fills its last block), the parity of the last
// round. An ordinary image fails the shape (random bytes where zeros
// belong; zeros where digests belong), the digests or the parity. A tree
// without parity, made with a random salt, whose every level is full
// (2^(7k) data blocks with 32-byte digests in 4096-byte blocks) cannot be
// told from data: it is taken for data, as before.

// minShapeEvidence is the number of padding bytes the shape must have, all
// zeros, to be taken for a tree without checking digests.
const minShapeEvidence = 32

// Found is the tree an earlier Append left at the end of DATA.
type Found struct {
	// Padded is the image's size padded to a whole block: where the tree
	// starts.
	Padded uint64
	// Original is the image's size as far as DATA tells: past its last
	// non-zero byte before padded, or padded itself when the last block is
	// zeros (the layout and the bytes are the same for any of them).
	Original uint64
	// Checked: the digests were checked with this run's salt; otherwise
	// only the shape matched (the salt is not known, or is another one).
	Checked bool
}

// Geometry returns the tree an Append lays out after an image padded
// to padded bytes, with p's hash, format, salt and block sizes, and where
// the Append ends (after the parity, with fecRoots > 0).
func Geometry(p merkle.Params, padded uint64, fecRoots int) (*merkle.Geometry, uint64, error) {
	p.Superblock, p.HashOffset, p.DataBlocks = false, padded, padded/uint64(p.DataBlockSize)
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return nil, 0, err
	}
	end := g.HashEnd()
	if fecRoots > 0 {
		fp, err := fecmsg.Params(g, fecRoots, end)
		if err != nil {
			return nil, 0, err
		}
		end += fp.ParitySize()
	}
	return g, end, nil
}

// Find returns the tree (and, with fecRoots > 0, the parity)
// an Append with p would have written at the end of r (size bytes), or nil
// if r does not end in one. p.Salt nil means the salt is not known: only
// the shape is checked then.
func Find(r io.ReaderAt, size uint64, p merkle.Params, fecRoots int) (*Found, error) {
	align := uint64(max(p.DataBlockSize, p.HashBlockSize))
	// The end grows with the padded size: one padded size at most fits.
	lo, hi := uint64(1), size/align
	var g *merkle.Geometry
	for lo <= hi && g == nil {
		mid := lo + (hi-lo)/2
		cand, end, err := Geometry(p, mid*align, fecRoots)
		switch {
		case err != nil || end > size:
			hi = mid - 1
		case end < size:
			lo = mid + 1
		default:
			g = cand
		}
	}
	if g == nil || g.Levels == 0 {
		return nil, nil
	}
	evidence, ok, err := treeShape(r, g)
	if err != nil || !ok {
		return nil, err
	}
	found := &Found{Padded: g.HashOffset}
	parity := fecRoots == 0 // nothing follows the tree
	if !parity {
		if parity, err = parityMatches(r, g, fecRoots); err != nil {
			return nil, err
		}
	}
	if p.Salt != nil {
		if found.Checked, err = digestsMatch(r, g); err != nil {
			return nil, err
		}
		// What follows the tree is written again only if it is the
		// parity an Append writes there.
		found.Checked = found.Checked && parity
	}
	if !found.Checked && evidence < minShapeEvidence && (fecRoots == 0 || !parity) {
		// The shape proves nothing (every level fills its last block),
		// nor does the parity (which has no salt).
		return nil, nil
	}
	if found.Original, err = paddedFrom(r, g.HashOffset, align); err != nil {
		return nil, err
	}
	return found, nil
}

// treeShape checks the last block of each level of g in r: each digest it
// holds not all zeros, zeros after it in its slot and after the last one.
// It returns how many zero bytes it checked, and false if the shape is not
// a tree's.
func treeShape(r io.ReaderAt, g *merkle.Geometry) (int, bool, error) {
	hbs, slot, ds := g.HashBlockSize, g.DigestSlot, g.DigestSize
	block := make([]byte, hbs)
	zero := make([]byte, hbs)
	evidence := 0
	for l := range g.Levels {
		last := g.LevelBlocks[l] - 1
		if err := safefile.ReadFullAt(r, block, int64(g.BlockOffset(merkle.Level(l), last))); err != nil {
			return 0, false, err
		}
		count := g.DataBlocks
		if l > 0 {
			count = g.LevelBlocks[l-1]
		}
		used := int(count - last*uint64(g.HashesPerBlock))
		for i := range used {
			d := block[i*slot : (i+1)*slot]
			if bytes.Equal(d[:ds], zero[:ds]) || !bytes.Equal(d[ds:], zero[:slot-ds]) {
				return 0, false, nil
			}
			evidence += slot - ds
		}
		if !bytes.Equal(block[used*slot:], zero[:hbs-used*slot]) {
			return 0, false, nil
		}
		evidence += hbs - used*slot
	}
	return evidence, true, nil
}

// digestsMatch checks, with g's salt, the digests of the first, middle and
// last data blocks and of the hash blocks above them up to the top level.
func digestsMatch(r io.ReaderAt, g *merkle.Geometry) (bool, error) {
	dataHasher := g.Hash.NewBlockHasher(g.DataBlockSize, g.Salt, g.SaltPosition())
	hashHasher := g.Hash.NewBlockHasher(g.HashBlockSize, g.Salt, g.SaltPosition())
	digest := make([]byte, g.DigestSlot)
	stored := make([]byte, g.DigestSize)
	data := make([]byte, g.DataBlockSize)
	hash := make([]byte, g.HashBlockSize)
	for _, i := range []uint64{0, g.DataBlocks / 2, g.DataBlocks - 1} {
		if err := safefile.ReadFullAt(r, data, int64(i*uint64(g.DataBlockSize))); err != nil {
			return false, err
		}
		dataHasher.HashBlocks(digest, g.DigestSlot, data)
		level, index := merkle.DataLevel, i
		for {
			if err := safefile.ReadFullAt(r, stored, int64(g.DigestOffset(level, index))); err != nil {
				return false, err
			}
			if !bytes.Equal(stored, digest[:g.DigestSize]) {
				return false, nil
			}
			parent, _ := g.Parent(level, index)
			level, index = level+1, parent
			if level == g.TopLevel() {
				break // the top block's digest is the root, stored nowhere
			}
			if err := safefile.ReadFullAt(r, hash, int64(g.BlockOffset(level, index))); err != nil {
				return false, err
			}
			hashHasher.HashBlocks(digest, g.DigestSlot, hash)
		}
	}
	return true, nil
}

// parityMatches reports whether r holds, after the tree of g, the parity
// (fecRoots > 0) an Append computes of the image and the tree: the
// codewords of its last round, all blocks taken as good, decode to
// themselves.
func parityMatches(r io.ReaderAt, g *merkle.Geometry, fecRoots int) (bool, error) {
	if fecRoots == 0 {
		return false, nil
	}
	fp, err := fecmsg.Params(g, fecRoots, g.HashEnd())
	if err != nil {
		return false, nil
	}
	parity := io.NewSectionReader(r, int64(g.HashEnd()), int64(fp.ParitySize()))
	d, err := fec.NewRoundDecoder(fp, fecmsg.Message(g, fp, r, r), parity)
	if err != nil {
		return false, nil
	}
	res, err := d.Decode(fp.Rounds()-1, func(uint64) fec.BlockState { return fec.Good }, fec.ErrorsOnly)
	if err != nil {
		return false, err
	}
	return res.Failed == 0, nil
}

// paddedFrom returns where the zero padding before padded (a multiple of
// align) may start: past the last non-zero byte of the last block, or
// padded itself when that block is all zeros (an image of whole blocks
// ending in zeros, the common case; the layout is the same either way).
func paddedFrom(r io.ReaderAt, padded, align uint64) (uint64, error) {
	b := make([]byte, align)
	if err := safefile.ReadFullAt(r, b, int64(padded-align)); err != nil {
		return 0, err
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return padded - align + uint64(i) + 1, nil
		}
	}
	return padded, nil
}

// InFile looks at the end of the regular file at path for the tree (and,
// with fecRoots > 0, the parity) that an Append with p would write there,
// as Format does before it appends (p.Salt nil: the salt is not known,
// only the shape and the parity are checked). It returns where the tree
// starts (the image padded to a whole block) and the image's size as the
// file tells it, or found false; an AVB image, or one a killed run left
// (its resume record), is not an Append's output. For callers that append
// otherwise (veritygen --avb), which must not take such a tree for data
// either.
func InFile(path string, p merkle.Params, fecRoots int) (padded, original uint64, found bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return 0, 0, false, err
	}
	size := uint64(info.Size())
	if FindAVBFooter(f, size) != nil || safefile.ReadResumeRecord(f, info.Size()) != nil {
		return 0, 0, false, nil
	}
	e, err := Find(f, size, p, fecRoots)
	if err != nil || e == nil {
		return 0, 0, false, err
	}
	return e.Padded, e.Original, true, nil
}
