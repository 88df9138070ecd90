package veritycheck

// Error correction at the command line: images whose parity veritysetup
// (or the fec package) wrote, corrupted at random, whole blocks and
// scattered bytes, in DATA, in the tree and in the superblock area. Within
// the parity's capacity veritycheck must find the image repairable and
// --repair must restore it byte for byte; beyond it, it must name the
// blocks it cannot recover and write nothing; without --repair it never
// writes. Wrong FEC parameters must end in "cannot recover", never in a
// write.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/fecmsg"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/merkle"
)

// fecCase is an image with its tree and parity.
type fecCase struct {
	name   string
	maker  string // "veritysetup", or "library" (merkle.Build and fec.Encode)
	alg    string
	format int
	bs     int
	blocks int
	roots  int
	// layout: "separate" (FEC file of its own, parity at fecOffset),
	// "in-hash" (parity in HASH past the tree, with a spare block between),
	// "in-image" (tree and parity in DATA: HASH = FEC = DATA).
	layout    string
	fecOffset uint64 // "separate" only
	noSB      bool
}

var fecCases = []fecCase{
	// Three rounds; two levels.
	{name: "vs-separate-r2", maker: "veritysetup", alg: "sha256", format: 1, bs: 1024, blocks: 600, roots: 2, layout: "separate"},
	// Three levels, packed 20-byte digests, parity in HASH.
	{name: "vs-in-hash-r8", maker: "veritysetup", alg: "sha1", format: 0, bs: 512, blocks: 700, roots: 8, layout: "in-hash"},
	// Three levels, everything in one file.
	{name: "vs-in-image-r3", maker: "veritysetup", alg: "sha256", format: 1, bs: 512, blocks: 400, roots: 3, layout: "in-image"},
	// No superblock, the parity one block into its file.
	{name: "lib-nosb-r24", maker: "library", alg: "sha512", format: 1, bs: 512, blocks: 700, roots: 24, layout: "separate",
		fecOffset: 512, noSB: true},
}

const fecSalt = "5eed00112233445566778899aabbccddeeff"
const fecUUID = "a60c98d2-ae9b-4865-bfcb-b4e3ace11033"

// fecMade is a case's files (in dir), root hash and geometry.
type fecMade struct {
	c                   *fecCase
	dir                 string
	data, hash, fecPath string
	root                string
	g                   *merkle.Geometry
	fp                  fec.Params
	sums                map[string][32]byte // file name -> digest of the original
}

func (m *fecMade) hashOffset() uint64 {
	if m.c.layout == "in-image" {
		return uint64(m.c.blocks * m.c.bs)
	}
	return 0
}

// fecParityOffset is where the parity starts in the FEC device.
func (m *fecMade) parityOffset() uint64 {
	switch m.c.layout {
	case "separate":
		return m.c.fecOffset
	}
	return m.g.HashEnd() + uint64(m.c.bs) // one spare block, covered by FEC only
}

// args returns veritycheck's arguments: flags, extra, DATA, HASH.
func (m *fecMade) args(extra ...string) []string {
	a := []string{"--root-hash=" + m.root}
	if m.c.noSB {
		a = append(a, "--no-superblock", "--hash="+m.c.alg, fmt.Sprintf("--format=%d", m.c.format), "--salt="+fecSalt,
			fmt.Sprintf("--data-block-size=%d", m.c.bs), fmt.Sprintf("--hash-block-size=%d", m.c.bs))
	}
	if m.hashOffset() != 0 {
		a = append(a, fmt.Sprintf("--hash-offset=%d", m.hashOffset()))
	}
	a = append(a, "--fec-device="+m.fecPath, fmt.Sprintf("--fec-roots=%d", m.c.roots))
	if off := m.parityOffset(); off != 0 {
		a = append(a, fmt.Sprintf("--fec-offset=%d", off))
	}
	a = append(a, extra...)
	return append(a, m.data, m.hash)
}

// fecMake builds the case's image, tree and parity in a new directory.
func fecMake(t *testing.T, c *fecCase, seed uint64) *fecMade {
	t.Helper()
	m := &fecMade{c: c, dir: t.TempDir()}
	m.data = filepath.Join(m.dir, "data.img")
	m.hash, m.fecPath = filepath.Join(m.dir, "data.img.verity"), filepath.Join(m.dir, "data.img.fec")
	switch c.layout {
	case "in-hash":
		m.fecPath = m.hash
	case "in-image":
		m.hash, m.fecPath = m.data, m.data
	}
	alg, err := hashes.Lookup(c.alg)
	if err != nil {
		t.Fatal(err)
	}
	salt, _ := hex.DecodeString(fecSalt)
	uuid := [16]byte{0xa6, 0x0c, 0x98, 0xd2, 0xae, 0x9b, 0x48, 0x65, 0xbf, 0xcb, 0xb4, 0xe3, 0xac, 0xe1, 0x10, 0x33}
	p := merkle.Params{Hash: alg, LegacyFormat: c.format == 0, Salt: salt, DataBlockSize: c.bs, HashBlockSize: c.bs,
		DataBlocks: uint64(c.blocks), Superblock: !c.noSB, UUID: uuid}
	if c.layout == "in-image" {
		p.HashOffset = uint64(c.blocks * c.bs)
	}
	if m.g, err = merkle.NewGeometry(p); err != nil {
		t.Fatal(err)
	}
	fronttest.Image(t, m.data, int64(c.blocks*c.bs), seed)

	switch c.maker {
	case "veritysetup":
		args := []string{m.data, m.hash, "--hash=" + c.alg, fmt.Sprintf("--format=%d", c.format), "--salt=" + fecSalt,
			"--uuid=" + fecUUID, fmt.Sprintf("--data-block-size=%d", c.bs), fmt.Sprintf("--hash-block-size=%d", c.bs),
			"--fec-device=" + m.fecPath, fmt.Sprintf("--fec-roots=%d", c.roots)}
		if c.noSB {
			args = append(args, "--no-superblock")
		}
		if off := m.parityOffset(); off != 0 {
			args = append(args, fmt.Sprintf("--fec-offset=%d", off))
		}
		if c.layout == "in-image" {
			args = append(args, fmt.Sprintf("--hash-offset=%d", m.hashOffset()), fmt.Sprintf("--data-blocks=%d", c.blocks))
		}
		if c.layout != "separate" {
			// veritysetup reads the message up to the parity, and fails
			// ("Failed to read RS block") on a spare block that is not
			// in the file yet: the file is made that long first, with
			// the zeros it would read.
			f, err := os.OpenFile(m.hash, os.O_RDWR|os.O_CREATE, 0o644)
			if err == nil {
				err = f.Truncate(int64(m.parityOffset()))
				f.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		m.root = vsFormat(t, args...).root
	case "library":
		m.root = fecLibraryMake(t, m)
	default:
		t.Fatalf("maker %q", c.maker)
	}

	hashEnd := m.parityOffset() // the parity in HASH: it covers HASH up to itself
	if c.layout == "separate" {
		info, err := os.Stat(m.hash)
		if err != nil {
			t.Fatal(err)
		}
		hashEnd = uint64(info.Size())
	}
	if m.fp, err = fecmsg.Params(m.g, c.roots, hashEnd); err != nil {
		t.Fatal(err)
	}
	m.sums = fecSums(t, m.dir)
	return m
}

// fecLibraryMake writes the tree with merkle.Build and the parity with
// fec.Encode (byte-identical to veritysetup's, as veritygen's tests show).
func fecLibraryMake(t *testing.T, m *fecMade) string {
	t.Helper()
	if m.c.layout != "separate" {
		t.Fatal("the library maker does separate FEC files only")
	}
	data, err := os.Open(m.data)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	hash, err := os.Create(m.hash)
	if err != nil {
		t.Fatal(err)
	}
	defer hash.Close()
	root, err := merkle.Build(context.Background(), m.g, data, hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hash.Truncate(int64(m.g.HashEnd())); err != nil {
		t.Fatal(err)
	}
	p, err := fecmsg.Params(m.g, m.c.roots, m.g.HashEnd())
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(m.fecPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// Something that is not parity before it.
	if _, err := out.Write(make([]byte, m.c.fecOffset)); err != nil {
		t.Fatal(err)
	}
	if err := fec.Encode(context.Background(), p, fecmsg.Message(m.g, p, data, hash), out, int64(m.c.fecOffset), 0); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(root)
}

// fecSums returns the SHA-256 of every file in dir.
func fecSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range entries {
		out[e.Name()] = sha256.Sum256(fronttest.Read(t, filepath.Join(dir, e.Name())))
	}
	return out
}

// clone copies the files into a new directory: a fresh image to corrupt.
func (m *fecMade) clone(t *testing.T) *fecMade {
	t.Helper()
	n := *m
	n.dir = t.TempDir()
	move := func(p string) string { return filepath.Join(n.dir, filepath.Base(p)) }
	for name := range m.sums {
		vcWrite(t, filepath.Join(n.dir, name), fronttest.Read(t, filepath.Join(m.dir, name)))
	}
	n.data, n.hash, n.fecPath = move(m.data), move(m.hash), move(m.fecPath)
	return &n
}

// fecBlk is a data block (level -1) or a hash block.
type fecBlk struct {
	level merkle.Level
	index uint64
}

func (b fecBlk) String() string {
	if b.level == merkle.DataLevel {
		return fmt.Sprintf("data %d", b.index)
	}
	return fmt.Sprintf("hash L%d/%d", b.level, b.index)
}

// msg returns the block's index in the FEC message.
func (m *fecMade) msg(b fecBlk) uint64 {
	if b.level == merkle.DataLevel {
		return b.index
	}
	return m.g.DataBlocks + m.g.LevelStart[b.level] + b.index - m.g.HashStartBlock
}

func (m *fecMade) round(b fecBlk) uint64 {
	r, _ := m.fp.Round(m.msg(b))
	return r
}

// place returns the file and byte offset of a block.
func (m *fecMade) place(b fecBlk) (string, int64) {
	if b.level == merkle.DataLevel {
		return m.data, int64(b.index) * int64(m.c.bs)
	}
	return m.hash, int64(m.g.BlockOffset(b.level, b.index))
}

// ancestors lists the hash blocks above b.
func (m *fecMade) ancestors(b fecBlk) []fecBlk {
	var out []fecBlk
	for l, i := b.level, b.index; l < m.g.TopLevel(); {
		i, _ = m.g.Parent(l, i)
		l++
		out = append(out, fecBlk{l, i})
	}
	return out
}

// children lists the blocks right under hash block b.
func (m *fecMade) children(b fecBlk) []fecBlk {
	n := m.g.DataBlocks
	if b.level > 0 {
		n = m.g.LevelBlocks[b.level-1]
	}
	var out []fecBlk
	first := b.index * uint64(m.g.HashesPerBlock)
	for i := first; i < min(first+uint64(m.g.HashesPerBlock), n); i++ {
		out = append(out, fecBlk{b.level - 1, i})
	}
	return out
}

// fecCapacity classifies a set of corrupted blocks. A block is hidden when
// a hash block above it is corrupted too (the tree cannot check it until
// that one is rebuilt). guaranteed: in every round, known + 2*hidden <=
// roots, which the repair must always handle (hidden blocks are errors at
// unknown places until revealed). within: at most roots corrupted blocks
// in every round, which a decoder that knew every place could handle.
func (m *fecMade) capacity(set map[fecBlk]bool) (guaranteed, within bool) {
	known, hidden := map[uint64]int{}, map[uint64]int{}
	for b := range set {
		h := false
		for _, a := range m.ancestors(b) {
			h = h || set[a]
		}
		if h {
			hidden[m.round(b)]++
		} else {
			known[m.round(b)]++
		}
	}
	guaranteed, within = true, true
	for r := range m.fp.Rounds() {
		guaranteed = guaranteed && known[r]+2*hidden[r] <= m.c.roots
		within = within && known[r]+hidden[r] <= m.c.roots
	}
	return guaranteed, within
}

// randomBlock picks a data block (mostly) or a hash block.
func (m *fecMade) randomBlock(rng *rand.Rand) fecBlk {
	if rng.IntN(4) == 0 {
		l := merkle.Level(rng.IntN(m.g.Levels))
		return fecBlk{l, rng.Uint64N(m.g.LevelBlocks[l])}
	}
	return fecBlk{merkle.DataLevel, rng.Uint64N(m.g.DataBlocks)}
}

// corrupt damages the blocks: replaced by random bytes (whole), or a few
// bytes changed (scattered).
func (m *fecMade) corrupt(t *testing.T, rng *rand.Rand, set map[fecBlk]bool, whole bool) {
	t.Helper()
	for _, b := range slices.SortedFunc(maps.Keys(set), fecCmp) {
		path, off := m.place(b)
		if whole {
			junk := make([]byte, m.c.bs)
			for i := range junk {
				junk[i] = byte(rng.UintN(256))
			}
			fecWriteAt(t, path, off, junk)
			continue
		}
		for range 1 + rng.IntN(6) {
			vcXorByte(t, path, off+rng.Int64N(int64(m.c.bs)), campRandByte(rng))
		}
	}
}

func fecCmp(a, b fecBlk) int {
	if a.level != b.level {
		return int(a.level - b.level)
	}
	return int(a.index) - int(b.index)
}

func fecWriteAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// corruptHeader changes n distinct bytes of the superblock's padding and
// the gap after it, and returns n (0 without a superblock).
func (m *fecMade) corruptHeader(t *testing.T, rng *rand.Rand, n int) uint64 {
	t.Helper()
	if m.c.noSB {
		return 0
	}
	// Reserved bytes at the end of the superblock, and the gap to the tree.
	var spots []int64
	for i := int64(344); i < 512; i++ {
		spots = append(spots, i)
	}
	for i := int64(512); i < int64(m.g.TreeOffset()-m.g.HashOffset); i++ {
		spots = append(spots, i)
	}
	rng.Shuffle(len(spots), func(i, j int) { spots[i], spots[j] = spots[j], spots[i] })
	for _, s := range spots[:n] {
		vcXorByte(t, m.hash, int64(m.g.HashOffset)+s, campRandByte(rng))
	}
	return uint64(n)
}

// fecRepairJSON is the part of the --json report about error correction.
type fecRepairJSON struct {
	vcJSON
	FECDevice           string         `json:"fec_device"`
	FECRoots            int            `json:"fec_roots"`
	FECOffset           uint64         `json:"fec_offset"`
	FECBlocks           uint64         `json:"fec_blocks"`
	FECParityBlocks     uint64         `json:"fec_parity_blocks"`
	Repairable          *bool          `json:"repairable"`
	Repaired            bool           `json:"repaired"`
	RepairableCount     int            `json:"repairable_count"`
	RepairableBlocks    []fecJSONBlock `json:"repairable_blocks"`
	SuperblockBytes     uint64         `json:"repairable_superblock_bytes"`
	UnrecoverableCount  int            `json:"unrecoverable_count"`
	UnrecoverableBlocks []fecJSONBlock `json:"unrecoverable_blocks"`
	Unchecked           uint64         `json:"unrecoverable_unchecked_blocks"`
	Truncated           bool           `json:"repair_lists_truncated"`
}

type fecJSONBlock struct {
	Where    string `json:"where"`
	Level    *int   `json:"level"`
	Index    uint64 `json:"index"`
	Offset   uint64 `json:"offset"`
	FECBlock uint64 `json:"fec_block"`
	Reason   string `json:"reason"`
}

func (b fecJSONBlock) blk() fecBlk {
	if b.Where == "data" {
		return fecBlk{merkle.DataLevel, b.Index}
	}
	if b.Level == nil {
		return fecBlk{-9, b.Index}
	}
	return fecBlk{merkle.Level(*b.Level), b.Index}
}

func fecDecodeJSON(t *testing.T, r vcResult) *fecRepairJSON {
	t.Helper()
	var v fecRepairJSON
	fecStrictJSON(t, r, &v)
	if v.Repairable == nil {
		t.Fatalf("the report has no \"repairable\" field:\n%v", r)
	}
	return &v
}

// repairable returns the blocks the report says are (or were) rebuilt.
func (v *fecRepairJSON) repairable() map[fecBlk]bool {
	out := map[fecBlk]bool{}
	for _, b := range v.RepairableBlocks {
		out[b.blk()] = true
	}
	return out
}

// fecExpectRepair runs veritycheck without and then with --repair on an
// image whose corrupted blocks are set (plus headerBytes superblock-area
// bytes), and checks: without, exit 1, the hint and nothing written; with,
// exit 0 and every file back to its original bytes.
func fecExpectRepair(t *testing.T, m *fecMade, set map[fecBlk]bool, headerBytes uint64, what string) {
	t.Helper()
	before := fronttest.ListingWithDir(t, m.dir)
	r := vcRun(m.args()...)
	var parts []string
	if len(set) > 0 {
		parts = append(parts, plural(len(set), "block"))
	}
	if headerBytes > 0 {
		parts = append(parts, plural(int(headerBytes), "superblock byte"))
	}
	want := "run again with --repair to fix " + strings.Join(parts, " and ")
	if r.code != 1 || !strings.Contains(r.stderr, "veritycheck: hint: "+want+"\n") ||
		!strings.Contains(r.stderr, "; --repair can fix all of it: ") {
		t.Fatalf("%s: without --repair, want exit 1 and the hint %q:\n%v", what, want, r)
	}
	fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))

	r = vcRun(m.args("--repair", "--json", "--max-problems=-1")...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%s: --repair: want exit 0, nothing on stderr:\n%v", what, r)
	}
	j := fecDecodeJSON(t, r)
	if !j.Verified || !j.Repaired || !*j.Repairable || j.RepairableCount != len(set) || j.SuperblockBytes != headerBytes ||
		j.UnrecoverableCount != 0 || len(j.UnrecoverableBlocks) != 0 {
		t.Fatalf("%s: --repair report wrong:\n%v", what, r)
	}
	if got := j.repairable(); !maps.Equal(got, set) {
		t.Fatalf("%s: repaired %v, want %v", what, slices.SortedFunc(maps.Keys(got), fecCmp), slices.SortedFunc(maps.Keys(set), fecCmp))
	}
	if got := fecSums(t, m.dir); !maps.Equal(got, m.sums) {
		t.Fatalf("%s: after --repair the files differ from the originals", what)
	}
}

// fecExpectRefusal runs veritycheck with --repair (and --json) and checks
// exit 1, every block of mustName named as unrecoverable, and nothing
// written.
func fecExpectRefusal(t *testing.T, m *fecMade, mustName []fecBlk, what string, extra ...string) *fecRepairJSON {
	t.Helper()
	before := fronttest.ListingWithDir(t, m.dir)
	r := vcRun(m.args(extra...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "cannot recover") ||
		!strings.Contains(r.stderr, "veritycheck: hint: nothing can be written back: --repair would refuse too\n") {
		t.Fatalf("%s: without --repair, want exit 1, \"cannot recover\" and that --repair would refuse:\n%v", what, r)
	}
	r = vcRun(m.args(append([]string{"--repair"}, extra...)...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "cannot recover") || !strings.Contains(r.stderr, "veritycheck: hint: nothing was written\n") ||
		!strings.Contains(r.stdout, "unrecoverable: ") || strings.Contains(r.stdout, "repaired") {
		t.Fatalf("%s: want exit 1, \"cannot recover\" and \"nothing was written\":\n%v", what, r)
	}
	fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))
	r = vcRun(m.args(append([]string{"--repair", "--json", "--max-problems=-1"}, extra...)...)...)
	if r.code != 1 {
		t.Fatalf("%s: --json: want exit 1:\n%v", what, r)
	}
	j := fecDecodeJSON(t, r)
	if j.Verified || j.Repaired || *j.Repairable || j.UnrecoverableCount == 0 || j.UnrecoverableCount != len(j.UnrecoverableBlocks) ||
		len(j.RepairableBlocks) != 0 {
		t.Fatalf("%s: report wrong:\n%v", what, r)
	}
	named := map[fecBlk]bool{}
	for _, b := range j.UnrecoverableBlocks {
		named[b.blk()] = true
		if b.Reason == "" {
			t.Errorf("%s: block %v has no reason", what, b.blk())
		}
	}
	for _, b := range mustName {
		if !named[b] {
			t.Errorf("%s: %v is not named unrecoverable (named: %v)", what, b, slices.SortedFunc(maps.Keys(named), fecCmp))
		}
	}
	fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))
	return j
}

// TestFECRepairCampaign: random corruption within the guaranteed capacity
// is always repaired to the exact original; random corruption that is
// within the parity's capacity but beyond what the repair is sure to
// handle is repaired exactly or refused with nothing written; more
// corrupted blocks in a round than roots is refused, naming them, with
// nothing written.
func TestFECRepairCampaign(t *testing.T) {
	vsPath(t)
	seed := campSeed(t)
	for i := range fecCases {
		c := &fecCases[i]
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 200+uint64(i)))
			master := fecMake(t, c, rng.Uint64())
			g := master.g
			t.Logf("%d data blocks of %d, %d levels %v, fec: %d message blocks, %d rounds, %d roots, parity at %d",
				g.DataBlocks, g.DataBlockSize, g.Levels, g.LevelBlocks, master.fp.Blocks, master.fp.Rounds(), c.roots, master.parityOffset())
			// Intact: verified, even with --repair, and nothing written.
			before := fronttest.ListingWithDir(t, master.dir)
			vcVerified(t, master.args()...)
			vcVerified(t, master.args("--repair")...)
			fronttest.SameListing(t, before, fronttest.ListingWithDir(t, master.dir))

			trials := 5
			if testing.Short() {
				trials = 3 // whole, scattered with superblock bytes, whole
			}
			for trial := range trials {
				m := master.clone(t)
				whole := trial%2 == 0
				// Up to the whole guaranteed capacity; often hash blocks
				// and blocks hidden under them.
				target := 1 + rng.IntN(min(c.roots*int(m.fp.Rounds()), 16))
				set := map[fecBlk]bool{}
				for try := 0; try < 400 && len(set) < target; try++ {
					b := m.randomBlock(rng)
					if try%3 == 0 && len(set) > 0 { // under a corrupted hash block
						for s := range set {
							if s.level >= 0 {
								kids := m.children(s)
								b = kids[rng.IntN(len(kids))]
							}
							break
						}
					}
					set[b] = true
					if ok, _ := m.capacity(set); !ok {
						delete(set, b)
					}
				}
				m.corrupt(t, rng, set, whole)
				var header uint64
				if trial%3 == 1 {
					header = m.corruptHeader(t, rng, 1+rng.IntN(4))
				}
				what := fmt.Sprintf("trial %d (whole %v): %v, %d superblock bytes", trial, whole, slices.SortedFunc(maps.Keys(set), fecCmp), header)
				t.Log(what)
				fecExpectRepair(t, m, set, header, what)
			}

			// Within the parity's capacity, but with blocks hidden under
			// a corrupted hash block in their own round: exact, or refused.
			outcomes := map[string]int{}
			for trial := range 3 {
				m := master.clone(t)
				var set map[fecBlk]bool
				for try := 0; try < 200; try++ {
					set = map[fecBlk]bool{}
					l := merkle.Level(rng.IntN(g.Levels))
					h := fecBlk{l, rng.Uint64N(g.LevelBlocks[l])}
					set[h] = true
					for _, k := range m.children(h) {
						if m.round(k) == m.round(h) && len(set) < c.roots {
							set[k] = true
						}
					}
					if guaranteed, within := m.capacity(set); !guaranteed && within {
						break
					}
					set = nil
				}
				if set == nil {
					continue
				}
				m.corrupt(t, rng, set, trial%2 == 0)
				before := fronttest.ListingWithDir(t, m.dir)
				r := vcRun(m.args("--repair")...)
				switch {
				case r.code == 0 && maps.Equal(fecSums(t, m.dir), m.sums):
					outcomes["repaired"]++
				case r.code == 1 && strings.Contains(r.stderr, "cannot recover"):
					fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))
					outcomes["refused"]++
				default:
					t.Fatalf("hidden trial %d, %v: want an exact repair or a refusal:\n%v", trial, slices.SortedFunc(maps.Keys(set), fecCmp), r)
				}
			}
			t.Logf("hidden corruption in the same round: %v", outcomes)

			// Beyond capacity: roots+1 whole data blocks in one round,
			// and a repairable block elsewhere.
			for trial := range 2 {
				m := master.clone(t)
				r := rng.Uint64N(m.fp.Rounds())
				var inRound []fecBlk
				for d := r; d < g.DataBlocks; d += m.fp.Rounds() {
					inRound = append(inRound, fecBlk{merkle.DataLevel, d})
				}
				rng.Shuffle(len(inRound), func(i, j int) { inRound[i], inRound[j] = inRound[j], inRound[i] })
				bad := inRound[:c.roots+1]
				set := map[fecBlk]bool{}
				for _, b := range bad {
					set[b] = true
				}
				if m.fp.Rounds() > 1 {
					other := fecBlk{merkle.DataLevel, (r + 1) % m.fp.Rounds()}
					set[other] = true
				}
				m.corrupt(t, rng, set, true)
				what := fmt.Sprintf("beyond capacity %d: round %d: %v", trial, r, slices.SortedFunc(maps.Keys(set), fecCmp))
				t.Log(what)
				j := fecExpectRefusal(t, m, bad, what)
				if j.UnrecoverableCount != len(bad) {
					t.Errorf("%s: %d unrecoverable blocks, want the %d of the round", what, j.UnrecoverableCount, len(bad))
				}
			}
		})
	}
}

func fecStrictJSON(t *testing.T, r vcResult, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%v", err, r)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value\n%v", r)
	}
}

// fecTargeted is the image of the targeted tests: 520 blocks of 512, 16
// digests per hash block, three levels (33, 3 and 1 blocks; the tree
// starts at block 1 of HASH, level 0 at block 5), 557 message blocks in
// three rounds, roots 2, the parity in its own file.
var fecTargeted = fecCase{name: "targeted", maker: "veritysetup", alg: "sha256", format: 1, bs: 512, blocks: 520, roots: 2,
	layout: "separate"}

// TestFECRepairTargeted: blocks under a corrupted hash block cannot be
// checked until it is rebuilt; the repair rebuilds level after level. The
// superblock area, which the parity does not cover, is restored from the
// superblock's fields.
func TestFECRepairTargeted(t *testing.T) {
	vsPath(t)
	master := fecMake(t, &fecTargeted, 21)
	if master.fp.Rounds() != 3 || !slices.Equal(master.g.LevelBlocks, []uint64{33, 3, 1}) || master.g.LevelStart[0] != 5 {
		t.Fatalf("unexpected shape: %d rounds, levels %v", master.fp.Rounds(), master.g.LevelBlocks)
	}
	// Rounds: message block m is in round m % 3; level-0 block i is
	// message block 524+i, level-1 block i 521+i, the top block 520.
	top, l1b1, l0b0, l0b18 := fecBlk{2, 0}, fecBlk{1, 1}, fecBlk{0, 0}, fecBlk{0, 18}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name  string
		set   []fecBlk
		whole bool
		// The corruption of each block, else random whole or scattered.
		setup func(t *testing.T, m *fecMade)
	}{
		// Level-0 block 0 (round 2) and data block 0 under it (round 0):
		// the data block is found once the hash block is rebuilt.
		{name: "under a hash block", set: []fecBlk{l0b0, {-1, 0}}, whole: true},
		// The top block (round 1, so the root hash no longer matches),
		// level-1 block 1 under it (round 0) and level-0 block 18 under
		// that (round 2): three passes.
		{name: "three levels deep", set: []fecBlk{top, l1b1, l0b18}, whole: true},
		// Level-0 block 0 and data block 2 under it, both in round 2:
		// roots 2 cannot correct the data block as an error at an unknown
		// place beside the hash block's erasure. A few bytes of the hash
		// block changed: its other digests still single out data block 2
		// (which does not match its digest), erased too.
		{name: "under a hash block, same round", set: []fecBlk{l0b0, {-1, 2}}, setup: func(t *testing.T, m *fecMade) {
			path, off := m.place(l0b0)
			vcXorByte(t, path, off+4*32, 0x40)  // data block 4's digest (round 1): a suspect too
			vcXorByte(t, path, off+15*32, 0x01) // data block 15's (round 0)
			fecWriteAt(t, m.data, 2*512, make([]byte, 512))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := master.clone(t)
			set := map[fecBlk]bool{}
			for _, b := range tc.set {
				set[b] = true
			}
			if tc.setup != nil {
				tc.setup(t, m)
			} else {
				m.corrupt(t, rng, set, tc.whole)
			}
			fecExpectRepair(t, m, set, 0, tc.name)
		})
	}
	t.Run("superblock area only", func(t *testing.T) {
		m := master.clone(t)
		vcXorByte(t, m.hash, 400, 0x10) // reserved, in the superblock
		vcXorByte(t, m.hash, 511, 0x01)
		r := vcRun(m.args()...)
		if want := "veritycheck: error: verification failed: 2 corrupted superblock bytes; --repair can fix all of it: " +
			"2 superblock bytes restored from the superblock's own fields\n"; !strings.HasPrefix(r.stderr, want) {
			t.Errorf("want %q:\n%v", want, r)
		}
		fecExpectRepair(t, m, nil, 2, "superblock area only")
	})
}

// TestFECRepairDamagedParity: bytes changed in the parity itself are
// errors at unknown places, corrected with the capacity the erasures
// leave.
func TestFECRepairDamagedParity(t *testing.T) {
	vsPath(t)
	c := fecCase{name: "r8", maker: "veritysetup", alg: "sha256", format: 1, bs: 1024, blocks: 300, roots: 8, layout: "separate"}
	m := fecMake(t, &c, 31)
	rng := rand.New(rand.NewPCG(7, 8))
	set := map[fecBlk]bool{{-1, 10}: true, {-1, 11}: true, {-1, 12}: true, {0, 1}: true} // rounds 0, 1, 0, ...
	m.corrupt(t, rng, set, true)
	parity := fronttest.Read(t, m.fecPath)
	for range 40 {
		vcXorByte(t, m.fecPath, rng.Int64N(int64(len(parity))), campRandByte(rng))
	}
	damaged := fecSums(t, m.dir)[filepath.Base(m.fecPath)]
	r := vcRun(m.args("--repair")...)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("repaired: wrote 4 blocks back into %s and %s\n", m.data, m.hash)) {
		t.Fatalf("want the 4 blocks repaired:\n%v", r)
	}
	got := fecSums(t, m.dir)
	for _, f := range []string{m.data, m.hash} {
		if got[filepath.Base(f)] != m.sums[filepath.Base(f)] {
			t.Errorf("%s is not back to its original bytes", f)
		}
	}
	if got[filepath.Base(m.fecPath)] != damaged {
		t.Errorf("the FEC file was written to")
	}
}

// TestFECWrongParameters: the wrong roots, offset or parity cannot end in
// a write: every rebuilt block is checked against the tree, and the
// result is "cannot recover" (or, when the parameters do not fit the
// file, a usage error), with nothing written.
func TestFECWrongParameters(t *testing.T) {
	vsPath(t)
	c := fecCase{name: "r8", maker: "veritysetup", alg: "sha256", format: 1, bs: 1024, blocks: 300, roots: 8, layout: "separate"}
	m := fecMake(t, &c, 41)
	other := fecMake(t, &c, 42) // same shape, other data: other parity
	rng := rand.New(rand.NewPCG(9, 10))
	set := map[fecBlk]bool{{-1, 3}: true, {-1, 4}: true, {0, 2}: true}
	m.corrupt(t, rng, set, true)
	// withFlag replaces a flag of m.args.
	withFlag := func(flags ...string) []string {
		var out []string
		for _, a := range m.args() {
			keep := true
			for _, f := range flags {
				name, _, _ := strings.Cut(f, "=")
				keep = keep && !strings.HasPrefix(a, name+"=")
			}
			if keep {
				out = append(out, a)
			}
		}
		return append(flags, out...)
	}
	for roots := 2; roots < 8; roots++ {
		before := fronttest.ListingWithDir(t, m.dir)
		r := vcRun(append(withFlag(fmt.Sprintf("--fec-roots=%d", roots)), "--repair")...)
		if r.code != 1 || !strings.Contains(r.stderr, "cannot recover") || !strings.Contains(r.stderr, "hint: nothing was written") {
			t.Errorf("--fec-roots=%d (the parity has 8): want exit 1, cannot recover, nothing written:\n%v", roots, r)
		}
		fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))
	}
	for _, tc := range []struct {
		flags []string
		code  int
		want  string
	}{
		{[]string{"--fec-roots=9"}, 2, "wrong --fec-roots or --fec-offset, or a truncated file?"},
		{[]string{"--fec-roots=24"}, 2, "wrong --fec-roots or --fec-offset, or a truncated file?"},
		{[]string{"--fec-offset=1024"}, 2, "wrong --fec-roots or --fec-offset, or a truncated file?"},
		{[]string{"--fec-offset=1024", "--fec-roots=4"}, 1, "cannot recover"},
		{[]string{"--fec-device=" + other.fecPath}, 1, "cannot recover"},
	} {
		before := fronttest.ListingWithDir(t, m.dir)
		r := vcRun(append(withFlag(tc.flags...), "--repair")...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: want exit %d and %q:\n%v", tc.flags, tc.code, tc.want, r)
		}
		fronttest.SameListing(t, before, fronttest.ListingWithDir(t, m.dir))
	}
	// The right parameters repair it.
	fecExpectRepair(t, m, set, 0, "right parameters")

	// A wrong root hash: the top block is rebuilt, and does not match it.
	wrong := []byte(m.root)
	if wrong[0] == '0' {
		wrong[0] = '1'
	} else {
		wrong[0] = '0'
	}
	m2 := m.clone(t)
	m2.root = string(wrong)
	m2.corrupt(t, rng, map[fecBlk]bool{{-1, 7}: true}, true)
	j := fecExpectRefusal(t, m2, []fecBlk{{1, 0}}, "wrong root hash")
	if !j.RootMismatch || !strings.Contains(j.UnrecoverableBlocks[0].Reason, "does not match the root hash: is the root hash this tree's?") {
		t.Errorf("wrong root hash: want a root mismatch and a rebuilt top block that does not match: %+v", j)
	}
	r := vcRun(m2.args()...)
	if !strings.Contains(r.stderr, "check that it is this tree's root hash") {
		t.Errorf("wrong root hash: no hint about the root hash:\n%v", r)
	}
}

// fecReportIntact checks the --json report of TestFECReport's image while
// it is intact, with and without --fec-device.
func fecReportIntact(t *testing.T, m *fecMade) {
	t.Helper()
	// What veritysetup printed as "FEC blocks" is the parity's size.
	r := vcRun(m.args("--json")...)
	if r.code != 0 {
		t.Fatalf("intact: %v", r)
	}
	j := fecDecodeJSON(t, r)
	if !j.Verified || !*j.Repairable || j.Repaired || j.FECDevice != m.fecPath || j.FECRoots != 2 || j.FECOffset != 0 ||
		j.FECBlocks != 557 || j.FECParityBlocks != 6 || j.RepairableCount != 0 || j.UnrecoverableCount != 0 {
		t.Errorf("intact report wrong:\n%s", r.stdout)
	}
	for _, field := range []string{`"repairable_blocks": []`, `"unrecoverable_blocks": []`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("intact report lacks %s:\n%s", field, r.stdout)
		}
	}
	if r := vcRun("--json", "--root-hash="+m.root, m.data, m.hash); strings.Contains(r.stdout, "fec_") || strings.Contains(r.stdout, "repair") {
		t.Errorf("without --fec-device the report has FEC fields:\n%s", r.stdout)
	}
}

// TestFECReport: the text lines and the JSON fields, intact, repairable
// (listing capped by --max-problems) and repaired.
func TestFECReport(t *testing.T) {
	vsPath(t)
	m := fecMake(t, &fecTargeted, 61)
	fecReportIntact(t, m)
	set := map[fecBlk]bool{{-1, 7}: true, {-1, 8}: true, {0, 3}: true}
	m.corrupt(t, rand.New(rand.NewPCG(2, 2)), set, true)
	r := vcRun(m.args("--json", "--max-problems=1")...)
	j := fecDecodeJSON(t, r)
	if r.code != 1 || j.Verified || !*j.Repairable || j.Repaired || j.RepairableCount != 3 || len(j.RepairableBlocks) != 1 ||
		!j.Truncated || j.CorruptDataBlocks != 2 || j.CorruptHashBlocks != 1 {
		t.Errorf("repairable report wrong:\n%v", r)
	}
	b := j.RepairableBlocks[0]
	if b.Where != "data" || b.Index != 7 || b.Offset != 7*512 || b.FECBlock != 7 {
		t.Errorf("first repairable block: %+v, want data block 7", b)
	}

	hashBlock := fmt.Sprintf("hash block 3 of level 0 (byte %d of %s)", m.g.BlockOffset(0, 3), m.hash)
	r = vcRun(m.args()...)
	want := fmt.Sprintf(`corrupted: %[1]s: digest mismatch
corrupted: data block 7 (byte 3584 of %[2]s): digest mismatch
corrupted: data block 8 (byte 4096 of %[2]s): digest mismatch
repairable: data block 7 (byte 3584 of %[2]s): rebuilt from the FEC parity in %[3]s, matches the tree
repairable: data block 8 (byte 4096 of %[2]s): rebuilt from the FEC parity in %[3]s, matches the tree
repairable: %[1]s: rebuilt from the FEC parity in %[3]s, matches the tree
`, hashBlock, m.data, m.fecPath)
	wantErr := fmt.Sprintf("veritycheck: error: verification failed: 2 corrupted data blocks, 1 corrupted hash block; "+
		"--repair can fix all of it: "+
		"3 blocks rebuilt from the FEC parity in %s match the tree\nveritycheck: hint: run again with --repair to fix 3 blocks\n", m.fecPath)
	if r.code != 1 || r.stdout != want || r.stderr != wantErr {
		t.Errorf("text report: want exit 1,\n%s%s\ngot:\n%v", want, wantErr, r)
	}

	r = vcRun(m.args("--repair", "--max-problems=0")...)
	want = fmt.Sprintf("... and 3 more (3 in all; --max-problems=-1 lists all)\n... and 3 more repaired blocks\nrepaired: wrote 3 blocks back into %s and %s\n"+
		"verified: 520 data blocks of 512 bytes and 37 hash blocks match root hash %s\n", m.data, m.hash, m.root)
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("--repair: want exit 0 and\n%s\ngot:\n%v", want, r)
	}
	if !maps.Equal(fecSums(t, m.dir), m.sums) {
		t.Errorf("--repair did not restore the files")
	}
	// veritysetup agrees: the repaired image verifies, with its parity too.
	if code, out, errOut := vsRun(t, "verify", "--fec-device="+m.fecPath, "--fec-roots=2", m.data, m.hash, m.root); code != 0 {
		t.Errorf("veritysetup verify of the repaired image: exit %d\n%s%s", code, out, errOut)
	}
}
