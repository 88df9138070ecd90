package merkle

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// VerifyOptions tune Verify. The zero value is ready to use.
type VerifyOptions struct {
	// Jobs is how many goroutines hash data blocks; 0 means one per CPU.
	Jobs int
	// Progress, if set, is called from one goroutine with the number of
	// data bytes checked so far.
	Progress func(done uint64)
	// MaxProblems caps the problems listed in the report (the counts are
	// always complete); 0 means 100, negative means no cap.
	MaxProblems int
	// OnProblem, if set, is called with every problem, capped or not, in
	// the order of the report, from one goroutine: a caller can stream
	// them instead of holding a list that grows with the damage.
	OnProblem func(*CorruptionError)
	// Runs, if set, lists runs of data blocks whose content the caller
	// knows, as in BuildOptions.Runs (holes of a sparse file, say): they
	// are checked against the tree as that content, without being read.
	// Verify trusts them: a run that is not what data holds gives a wrong
	// report.
	Runs []Run
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	// Problems lists corrupted blocks in the order found: the superblock
	// area, then the tree from the top level down, then the data.
	Problems []*CorruptionError
	// Truncated says Problems was capped; the counts below are complete.
	Truncated bool

	CorruptHeaderBytes uint64
	CorruptHashBlocks  uint64
	CorruptDataBlocks  uint64
	// Blocks under a corrupted hash block cannot be checked: their expected
	// digests are not trustworthy. They are counted, not listed.
	UncheckedHashBlocks uint64
	UncheckedDataBlocks uint64
	// RootMismatch: the top block (or, with one data block, the data) does
	// not match the root hash: a wrong root hash or a corrupted top block.
	RootMismatch bool
}

// OK reports whether everything verified.
func (r *VerifyReport) OK() bool {
	return r.CorruptHeaderBytes == 0 && r.CorruptHashBlocks == 0 && r.CorruptDataBlocks == 0
}

func (r *VerifyReport) add(max int, onProblem func(*CorruptionError), p *CorruptionError) {
	if onProblem != nil {
		onProblem(p)
	}
	if max >= 0 && len(r.Problems) >= max {
		r.Truncated = true
		return
	}
	r.Problems = append(r.Problems, p)
}

// Verify checks everything against the root hash and reports every problem,
// not just the first: the superblock's reserved bytes and the zero gap after
// it, every hash block against its parent (the top one against the root)
// and its zero padding, and every data block against level 0. The data is
// read once, streaming, in bounded memory.
//
// The returned error is for failures to check (I/O, a hash device shorter
// than the tree); corruption is in the report.
func Verify(ctx context.Context, g *Geometry, data, hash io.ReaderAt, root []byte, opts *VerifyOptions) (*VerifyReport, error) {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	if len(root) != g.DigestSize {
		return nil, fmt.Errorf("root hash is %d bytes; %s needs %d", len(root), g.Hash.Name(), g.DigestSize)
	}
	runs, err := prepareRuns(g, opts.Runs)
	if err != nil {
		return nil, err
	}
	v := &verifier{g: g, hash: hash, root: root, rep: &VerifyReport{}, max: opts.MaxProblems, onProblem: opts.OnProblem,
		h: newLevelHasher(g, opts.Jobs)}
	if v.max == 0 {
		v.max = 100
	}
	if g.Superblock {
		if err := v.checkHeader(); err != nil {
			return nil, err
		}
	}
	if err := v.checkTree(ctx); err != nil {
		return nil, err
	}
	if err := v.checkData(ctx, data, runs, opts); err != nil {
		return nil, err
	}
	return v.rep, nil
}

type verifier struct {
	g    *Geometry
	hash io.ReaderAt
	root []byte
	rep  *VerifyReport
	max  int
	h    *levelHasher
	// onProblem is VerifyOptions.OnProblem.
	onProblem func(*CorruptionError)
	// untrusted marks the blocks of the level checked last whose content
	// cannot be trusted: corrupted, or under a corrupted block.
	untrusted bitmap
}

type bitmap []uint64

func newBitmap(n uint64) bitmap    { return make(bitmap, (n+63)/64) }
func (b bitmap) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitmap) get(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }

// readHash reads from the hash device, calling a short read what it is: a
// hash device too small for the tree.
func readHash(r io.ReaderAt, p []byte, off uint64, what string) error {
	n, err := r.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		return fmt.Errorf("%w: the hash device ends at byte %d, inside %s (bytes %d to %d)",
			io.ErrUnexpectedEOF, off+uint64(n), what, off, off+uint64(len(p)))
	}
	return fmt.Errorf("reading %s from the hash device at byte %d: %w", what, off, err)
}

// checkHeader compares the superblock area with what the parameters say it
// must hold: their encoding, then zeros up to the tree.
func (v *verifier) checkHeader() error {
	g := v.g
	b := make([]byte, g.TreeOffset()-g.HashOffset)
	if g.HashBlocks == 0 {
		// No tree block follows (one data block): the hash device may
		// end anywhere past the superblock, as veritysetup leaves it when
		// its hash blocks are larger than the block it writes.
		if n, err := v.hash.ReadAt(b, int64(g.HashOffset)); n >= SuperblockSize && (err == nil || err == io.EOF) {
			b = b[:n]
		}
	}
	if err := readHash(v.hash, b, g.HashOffset, "the superblock"); err != nil {
		return err
	}
	want := make([]byte, len(b))
	copy(want, EncodeSuperblock(g))
	for i := range b {
		if b[i] != want[i] {
			reason := "superblock byte differs from its parameters"
			switch {
			case i >= SuperblockSize:
				reason = "non-zero byte between the superblock and the tree"
			case want[i] == 0:
				reason = "non-zero reserved or padding byte in the superblock"
			}
			v.rep.CorruptHeaderBytes++
			v.rep.add(v.max, v.onProblem, &CorruptionError{Level: HeaderLevel, Offset: g.HashOffset + uint64(i), Reason: reason})
		}
	}
	return nil
}

// levelReader reads the blocks of one level in increasing order, a batch
// at a time.
type levelReader struct {
	g     *Geometry
	r     io.ReaderAt
	level Level
	buf   []byte
	first uint64 // index of buf's first block
	count uint64 // blocks in buf
}

func newLevelReader(g *Geometry, r io.ReaderAt, level Level) *levelReader {
	batch := min(levelBatchBlocks(g), g.LevelBlocks[level])
	return &levelReader{g: g, r: r, level: level, buf: make([]byte, batch*uint64(g.HashBlockSize))}
}

// blocks returns up to n blocks starting at index i (at least one), reading
// a new batch when i is not in the buffer.
func (lr *levelReader) blocks(i uint64, n uint64) ([]byte, uint64, error) {
	hbs := uint64(lr.g.HashBlockSize)
	if i < lr.first || i >= lr.first+lr.count {
		lr.first = i
		lr.count = min(uint64(len(lr.buf))/hbs, lr.g.LevelBlocks[lr.level]-i)
		what := fmt.Sprintf("hash level %d, blocks %d to %d", lr.level, i, i+lr.count-1)
		if err := readHash(lr.r, lr.buf[:lr.count*hbs], lr.g.BlockOffset(lr.level, i), what); err != nil {
			lr.count = 0
			return nil, 0, err
		}
	}
	n = min(n, lr.first+lr.count-i)
	off := (i - lr.first) * hbs
	return lr.buf[off : off+n*hbs], n, nil
}

// digestSlot returns the stored digest of block index of level-1 (DataLevel
// for data blocks), reading its parent block through parents.
func (v *verifier) digestSlot(parents *levelReader, index uint64) ([]byte, error) {
	p, off := v.g.Parent(parents.level-1, index)
	b, _, err := parents.blocks(p, 1)
	if err != nil {
		return nil, err
	}
	return b[off : off+v.g.DigestSize], nil
}

// checkTree checks each level from the top down: every block against its
// parent's slot (the top one against the root) and its padding.
func (v *verifier) checkTree(ctx context.Context) error {
	g := v.g
	hbs := uint64(g.HashBlockSize)
	digests := make([]byte, levelBatchBlocks(g)*uint64(g.DigestSlot))
	for level := g.TopLevel(); level >= 0; level-- {
		children := newLevelReader(g, v.hash, level)
		var parents *levelReader
		if level < g.TopLevel() {
			parents = newLevelReader(g, v.hash, level+1)
		}
		untrusted := newBitmap(g.LevelBlocks[level])
		for i := uint64(0); i < g.LevelBlocks[level]; {
			if err := ctx.Err(); err != nil {
				return err
			}
			blocks, n, err := children.blocks(i, g.LevelBlocks[level]-i)
			if err != nil {
				return err
			}
			v.h.HashBlocks(digests, g.DigestSlot, blocks)
			for k := range n {
				idx := i + k
				block := blocks[k*hbs : (k+1)*hbs]
				var want []byte
				if parents == nil {
					want = v.root
				} else if p, _ := g.Parent(level, idx); v.untrusted.get(p) {
					untrusted.set(idx)
					v.rep.UncheckedHashBlocks++
					continue
				} else if want, err = v.digestSlot(parents, idx); err != nil {
					return err
				}
				got := digests[k*uint64(g.DigestSlot) : k*uint64(g.DigestSlot)+uint64(g.DigestSize)]
				reason, fault, pad := "", FaultDigest, v.firstBadPadding(level, idx, block)
				if pad >= 0 {
					reason, fault = fmt.Sprintf("non-zero padding at byte %d of the block", pad), FaultPadding
				} else if !bytes.Equal(got, want) {
					reason = "digest mismatch"
					if parents == nil {
						reason = "digest does not match the root hash (wrong root hash, or the top block is corrupted)"
					}
				}
				if reason != "" {
					if parents == nil {
						v.rep.RootMismatch = !bytes.Equal(got, want)
					}
					untrusted.set(idx)
					v.rep.CorruptHashBlocks++
					v.rep.add(v.max, v.onProblem, &CorruptionError{Level: level, Index: idx, Offset: g.BlockOffset(level, idx), Reason: reason,
						Fault: fault, PaddingAt: max(pad, 0)})
				}
			}
			i += n
		}
		v.untrusted = untrusted
	}
	return nil
}

// firstBadPadding returns the offset of the first non-zero byte in the
// parts of a hash block that hold no digest, or -1: the padding after each
// digest (format 1), the unused slots of a level's last block and the tail.
func (v *verifier) firstBadPadding(level Level, index uint64, block []byte) int {
	g := v.g
	used := uint64(g.HashesPerBlock)
	// How many digests this block holds: all but in the level's last block.
	var children uint64
	if level == 0 {
		children = g.DataBlocks
	} else {
		children = g.LevelBlocks[level-1]
	}
	if rest := children - index*uint64(g.HashesPerBlock); rest < used {
		used = rest
	}
	for s := range int(used) {
		slot := block[s*g.DigestSlot : (s+1)*g.DigestSlot]
		if i := firstNonZero(slot[g.DigestSize:]); i >= 0 {
			return s*g.DigestSlot + g.DigestSize + i
		}
	}
	if i := firstNonZero(block[int(used)*g.DigestSlot:]); i >= 0 {
		return int(used)*g.DigestSlot + i
	}
	return -1
}

// checkData hashes every data block (in parallel) and compares it with its
// slot in level 0 (or, with one data block, with the root).
func (v *verifier) checkData(ctx context.Context, data io.ReaderAt, runs []knownRun, opts *VerifyOptions) error {
	g := v.g
	var level0 *levelReader
	if g.Levels > 0 {
		level0 = newLevelReader(g, v.hash, 0)
	}
	return forEachDataChunk(ctx, g, data, runs, opts.Jobs, func(c *dataChunk) error {
		for k := range c.n {
			idx := c.first + uint64(k)
			got := c.digests[k*g.DigestSlot : k*g.DigestSlot+g.DigestSize]
			want := v.root
			if level0 != nil {
				if p, _ := g.Parent(DataLevel, idx); v.untrusted.get(p) {
					v.rep.UncheckedDataBlocks++
					continue
				}
				var err error
				if want, err = v.digestSlot(level0, idx); err != nil {
					return err
				}
			}
			if !bytes.Equal(got, want) {
				reason := "digest mismatch"
				if level0 == nil {
					reason = "digest does not match the root hash (wrong root hash, or the data is corrupted)"
					v.rep.RootMismatch = true
				}
				v.rep.CorruptDataBlocks++
				v.rep.add(v.max, v.onProblem, &CorruptionError{Level: DataLevel, Index: idx, Offset: idx * uint64(g.DataBlockSize), Reason: reason})
			}
		}
		if opts.Progress != nil {
			opts.Progress((c.first + uint64(c.n)) * uint64(g.DataBlockSize))
		}
		return nil
	})
}
