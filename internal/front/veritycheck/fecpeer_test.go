package veritycheck

// Error correction against veritysetup's: random damage patterns on small
// images, each checked by `veritysetup verify --fec-device` and repaired by
// veritycheck --repair. Every pattern veritysetup finds repairable (exit 0)
// veritycheck must repair to the original bytes, and so every pattern of up
// to roots whole blocks per round, which only erasure decoding corrects
// (veritysetup decodes errors only: roots/2 per codeword). Whatever it does
// not repair, it must leave as it was.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/merkle"
)

// fecDamage is a damage pattern: whole blocks replaced with random bytes,
// scattered bytes changed (by block), and bytes of the parity changed.
type fecDamage struct {
	kind      string
	whole     []fecBlk
	scattered map[fecBlk][]int // byte offsets in the block
	parity    []int64
	// mustRepair: within what veritycheck must always repair, whatever
	// veritysetup says.
	mustRepair bool
}

func (d *fecDamage) apply(t *testing.T, m *fecMade, rng *rand.Rand) {
	t.Helper()
	for _, b := range d.whole {
		path, off := m.place(b)
		buf := make([]byte, m.c.bs)
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		fecWriteAt(t, path, off, buf)
	}
	for b, offs := range d.scattered {
		path, off := m.place(b)
		for _, o := range offs {
			vcXorByte(t, path, off+int64(o), campRandByte(rng))
		}
	}
	for _, o := range d.parity {
		vcXorByte(t, m.fecPath, o, campRandByte(rng))
	}
}

func (d *fecDamage) String() string {
	var parts []string
	if len(d.whole) > 0 {
		parts = append(parts, fmt.Sprintf("whole %v", d.whole))
	}
	for b, offs := range d.scattered {
		parts = append(parts, fmt.Sprintf("%v: %d bytes", b, len(offs)))
	}
	if len(d.parity) > 0 {
		parts = append(parts, fmt.Sprintf("%d parity bytes", len(d.parity)))
	}
	return d.kind + ": " + strings.Join(parts, ", ")
}

// roundData returns n distinct data blocks of round r, at random.
func (m *fecMade) roundData(rng *rand.Rand, r uint64, n int) []fecBlk {
	var all []fecBlk
	for d := r; d < m.g.DataBlocks; d += m.fp.Rounds() {
		all = append(all, fecBlk{merkle.DataLevel, d})
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(n, len(all))]
}

// scatter returns n distinct offsets in a block.
func scatter(rng *rand.Rand, bs, n int) []int {
	return rng.Perm(bs)[:n]
}

// randomDamage draws a pattern of the given kind.
func randomDamage(m *fecMade, rng *rand.Rand, kind string) *fecDamage {
	roots, bs := m.c.roots, m.c.bs
	d := &fecDamage{kind: kind, scattered: map[fecBlk][]int{}}
	r := rng.Uint64N(m.fp.Rounds())
	switch kind {
	case "whole": // up to roots whole data blocks in one round: erasures
		d.whole = m.roundData(rng, r, 1+rng.IntN(roots))
		d.mustRepair = true
	case "scattered": // more blocks than roots, a few bytes each (fewer for fewer roots)
		most := max(2, bs*roots/128)
		for _, b := range m.roundData(rng, r, 1+rng.IntN(2*roots+4)) {
			d.scattered[b] = scatter(rng, bs, 1+rng.IntN(most))
		}
	case "mixed": // whole and scattered blocks, data and tree, in several rounds, and parity bytes
		for range 1 + rng.IntN(4) {
			r := rng.Uint64N(m.fp.Rounds())
			d.whole = append(d.whole, m.roundData(rng, r, rng.IntN(roots/2+1))...)
			for _, b := range m.roundData(rng, r, rng.IntN(roots+2)) {
				if !slicesContains(d.whole, b) {
					d.scattered[b] = scatter(rng, bs, 1+rng.IntN(bs/32))
				}
			}
		}
		if rng.IntN(2) == 0 {
			l := merkle.Level(rng.IntN(m.g.Levels))
			d.scattered[fecBlk{l, rng.Uint64N(m.g.LevelBlocks[l])}] = scatter(rng, bs, 1+rng.IntN(8))
		}
		for range rng.IntN(64) {
			d.parity = append(d.parity, int64(m.parityOffset())+rng.Int64N(int64(m.fp.ParitySize())))
		}
	}
	return d
}

func slicesContains(s []fecBlk, b fecBlk) bool {
	for _, x := range s {
		if x == b {
			return true
		}
	}
	return false
}

// fecPeerTrial damages a copy of master, asks veritysetup and veritycheck,
// and checks veritycheck's outcome; it returns veritysetup's verdict and
// whether veritycheck repaired it.
func fecPeerTrial(t *testing.T, master *fecMade, rng *rand.Rand, d *fecDamage) (vsOK, repaired bool) {
	t.Helper()
	m := master.clone(t)
	d.apply(t, m, rng)
	code, out, errOut := vsRun(t, "verify", "--fec-device="+m.fecPath, fmt.Sprintf("--fec-roots=%d", m.c.roots), m.data, m.hash, m.root)
	// veritysetup's check decodes each codeword errors-only and counts the
	// bytes it changes, but does not check the result: a codeword past
	// roots/2 errors may be "corrected" to a wrong one (the kernel would
	// then fail the block against the tree). Its verdict is right when no
	// codeword has more than roots/2 damaged bytes: it must then find
	// every damaged byte, and veritycheck must repair it. Past that, its
	// "repairable" is logged, not trusted.
	damaged, worst := fecDiff(t, master, m)
	var found int
	if _, after, ok := strings.Cut(errOut+out, "Found "); ok {
		fmt.Sscanf(after, "%d repairable errors", &found)
	}
	vsOK = code == 0 && found == damaged && 2*worst <= m.c.roots
	if code == 0 && found == 0 && !strings.Contains(errOut+out, "Verification") {
		vsOK = true // the tree verified: the parity was not even read
	}
	if 2*worst <= m.c.roots && !vsOK {
		t.Errorf("%v: at most %d damaged bytes per codeword, yet veritysetup verify --fec-device exits %d and finds %d of the %d damaged bytes:\n%s%s",
			d, worst, code, found, damaged, out, errOut)
	}
	if code == 0 && !vsOK {
		t.Logf("%v: veritysetup finds %d repairable errors of %d damaged bytes, up to %d in a codeword: past what errors-only decoding is sure of",
			d, found, damaged, worst)
	}
	before := fronttest.ListingWithDir(t, m.dir)
	r := vcRun(m.args("--repair")...)
	switch {
	case r.code == 0:
		got := fecSums(t, m.dir)
		delete(got, filepath.Base(m.fecPath)) // damaged parity is not written back
		want := maps.Clone(m.sums)
		delete(want, filepath.Base(m.fecPath))
		if !maps.Equal(got, want) {
			t.Fatalf("%v: veritycheck --repair exit 0, but the files are not the originals:\n%v", d, r)
		}
		repaired = true
	case r.code == 1 && strings.Contains(r.stderr, "cannot recover"):
		fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))
	default:
		t.Fatalf("%v: want a repair or \"cannot recover\":\n%v", d, r)
	}
	if vsOK && !repaired {
		t.Errorf("%v: veritysetup verify --fec-device repairs it (%s%s), veritycheck does not:\n%v", d, out, errOut, r)
	}
	if d.mustRepair && !repaired {
		t.Errorf("%v: within the erasure capacity, veritycheck does not repair it:\n%v", d, r)
	}
	return vsOK, repaired
}

// TestFECRepairAgainstVeritysetup is the campaign; TestFECRepairIssueCase
// the case of issue 12.
func TestFECRepairAgainstVeritysetup(t *testing.T) {
	vsPath(t)
	seed := campSeed(t)
	trials := 24
	if testing.Short() {
		trials = 3 // one of each kind
	}
	for i, roots := range []int{2, 3, 8, 13, 24} {
		c := fecCase{name: fmt.Sprint("r", roots), maker: "veritysetup", alg: "sha256", format: 1, bs: 1024, blocks: 1500 + 97*i,
			roots: roots, layout: "separate"}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 900+uint64(i)))
			master := fecMake(t, &c, rng.Uint64())
			tally := map[string]int{}
			for trial := range trials {
				kind := []string{"whole", "scattered", "mixed"}[trial%3]
				vsOK, repaired := fecPeerTrial(t, master, rng, randomDamage(master, rng, kind))
				tally[fmt.Sprintf("%s: veritysetup %v, veritycheck %v", kind, vsOK, repaired)]++
			}
			t.Logf("outcomes: %v", tally)
		})
	}
}

// TestFECRepairIssueCase: roots 8, nine blocks of one round with 64 bytes
// changed in each, which veritysetup repairs ("Found 576 repairable
// errors") and which the erasure-only repair refused; and 5 to 8 whole
// blocks of a round, which only erasure decoding repairs.
func TestFECRepairIssueCase(t *testing.T) {
	vsPath(t)
	c := fecCase{name: "issue", maker: "veritysetup", alg: "sha256", format: 1, bs: 4096, blocks: 1024, roots: 8, layout: "separate"}
	master := fecMake(t, &c, 12)
	rng := rand.New(rand.NewPCG(12, 9))
	d := &fecDamage{kind: "issue 12", scattered: map[fecBlk][]int{}}
	for _, b := range master.roundData(rng, 1, 9) {
		d.scattered[b] = scatter(rng, c.bs, 64)
	}
	if vsOK, _ := fecPeerTrial(t, master, rng, d); !vsOK {
		t.Errorf("veritysetup does not repair the issue's case")
	}
	for n := 5; n <= 8; n++ {
		if testing.Short() && n%3 != 2 { // 5 and 8: the fewest and the most
			continue
		}
		d := &fecDamage{kind: fmt.Sprintf("%d whole blocks", n), whole: master.roundData(rng, 2, n), mustRepair: true}
		if vsOK, _ := fecPeerTrial(t, master, rng, d); vsOK {
			t.Logf("%v: veritysetup repairs it too", d)
		}
	}
}

// fecDiff compares the damaged copy m with master over what the parity
// covers (the FEC message and the parity itself): it returns the number of
// bytes that differ, and the most in any one codeword.
func fecDiff(t *testing.T, master, m *fecMade) (damaged, worst int) {
	t.Helper()
	bs, roots := uint64(m.c.bs), uint64(m.c.roots)
	rounds := m.fp.Rounds()
	perCodeword := map[uint64]int{}
	count := func(a, b []byte, from, to uint64, codeword func(off uint64) uint64) {
		for o := from; o < to; o++ {
			if a[o] != b[o] {
				damaged++
				perCodeword[codeword(o-from)]++
			}
		}
	}
	msgCodeword := func(base uint64) func(uint64) uint64 {
		return func(o uint64) uint64 {
			b, col := (base+o)/bs, (base+o)%bs
			return (b%rounds)*bs + col
		}
	}
	count(fronttest.Read(t, master.data), fronttest.Read(t, m.data), 0, m.g.DataSize(), msgCodeword(0))
	hashEnd := m.g.TreeOffset() + (m.fp.Blocks-m.g.DataBlocks)*bs
	count(fronttest.Read(t, master.hash), fronttest.Read(t, m.hash), m.g.TreeOffset(), hashEnd, msgCodeword(m.g.DataSize()))
	off := m.parityOffset()
	count(fronttest.Read(t, master.fecPath), fronttest.Read(t, m.fecPath), off, off+m.fp.ParitySize(), func(o uint64) uint64 { return o / roots })
	for _, n := range perCodeword {
		worst = max(worst, n)
	}
	return damaged, worst
}
