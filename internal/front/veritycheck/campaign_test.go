package veritycheck

// Corruption campaign at the command line: images made by veritysetup,
// single bytes changed (xor with a random non-zero byte) all over them,
// each change found as exactly the one problem it is, and the image
// verifying again once the byte is restored. Changes in the superblock's
// fields must never pass (exit 0) nor crash.

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/merkle"
)

// campSeed is the campaign's random seed; VERITYCHECK_CAMPAIGN_SEED
// overrides it to explore further.
func campSeed(t *testing.T) uint64 {
	seed := uint64(0x7e517ee5)
	if s := os.Getenv("VERITYCHECK_CAMPAIGN_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("VERITYCHECK_CAMPAIGN_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("campaign seed %#x (set VERITYCHECK_CAMPAIGN_SEED to change it)", seed)
	return seed
}

// campImages are the campaign's trees; each gets a random salt of saltLen
// bytes (-1: none) and random data.
var campImages = []struct {
	c       peerCase
	saltLen int
}{
	// Two levels; a 3584-byte gap between superblock and tree.
	{peerCase{name: "sha256-f1-4096", alg: "sha256", format: 1, blocks: 200}, 32},
	// Three levels, packed 20-byte digests with a tail in every hash block,
	// the superblock 1536 bytes into the hash file.
	{peerCase{name: "sha1-f0-1024-512-offset", alg: "sha1", format: 0, dbs: 1024, hbs: 512, blocks: 300,
		hashOffset: 1536}, 5},
	// Three levels, no salt (all 256 salt bytes are padding), the tree in
	// the image with a 512-byte gap.
	{peerCase{name: "sha512-f1-512-1024-in-place", alg: "sha512", format: 1, dbs: 512, hbs: 1024, blocks: 257,
		inPlace: true, hashOffset: 1024 * 131}, -1},
	// 12 bytes of padding after every 20-byte digest; a full 256-byte salt.
	{peerCase{name: "sha1-f1-4096-max-salt", alg: "sha1", format: 1, blocks: 130}, 256},
	// Tree in the image right after the data, unaligned to 4096.
	{peerCase{name: "sha256-f0-4096-512-in-place", alg: "sha256", format: 0, dbs: 4096, hbs: 512, blocks: 70,
		inPlace: true, hashOffset: 4096*70 + 1536}, 100},
}

// campMade is a campaign image: its files, root hash and geometry.
type campMade struct {
	c          *peerCase
	data, hash string
	root       string
	g          *merkle.Geometry
	args       []string // veritycheck's arguments but --json
}

func campMake(t *testing.T, i int, rng *rand.Rand) *campMade {
	t.Helper()
	ci := campImages[i]
	c := ci.c
	c.salt = "-"
	if ci.saltLen > 0 {
		salt := make([]byte, ci.saltLen)
		for k := range salt {
			salt[k] = byte(rng.UintN(256))
		}
		c.salt = hex.EncodeToString(salt)
	}
	data, hash, tr, _ := peerMake(t, &c, rng.Uint64())
	m := &campMade{c: &c, data: data, hash: hash, root: tr.root, g: peerGeometry(t, &c, hash)}
	m.args = []string{"--root-hash=" + tr.root}
	if c.hashOffset != 0 {
		m.args = append(m.args, fmt.Sprintf("--hash-offset=%d", c.hashOffset))
	}
	m.args = append(m.args, data, hash)
	if m.g.HashBlocks != tr.hashBlocks {
		t.Fatalf("geometry says %d hash blocks, veritysetup %d", m.g.HashBlocks, tr.hashBlocks)
	}
	return m
}

// campWant is the one problem a change must produce.
type campWant struct {
	category string
	file     string
	off      uint64 // of the changed byte in file
	where    string
	level    merkle.Level // for where == "hash"
	index    uint64
	offset   uint64
	reason   string // substring
}

// used is how many digests hash block index of level holds.
func campUsed(g *merkle.Geometry, level merkle.Level, index uint64) uint64 {
	children := g.DataBlocks
	if level > 0 {
		children = g.LevelBlocks[level-1]
	}
	return min(uint64(g.HashesPerBlock), children-index*uint64(g.HashesPerBlock))
}

// campSpan is a run of bytes of one category in one file.
type campSpan struct {
	start, end uint64 // in the file
	level      merkle.Level
	index      uint64
}

// campTargets lists, per category, the spans where a change must be found.
func campTargets(m *campMade) map[string][]campSpan {
	g := m.g
	out := map[string][]campSpan{}
	for b := range g.DataBlocks {
		out["data"] = append(out["data"], campSpan{b * uint64(g.DataBlockSize), (b + 1) * uint64(g.DataBlockSize), merkle.DataLevel, b})
	}
	hbs := uint64(g.HashBlockSize)
	ds, slot := uint64(g.DigestSize), uint64(g.DigestSlot)
	for l := range merkle.Level(g.Levels) {
		cat := fmt.Sprintf("hash level %d", l)
		for i := range g.LevelBlocks[l] {
			base := g.BlockOffset(l, i)
			used := campUsed(g, l, i)
			for s := range used {
				out[cat] = append(out[cat], campSpan{base + s*slot, base + s*slot + ds, l, i})
				if slot > ds {
					out["hash padding"] = append(out["hash padding"], campSpan{base + s*slot + ds, base + (s+1)*slot, l, i})
				}
			}
			if used*slot < hbs {
				out["hash padding"] = append(out["hash padding"], campSpan{base + used*slot, base + hbs, l, i})
			}
		}
	}
	ho := g.HashOffset
	sb := []campSpan{{ho + 82, ho + 88, 0, 0}}
	if salt := uint64(len(g.Salt)); salt < merkle.MaxSaltSize {
		sb = append(sb, campSpan{ho + 88 + salt, ho + 344, 0, 0})
	}
	out["superblock reserved"] = append(sb, campSpan{ho + 344, ho + 512, 0, 0})
	if gap := g.TreeOffset() - ho; gap > merkle.SuperblockSize {
		out["superblock gap"] = []campSpan{{ho + 512, g.TreeOffset(), 0, 0}}
	}
	return out
}

func (m *campMade) want(cat string, sp campSpan, off uint64) campWant {
	w := campWant{category: cat, file: m.hash, off: off, level: sp.level, index: sp.index}
	switch {
	case cat == "data":
		w.file, w.where, w.offset, w.reason = m.data, "data", sp.index*uint64(m.g.DataBlockSize), "digest"
	case strings.HasPrefix(cat, "hash level"):
		w.where, w.offset, w.reason = "hash", m.g.BlockOffset(sp.level, sp.index), "digest"
	case cat == "hash padding":
		w.where, w.offset, w.reason = "hash", m.g.BlockOffset(sp.level, sp.index), "padding"
	case cat == "superblock reserved":
		w.where, w.offset, w.index, w.reason = "superblock", off, 0, "reserved or padding byte"
	case cat == "superblock gap":
		w.where, w.offset, w.index, w.reason = "superblock", off, 0, "between the superblock and the tree"
	}
	return w
}

// campPick is one byte to change, in its span.
type campPick struct {
	sp  campSpan
	off uint64
}

// campPicks returns n random bytes of the category's spans plus its first
// and last byte and, with edges, the ends of every span.
func campPicks(rng *rand.Rand, spans []campSpan, n int, edges bool) []campPick {
	first, last := spans[0], spans[len(spans)-1]
	out := []campPick{{first, first.start}, {last, last.end - 1}}
	if edges {
		for _, sp := range spans {
			out = append(out, campPick{sp, sp.start}, campPick{sp, sp.end - 1})
		}
	}
	for range n {
		sp := spans[rng.IntN(len(spans))]
		out = append(out, campPick{sp, sp.start + rng.Uint64N(sp.end-sp.start)})
	}
	return out
}

// campCheck changes one byte, checks that veritycheck reports exactly the
// problem w, restores the byte and checks that the image verifies again.
func campCheck(t *testing.T, m *campMade, w campWant, x byte) bool {
	t.Helper()
	vcXorByte(t, w.file, int64(w.off), x)
	r := vcRun(append([]string{"--json"}, m.args...)...)
	vcXorByte(t, w.file, int64(w.off), x)
	ok := true
	fail := func(format string, args ...any) {
		t.Errorf("%s: byte %d of %s ^= %#02x: %s\n%v", w.category, w.off, w.file, x, fmt.Sprintf(format, args...), r)
		ok = false
	}
	if r.code != 1 {
		fail("exit %d, want 1", r.code)
		return false
	}
	if !strings.HasPrefix(r.stderr, "veritycheck: error: verification failed: 1 corrupted ") {
		fail("stderr does not say \"verification failed: 1 corrupted ...\"")
	}
	j := vcDecode(t, r)
	if j.Verified || len(j.Problems) != 1 || j.ProblemsTruncated ||
		j.CorruptDataBlocks+j.CorruptHashBlocks+j.CorruptHeaderBytes != 1 {
		fail("want exactly one problem")
		return false
	}
	p := j.Problems[0]
	wantLevel := "none"
	if w.where == "hash" {
		wantLevel = strconv.Itoa(int(w.level))
	}
	gotLevel := "none"
	if p.Level != nil {
		gotLevel = strconv.Itoa(*p.Level)
	}
	if p.Where != w.where || gotLevel != wantLevel || p.Index != w.index || p.Offset != w.offset ||
		!strings.Contains(p.Reason, w.reason) {
		fail("want where=%s level=%s index=%d offset=%d reason ~ %q", w.where, wantLevel, w.index, w.offset, w.reason)
	}
	counts := map[string]uint64{"data": j.CorruptDataBlocks, "hash": j.CorruptHashBlocks, "superblock": j.CorruptHeaderBytes}
	if counts[w.where] != 1 {
		fail("the %s count is %d, want 1", w.where, counts[w.where])
	}
	r = vcRun(append([]string{"--jobs=1"}, m.args...)...) // one job: cheaper under -race
	if r.code != 0 || !strings.HasPrefix(r.stdout, "verified: ") {
		fail("restored, want exit 0 and verified")
	}
	return ok
}

// campRandByte returns a random non-zero byte.
func campRandByte(rng *rand.Rand) byte { return byte(1 + rng.UintN(255)) }

func TestCampaignSingleByteChanges(t *testing.T) {
	vsPath(t)
	seed := campSeed(t)
	// Changes per category and image, beyond the edges always tried.
	perCategory := map[string]int{"data": 20, "hash padding": 16, "superblock reserved": 14, "superblock gap": 8}
	perLevel := 10
	if testing.Short() { // a third of the random ones; the edges all the same
		for cat, n := range perCategory {
			perCategory[cat] = n / 3
		}
		perLevel = 3
	}
	for i := range campImages {
		t.Run(campImages[i].c.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			m := campMake(t, i, rng)
			g := m.g
			t.Logf("%d data blocks of %d, %s format %d, %d levels %v, hash blocks of %d, salt %d bytes, hash offset %d, tree at %d",
				g.DataBlocks, g.DataBlockSize, g.Hash.Name(), g.Format(), g.Levels, g.LevelBlocks, g.HashBlockSize,
				len(g.Salt), g.HashOffset, g.TreeOffset())
			vcVerified(t, m.args...) // untouched, it verifies

			targets := campTargets(m)
			cats := slices.Sorted(maps.Keys(targets))
			for _, need := range []string{"data", "hash level 0", "hash padding", "superblock reserved"} {
				if _, ok := targets[need]; !ok {
					t.Fatalf("no %s in this image: the campaign's images are wrong", need)
				}
			}
			total, failed := 0, 0
			for _, cat := range cats {
				n, ok := perCategory[cat]
				if !ok {
					n = perLevel
				}
				done := 0
				for _, pk := range campPicks(rng, targets[cat], n, strings.HasPrefix(cat, "superblock")) {
					if !campCheck(t, m, m.want(cat, pk.sp, pk.off), campRandByte(rng)) {
						failed++
					}
					done++
					if failed > 10 {
						t.Fatal("too many failures; stopping")
					}
				}
				t.Logf("campaign %s: %s: %d single-byte changes", campImages[i].c.name, cat, done)
				total += done
			}
			t.Logf("campaign %s: %d changes in all, %d failed", campImages[i].c.name, total, failed)
			vcVerified(t, m.args...)
		})
	}
}

// campField is a superblock field: its bytes and what a change may give.
type campField struct {
	name       string
	start, end int // bytes in the superblock
}

// campOtherType reports whether the superblock b names a hash type, other
// than its own, that still describes a readable tree.
func campOtherType(b []byte) bool { return b[12] <= 1 && b[13]|b[14]|b[15] == 0 }

// sbField is one change of TestCampaignSuperblockFields: byte k of field f,
// at off in HASH, xored with x.
type sbField struct {
	f   campField
	k   int
	x   byte
	off int64
}

// campJudge fails the test unless r is what the change c of the superblock
// sbBytes may give, and returns the outcome, as the campaign counts them.
func campJudge(t *testing.T, c sbField, r vcResult, sbBytes []byte, nameLen int, sameTypes bool) string {
	t.Helper()
	f, k, x := c.f, c.k, c.x
	bad := func(format string, args ...any) {
		t.Errorf("%s: superblock byte %d ^= %#02x: %s\n%v", f.name, k, x, fmt.Sprintf(format, args...), r)
	}
	if strings.Contains(r.stdout, "verified: ") || (r.code != 0 && strings.Contains(r.stdout, `"verified": true`)) {
		bad("says verified")
	}
	outcome := fmt.Sprintf("exit %d", r.code)
	changed := slices.Clone(sbBytes)
	changed[k] ^= x
	newSaltSize := int(binary.LittleEndian.Uint16(changed[80:]))
	switch r.code {
	case 0:
		if f.name != "uuid" && !(f.name == "hash type" && sameTypes && campOtherType(changed)) {
			bad("exit 0: a change in the %s passed", f.name)
		}
	case 1:
		outcome += campMismatch(t, c, r, nameLen, bad)
	case 2:
		outcome += campRefusal(c, r, bad)
	default:
		bad("exit %d", r.code)
	}
	// Fields whose every change must be refused outright.
	mustRefuse := f.name == "signature" || f.name == "version" ||
		(f.name == "hash type" && !campOtherType(changed)) ||
		(f.name == "algorithm" && k-32 <= nameLen) ||
		(f.name == "salt size" && newSaltSize > merkle.MaxSaltSize)
	if mustRefuse && (r.code != 2 || !strings.Contains(r.stderr, "bad verity superblock: "+f.name)) {
		bad("want exit 2 naming the %s", f.name)
	}
	if f.name == "hash type" && campOtherType(changed) && !sameTypes && r.code != 1 {
		bad("the other hash type describes a readable tree: want exit 1")
	}
	if f.name == "salt" && r.code != 1 {
		bad("want exit 1")
	}
	return outcome
}

// campMismatch checks an exit 1 of campJudge's change c: a check that
// failed, with the corruption counted; it returns what it adds to the
// outcome.
func campMismatch(t *testing.T, c sbField, r vcResult, nameLen int, bad func(string, ...any)) (suffix string) {
	t.Helper()
	f, k, off := c.f, c.k, c.off
	if !strings.HasPrefix(r.stderr, "veritycheck: error: verification failed") {
		bad("exit 1 without \"verification failed\"")
	}
	j := vcDecode(t, r)
	if j.Verified || j.CorruptDataBlocks+j.CorruptHashBlocks+j.CorruptHeaderBytes == 0 {
		bad("exit 1, but the report counts no corruption")
	}
	if j.RootMismatch {
		suffix = " (root mismatch)"
	}
	switch {
	case f.name == "algorithm" && k-32 > nameLen:
		// NUL padding after the name: a reserved byte.
		if len(j.Problems) != 1 || j.Problems[0].Where != "superblock" ||
			j.Problems[0].Offset != uint64(off) || j.CorruptHeaderBytes != 1 {
			bad("want exactly the padding byte %d reported", off)
		}
	case f.name == "salt" && !j.RootMismatch:
		bad("a changed salt byte must change every digest (root mismatch)")
	}
	return suffix
}

// campRefusal checks an exit 2 of campJudge's change c: one error line,
// also as JSON, naming the problem; it returns what it adds to the
// outcome.
func campRefusal(c sbField, r vcResult, bad func(string, ...any)) string {
	f := c.f
	// With --json, stdout holds the error alone, as JSON.
	var jsonErr struct{ Error string }
	if !strings.HasPrefix(r.stderr, "veritycheck: error: ") || json.Unmarshal([]byte(r.stdout), &jsonErr) != nil ||
		!strings.HasPrefix(r.stderr, "veritycheck: error: "+jsonErr.Error+"\n") {
		bad("exit 2 without a \"veritycheck: error:\" line, or without the same error as JSON on stdout")
	}
	msg := strings.SplitN(r.stderr, "\n", 2)[0]
	named := "bad verity superblock: " + f.name + fmt.Sprintf(" (at byte %d)", f.start)
	switch {
	case strings.Contains(msg, named):
		return ": bad field"
	case strings.Contains(msg, "shorter than the"):
		return ": DATA too short"
	case strings.Contains(msg, "but the tree ends at byte"):
		return ": HASH too short"
	case strings.Contains(msg, "overlaps the hash area"):
		return ": overlap"
	case strings.Contains(msg, "invalid verity parameters"):
		return ": impossible tree"
	default:
		bad("exit 2 with an unclear message")
		return ""
	}
}

// TestCampaignSuperblockFields changes each byte of each superblock field.
// Changes to the fields that say how to read the tree must give exit 2
// with a message naming the problem, or exit 1 when they still describe a
// tree that can be read (and then does not match); never exit 0 nor a
// crash. A changed salt byte is a root mismatch. Two changes alter
// nothing that can be checked, and pass, as with veritysetup verify: the
// UUID, and the hash type of a tree without salt whose digest size is a
// power of two (both types then give the same bytes).
func TestCampaignSuperblockFields(t *testing.T) {
	vsPath(t)
	seed := campSeed(t)
	for _, i := range []int{0, 2, 4} {
		t.Run(campImages[i].c.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 100+uint64(i)))
			m := campMake(t, i, rng)
			g := m.g
			fields := []campField{{"signature", 0, 8}, {"version", 8, 12}, {"hash type", 12, 16}, {"uuid", 16, 32},
				{"algorithm", 32, 64}, {"data block size", 64, 68}, {"hash block size", 68, 72}, {"data blocks", 72, 80},
				{"salt size", 80, 82}}
			if len(g.Salt) > 0 {
				fields = append(fields, campField{"salt", 88, 88 + len(g.Salt)})
			}
			nameLen := len(g.Hash.Name())
			// Without salt and with a power-of-two digest size, the hash
			// types give the same bytes (H(block), digests back to back):
			// changing it changes nothing checkable, as veritysetup verify
			// agrees.
			sameTypes := len(g.Salt) == 0 && g.DigestSize&(g.DigestSize-1) == 0
			sbBytes := fronttest.Read(t, m.hash)[g.HashOffset : g.HashOffset+merkle.SuperblockSize]
			outcomes := map[string]map[string]int{}
			for _, f := range fields {
				outcomes[f.name] = map[string]int{}
				for k := f.start; k < f.end; k++ {
					// -short: of the UUID and the salt (bytes alike, up to
					// 256 of them, two runs each), the first four and the last.
					if testing.Short() && (f.name == "uuid" || f.name == "salt") && k >= f.start+4 && k < f.end-1 {
						continue
					}
					x := campRandByte(rng)
					off := int64(g.HashOffset) + int64(k)
					vcXorByte(t, m.hash, off, x)
					r := vcRun(append([]string{"--json"}, m.args...)...)
					vcXorByte(t, m.hash, off, x)
					outcome := campJudge(t, sbField{f, k, x, off}, r, sbBytes, nameLen, sameTypes)
					outcomes[f.name][outcome]++
					if rr := vcRun(append([]string{"--jobs=1"}, m.args...)...); rr.code != 0 {
						t.Fatalf("restored superblock byte %d, want exit 0:\n%v", k, rr)
					}
				}
			}
			// Changes that still describe a readable tree: the other hash
			// type, fewer data blocks (the lowest set bit of the count
			// cleared). Each must fail the check, exit 1.
			low := sbBytes[72] & -sbBytes[72]
			for _, c := range []struct {
				what string
				k    int
				x    byte
			}{{"hash type flipped", 12, 1}, {"data blocks decreased", 72, low}} {
				if c.x == 0 {
					continue
				}
				off := int64(g.HashOffset) + int64(c.k)
				vcXorByte(t, m.hash, off, c.x)
				r := vcRun(append([]string{"--json"}, m.args...)...)
				vcXorByte(t, m.hash, off, c.x)
				if c.k == 12 && sameTypes {
					if r.code != 0 {
						t.Errorf("%s without salt: the tree's bytes are the same, want exit 0:\n%v", c.what, r)
					}
					vcXorByte(t, m.hash, off, c.x)
					code, out, errOut := vsRun(t, "verify", "--hash-offset="+strconv.FormatUint(g.HashOffset, 10), m.data, m.hash, m.root)
					vcXorByte(t, m.hash, off, c.x)
					if code != 0 {
						t.Errorf("%s without salt: veritysetup verify says exit %d\n%s%s", c.what, code, out, errOut)
					}
				} else if r.code != 1 || vcDecode(t, r).Verified {
					t.Errorf("%s (superblock byte %d ^= %#02x): want exit 1:\n%v", c.what, c.k, c.x, r)
				}
				j := vcDecode(t, r)
				t.Logf("campaign %s: %s: exit %d, %d corrupted data blocks, %d hash blocks, %d superblock bytes, root mismatch %v",
					campImages[i].c.name, c.what, r.code, j.CorruptDataBlocks, j.CorruptHashBlocks, j.CorruptHeaderBytes, j.RootMismatch)
			}
			for _, f := range fields {
				t.Logf("campaign %s: superblock %s (%d bytes): %v", campImages[i].c.name, f.name, f.end-f.start, outcomes[f.name])
			}
		})
	}
}
