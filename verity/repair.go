package verity

// Repair: the blocks the tree finds corrupted are rebuilt from the
// Reed-Solomon parity (veritygen's or veritysetup's --fec-device), every
// rebuilt block is checked against the tree before it is kept, and a whole
// repair can be written back.

import (
	"context"
	"io"
	"os"
	"runtime"
	"slices"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// fecSetup is the parity open for reading, and what it covers.
type fecSetup struct {
	FECInfo
	p      fec.Params  // the Reed-Solomon parameters of FECInfo
	parity io.ReaderAt // the parity, from its first byte
	f      *os.File    // the file it is in, nil when not a file
}

// info describes the parity as Table and the reports take it.
func (s *fecSetup) info() *FECInfo {
	i := s.FECInfo
	return &i
}

func (s *fecSetup) close() {
	if s != nil && s.f != nil {
		s.f.Close()
	}
}

// BlockRef says where a block of the data or of the hash device lies: in
// the tree, in its file, and in the message the FEC parity covers.
type BlockRef struct {
	// Level is merkle.DataLevel for a data block, the tree level of a hash
	// block, or merkle.PastTreeLevel for a block of the hash device after
	// the tree (covered by the parity only).
	Level merkle.Level
	// Index is the block's index within its level; for PastTreeLevel, in
	// hash blocks from the start of the hash device.
	Index uint64
	// Offset is the block's byte offset in its file.
	Offset uint64
	// InHash says the block is in the hash device, not in the data.
	InHash bool
	// FECBlock is the block's index in the FEC message (the data blocks,
	// then the hash device's blocks from the tree on).
	FECBlock uint64
}

type blockRef struct {
	msg    uint64       // index in the FEC message
	level  merkle.Level // merkle.DataLevel, a tree level, or merkle.PastTreeLevel
	index  uint64       // within its level
	inHash bool         // in the hash device, else in DATA
	off    uint64       // byte offset in its file
}

func (r blockRef) public() BlockRef {
	return BlockRef{Level: r.level, Index: r.index, Offset: r.off, InHash: r.inHash, FECBlock: r.msg}
}

// locate returns where message block m lies.
func (s *fecSetup) locate(g *merkle.Geometry, m uint64) blockRef {
	bs := uint64(g.DataBlockSize)
	if m < g.DataBlocks {
		return blockRef{msg: m, level: merkle.DataLevel, index: m, off: m * bs}
	}
	hb := g.HashStartBlock + m - g.DataBlocks
	r := blockRef{msg: m, level: merkle.PastTreeLevel, index: hb, inHash: true, off: hb * bs}
	for l := range g.Levels {
		if hb >= g.LevelStart[l] && hb < g.LevelStart[l]+g.LevelBlocks[l] {
			r.level, r.index = merkle.Level(l), hb-g.LevelStart[l]
		}
	}
	return r
}

// msgIndex returns the message block of a data or hash block.
func msgIndex(g *merkle.Geometry, level merkle.Level, index uint64) uint64 {
	if level == merkle.DataLevel {
		return index
	}
	return g.DataBlocks + g.LevelStart[level] + index - g.HashStartBlock
}

// fix is a block to write back: its rebuilt content, checked against the
// tree. b is nil when the content was spilled to the plan's store (see
// RepairPlan.content).
type fix struct {
	ref blockRef
	b   []byte
}

// lost is a corrupted block that cannot be recovered.
type lost struct {
	ref    blockRef
	reason string
}

// RepairPlan is what error correction can do for a corrupted image.
type RepairPlan struct {
	// fixCount blocks are rebuilt: those marked markRebuilt (see eachFix),
	// their contents in store.
	fixCount int
	store    *blockStore
	s        *fecSetup
	g        *merkle.Geometry
	// header is the canonical superblock area (the superblock encoded from
	// its own fields, then zeros up to the tree), when it differs from the
	// disk in headerBytes bytes. FEC does not cover it.
	header      []byte
	headerBytes uint64
	// lost lists the first lostKept of the lostCount blocks that cannot be
	// recovered (none when the repair makes the image whole); reasons the
	// first two of their reasonCount distinct reasons. unchecked counts
	// the blocks under lost hash blocks.
	lost        []lost
	lostCount   int
	reasons     []string
	reasonCount int
	unchecked   uint64
	// marks: what is known of each message block, among it the corrupted
	// blocks found under rebuilt hash blocks, which the first verification
	// could not check (foundData and foundHash count them);
	// uncheckedData and uncheckedHash count the blocks that still cannot be
	// checked.
	marks                        blockMarks
	foundData, foundHash         uint64
	uncheckedData, uncheckedHash uint64
}

// lostKept is how many unrecoverable blocks a plan names, and how many
// repairable ones the JSON report lists; the rest are counted.
var lostKept = 1000

// Whole reports whether the repair makes the image whole: every corrupted
// block can be rebuilt, and matches the tree.
func (rp *RepairPlan) Whole() bool { return rp.lostCount == 0 }

// RebuiltCount is how many corrupted blocks the parity rebuilds (each
// checked against the tree).
func (rp *RepairPlan) RebuiltCount() int { return rp.fixCount }

// EachRebuilt calls fn for each rebuilt block, in the order Apply writes
// them (the data's blocks by offset, then the hash device's), until fn
// returns false.
func (rp *RepairPlan) EachRebuilt(fn func(BlockRef) bool) {
	rp.eachFix(func(fx fix) bool { return fn(fx.ref.public()) })
}

// IsRebuilt reports whether the repair rebuilt block index of level (a
// tree level or merkle.DataLevel); false on a nil plan.
func (rp *RepairPlan) IsRebuilt(level merkle.Level, index uint64) bool {
	if rp == nil || level < merkle.DataLevel {
		return false
	}
	return rp.marks.has(msgIndex(rp.g, level, index), markRebuilt)
}

// SuperblockBytes is how many bytes of the superblock area (which the
// parity does not cover) the repair restores from the superblock's own
// fields: its reserved and padding bytes, and the zeros up to the tree.
func (rp *RepairPlan) SuperblockBytes() uint64 { return rp.headerBytes }

// LostBlock is a corrupted block the parity cannot recover, and why.
type LostBlock struct {
	BlockRef
	Reason string
}

// Lost lists the corrupted blocks that cannot be recovered, in message
// order: the first 1000 of LostCount (the rest are only counted).
func (rp *RepairPlan) Lost() []LostBlock {
	out := make([]LostBlock, len(rp.lost))
	for i, l := range rp.lost {
		out[i] = LostBlock{l.ref.public(), l.reason}
	}
	return out
}

// LostCount is how many corrupted blocks cannot be recovered (whose own
// digest can be trusted; those under them are Unchecked).
func (rp *RepairPlan) LostCount() int { return rp.lostCount }

// Reasons returns the first two distinct reasons why blocks cannot be
// recovered, and how many distinct reasons there are.
func (rp *RepairPlan) Reasons() (first []string, distinct int) {
	return slices.Clone(rp.reasons), rp.reasonCount
}

// Unchecked is how many blocks under the unrecoverable hash blocks cannot
// be checked.
func (rp *RepairPlan) Unchecked() uint64 { return rp.unchecked }

// Geometry is the tree the plan repairs.
func (rp *RepairPlan) Geometry() *merkle.Geometry { return rp.g }

// eachFix calls fn for each rebuilt block, in message order: DATA's blocks
// by offset, then the hash device's; until fn returns false.
func (rp *RepairPlan) eachFix(fn func(fix) bool) {
	for m := range uint64(len(rp.marks)) {
		if !rp.marks.has(m, markRebuilt) {
			continue
		}
		fx := fix{ref: rp.s.locate(rp.g, m)}
		if rp.store.inMemory(m) {
			fx.b, _ = rp.store.get(m)
		}
		if !fn(fx) {
			return
		}
	}
}

// content returns the rebuilt content of fx, read into buf when it was
// spilled.
func (rp *RepairPlan) content(fx fix, buf []byte) ([]byte, error) {
	if fx.b != nil {
		return fx.b, nil
	}
	return buf, rp.store.read(fx.ref.msg, buf)
}

func (rp *RepairPlan) close() {
	if rp != nil {
		rp.store.close()
	}
}

// updateReport puts what the repair found under the corrupted hash blocks
// into rep: the counts of the corrupted blocks it located there (which
// eachProblem lists from the marks), and what is left unchecked.
func (rp *RepairPlan) updateReport(rep *merkle.VerifyReport) {
	rep.CorruptDataBlocks += rp.foundData
	rep.CorruptHashBlocks += rp.foundHash
	rep.UncheckedDataBlocks, rep.UncheckedHashBlocks = rp.uncheckedData, rp.uncheckedHash
}

// Apply writes a whole repair: each rebuilt block at its offset in data or
// hash (the same writer when the tree is inside the data), then the
// superblock area. It refuses a plan that is not Whole (a KindCorrupt
// error) and then writes nothing. Every block written was checked against
// the tree, so an interrupted Apply leaves the image no worse than it was;
// to confirm the repair, verify again from what was written.
func (rp *RepairPlan) Apply(data, hash io.WriterAt) error {
	return rp.apply(data, hash, "the data", "the hash device", false, nil)
}

// RepairOptions tune PlanRepair. The zero value is ready to use.
type RepairOptions struct {
	// Jobs is how many goroutines hash; 0 means one per CPU. At most two
	// rounds of the parity are decoded at once, whatever Jobs says.
	Jobs int
}

// PlanRepair checks data and hash against root with the tree g, as Verify
// does, and works out, writing nothing, how the FEC parity rebuilds the
// corrupted blocks: top down, each corrupted block whose parent digest can
// be trusted is rebuilt (the corrupted blocks of its FEC round as erasures,
// else with errors at unknown places), checked against that digest before
// it is kept, and the blocks under each rebuilt hash block are checked in
// turn, which finds the corrupted ones the verification could not check.
// Wrong parity or parameters can only end in blocks that cannot be
// recovered (RepairPlan.Lost), never in a wrong block being kept.
//
// f describes the parity (DescribeFEC, or Format's FormatResult.FEC, gives
// it); PlanRepair reads its Roots (0 means 2, veritysetup's default),
// Blocks (the message blocks, the table's fec_blocks: fec.MessageBlocks
// gives them) and Offset. parity reads the file or device the parity is
// in, the parity from byte f.Offset.
//
// It returns the verification's report (with the blocks found under
// rebuilt hash blocks counted, Problems capped at 100) and, when something
// is corrupted, the plan, which the caller closes; Apply writes it.
func PlanRepair(ctx context.Context, g *merkle.Geometry, data, hash io.ReaderAt, root []byte, f *FECInfo, parity io.ReaderAt, opts *RepairOptions) (*RepairPlan, *merkle.VerifyReport, error) {
	if opts == nil {
		opts = &RepairOptions{}
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	if len(root) != g.DigestSize {
		return nil, nil, paramErrorf("root", "", "the root hash is %d bytes, but %s digests are %d bytes", len(root), g.Hash.Name(), g.DigestSize)
	}
	if f == nil || parity == nil {
		return nil, nil, paramErrorf("parity", "", "no parity to repair from")
	}
	p, err := repairParams(g, f)
	if err != nil {
		return nil, nil, err
	}
	s := &fecSetup{FECInfo: *f, p: p, parity: io.NewSectionReader(parity, int64(f.Offset), int64(p.ParitySize()))}
	s.Roots = p.Roots
	var problems []*merkle.CorruptionError
	rep, marks, err := verifyMarked(ctx, g, s, data, hash, root, &merkle.VerifyOptions{Jobs: jobs}, func(pr *merkle.CorruptionError) {
		if len(problems) < 100 {
			problems = append(problems, pr)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	total := rep.CorruptDataBlocks + rep.CorruptHashBlocks + rep.CorruptHeaderBytes
	rep.Problems, rep.Truncated = problems, total > uint64(len(problems))
	if rep.OK() {
		return nil, rep, nil
	}
	rp, err := planRepair(ctx, g, s, data, hash, root, rep, marks, jobs, nil)
	if err != nil {
		return nil, nil, asIOError(err)
	}
	rp.updateReport(rep)
	return rp, rep, nil
}

// repairParams checks the parity f describes against the tree g, as
// PlanRepair takes it, and returns its parameters.
func repairParams(g *merkle.Geometry, f *FECInfo) (fec.Params, error) {
	roots := f.Roots
	if roots == 0 {
		roots = fec.DefaultRoots
	}
	if roots < fec.MinRoots || roots > fec.MaxRoots {
		return fec.Params{}, paramErrorf("Roots", "", "FECInfo.Roots %d is not from %d to %d", roots, fec.MinRoots, fec.MaxRoots)
	}
	// fecParams checks the block sizes and gives the fewest blocks the
	// parity may cover: the data and the tree.
	least, err := fecParams(g, roots, g.HashEnd())
	if err != nil {
		return fec.Params{}, err
	}
	if f.Blocks < least.Blocks {
		return fec.Params{}, paramErrorf("Blocks", "", "FECInfo.Blocks %d does not cover the data and the tree, %d blocks", f.Blocks, least.Blocks)
	}
	p := fec.Params{Roots: roots, BlockSize: g.DataBlockSize, Blocks: f.Blocks}
	if err := p.Validate(); err != nil {
		return fec.Params{}, &Error{Kind: KindParam, Field: "Blocks", Err: err}
	}
	if f.Offset > maxFileOffset-p.ParitySize() {
		return fec.Params{}, paramErrorf("Offset", "", "FECInfo.Offset %d is too large: the parity would end past byte %d", f.Offset, uint64(maxFileOffset))
	}
	return p, nil
}

// Close releases the temporary file holding rebuilt blocks, if any.
func (rp *RepairPlan) Close() error {
	rp.close()
	return nil
}
