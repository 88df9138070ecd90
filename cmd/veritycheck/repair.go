package main

// Error correction: with --fec-device, the blocks the tree finds corrupted
// are rebuilt from the Reed-Solomon parity (veritygen's or veritysetup's
// --fec-device), every rebuilt block is checked against the tree, and with
// --repair they are written back.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
)

// fecSetup is the parity and what it covers.
type fecSetup struct {
	path   string
	f      *os.File
	roots  int
	offset uint64
	p      fec.Params
	parity io.ReaderAt
}

func (s *fecSetup) close() {
	if s != nil {
		s.f.Close()
	}
}

// fecFlagsWithoutDevice refuses the FEC flags when --fec-device is absent.
func fecFlagsWithoutDevice(o *options) error {
	if o.fecDevice != "" {
		return nil
	}
	for _, name := range []string{"fec-roots", "fec-offset", "repair"} {
		if o.tree.Changed(name) {
			hint := "e.g. --fec-device=HASH.fec, the file given to veritygen or veritysetup format as --fec-device"
			if name == "repair" {
				hint = "--repair rebuilds blocks from error-correction parity: give it with --fec-device (and --fec-roots, --fec-offset as when it was made)"
			}
			return cli.Errorf(hint, "--%s needs --fec-device", name)
		}
	}
	return nil
}

// openFEC checks the --fec-* flags against the tree and opens the parity
// for reading. hashSize is the size of the hash device.
func openFEC(o *options, g *merkle.Geometry, dataInfo os.FileInfo, dataSparse bool, hashInfo os.FileInfo, hashPath string, hashSize int64) (*fecSetup, error) {
	// checkFECFlags has checked --fec-roots and the range of --fec-offset.
	if g.DataBlockSize != g.HashBlockSize {
		return nil, cli.Errorf("", "error correction needs equal data and hash block sizes; this tree has %d and %d",
			g.DataBlockSize, g.HashBlockSize)
	}
	bs := uint64(g.DataBlockSize)
	if o.fecOffset%bs != 0 {
		return nil, cli.Errorf("give the --fec-offset the parity was written at", "--fec-offset %d is not a multiple of the block size %d", o.fecOffset, bs)
	}
	f, size, err := cli.OpenImage("FEC device", o.fecDevice)
	if err != nil {
		return nil, err
	}
	s := &fecSetup{path: o.fecDevice, f: f, roots: o.fecRoots, offset: o.fecOffset}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, cli.Errorf("", "FEC device %s: %v", o.fecDevice, cli.UnwrapPath(err))
	}
	// As veritysetup computes it: the message covers the hash device up to
	// the parity when the parity is in it, else up to its end.
	hashEnd := uint64(hashSize)
	switch {
	case os.SameFile(info, hashInfo):
		hashEnd = s.offset
		if s.offset < g.HashEnd() {
			f.Close()
			return nil, cli.Errorf("the parity follows the tree: give the --fec-offset it was written at",
				"--fec-offset %d is inside the tree, which ends at byte %d of HASH %s", s.offset, g.HashEnd(), hashPath)
		}
	case os.SameFile(info, dataInfo):
		if dataSparse {
			f.Close()
			return nil, cli.Errorf("expand the image first (simg2img) and give the expanded one", "the parity is inside DATA %s, an Android sparse image", o.fecDevice)
		}
		if s.offset < g.DataSize() {
			f.Close()
			return nil, cli.Errorf("the parity follows the data: give the --fec-offset it was written at",
				"--fec-offset %d is inside the data, which ends at byte %d of DATA", s.offset, g.DataSize())
		}
	}
	p, err := g.FECParams(s.roots, hashEnd)
	switch {
	// In HASH, the parity covers HASH up to the offset: too large an
	// offset is too large a message.
	case err != nil && hashEnd == s.offset, err == nil && s.offset+p.ParitySize() > cli.MaxFileOffset:
		f.Close()
		return nil, cli.FECOffsetTooLarge(s.offset)
	case err != nil:
		f.Close()
		return nil, cli.Errorf("", "%v", err)
	}
	s.p = p
	if end := s.offset + p.ParitySize(); end > uint64(size) {
		f.Close()
		return nil, cli.Errorf("give the --fec-roots and --fec-offset the parity was made with",
			"FEC device %s is %d bytes, but the parity of %d blocks with %d roots is %d bytes from byte %d (up to byte %d): wrong --fec-roots or --fec-offset, or a truncated file?",
			s.path, size, p.Blocks, s.roots, p.ParitySize(), s.offset, end)
	}
	s.parity = io.NewSectionReader(f, int64(s.offset), int64(p.ParitySize()))
	return s, nil
}

// Where a message block lies.
const pastTree = -3 // a hash-device block after the tree, covered by FEC only

type blockRef struct {
	msg    uint64 // index in the FEC message
	level  int    // merkle.DataLevel, a tree level, or pastTree
	index  uint64 // within its level
	inHash bool   // in the hash device, else in DATA
	off    uint64 // byte offset in its file
}

// locate returns where message block m lies.
func (s *fecSetup) locate(g *merkle.Geometry, m uint64) blockRef {
	bs := uint64(g.DataBlockSize)
	if m < g.DataBlocks {
		return blockRef{msg: m, level: merkle.DataLevel, index: m, off: m * bs}
	}
	hb := g.HashStartBlock + m - g.DataBlocks
	r := blockRef{msg: m, level: pastTree, index: hb, inHash: true, off: hb * bs}
	for l := range g.Levels {
		if hb >= g.LevelStart[l] && hb < g.LevelStart[l]+g.LevelBlocks[l] {
			r.level, r.index = l, hb-g.LevelStart[l]
		}
	}
	return r
}

// msgIndex returns the message block of a data or hash block.
func msgIndex(g *merkle.Geometry, level int, index uint64) uint64 {
	if level == merkle.DataLevel {
		return index
	}
	return g.DataBlocks + g.LevelStart[level] + index - g.HashStartBlock
}

// patch is bytes that replace a file's at off.
type patch struct {
	off int64
	b   []byte
}

// overlay reads r with patches (sorted, disjoint) in place of its bytes:
// the image as it would be once repaired. Safe for concurrent reads.
type overlay struct {
	r       io.ReaderAt
	patches []patch
}

func newOverlay(r io.ReaderAt, patches []patch) *overlay {
	ps := slices.Clone(patches)
	slices.SortFunc(ps, func(a, b patch) int { return compareInt64(a.off, b.off) })
	return &overlay{r: r, patches: ps}
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (o *overlay) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.r.ReadAt(p, off)
	end := off + int64(n)
	i := sort.Search(len(o.patches), func(i int) bool { return o.patches[i].off+int64(len(o.patches[i].b)) > off })
	for ; i < len(o.patches) && o.patches[i].off < end; i++ {
		pt := o.patches[i]
		lo, hi := max(pt.off, off), min(pt.off+int64(len(pt.b)), end)
		copy(p[lo-off:hi-off], pt.b[lo-pt.off:hi-pt.off])
	}
	return n, err
}

// fix is a block to write back: its rebuilt content differs from the disk.
type fix struct {
	ref blockRef
	b   []byte
}

// lost is a corrupted block that cannot be recovered.
type lost struct {
	ref    blockRef
	reason string
}

// repairPlan is what error correction can do for a corrupted image.
type repairPlan struct {
	fixes []fix
	// header is the canonical superblock area (the superblock encoded from
	// its own fields, then zeros up to the tree), when it differs from the
	// disk in headerBytes bytes. FEC does not cover it.
	header      []byte
	headerBytes uint64
	// lost lists what cannot be recovered; empty when the repair makes the
	// image whole. unchecked counts the blocks under lost hash blocks.
	lost      []lost
	unchecked uint64
}

func (rp *repairPlan) whole() bool { return len(rp.lost) == 0 }

// maxRepairPasses bounds the rebuild-and-check passes: each pass can make
// the blocks under a rebuilt hash block checkable, one level at a time.
func maxRepairPasses(g *merkle.Geometry) int { return g.Levels + 4 }

// planRepair works out, without writing anything, how to make the image
// whole from the parity: the corrupted blocks of rep (and those they hide)
// are rebuilt as erasures, and the image with the rebuilt blocks in place
// is verified against the tree, whole, before anything is trusted. Blocks
// under a corrupted hash block cannot be checked until it is rebuilt, so
// this repeats while verification finds new corrupted blocks.
func planRepair(ctx context.Context, g *merkle.Geometry, s *fecSetup, data, hash io.ReaderAt, inPlace bool, root []byte,
	rep *merkle.VerifyReport, jobs int) (*repairPlan, error) {
	rp := &repairPlan{}
	var headerPatch []patch
	if rep.CorruptHeaderBytes > 0 {
		rp.header = make([]byte, g.TreeOffset()-g.HashOffset)
		copy(rp.header, merkle.EncodeSuperblock(g))
		rp.headerBytes = rep.CorruptHeaderBytes
		headerPatch = []patch{{off: int64(g.HashOffset), b: rp.header}}
	}
	d := &decoder{p: s.p, msg: g.FECMessage(s.p, data, hash), parity: s.parity, path: s.path,
		known: map[uint64]bool{}, withSuspects: map[uint64]bool{}}
	for _, pr := range rep.Problems {
		if pr.Level != merkle.HeaderLevel {
			d.known[msgIndex(g, pr.Level, pr.Index)] = true
		}
	}
	var err error
	if d.suspects, err = findSuspects(g, rep, data, hash); err != nil {
		return nil, err
	}
	for pass := 1; ; pass++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := d.run(); err != nil {
			return nil, err
		}
		var dataPatches, hashPatches []patch
		for m, b := range d.rebuilt {
			ref := s.locate(g, m)
			if ref.inHash {
				hashPatches = append(hashPatches, patch{off: int64(ref.off), b: b})
			} else {
				dataPatches = append(dataPatches, patch{off: int64(ref.off), b: b})
			}
		}
		hashPatches = append(hashPatches, headerPatch...)
		if inPlace {
			dataPatches = append(dataPatches, hashPatches...)
			hashPatches = dataPatches
		}
		dataR, hashR := newOverlay(data, dataPatches), newOverlay(hash, hashPatches)
		after, err := merkle.Verify(ctx, g, dataR, hashR, root, &merkle.VerifyOptions{Jobs: jobs, MaxProblems: -1})
		if err != nil {
			return nil, err
		}
		if after.OK() {
			return rp, rp.collectFixes(g, s, d.rebuilt, data, hash)
		}
		progress := false
		var still []uint64
		for _, pr := range after.Problems {
			if pr.Level == merkle.HeaderLevel {
				continue // cannot happen: the header is patched
			}
			m := msgIndex(g, pr.Level, pr.Index)
			still = append(still, m)
			if !d.known[m] {
				d.known[m], progress = true, true
			}
			// Rebuilt, but wrong: an error at an unknown place. Erasing the
			// suspects of its round may help.
			if r, _ := s.p.Round(m); d.rebuilt[m] != nil && !d.withSuspects[r] {
				d.withSuspects[r], progress = true, true
			}
		}
		next, err := findSuspects(g, after, dataR, hashR)
		if err != nil {
			return nil, err
		}
		if !maps.Equal(next, d.suspects) {
			d.suspects, progress = next, true
		}
		if !progress || pass == maxRepairPasses(g) {
			if err := rp.explainLost(g, s, still, d, data, hash); err != nil {
				return nil, err
			}
			rp.unchecked = after.UncheckedDataBlocks + after.UncheckedHashBlocks
			return rp, nil
		}
	}
}

// decoder rebuilds the corrupted blocks round by round.
type decoder struct {
	p      fec.Params
	msg    io.ReaderAt
	parity io.ReaderAt
	path   string
	// known: blocks the tree says are corrupted. suspects: blocks that
	// may be (see findSuspects). withSuspects: rounds to decode with their
	// suspects erased too.
	known, suspects map[uint64]bool
	withSuspects    map[uint64]bool
	// What the last run gave: the rebuilt blocks, the blocks of the rounds
	// that could not be decoded, and the erasures of each round.
	rebuilt  map[uint64][]byte
	failed   map[uint64]bool
	erasures map[uint64][]uint64
}

// run decodes every round with known corrupted blocks (or suspects). A
// round that fails is decoded again with its suspects erased, when they
// fit: erasing an intact block costs one parity byte per codeword and
// yields its own bytes, while a corrupted block left out costs two (an
// error at an unknown place), more than roots 2 can give beside one
// erasure.
func (d *decoder) run() error {
	d.rebuilt, d.failed = map[uint64][]byte{}, map[uint64]bool{}
	d.erasures = d.choose(func(r uint64) bool { return d.withSuspects[r] })
	if err := d.decode(d.erasures); err != nil {
		return err
	}
	retry := map[uint64]bool{}
	for m := range d.failed {
		if r, _ := d.p.Round(m); !d.withSuspects[r] {
			retry[r] = true
		}
	}
	if len(retry) == 0 {
		return nil
	}
	again := map[uint64][]uint64{}
	for r, ms := range d.choose(func(r uint64) bool { return true }) {
		if retry[r] && len(ms) > len(d.erasures[r]) {
			again[r] = ms
			d.withSuspects[r] = true
		}
	}
	if len(again) == 0 {
		return nil
	}
	for r, ms := range again {
		d.erasures[r] = ms
		for _, m := range ms {
			delete(d.failed, m)
		}
	}
	return d.decode(again)
}

// choose returns the erasures of each round: the known corrupted blocks,
// and for the rounds withSuspects selects, the suspects too if they all
// fit.
func (d *decoder) choose(withSuspects func(r uint64) bool) map[uint64][]uint64 {
	out := map[uint64][]uint64{}
	for m := range d.known {
		r, _ := d.p.Round(m)
		out[r] = append(out[r], m)
	}
	extra := map[uint64][]uint64{}
	for m := range d.suspects {
		if r, _ := d.p.Round(m); !d.known[m] && withSuspects(r) {
			extra[r] = append(extra[r], m)
		}
	}
	for r, ms := range extra {
		if len(out[r])+len(ms) <= d.p.Roots {
			out[r] = append(out[r], ms...)
		}
	}
	for _, ms := range out {
		slices.Sort(ms)
	}
	return out
}

// decode rebuilds the blocks of rounds, recording what it rebuilt and what
// it could not.
func (d *decoder) decode(rounds map[uint64][]uint64) error {
	var list []uint64
	for _, ms := range rounds {
		list = append(list, ms...)
	}
	slices.Sort(list)
	got, err := fec.RepairBlocks(d.p, d.msg, d.parity, list)
	var ue *fec.UnrecoverableError
	if errors.As(err, &ue) {
		for _, b := range ue.Blocks {
			d.failed[b] = true
		}
	} else if err != nil {
		return fmt.Errorf("reading the FEC message or the parity in %s: %w", d.path, err)
	}
	maps.Copy(d.rebuilt, got)
	return nil
}

// findSuspects returns the message blocks right under the corrupted hash
// blocks of rep that do not match their digest slot in that block: the
// corrupted block cannot vouch for them, but those that match it were very
// likely not touched, and the others very likely were. (Every guess is
// checked against the tree afterwards.)
func findSuspects(g *merkle.Geometry, rep *merkle.VerifyReport, data, hash io.ReaderAt) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	bs := g.HashBlockSize
	h := g.Hash.NewBlockHasher(bs, g.Salt, g.SaltPosition())
	parent := make([]byte, bs)
	child := make([]byte, bs)
	digest := make([]byte, g.DigestSlot)
	for _, pr := range rep.Problems {
		if pr.Level < 0 {
			continue
		}
		if err := readFull(hash, parent, int64(g.BlockOffset(pr.Level, pr.Index))); err != nil {
			return nil, err
		}
		childLevel := pr.Level - 1
		n := g.DataBlocks
		if childLevel >= 0 {
			n = g.LevelBlocks[childLevel]
		}
		first := pr.Index * uint64(g.HashesPerBlock)
		for c := first; c < min(first+uint64(g.HashesPerBlock), n); c++ {
			r, off := io.ReaderAt(data), int64(c)*int64(bs)
			if childLevel >= 0 {
				r, off = hash, int64(g.BlockOffset(childLevel, c))
			}
			if err := readFull(r, child, off); err != nil {
				return nil, err
			}
			h.HashBlocks(digest, g.DigestSlot, child)
			_, slot := g.Parent(childLevel, c)
			if !bytes.Equal(digest[:g.DigestSize], parent[slot:slot+g.DigestSize]) {
				out[msgIndex(g, childLevel, c)] = true
			}
		}
	}
	return out, nil
}

func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading %d bytes at byte %d: %w", len(b), off, err)
}

// collectFixes keeps the rebuilt blocks that differ from the disk.
func (rp *repairPlan) collectFixes(g *merkle.Geometry, s *fecSetup, rebuilt map[uint64][]byte, data, hash io.ReaderAt) error {
	cur := make([]byte, g.DataBlockSize)
	for _, m := range slices.Sorted(maps.Keys(rebuilt)) {
		ref := s.locate(g, m)
		r := data
		if ref.inHash {
			r = hash
		}
		if err := readFull(r, cur, int64(ref.off)); err != nil {
			return err
		}
		if !bytes.Equal(cur, rebuilt[m]) {
			rp.fixes = append(rp.fixes, fix{ref: ref, b: rebuilt[m]})
		}
	}
	return nil
}

// explainLost lists the blocks still corrupted after the last pass, with
// the reason each could not be rebuilt.
func (rp *repairPlan) explainLost(g *merkle.Geometry, s *fecSetup, still []uint64, d *decoder, data, hash io.ReaderAt) error {
	cur := make([]byte, g.DataBlockSize)
	slices.Sort(still)
	for _, m := range slices.Compact(still) {
		ref := s.locate(g, m)
		same := false // the parity gives back what is on the disk
		if d.rebuilt[m] != nil {
			r := data
			if ref.inHash {
				r = hash
			}
			if err := readFull(r, cur, int64(ref.off)); err != nil {
				return err
			}
			same = bytes.Equal(cur, d.rebuilt[m])
		}
		r, _ := s.p.Round(m)
		n := len(d.erasures[r])
		var why string
		switch {
		case m >= s.p.Blocks:
			why = "outside what the FEC parity covers"
		case d.failed[m] && n > s.roots:
			why = fmt.Sprintf("FEC round %d has %d corrupted blocks; %d roots rebuild at most %d per round", r, n, s.roots, s.roots)
		case d.failed[m]:
			why = fmt.Sprintf("the parity cannot correct FEC round %d: more errors than it can correct (in blocks not known to be corrupted, or in the parity), or wrong --fec-roots or --fec-offset", r)
		case same && ref.level == g.Levels-1:
			why = "the parity rebuilds it as it is on the disk, and it does not match the root hash: is the root hash this tree's?"
		case same:
			why = "the parity rebuilds it as it is on the disk, and the tree does not vouch for it: was the parity made for this tree?"
		case d.rebuilt[m] != nil:
			why = "rebuilt from the parity, but the result does not match the tree: more errors than the parity can correct, or wrong --fec-roots or --fec-offset"
		default:
			why = "not rebuilt"
		}
		rp.lost = append(rp.lost, lost{ref: ref, reason: why})
	}
	return nil
}

// writeRepair writes the fixes and the superblock area back, DATA's blocks
// first, then the tree's, then the superblock area. Every block written has
// been checked against the tree, so an interrupted repair leaves the image
// no worse than it was.
func writeRepair(g *merkle.Geometry, rp *repairPlan, dataPath, hashPath string, inPlace bool) error {
	dataOut, err := os.OpenFile(dataPath, os.O_WRONLY, 0)
	if err != nil {
		return cli.Errorf("", "cannot open DATA %s for writing the repair: %v; nothing was written", dataPath, cli.UnwrapPath(err))
	}
	defer dataOut.Close()
	hashOut := dataOut
	if !inPlace {
		if hashOut, err = os.OpenFile(hashPath, os.O_WRONLY, 0); err != nil {
			return cli.Errorf("", "cannot open HASH %s for writing the repair: %v; nothing was written", hashPath, cli.UnwrapPath(err))
		}
		defer hashOut.Close()
	}
	fixes := slices.Clone(rp.fixes)
	slices.SortStableFunc(fixes, func(a, b fix) int {
		if a.ref.inHash != b.ref.inHash {
			if a.ref.inHash {
				return 1
			}
			return -1
		}
		return compareInt64(int64(a.ref.off), int64(b.ref.off))
	})
	written := 0
	fail := func(what string, err error) error {
		return cli.Errorf("the blocks written so far are correct (each was checked against the tree); run veritycheck again to see what is left",
			"writing the repair into %s: %v (%d of %d blocks written)", what, cli.UnwrapPath(err), written, len(fixes))
	}
	for _, fx := range fixes {
		f, what := dataOut, "DATA "+dataPath
		if fx.ref.inHash {
			f, what = hashOut, "HASH "+hashPath
		}
		if _, err := f.WriteAt(fx.b, int64(fx.ref.off)); err != nil {
			return fail(what, err)
		}
		written++
	}
	if rp.header != nil {
		if _, err := hashOut.WriteAt(rp.header, int64(g.HashOffset)); err != nil {
			return fail("HASH "+hashPath, err)
		}
	}
	if err := dataOut.Sync(); err != nil {
		return fail("DATA "+dataPath, err)
	}
	if !inPlace {
		if err := hashOut.Sync(); err != nil {
			return fail("HASH "+hashPath, err)
		}
	}
	return nil
}

// count says what a whole repair fixes, e.g. "3 blocks" or "1 block and 2
// superblock bytes".
func (rp *repairPlan) count() string {
	var parts []string
	if len(rp.fixes) > 0 {
		parts = append(parts, plural(len(rp.fixes), "block"))
	}
	if rp.headerBytes > 0 {
		parts = append(parts, plural(int(rp.headerBytes), "superblock byte"))
	}
	return strings.Join(parts, " and ")
}

// files names the files a whole repair writes to.
func (rp *repairPlan) files(dataPath, hashPath string) string {
	inData, inHash := false, rp.headerBytes > 0
	for _, fx := range rp.fixes {
		inData, inHash = inData || !fx.ref.inHash, inHash || fx.ref.inHash
	}
	switch {
	case dataPath == hashPath || !inHash:
		return dataPath
	case !inData:
		return hashPath
	}
	return dataPath + " and " + hashPath
}

// describe says how a whole repair fixes things.
func (rp *repairPlan) describe(fecPath string) string {
	var parts []string
	switch len(rp.fixes) {
	case 0:
	case 1:
		parts = append(parts, "1 block rebuilt from the FEC parity in "+fecPath+" matches the tree")
	default:
		parts = append(parts, fmt.Sprintf("%d blocks rebuilt from the FEC parity in %s match the tree", len(rp.fixes), fecPath))
	}
	if rp.headerBytes > 0 {
		parts = append(parts, plural(int(rp.headerBytes), "superblock byte")+" restored from the superblock's own fields")
	}
	return strings.Join(parts, ", and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// describeRef names a block as the problem lines do.
func describeRef(r blockRef, dataPath, hashPath string) string {
	switch r.level {
	case merkle.DataLevel:
		return fmt.Sprintf("data block %d (byte %d of %s)", r.index, r.off, dataPath)
	case pastTree:
		return fmt.Sprintf("block %d of %s, past the tree (byte %d)", r.index, hashPath, r.off)
	}
	return fmt.Sprintf("hash block %d of level %d (byte %d of %s)", r.index, r.level, r.off, hashPath)
}

// describeLost names the lost blocks briefly: "data blocks 0, 2 and hash
// block 5 of level 0", at most ten of them.
func describeLost(ls []lost) string {
	const most = 10
	var parts []string
	var data []string
	for i, l := range ls {
		if i == most {
			break
		}
		switch l.ref.level {
		case merkle.DataLevel:
			data = append(data, fmt.Sprint(l.ref.index))
		case pastTree:
			parts = append(parts, fmt.Sprintf("hash device block %d", l.ref.index))
		default:
			parts = append(parts, fmt.Sprintf("hash block %d of level %d", l.ref.index, l.ref.level))
		}
	}
	if len(data) == 1 {
		parts = append([]string{"data block " + data[0]}, parts...)
	} else if len(data) > 1 {
		parts = append([]string{"data blocks " + joinList(data)}, parts...)
	}
	s := fmt.Sprintf("%s (%s", plural(len(ls), "corrupted block"), joinList(parts))
	if len(ls) > most {
		s += fmt.Sprintf(" and %d more", len(ls)-most)
	}
	return s + ")"
}

func joinList(s []string) string { return strings.Join(s, ", ") }

// lostReasons returns the distinct reasons, the first two.
func lostReasons(ls []lost) string {
	var rs []string
	for _, l := range ls {
		if !slices.Contains(rs, l.reason) {
			rs = append(rs, l.reason)
		}
	}
	s := ""
	for i, r := range rs {
		if i == 2 {
			s += fmt.Sprintf("; and %d other reasons", len(rs)-2)
			break
		}
		if i > 0 {
			s += "; "
		}
		s += r
	}
	return s
}

// printRepair prints what error correction can do or did: one line per
// block (at most max, unless max < 0).
func printRepair(w io.Writer, rp *repairPlan, wrote bool, max int, dataPath, hashPath, fecPath string) {
	verb := "repairable"
	if wrote {
		verb = "repaired"
	}
	lines := 0
	more := func() bool {
		if max >= 0 && lines >= max {
			return false
		}
		lines++
		return true
	}
	if rp.whole() {
		for i, fx := range rp.fixes {
			if !more() {
				fmt.Fprintf(w, "... and %d more %s blocks\n", len(rp.fixes)-i, verb)
				break
			}
			fmt.Fprintf(w, "%s: %s: rebuilt from the FEC parity in %s, matches the tree\n", verb, describeRef(fx.ref, dataPath, hashPath), fecPath)
		}
		if rp.headerBytes > 0 {
			fmt.Fprintf(w, "%s: superblock area of %s: %s restored from the superblock's own fields (the FEC parity does not cover the superblock)\n",
				verb, hashPath, plural(int(rp.headerBytes), "byte"))
		}
		if wrote {
			fmt.Fprintf(w, "repaired: wrote %s back into %s\n", rp.count(), rp.files(dataPath, hashPath))
		}
		return
	}
	for i, l := range rp.lost {
		if !more() {
			fmt.Fprintf(w, "... and %d more unrecoverable blocks\n", len(rp.lost)-i)
			break
		}
		fmt.Fprintf(w, "unrecoverable: %s: %s\n", describeRef(l.ref, dataPath, hashPath), l.reason)
	}
}

// repairJSON is what the --json report says of error correction.
type repairJSON struct {
	FECDevice       string `json:"fec_device"`
	FECRoots        int    `json:"fec_roots"`
	FECOffset       uint64 `json:"fec_offset"`
	FECBlocks       uint64 `json:"fec_blocks"` // message blocks: the kernel table's fec_blocks
	FECParityBlocks uint64 `json:"fec_parity_blocks"`
	// Repairable: every corrupted block can be rebuilt and matches the tree
	// (true when nothing is corrupted). Repaired: the repair was written.
	Repairable bool `json:"repairable"`
	Repaired   bool `json:"repaired"`
	// The blocks the repair rebuilds (or rebuilt), and the superblock-area
	// bytes it restores from the superblock's fields.
	RepairableCount  int        `json:"repairable_count"`
	RepairableBlocks []fecBlock `json:"repairable_blocks"`
	SuperblockBytes  uint64     `json:"repairable_superblock_bytes"`
	// The corrupted blocks that cannot be recovered, and how many blocks
	// under them cannot be checked.
	UnrecoverableCount     int        `json:"unrecoverable_count"`
	UnrecoverableBlocks    []fecBlock `json:"unrecoverable_blocks"`
	UnrecoverableUnchecked uint64     `json:"unrecoverable_unchecked_blocks"`
	// The two lists are capped at --max-problems.
	RepairListsTruncated bool `json:"repair_lists_truncated"`
}

type fecBlock struct {
	Where    string `json:"where"` // data, hash, or hash_past_tree
	Level    *int   `json:"level,omitempty"`
	Index    uint64 `json:"index"`
	Offset   uint64 `json:"offset"`
	FECBlock uint64 `json:"fec_block"` // index in the FEC message
	Reason   string `json:"reason,omitempty"`
}

func toFECBlock(r blockRef, reason string) fecBlock {
	b := fecBlock{Index: r.index, Offset: r.off, FECBlock: r.msg, Reason: reason}
	switch r.level {
	case merkle.DataLevel:
		b.Where = "data"
	case pastTree:
		b.Where = "hash_past_tree"
	default:
		b.Where = "hash"
		level := r.level
		b.Level = &level
	}
	return b
}

func newRepairJSON(s *fecSetup, rp *repairPlan, wrote bool, max int) *repairJSON {
	j := &repairJSON{FECDevice: s.path, FECRoots: s.roots, FECOffset: s.offset, FECBlocks: s.p.Blocks,
		FECParityBlocks: s.p.ParityBlocks(), Repairable: rp == nil || rp.whole(), Repaired: wrote,
		RepairableBlocks: []fecBlock{}, UnrecoverableBlocks: []fecBlock{}}
	if rp == nil {
		return j
	}
	room := func(n int) bool {
		if max >= 0 && n >= max {
			j.RepairListsTruncated = true
			return false
		}
		return true
	}
	if rp.whole() {
		j.RepairableCount, j.SuperblockBytes = len(rp.fixes), rp.headerBytes
		for _, fx := range rp.fixes {
			if !room(len(j.RepairableBlocks)) {
				break
			}
			j.RepairableBlocks = append(j.RepairableBlocks, toFECBlock(fx.ref, ""))
		}
		return j
	}
	j.UnrecoverableCount, j.UnrecoverableUnchecked = len(rp.lost), rp.unchecked
	for _, l := range rp.lost {
		if !room(len(j.UnrecoverableBlocks)) {
			break
		}
		j.UnrecoverableBlocks = append(j.UnrecoverableBlocks, toFECBlock(l.ref, l.reason))
	}
	return j
}
