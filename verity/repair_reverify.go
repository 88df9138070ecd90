package verity

// Re-verifying a repair: what was written, read back and checked.

import (
	"bytes"
	"context"
	"io"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// verifyWritten reads back from the disk each block the repair wrote and
// checks it against its parent, and each hash block above it against its
// own, up to the root hash, and the superblock area if it was written: a
// repair confirmed from the disk, at the cost of the blocks it touched
// rather than of a whole verification (everything else was verified
// before, and was not written). progress, if not nil, is told the
// blocks written that are checked so far.
func verifyWritten(ctx context.Context, g *merkle.Geometry, s *fecSetup, data, hash io.ReaderAt, root []byte, rp *RepairPlan,
	progress func(done uint64)) (*merkle.VerifyReport, error) {
	rep := &merkle.VerifyReport{}
	h := g.Hash.NewBlockHasher(g.DataBlockSize, g.Salt, g.SaltPosition())
	digest := make([]byte, g.DigestSlot)
	status := map[uint64]bool{} // hash blocks checked: whether they match
	read := func(ref blockRef) ([]byte, error) {
		b := make([]byte, g.DataBlockSize)
		r := data
		if ref.inHash {
			r = hash
		}
		return b, safefile.ReadFullAt(r, b, int64(ref.off))
	}
	rr := &repairer{g: g, s: s}
	var check func(m uint64) (bool, error)
	check = func(m uint64) (bool, error) {
		if ok, done := status[m]; done {
			return ok, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		ref := s.locate(g, m)
		b, err := read(ref)
		if err != nil {
			return false, err
		}
		want := root
		if p, slot, ok := rr.parentOf(m); ok {
			if ok, err := check(p); err != nil || !ok {
				return false, err // the parent is reported
			}
			pb, err := read(s.locate(g, p))
			if err != nil {
				return false, err
			}
			want = pb[slot : slot+g.DigestSize]
		}
		h.HashBlocks(digest, g.DigestSlot, b) // after the parent's check, which uses digest too
		ok := bytes.Equal(digest[:g.DigestSize], want)
		if ref.level >= 0 {
			status[m] = ok
		}
		if !ok {
			if ref.level == merkle.DataLevel {
				rep.CorruptDataBlocks++
			} else {
				rep.CorruptHashBlocks++
			}
			rep.RootMismatch = rep.RootMismatch || ref.level == topLevel(g) || g.Levels == 0
			rep.Problems = append(rep.Problems, &merkle.CorruptionError{Level: ref.level, Index: ref.index, Offset: ref.off, Reason: "digest mismatch after the repair"})
		}
		return ok, nil
	}
	var err error
	checked := uint64(0)
	rp.eachFix(func(fx fix) bool {
		if _, err = check(fx.ref.msg); err != nil {
			return false
		}
		if checked++; progress != nil {
			progress(checked)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if rp.header != nil {
		b := make([]byte, len(rp.header))
		if err := safefile.ReadFullAt(hash, b, int64(g.HashOffset)); err != nil {
			return nil, err
		}
		for i := range b {
			if b[i] != rp.header[i] {
				rep.CorruptHeaderBytes++
				rep.Problems = append(rep.Problems, &merkle.CorruptionError{Level: merkle.HeaderLevel, Offset: g.HashOffset + uint64(i),
					Reason: "superblock area byte differs after the repair"})
			}
		}
	}
	return rep, nil
}
