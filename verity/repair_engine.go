package verity

// The repair's engine: the repairer decodes the rounds of the parity
// that hold corrupted blocks and keeps the rebuilt blocks that match the
// tree, top down.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// repairer works out the repair: top down, it rebuilds the corrupted
// blocks whose parent it can trust (on the disk and verified, or rebuilt
// and verified), checks each rebuilt block against its parent's digest
// before keeping it, and checks the blocks under each rebuilt hash block,
// which finds the corrupted ones hidden there; then again, until nothing
// changes. Only the rounds holding corrupted blocks are read and decoded.
type repairer struct {
	ctx        context.Context
	g          *merkle.Geometry
	s          *fecSetup
	data, hash io.ReaderAt
	msg        io.ReaderAt
	root       []byte
	jobs       int
	// marks: per message block, markBad: known corrupted. markIntact:
	// right under a corrupted hash block and matching its digest in it (a
	// corrupted block cannot vouch for them, but those that match it were
	// not touched; the others are the suspects). markRebuilt: rebuilt and
	// verified, its contents in rebuilt. markGiven: given up for now, the
	// reason in the mark's reason code (and roundReason); retried when
	// what is known of its round changes.
	marks       blockMarks
	rebuilt     *blockStore
	roundReason map[uint64]string
	// foundData and foundHash count the corrupted blocks found under
	// rebuilt hash blocks.
	foundData, foundHash uint64
	decoders             []*fec.RoundDecoder
	// fresh lists the blocks rebuilt in this pass; mu guards it and
	// rebuilt while rounds are decoded.
	mu    sync.Mutex
	fresh []uint64
	// progress, if set, is told as rounds are decoded how many of the
	// corrupted blocks known (toSettle, which grows as blocks are found
	// under rebuilt hash blocks) are rebuilt or given up (built, given),
	// under mu: one goroutine at a time.
	progress     func(done, total uint64)
	toSettle     uint64
	built, given uint64
	reported     [2]uint64 // the last done and total told
}

// planRepair works out, without writing anything, how to make the image
// whole from the parity (see repairer). The blocks under a corrupted hash
// block that cannot be rebuilt stay unchecked. progress, if not nil, is
// called as rounds are decoded with the corrupted blocks settled of those
// known (see repairer.progress).
func planRepair(ctx context.Context, g *merkle.Geometry, s *fecSetup, data, hash io.ReaderAt, root []byte,
	rep *merkle.VerifyReport, marks blockMarks, jobs int, progress func(done, total uint64)) (*RepairPlan, error) {
	rp := &RepairPlan{}
	if rep.CorruptHeaderBytes > 0 {
		rp.header = make([]byte, g.TreeOffset()-g.HashOffset)
		copy(rp.header, merkle.EncodeSuperblock(g))
		rp.headerBytes = rep.CorruptHeaderBytes
	}
	rr := &repairer{ctx: ctx, g: g, s: s, data: data, hash: hash, msg: fecMessage(g, s.p, data, hash), root: root, jobs: jobs,
		marks: marks, rebuilt: newBlockStore(g.DataBlockSize, rebuildBudget), roundReason: map[uint64]string{},
		progress: progress, toSettle: rep.CorruptDataBlocks + rep.CorruptHashBlocks}
	rp.store, rp.marks, rp.s, rp.g = rr.rebuilt, marks, s, g
	for m := g.DataBlocks; m < uint64(len(marks)); m++ {
		if marks.has(m, markBad) {
			if err := rr.markIntact(m); err != nil {
				return nil, err
			}
		}
	}
	if err := rr.run(); err != nil {
		rp.close()
		return nil, err
	}
	rp.foundData, rp.foundHash = rr.foundData, rr.foundHash
	seen := map[string]bool{}
	for m := range uint64(len(marks)) {
		if !marks.has(m, markBad) {
			continue
		}
		if marks.has(m, markRebuilt) {
			rp.fixCount++
			continue
		}
		if !rr.trustedParent(m) {
			continue // under a lost hash block: counted as unchecked
		}
		reason := rr.reason(m)
		if !seen[reason] {
			seen[reason] = true
			rp.reasonCount++
			if len(rp.reasons) < 2 {
				rp.reasons = append(rp.reasons, reason)
			}
		}
		rp.lostCount++
		if len(rp.lost) < lostKept {
			rp.lost = append(rp.lost, lost{ref: s.locate(g, m), reason: reason})
		}
	}
	rp.uncheckedData, rp.uncheckedHash = rr.unchecked()
	rp.unchecked = rp.uncheckedData + rp.uncheckedHash
	return rp, nil
}

// rebuildBudget is how much rebuilt content is kept in memory; the rest
// goes to a temporary file, so that any amount of damage repairs in
// bounded memory.
var rebuildBudget = 1 << 20 // a variable for the tests

// parentOf returns the parent hash block of message block m as a message
// block (ok false for the top block, or a data block without a tree: their
// digest is the root hash), with the digest's offset in it.
func (rr *repairer) parentOf(m uint64) (parent uint64, slot int, ok bool) {
	g := rr.g
	ref := rr.s.locate(g, m)
	if ref.level == merkle.PastTreeLevel || ref.level == topLevel(g) || g.Levels == 0 {
		return 0, 0, false
	}
	p, slot := g.Parent(ref.level, ref.index)
	return msgIndex(g, ref.level+1, p), slot, true
}

// trustedParent reports whether the digest of message block m can be
// trusted: every hash block above it is on the disk and verified, or
// rebuilt and verified.
func (rr *repairer) trustedParent(m uint64) bool {
	g := rr.g
	ref := rr.s.locate(g, m)
	if ref.level == merkle.PastTreeLevel {
		return false
	}
	for level, index := ref.level, ref.index; level < topLevel(g); level++ {
		index, _ = g.Parent(level, index)
		p := msgIndex(g, level+1, index)
		if rr.marks.has(p, markBad) && !rr.marks.has(p, markRebuilt) {
			return false
		}
	}
	return true
}

// state is what is known of message block m.
func (rr *repairer) state(m uint64) fec.BlockState {
	switch {
	case rr.marks.has(m, markBad):
		return fec.Bad
	case !rr.trustedParent(m) && !rr.marks.has(m, markIntact):
		return fec.Unknown // outside the tree, or under a corrupted hash block
	}
	return fec.Good
}

// expected returns the digest block m must have (its slot in its trusted
// parent, or the root hash).
func (rr *repairer) expected(m uint64, cache map[uint64][]byte) ([]byte, error) {
	g := rr.g
	p, slot, ok := rr.parentOf(m)
	if !ok {
		return rr.root, nil
	}
	b := cache[p]
	if b == nil {
		var err error
		if rr.marks.has(p, markBad) {
			b, err = rr.rebuilt.get(p)
		} else {
			b = make([]byte, g.HashBlockSize)
			ref := rr.s.locate(g, p)
			err = safefile.ReadFullAt(rr.hash, b, int64(ref.off))
		}
		if err != nil {
			return nil, err
		}
		cache[p] = b
	}
	return b[slot : slot+g.DigestSize], nil
}

// roundJob is a round to decode, with the digests its bad blocks must
// have (those whose parent is trusted).
type roundJob struct {
	round uint64
	bad   int // the round's bad blocks
	want  map[uint64][]byte
	// Results: the verified contents, and why the others failed.
	ok     map[uint64][]byte
	failed map[uint64]lostWhy
}

// lostWhy is why a block could not be rebuilt: a reason code, with the
// text of a round's reason (reasonRound).
type lostWhy struct {
	code byte
	text string
}

func (rr *repairer) run() error {
	rounds := rr.s.p.Rounds()
	for {
		if err := rr.ctx.Err(); err != nil {
			return err
		}
		// The rounds with a corrupted block that can be checked now.
		pending := make([]uint64, (rounds+63)/64)
		any := false
		for m := range uint64(len(rr.marks)) {
			if !rr.checkable(m) {
				continue
			}
			if m >= rr.s.p.Blocks {
				rr.give(m, reasonOutside, "")
				continue
			}
			r, _ := rr.s.p.Round(m)
			pending[r/64] |= 1 << (r % 64)
			any = true
		}
		if !any {
			return nil
		}
		// A batch of rounds at a time, so that the digests wanted and the
		// parent blocks read for them stay few; what is rebuilt counts
		// only from the next pass, as if all were decoded at once.
		var batch []uint64
		wanted := 0
		for r := uint64(0); r <= rounds; r++ {
			if r < rounds && pending[r/64]&(1<<(r%64)) != 0 {
				batch = append(batch, r)
				for m := range rr.roundBlocks(r) {
					if rr.checkable(m) {
						wanted++
					}
				}
			}
			if len(batch) == roundBatch || wanted >= batchBlocks || r == rounds && len(batch) > 0 {
				wanted = 0
				if err := rr.decodeBatch(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		var newHash []uint64
		fresh := rr.fresh
		rr.fresh = nil
		for _, m := range fresh {
			rr.marks.set(m, markRebuilt)
			if rr.s.locate(rr.g, m).level >= 0 {
				newHash = append(newHash, m)
			}
		}
		// Check the blocks under each rebuilt hash block: the corrupted
		// ones join the bad blocks, and their rounds are tried again.
		for _, h := range newHash {
			if err := rr.checkChildren(h); err != nil {
				return err
			}
		}
	}
}

// A batch of rounds decoded together is at most roundBatch rounds and
// batchBlocks blocks to rebuild: their digests, and the parent blocks
// holding them, are kept until the batch is done.
const (
	roundBatch  = 1024
	batchBlocks = 4096
)

// runWorkBytes bounds what a run of rounds decoded at once allocates (see
// runWork).
const runWorkBytes = 512 << 10

// runWork is about what decoding round j allocates: its bad blocks, and
// when they are few enough to be erasures, up to two tables of 6 KiB per
// root (fec's erasure solvers).
func (rr *repairer) runWork(j *roundJob) int {
	work := j.bad * rr.g.DataBlockSize
	if j.bad > 0 && j.bad <= rr.s.Roots {
		work += 2 * rr.s.Roots * 6 << 10
	}
	return work
}

// maxDecoders bounds the rounds decoded at once, whatever --jobs says: a
// decoder holds 4 MiB of message (fec's runBytes). Two keep an image
// overwritten whole at 35 MiB of RSS (1 GiB, roots 8), and bring the
// 2,020-block repair of bench/repair.sh from 3.3x a clean verify with one
// to 2.5x.
const maxDecoders = 2

// checkable reports whether m is a corrupted block to rebuild now: not
// rebuilt, not given up, and its digest trusted.
func (rr *repairer) checkable(m uint64) bool {
	return rr.marks.has(m, markBad) && !rr.marks.has(m, markRebuilt|markGiven) && rr.trustedParent(m)
}

// roundBlocks returns the message blocks of round r.
func (rr *repairer) roundBlocks(r uint64) func(yield func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for m := r; m < rr.s.p.Blocks; m += rr.s.p.Rounds() {
			if !yield(m) {
				return
			}
		}
	}
}

// decodeBatch decodes the rounds of batch (sorted): the blocks that match
// their digests go to the store (and rr.fresh), the others are given up.
func (rr *repairer) decodeBatch(batch []uint64) error {
	cache := map[uint64][]byte{}
	var list []*roundJob
	for _, r := range batch {
		j := &roundJob{round: r, want: map[uint64][]byte{}}
		for m := range rr.roundBlocks(r) {
			if rr.marks.has(m, markBad) {
				j.bad++
			}
			if !rr.checkable(m) {
				continue
			}
			want, err := rr.expected(m, cache)
			if err != nil {
				return err
			}
			j.want[m] = want
		}
		list = append(list, j)
	}
	if err := rr.decodeAll(list); err != nil {
		return err
	}
	for _, j := range list {
		for m, why := range j.failed {
			rr.give(m, why.code, why.text)
		}
	}
	rr.report()
	return nil
}

// decodeAll decodes the rounds of list (sorted) on up to maxDecoders goroutines,
// consecutive rounds together: their blocks are next to each other.
func (rr *repairer) decodeAll(list []*roundJob) error {
	workers := min(rr.jobs, maxDecoders)
	for len(rr.decoders) < workers {
		d, err := fec.NewRoundDecoder(rr.s.p, rr.msg, rr.s.parity)
		if err != nil {
			return err
		}
		rr.decoders = append(rr.decoders, d)
	}
	d0 := rr.decoders[0]
	var runs [][]*roundJob
	for i := 0; i < len(list); {
		// A run's decoder returns every bad block of its rounds, and
		// makes tables for their erasures: a few rounds when they are all
		// bad, or many roots.
		n, work := 1, rr.runWork(list[i])
		for i+n < len(list) && n < d0.MaxRun() && list[i+n].round == list[i].round+uint64(n) &&
			work+rr.runWork(list[i+n]) <= runWorkBytes {
			work += rr.runWork(list[i+n])
			n++
		}
		runs = append(runs, list[i:i+n])
		i += n
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for w := range min(workers, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := rr.decoders[w]
			var err error
			h := rr.g.Hash.NewBlockHasher(rr.g.DataBlockSize, rr.g.Salt, rr.g.SaltPosition())
			for err == nil {
				mu.Lock()
				if next == len(runs) || first != nil {
					mu.Unlock()
					return
				}
				run := runs[next]
				next++
				mu.Unlock()
				if err = rr.ctx.Err(); err == nil {
					err = rr.decodeRun(d, h, run)
				}
			}
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil && !errors.Is(first, context.Canceled) {
		return fmt.Errorf("reading the FEC message or the parity in %s: %w", rr.s.Path, first)
	}
	return first
}

// decodeRun decodes a run of consecutive rounds, then each round whose
// wanted blocks do not all match their digests again, the other ways of
// fec.Strategy in turn, and keeps the blocks that match. The maps of rr are
// only read here (decodeAll runs it concurrently).
func (rr *repairer) decodeRun(d *fec.RoundDecoder, h *hashes.BlockHasher, run []*roundJob) error {
	res, err := d.DecodeRun(run[0].round, len(run), rr.state, fec.EraseSuspects)
	if err != nil {
		return err
	}
	for i, j := range run {
		j.ok, j.failed = map[uint64][]byte{}, map[uint64]lostWhy{}
		if err := rr.checkRound(d, h, j, res[i]); err != nil {
			return err
		}
		// Stored now rather than when the batch is done: memory holds
		// only the runs being decoded.
		rr.mu.Lock()
		for _, m := range slices.Sorted(maps.Keys(j.ok)) {
			if err = rr.rebuilt.put(m, j.ok[m]); err != nil {
				break
			}
			rr.fresh = append(rr.fresh, m)
			rr.built++
		}
		if err == nil {
			rr.report()
		}
		rr.mu.Unlock()
		j.ok = nil
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRound keeps the blocks of res that match their digests; when some do
// not, it decodes the round the next ways of fec.Strategy.
func (rr *repairer) checkRound(d *fec.RoundDecoder, h *hashes.BlockHasher, j *roundJob, res *fec.RoundResult) error {
	g := rr.g
	digest := make([]byte, g.DigestSlot)
	for st := fec.EraseSuspects; st <= fec.ErrorsOnly; st++ {
		if st > fec.EraseSuspects && res.Same(rr.s.Roots, st) {
			continue // would decode the same
		}
		if st > fec.EraseSuspects {
			var err error
			if res, err = d.Decode(j.round, rr.state, st); err != nil {
				return err
			}
		}
		done := true
		for m, want := range j.want {
			if j.ok[m] != nil {
				continue
			}
			b := res.Blocks[m]
			h.HashBlocks(digest, g.DigestSlot, b)
			if bytes.Equal(digest[:g.DigestSize], want) {
				j.ok[m] = b
			} else {
				done = false
			}
		}
		if done {
			return nil
		}
	}
	cur := make([]byte, g.DataBlockSize)
	roundText := ""
	for m := range j.want {
		if j.ok[m] != nil {
			continue
		}
		if err := safefile.ReadFullAt(rr.msg, cur, int64(m)*int64(g.DataBlockSize)); err != nil {
			return err
		}
		why := rr.lostReason(m, res, bytes.Equal(cur, res.Blocks[m]))
		if why.code == reasonRound {
			if roundText == "" {
				roundText = why.text
			}
			why.text = roundText // one copy per round, however many blocks
		}
		j.failed[m] = why
	}
	return nil
}

// lostReason says why block m could not be rebuilt; same: the parity
// gives back what is on the disk.
func (rr *repairer) lostReason(m uint64, res *fec.RoundResult, same bool) lostWhy {
	r, _ := rr.s.p.Round(m)
	roots := rr.s.Roots
	ref := rr.s.locate(rr.g, m)
	switch {
	case res.Failed > 0 && res.Bad > roots:
		return lostWhy{reasonRound, fmt.Sprintf("FEC round %d has %d corrupted blocks; %d roots rebuild at most %d per round (or correct %d damaged bytes per codeword: %d of the round's codewords have more)",
			r, res.Bad, roots, roots, roots/2, res.Failed)}
	case res.Failed > 0:
		return lostWhy{reasonRound, fmt.Sprintf("the parity cannot correct FEC round %d: more errors than it can correct (in blocks not known to be corrupted, or in the parity), or wrong VerifyOptions.FECRoots or VerifyOptions.FECOffset", r)}
	case same && ref.level == topLevel(rr.g):
		return lostWhy{code: reasonSameTop}
	case same:
		return lostWhy{code: reasonSame}
	}
	return lostWhy{code: reasonMismatch}
}

// The reasons a block is given up, as codes in its mark.
const (
	reasonRound   = 1 + iota // the round's own reason, in roundReason
	reasonSameTop            // the following are reasonText's
	reasonSame
	reasonMismatch
	reasonOutside
)

var reasonText = [...]string{
	reasonSameTop:  "the parity rebuilds it as it is on the disk, and it does not match the root hash: is the root hash this tree's?",
	reasonSame:     "the parity rebuilds it as it is on the disk, and the tree does not vouch for it: was the parity made for this tree?",
	reasonMismatch: "rebuilt from the parity, but the result does not match the tree: more errors than the parity can correct, or wrong VerifyOptions.FECRoots or VerifyOptions.FECOffset",
	reasonOutside:  "outside what the FEC parity covers",
}

// give gives block m up, for now, for the reason code (text: the round's
// reason, for reasonRound).
func (rr *repairer) give(m uint64, code byte, text string) {
	if code == reasonRound {
		r, _ := rr.s.p.Round(m)
		rr.roundReason[r] = text
	}
	if !rr.marks.has(m, markGiven) {
		rr.given++
	}
	rr.marks.setReason(m, code)
	rr.marks.set(m, markGiven)
}

// report tells progress how many blocks are settled, if that changed;
// the caller holds mu, or decodes nothing concurrently. All settled is
// for the end to say: blocks may yet be found under rebuilt hash blocks.
func (rr *repairer) report() {
	if rr.progress == nil || rr.toSettle == 0 {
		return
	}
	done := min(rr.built+rr.given, rr.toSettle-1)
	if done != rr.reported[0] || rr.toSettle != rr.reported[1] {
		rr.reported = [2]uint64{done, rr.toSettle}
		rr.progress(done, rr.toSettle)
	}
}

// reason says why block m was given up.
func (rr *repairer) reason(m uint64) string {
	code := rr.marks.reason(m)
	if code == reasonRound {
		r, _ := rr.s.p.Round(m)
		return rr.roundReason[r]
	}
	return reasonText[code]
}

// markIntact records which blocks right under hash block h, which is
// corrupted, still match their digest in it (nothing for a data block).
func (rr *repairer) markIntact(h uint64) error {
	ref := rr.s.locate(rr.g, h)
	if ref.level < 0 {
		return nil
	}
	b := make([]byte, rr.g.HashBlockSize)
	if err := safefile.ReadFullAt(rr.hash, b, int64(ref.off)); err != nil {
		return err
	}
	return rr.forChildren(ref, b, func(m uint64, match bool, off int64) {
		if match {
			rr.marks.set(m, markIntact)
		}
	})
}

// forChildren calls fn for each block right under hash block ref, whose
// content is parent: its message index, whether it matches its digest in
// parent, and its offset in its file.
func (rr *repairer) forChildren(ref blockRef, parent []byte, fn func(m uint64, match bool, off int64)) error {
	g := rr.g
	hasher := g.Hash.NewBlockHasher(g.DataBlockSize, g.Salt, g.SaltPosition())
	child := make([]byte, g.DataBlockSize)
	digest := make([]byte, g.DigestSlot)
	level := ref.level - 1
	n := g.DataBlocks
	if level >= 0 {
		n = g.LevelBlocks[level]
	}
	first := ref.index * uint64(g.HashesPerBlock)
	for c := first; c < min(first+uint64(g.HashesPerBlock), n); c++ {
		off, r := int64(c)*int64(g.DataBlockSize), rr.data
		if level >= 0 {
			off, r = int64(g.BlockOffset(level, c)), rr.hash
		}
		if err := safefile.ReadFullAt(r, child, off); err != nil {
			return err
		}
		hasher.HashBlocks(digest, g.DigestSlot, child)
		_, slot := g.Parent(level, c)
		fn(msgIndex(g, level, c), bytes.Equal(digest[:g.DigestSize], parent[slot:slot+g.DigestSize]), off)
	}
	return nil
}

// checkChildren checks the blocks under rebuilt hash block h against it,
// which the first verification could not: those that do not match are
// corrupted, found now; under those that match (now trusted), the check
// goes on down. The rounds of the blocks checked are tried again, as what
// is known of them changed.
func (rr *repairer) checkChildren(h uint64) error {
	parent, err := rr.rebuilt.get(h)
	if err != nil {
		return err
	}
	type todo struct {
		ref     blockRef
		content []byte
	}
	work := []todo{{rr.s.locate(rr.g, h), parent}}
	var badKids []uint64
	rounds := map[uint64]bool{}
	for len(work) > 0 {
		if err := rr.ctx.Err(); err != nil {
			return err
		}
		t := work[len(work)-1]
		work = work[:len(work)-1]
		var trusted []uint64
		err = rr.forChildren(t.ref, t.content, func(m uint64, match bool, off int64) {
			if m < rr.s.p.Blocks {
				round, _ := rr.s.p.Round(m)
				rounds[round] = true
			}
			c := rr.s.locate(rr.g, m)
			if match {
				if c.level >= 0 {
					trusted = append(trusted, m)
				}
				return
			}
			rr.marks.set(m, markBad)
			rr.toSettle++
			if c.level == merkle.DataLevel {
				rr.foundData++
			} else {
				rr.foundHash++
			}
			if c.level >= 0 {
				badKids = append(badKids, m)
			}
		})
		if err != nil {
			return err
		}
		for _, m := range trusted {
			ref := rr.s.locate(rr.g, m)
			b := make([]byte, rr.g.HashBlockSize)
			if err := safefile.ReadFullAt(rr.hash, b, int64(ref.off)); err != nil {
				return err
			}
			work = append(work, todo{ref, b})
		}
	}
	for r := range rounds {
		for m := range rr.roundBlocks(r) {
			if rr.marks.has(m, markGiven) {
				rr.given-- // tried again
			}
			rr.marks.clear(m, markGiven)
		}
	}
	for _, m := range badKids {
		if err := rr.markIntact(m); err != nil {
			return err
		}
	}
	return nil
}

// unchecked counts the data and hash blocks under the corrupted hash
// blocks that could not be rebuilt (whose own parent is trusted).
func (rr *repairer) unchecked() (data, hash uint64) {
	g := rr.g
	hpb := uint64(g.HashesPerBlock)
	for m := g.DataBlocks; m < uint64(len(rr.marks)); m++ {
		if !rr.marks.has(m, markBad) {
			continue
		}
		ref := rr.s.locate(g, m)
		if ref.level < 0 || rr.marks.has(m, markRebuilt) || !rr.trustedParent(m) {
			continue
		}
		lo, hi := ref.index, ref.index+1
		for l := ref.level - 1; l >= merkle.DataLevel; l-- {
			n := g.DataBlocks
			if l >= 0 {
				n = g.LevelBlocks[l]
			}
			lo, hi = min(lo*hpb, n), min(hi*hpb, n)
			if l >= 0 {
				hash += hi - lo
			} else {
				data += hi - lo
			}
		}
	}
	return data, hash
}

// blockMarks is what is known of each block of the FEC message (and of
// every tree block), a byte each: 256 KiB per GiB of 4 KiB blocks, where
// maps and lists took tens of bytes per corrupted block.
type blockMarks []byte

const (
	markBad      byte = 1 << iota // known corrupted
	markReported                  // found by the first verification
	markIntact
	markRebuilt
	markGiven
	// The top three bits: the reason code of a given-up block.
	reasonShift = 5
)

// newBlockMarks returns marks for the message of s, and for every tree
// block even past the message.
func newBlockMarks(g *merkle.Geometry, s *fecSetup) blockMarks {
	n := s.p.Blocks
	if g.Levels > 0 {
		top := g.Levels - 1
		n = max(n, msgIndex(g, merkle.Level(top), g.LevelBlocks[top]-1)+1)
	}
	return make(blockMarks, max(n, g.DataBlocks))
}

func (b blockMarks) has(m uint64, mark byte) bool { return b[m]&mark != 0 }
func (b blockMarks) set(m uint64, mark byte)      { b[m] |= mark }
func (b blockMarks) clear(m uint64, mark byte)    { b[m] &^= mark }
func (b blockMarks) reason(m uint64) byte         { return b[m] >> reasonShift }
func (b blockMarks) setReason(m uint64, code byte) {
	b[m] = b[m]&(1<<reasonShift-1) | code<<reasonShift
}

// topLevel is the level of the tree's top block (merkle.DataLevel when the
// tree has no level: one data block, whose digest is the root hash).
func topLevel(g *merkle.Geometry) merkle.Level { return merkle.Level(g.Levels - 1) }
