package verity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// recorder is an io.WriterAt that records what is written to it.
type recorder struct {
	memFile
	writes int
}

func (r *recorder) WriteAt(p []byte, off int64) (int, error) {
	r.writes++
	return r.memFile.WriteAt(p, off)
}

// applyTo writes rp over copies of f's corrupted contents and returns them.
func applyTo(t *testing.T, rp *RepairPlan, f *fixture) (data, hash *recorder, err error) {
	t.Helper()
	data, hash = &recorder{memFile: memFile{bytes.Clone(f.data)}}, &recorder{memFile: memFile{bytes.Clone(f.hash)}}
	return data, hash, rp.Apply(data, hash)
}

// checkRebuiltAreOriginal: every block a plan says it rebuilt is the
// original block, in the rebuilt image.
func checkRebuiltAreOriginal(t *testing.T, rp *RepairPlan, orig *fixture, data, hash []byte) {
	t.Helper()
	bs := uint64(orig.g.DataBlockSize)
	rp.EachRebuilt(func(r BlockRef) bool {
		src, got := orig.data, data
		if r.InHash {
			src, got = orig.hash, hash
		}
		if !bytes.Equal(got[r.Offset:r.Offset+bs], src[r.Offset:r.Offset+bs]) {
			t.Errorf("rebuilt %+v differs from the original", r)
		}
		return true
	})
}

// TestRepairErasures: up to roots corrupted blocks per round are rebuilt
// as erasures (data and hash blocks alike), and Apply restores the image
// byte for byte.
func TestRepairErasures(t *testing.T) {
	orig := newFixture(t, 520, 512, 2, 11)
	f := orig.clone()
	rounds := f.p.Rounds()
	// Two data blocks in round 0, one data and one hash block in round 1.
	f.corrupt(merkle.DataLevel, 0, 1)
	f.corrupt(merkle.DataLevel, rounds, 2)
	f.corrupt(merkle.DataLevel, 1, 3)
	f.corrupt(0, 4, 0)
	rp, rep := f.plan(t)
	if rp == nil || !rp.Whole() || rp.LostCount() != 0 || rp.Unchecked() != 0 {
		t.Fatalf("plan %+v, report %+v", rp, rep)
	}
	if rp.RebuiltCount() != 4 || rep.CorruptDataBlocks != 3 || rep.CorruptHashBlocks != 1 {
		t.Errorf("rebuilt %d, report %+v", rp.RebuiltCount(), rep)
	}
	if !rp.IsRebuilt(merkle.DataLevel, 0) || !rp.IsRebuilt(0, 4) || rp.IsRebuilt(merkle.DataLevel, 2) {
		t.Errorf("IsRebuilt is wrong")
	}
	var order []uint64
	rp.EachRebuilt(func(r BlockRef) bool { order = append(order, r.FECBlock); return true })
	if fmt.Sprint(order) != fmt.Sprint([]uint64{0, 1, rounds, f.msg(0, 4)}) {
		t.Errorf("rebuilt in order %v", order)
	}
	data, hash, err := applyTo(t, rp, f)
	if err != nil || !bytes.Equal(data.b, orig.data) || !bytes.Equal(hash.b, orig.hash) {
		t.Fatalf("Apply: %v; image restored: %v %v", err, bytes.Equal(data.b, orig.data), bytes.Equal(hash.b, orig.hash))
	}
	checkRebuiltAreOriginal(t, rp, orig, data.b, hash.b)
}

// TestRepairTooManyInRound: more corrupted blocks in a round than roots
// and errors beyond what the parity corrects: those blocks cannot be
// recovered, with the round's reason; the plan is not whole, and Apply
// writes nothing.
func TestRepairTooManyInRound(t *testing.T) {
	orig := newFixture(t, 520, 512, 2, 12)
	f := orig.clone()
	for _, b := range f.inRound(2, 3) {
		f.corrupt(merkle.DataLevel, b, 7)
	}
	f.corrupt(merkle.DataLevel, 4, 7) // round 1: rebuildable
	rp, _ := f.plan(t)
	if rp == nil || rp.Whole() || rp.LostCount() != 3 || rp.RebuiltCount() != 1 {
		t.Fatalf("plan: whole %v, %d lost, %d rebuilt", rp.Whole(), rp.LostCount(), rp.RebuiltCount())
	}
	reasons, distinct := rp.Reasons()
	if distinct != 1 || !strings.Contains(reasons[0], "FEC round 2 has 3 corrupted blocks; 2 roots rebuild at most 2 per round") {
		t.Errorf("reasons %q (%d)", reasons, distinct)
	}
	for i, l := range rp.Lost() {
		if l.Level != merkle.DataLevel || l.Index != f.inRound(2, 3)[i] || l.Reason != reasons[0] || l.InHash {
			t.Errorf("lost %+v", l)
		}
	}
	data, hash, err := applyTo(t, rp, f)
	if !errors.Is(err, ErrCorrupt) || data.writes+hash.writes != 0 {
		t.Errorf("Apply of a partial plan: %v, %d writes", err, data.writes+hash.writes)
	}
}

// TestRepairWrongParity: parity that is not this image's rebuilds nothing
// that does not match the tree: every corrupted block is lost ("does not
// match the tree", or the parity gives back the disk's block), and nothing
// is written. Parity of the right image with the wrong roots likewise.
func TestRepairWrongParity(t *testing.T) {
	orig := newFixture(t, 520, 512, 2, 13)
	other := newFixture(t, 520, 512, 2, 14)
	for _, c := range []struct {
		name   string
		parity []byte
		roots  int
	}{{"other image's parity", other.parity, 2}, {"zeroed parity", make([]byte, len(orig.parity)), 2}, {"wrong roots", orig.parity, 4}} {
		f := orig.clone()
		f.parity, f.roots = c.parity, c.roots
		if len(f.parity) < 4*int(orig.p.Rounds())*512 {
			f.parity = append(f.parity, make([]byte, 4*int(orig.p.Rounds())*512)...)
		}
		f.corrupt(merkle.DataLevel, 10, 0)
		f.corrupt(merkle.DataLevel, 400, 0)
		rp, _ := f.plan(t)
		if rp == nil || rp.Whole() || rp.RebuiltCount() != 0 || rp.LostCount() != 2 {
			t.Errorf("%s: whole %v, %d rebuilt, %d lost", c.name, rp.Whole(), rp.RebuiltCount(), rp.LostCount())
			continue
		}
		data, hash, err := applyTo(t, rp, f)
		if err == nil || data.writes+hash.writes != 0 {
			t.Errorf("%s: Apply: %v, %d writes", c.name, err, data.writes+hash.writes)
		}
	}
}

// TestRepairSuspects: under a corrupted hash block, the children that
// still match their digest in it are intact; the others are the suspects,
// erased; once the hash block is rebuilt, the blocks under it are checked
// against it and the corrupted ones found and rebuilt too.
func TestRepairSuspects(t *testing.T) {
	orig := newFixture(t, 520, 512, 2, 15)
	f := orig.clone()
	f.corrupt(0, 0, 5)                 // covers data blocks 0-15
	f.corrupt(merkle.DataLevel, 3, 1)  // under it
	f.corrupt(merkle.DataLevel, 9, 1)  // under it
	f.corrupt(merkle.DataLevel, 50, 1) // elsewhere
	rp, rep := f.plan(t)
	if rp == nil || !rp.Whole() || rp.RebuiltCount() != 4 {
		t.Fatalf("plan: whole %v, %d rebuilt, %d lost", rp.Whole(), rp.RebuiltCount(), rp.LostCount())
	}
	// The verification saw data block 50 and the hash block; the repair
	// found 3 and 9 under it.
	if rep.CorruptDataBlocks != 3 || rep.CorruptHashBlocks != 1 || rep.UncheckedDataBlocks != 0 || rp.foundData != 2 {
		t.Errorf("report %+v, found %d", rep, rp.foundData)
	}
	for _, b := range []uint64{3, 9, 50} {
		if !rp.IsRebuilt(merkle.DataLevel, b) {
			t.Errorf("data block %d not rebuilt", b)
		}
	}
	data, hash, err := applyTo(t, rp, f)
	if err != nil || !bytes.Equal(data.b, orig.data) || !bytes.Equal(hash.b, orig.hash) {
		t.Fatalf("Apply: %v", err)
	}

	// The marks: a child matching the corrupted parent's digest is intact,
	// one that does not is a suspect (fec.Unknown), until the parent is
	// rebuilt.
	rr := &repairer{g: f.g, s: &fecSetup{p: f.p, FECInfo: FECInfo{Roots: 2}}, hash: bytes.NewReader(f.hash), data: bytes.NewReader(f.data),
		marks: newBlockMarks(f.g, &fecSetup{p: f.p})}
	h := f.msg(0, 0)
	rr.marks.set(h, markBad)
	if err := rr.markIntact(h); err != nil {
		t.Fatal(err)
	}
	// The corrupted level-0 block lost the digests of its first bytes:
	// data block 0's slot is where the byte flipped (byte 5).
	for b := range uint64(16) {
		intact := rr.marks.has(b, markIntact)
		if want := b != 0 && b != 3 && b != 9; intact != want {
			t.Errorf("data block %d: intact %v, want %v", b, intact, want)
		}
	}
	if rr.state(3) != fec.Unknown || rr.state(4) != fec.Good || rr.state(h) != fec.Bad {
		t.Errorf("states: suspect %v, intact %v, corrupted %v", rr.state(3), rr.state(4), rr.state(h))
	}
}

// TestRepairUnderLostHashBlock: a hash block that cannot be rebuilt leaves
// the blocks under it unchecked: they are counted, not named as lost.
func TestRepairUnderLostHashBlock(t *testing.T) {
	orig := newFixture(t, 520, 512, 2, 16)
	f := orig.clone()
	// Level-0 block 1 (message block msg) and two data blocks of its
	// round: three in one round.
	m := f.msg(0, 1)
	r, _ := f.p.Round(m)
	f.corrupt(0, 1, 0)
	for _, b := range f.inRound(r, 2) {
		f.corrupt(merkle.DataLevel, b, 0)
	}
	rp, rep := f.plan(t)
	if rp == nil || rp.Whole() {
		t.Fatalf("plan whole")
	}
	if rp.Unchecked() != 16 || rep.UncheckedDataBlocks != 16 || rp.IsRebuilt(0, 1) {
		t.Errorf("unchecked %d, report %+v", rp.Unchecked(), rep)
	}
	found := false
	for _, l := range rp.Lost() {
		found = found || l.Level == 0 && l.Index == 1
		if l.Level == merkle.DataLevel && l.Index >= 16 && l.Index < 32 {
			t.Errorf("a block under the lost hash block is named lost: %+v", l)
		}
	}
	if !found {
		t.Errorf("the hash block is not named lost: %+v", rp.Lost())
	}
}

// TestRepairSuperblockArea: the superblock area, which the parity does
// not cover, is restored from the superblock's own fields.
func TestRepairSuperblockArea(t *testing.T) {
	orig := newFixture(t, 64, 4096, 2, 17)
	f := orig.clone()
	f.hash[200] ^= 0xff // a reserved byte
	f.hash[600] = 7     // between the superblock and the tree
	rp, rep := f.plan(t)
	if rp == nil || !rp.Whole() || rp.SuperblockBytes() != 2 || rp.RebuiltCount() != 0 || rep.CorruptHeaderBytes != 2 {
		t.Fatalf("plan %+v, report %+v", rp, rep)
	}
	_, hash, err := applyTo(t, rp, f)
	if err != nil || !bytes.Equal(hash.b, orig.hash) {
		t.Errorf("Apply: %v", err)
	}
}

// TestRepairLostCapped: past lostKept unrecoverable blocks, the rest are
// counted, not named. It was the plan's part of cmd/veritycheck's
// TestLostListCapped.
func TestRepairLostCapped(t *testing.T) {
	saved := lostKept
	lostKept = 2
	defer func() { lostKept = saved }()
	f := newFixture(t, 520, 512, 2, 91)
	for _, b := range f.inRound(5, 3) { // three in one round: more than 2 roots rebuild
		f.corrupt(merkle.DataLevel, b, 0)
	}
	rp, _ := f.plan(t)
	if rp.LostCount() != 3 || len(rp.Lost()) != 2 {
		t.Errorf("%d lost, %d named", rp.LostCount(), len(rp.Lost()))
	}
}

// TestPlanRepairIntact: nothing corrupted, no plan.
func TestPlanRepairIntact(t *testing.T) {
	f := newFixture(t, 64, 512, 2, 18)
	rp, rep := f.plan(t)
	if rp != nil || !rep.OK() {
		t.Errorf("plan %v, report %+v", rp, rep)
	}
	_, _, err := PlanRepair(t.Context(), f.g, bytes.NewReader(f.data), bytes.NewReader(f.hash), f.root, &FECInfo{Roots: 2}, nil, nil)
	if !errors.Is(err, ErrParam) {
		t.Errorf("no parity: %v", err)
	}
}

var _ io.WriterAt = (*recorder)(nil)

// TestPlanRepairFECInfo: PlanRepair reads the parity at FECInfo.Offset of
// the device it is given, as DescribeFEC describes it, and refuses a
// description that cannot be the parity of the tree.
func TestPlanRepairFECInfo(t *testing.T) {
	orig := newFixture(t, 64, 512, 2, 19)
	f := orig.clone()
	f.corrupt(merkle.DataLevel, 3, 0)
	const at = 7 * 512
	device := append(bytes.Repeat([]byte{0xee}, at), f.parity...)
	rp, rep, err := PlanRepair(t.Context(), f.g, bytes.NewReader(f.data), bytes.NewReader(f.hash), f.root,
		&FECInfo{Roots: f.roots, Blocks: f.p.Blocks, Offset: at}, bytes.NewReader(device), nil)
	if err != nil || rp == nil || !rp.Whole() || rp.RebuiltCount() != 1 || rep.CorruptDataBlocks != 1 {
		t.Fatalf("parity at an offset: plan %+v, report %+v, %v", rp, rep, err)
	}
	rp.Close()

	for _, c := range []struct {
		name  string
		info  FECInfo
		field string
	}{
		{"too few blocks for the tree", FECInfo{Roots: f.roots, Blocks: f.g.DataBlocks}, "Blocks"},
		{"roots out of range", FECInfo{Roots: 30, Blocks: f.p.Blocks}, "Roots"},
		{"offset past any file", FECInfo{Roots: f.roots, Blocks: f.p.Blocks, Offset: 1 << 63}, "Offset"},
	} {
		_, _, err := PlanRepair(t.Context(), f.g, bytes.NewReader(f.data), bytes.NewReader(f.hash), f.root, &c.info, bytes.NewReader(device), nil)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindParam || e.Field != c.field {
			t.Errorf("%s: %v, want a KindParam error about %s", c.name, err, c.field)
		}
	}
}
