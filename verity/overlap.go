package verity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// What Format may write over in a file that also holds bytes of the
// user's: DATA when the tree (or the parity) goes into it, and an existing
// HASH whose bytes before --hash-offset are kept. Without --data-blocks
// the data is, for veritysetup, the whole device; Format keeps its own
// layout (the data is the blocks before the tree) only where the bytes
// from the tree on provably are not the user's: zeros or holes, an earlier
// tree of ours at that very place (its superblock there, or without one a
// tree that verifies for the parameters given), and the parity of such a
// tree at the place this run puts its own, or parity that verifies.

// sameDevice reports whether a and b are the same file or block device, as
// veritysetup's device_is_identical decides it: the same device and inode
// (a path alias, a hard link), or for two block devices the same device
// number (two nodes of one device). nil is no file.
func sameDevice(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	if os.SameFile(a, b) {
		return true
	}
	if !isBlockDevice(a) || !isBlockDevice(b) {
		return false
	}
	da, ok := safefile.DeviceNumber(a)
	db, ok2 := safefile.DeviceNumber(b)
	return ok && ok2 && da == db
}

// extent is the bytes [from, to) of a file.
type extent struct{ from, to uint64 }

func (e extent) holds(off uint64) bool { return e.from <= off && off < e.to }

// scanChunk is how much firstUserByte reads at a time.
const scanChunk = 1 << 20

// firstUserByte returns the offset of the first non-zero byte of f in
// [from, to) outside the extents ours, skipping holes (SEEK_DATA); found
// is false when there is none. It reads in bounded memory and stops when
// ctx ends.
func firstUserByte(ctx context.Context, f *os.File, from, to uint64, ours []extent) (off uint64, found bool, err error) {
	var buf []byte
	for off = from; off < to; {
		if next, skipped := skipExtents(off, ours); skipped {
			off = next
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		data, end, more := nextData(f, off, to)
		if !more {
			return 0, false, nil
		}
		if data > off {
			off = data
			continue
		}
		end = min(end, off+scanChunk, nextExtentStart(off, to, ours))
		if buf == nil {
			buf = make([]byte, scanChunk)
		}
		n, rerr := f.ReadAt(buf[:end-off], int64(off))
		if i := firstNonZero(buf[:n]); i >= 0 {
			return off + uint64(i), true, nil
		}
		if rerr == io.EOF || n == 0 && rerr == nil {
			return 0, false, nil // the file ends sooner than it did
		}
		if rerr != nil {
			return 0, false, rerr
		}
		off += uint64(n)
	}
	return 0, false, nil
}

// skipExtents returns the end of the extent of ours holding off, if any.
func skipExtents(off uint64, ours []extent) (uint64, bool) {
	for _, e := range ours {
		if e.holds(off) {
			return e.to, true
		}
	}
	return off, false
}

// nextExtentStart returns the first start of an extent of ours past off,
// or to.
func nextExtentStart(off, to uint64, ours []extent) uint64 {
	for _, e := range ours {
		if e.from > off && e.from < to {
			to = e.from
		}
	}
	return to
}

// nextData returns where the next data (not a hole) of f at or after off
// starts and where it ends (at most to); more is false when there is none
// before to. Where SEEK_DATA is not supported, everything is data.
func nextData(f *os.File, off, to uint64) (data, end uint64, more bool) {
	data, end, more = off, to, true
	d, err := safefile.SeekData(f, int64(off))
	switch {
	case errors.Is(err, safefile.ErrNoData):
		return data, end, false // only holes from off to the end
	case err != nil || d < int64(off):
		return data, end, more
	}
	data = uint64(d)
	if h, err := safefile.SeekHole(f, d); err == nil && h > d {
		end = min(end, uint64(h))
	}
	if data >= to {
		more = false
	}
	return data, end, more
}

// writtenFile is a file that Format writes into and that may hold the
// user's bytes where it writes: the tree at the geometry's HashOffset (tree),
// the parity at the FEC layout's Offset (parity), or both.
type writtenFile struct {
	f            *os.File
	tree, parity bool
}

// userByteIn returns the first byte in [from, to) of w that Format must not
// write over: not zero, not in a hole, not in an earlier tree of ours at
// the offset, nor in the parity that goes with it where this run puts its
// own. found is false when everything there may be written.
func (l *Layout) userByteIn(ctx context.Context, w *writtenFile, src *Source, from, to uint64, jobs int) (uint64, bool, error) {
	g, fl := l.Geometry, l.FEC
	var ours []extent
	prove := func(e extent) {
		ours = append(ours, e)
		if w.parity {
			ours = append(ours, extent{fl.Offset, fl.Offset + fl.Size})
		}
	}
	proven := false
	if w.tree {
		if old, ok := superblockTree(w.f, g.HashOffset); ok {
			// An earlier tree of ours, whatever it covered.
			prove(old)
			proven = true
		}
	}
	for {
		off, found, err := firstUserByte(ctx, w.f, from, to, ours)
		if err != nil || !found {
			return 0, false, err
		}
		tree := extent{g.HashOffset, g.HashEnd()}
		if proven || !w.tree || g.Superblock || !tree.holds(off) {
			return off, true, nil
		}
		// Without superblock, only the tree itself says it is ours.
		if proven = firstTreeBlockMatches(g, src, w.f) || treeVerifies(ctx, g, src, w.f, jobs); !proven {
			return off, true, nil
		}
		prove(tree)
	}
}

// superblockTree returns the extent of the tree whose superblock is at
// offset off of f, if a valid one is.
func superblockTree(f *os.File, off uint64) (extent, bool) {
	b := make([]byte, merkle.SuperblockSize)
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		return extent{}, false
	}
	p, err := merkle.DecodeSuperblock(b)
	if err != nil {
		return extent{}, false
	}
	p.HashOffset = off
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return extent{}, false
	}
	return extent{off, g.HashEnd()}, true
}

// firstTreeBlockMatches reports whether hash holds, where g puts it, the
// first block of level 0 of the tree of the data: the first block any
// build writes, so that even a tree cut short by a killed run has it,
// unless nothing of it was written (a tree's other blocks are written only
// after it). Random bytes match no digest.
func firstTreeBlockMatches(g *merkle.Geometry, src *Source, hash *os.File) bool {
	if g.Levels == 0 {
		return false
	}
	have := make([]byte, g.HashBlockSize)
	if _, err := hash.ReadAt(have, int64(g.BlockOffset(0, 0))); err != nil {
		return false
	}
	want := make([]byte, g.HashBlockSize)
	block := make([]byte, g.DataBlockSize)
	for i := range min(uint64(g.HashesPerBlock), g.DataBlocks) {
		if _, err := src.ReadAt(block, int64(i)*int64(g.DataBlockSize)); err != nil {
			return false
		}
		copy(want[i*uint64(g.DigestSlot):], digest(g.Hash, g.Format(), g.Salt, block))
	}
	return bytes.Equal(have, want)
}

// treeVerifies reports whether hash holds, where g puts it, a tree of the
// data for g's parameters: every hash block matches its parent (the top
// block stands for itself), the padding is zeros, and at least one data
// block matches its digest. Data blocks changed since it was made do not
// count against it: random bytes match no digest, an earlier tree's
// upper levels match its level 0 whatever the data became.
func treeVerifies(ctx context.Context, g *merkle.Geometry, src *Source, hash *os.File, jobs int) bool {
	if g.Levels == 0 {
		return false
	}
	top := make([]byte, g.HashBlockSize)
	if _, err := hash.ReadAt(top, int64(g.BlockOffset(g.TopLevel(), 0))); err != nil {
		return false
	}
	root := digest(g.Hash, g.Format(), g.Salt, top)
	rep, err := merkle.Verify(ctx, g, src, hash, root, &merkle.VerifyOptions{Jobs: jobs, MaxProblems: 1,
		Runs: src.Runs(g.DataBlockSize, g.DataBlocks)})
	return err == nil && rep.CorruptHashBlocks == 0 && rep.CorruptHeaderBytes == 0 && rep.CorruptDataBlocks < g.DataBlocks
}

// firstNonZero returns the index of the first non-zero byte of b, or -1.
func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// checkWrittenTails refuses, unless the caller bounded the data or forced
// it, writes over the user's bytes: the tree (and parity) in DATA without
// DataBlocks, where every byte from HashOffset to DATA's end must be ours;
// the parity in DATA without DataBlocks, likewise from FECOffset; the tree
// (and parity) in an existing HASH whose bytes before HashOffset are kept,
// where what is written must be ours. src is DATA, open. Force and InPlace
// (veritysetup's semantics: see planFormat) never get here.
func (l *Layout) checkWrittenTails(ctx context.Context, opts *FormatOptions, src *Source) error {
	if l.Append != nil {
		return nil
	}
	g, fl := l.Geometry, l.FEC
	n := jobs(opts.Jobs)
	if opts.DataBlocks == 0 && (l.TreeInData || fl != nil && fl.InData) {
		size, err := fileSize(src.file)
		if err != nil {
			return errorf(KindIO, "", "DATA %s: %w", l.DataPath, unwrapPath(err))
		}
		w := &writtenFile{f: src.file, tree: l.TreeInData, parity: fl != nil && l.TreeInData && fl.InHash}
		from := g.HashOffset
		if !l.TreeInData {
			from = fl.Offset // the parity alone, which nothing proves ours
		}
		off, found, err := l.userByteIn(ctx, w, src, from, uint64(size), n)
		if err != nil {
			return readError(err, "DATA", l.DataPath)
		}
		if found {
			info, _ := src.file.Stat()
			return l.dataTailRefusal(off, uint64(size), info != nil && isBlockDevice(info))
		}
	}
	if err := l.checkKeptHash(ctx, src, n); err != nil {
		return err
	}
	return l.checkKeptFEC(ctx, src, n)
}

// checkKeptFEC refuses to write the parity over bytes of an existing FEC
// file of its own that are not ours when the bytes before FECOffset are
// kept (FECOffset > 0): only zeros, holes, or parity that matches the data
// and HASH as they are (at least in part: a round that did not change) may
// be written over there.
func (l *Layout) checkKeptFEC(ctx context.Context, src *Source, jobs int) error {
	fl := l.FEC
	if fl == nil || l.fecFile == nil || fl.Offset == 0 || !l.fecFile.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(fl.Path)
	if err != nil {
		return errorf(KindIO, "", "cannot open FormatOptions.FECDevice %s: %w", fl.Path, unwrapPath(err))
	}
	defer f.Close()
	off, found, err := firstUserByte(ctx, f, fl.Offset, fl.Offset+fl.Size, nil)
	if err == nil && found && l.parityInPlace(ctx, src, f, jobs) {
		return nil
	}
	if err != nil {
		return readError(err, "FormatOptions.FECDevice", fl.Path)
	}
	if found {
		return errorf(KindRefused, "name another file, or add FormatOptions.Force to write there anyway (parity made before DATA and HASH changed throughout counts only so)",
			"FormatOptions.FECDevice %s holds a non-zero byte at %d, where the error correction would go (from byte %d), and it is not the parity of DATA and HASH: writing would destroy it",
			fl.Path, off, fl.Offset)
	}
	return nil
}

// parityInPlace reports whether f holds, at the FEC offset, parity of the
// data and of HASH as it is now (before this run replaces it): at least one
// non-zero 512-byte piece of it as computed now, that is a round unchanged
// since it was made; random bytes match none.
func (l *Layout) parityInPlace(ctx context.Context, src *Source, f *os.File, jobs int) bool {
	g, fl := l.Geometry, l.FEC
	if l.hashInfo == nil {
		return false
	}
	hash, err := os.Open(l.HashPath)
	if err != nil {
		return false
	}
	defer hash.Close()
	size, err := fileSize(hash)
	if err != nil {
		return false
	}
	fp, err := fecParams(g, fl.Roots, uint64(size))
	if err != nil {
		return false
	}
	c := &parityComparer{f: f}
	err = fec.Encode(ctx, fp, fecMessage(g, fp, src, hash), c, int64(fl.Offset), jobs)
	return errors.Is(err, errParityMatch)
}

// errParityMatch stops the encoding once parity is found in place.
var errParityMatch = errors.New("parity found in place")

// parityComparer is an io.WriterAt that writes nothing: it compares what
// it is given with the file, and fails with errParityMatch at the first
// non-zero 512-byte piece that is already there.
type parityComparer struct {
	f   *os.File
	buf []byte
}

func (c *parityComparer) WriteAt(b []byte, off int64) (int, error) {
	if cap(c.buf) < len(b) {
		c.buf = make([]byte, len(b))
	}
	have := c.buf[:len(b)]
	n, _ := c.f.ReadAt(have, off)
	const piece = 512
	for i := 0; i+piece <= n; i += piece {
		if p := b[i : i+piece]; bytes.Equal(p, have[i:i+piece]) && firstNonZero(p) >= 0 {
			return 0, errParityMatch
		}
	}
	return len(b), nil
}

// checkKeptHash refuses to write the tree or the parity over bytes of an
// existing HASH that are not ours when the bytes before HashOffset are kept
// (HashOffset > 0): the file is then the user's, and only the bytes where
// the tree and parity go may be given over. A block device keeps its rule
// (written in place unless it holds a known format).
func (l *Layout) checkKeptHash(ctx context.Context, src *Source, jobs int) error {
	g, fl := l.Geometry, l.FEC
	if l.TreeInData || l.hashInfo == nil || g.HashOffset == 0 || !l.hashInfo.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(l.HashPath)
	if err != nil {
		return errorf(KindIO, "", "cannot open HASH %s: %w", l.HashPath, unwrapPath(err))
	}
	defer f.Close()
	w := &writtenFile{f: f, tree: true, parity: fl != nil && fl.InHash}
	areas := []extent{{g.HashOffset, g.HashEnd()}}
	if w.parity {
		areas = append(areas, extent{fl.Offset, fl.Offset + fl.Size})
	}
	for _, a := range areas {
		off, found, err := l.userByteIn(ctx, w, src, a.from, a.to, jobs)
		if err != nil {
			return readError(err, "HASH", l.HashPath)
		}
		if found {
			what := "the tree"
			if a.from != g.HashOffset {
				what = "the error correction"
			}
			return errorf(KindRefused, "name another HASH file, or add FormatOptions.Force to write there anyway",
				"HASH %s holds a non-zero byte at %d, where %s would go (from byte %d), and no earlier tree of ours is there: writing would destroy it",
				l.HashPath, off, what, a.from)
		}
	}
	return nil
}

// dataTailRefusal is the error for DATA bytes that are the user's where the
// tree or the parity would go.
func (l *Layout) dataTailRefusal(off, size uint64, device bool) error {
	g, fl := l.Geometry, l.FEC
	bs := uint64(g.DataBlockSize)
	align := max(uint64(4096), bs)
	if !g.Superblock {
		align = max(align, uint64(g.HashBlockSize))
	}
	if !l.TreeInData {
		return errorf(KindRefused, fmt.Sprintf("put the parity past DATA's end: FormatOptions.FECOffset=%d\nto write it there anyway, add FormatOptions.Force", roundUp(size, bs)),
			"DATA %s holds a non-zero byte at %d, at or past FormatOptions.FECOffset %d: writing the error correction there would destroy it",
			l.DataPath, off, fl.Offset)
	}
	hint := fmt.Sprintf("to hash only the %d whole blocks before the offset and write the tree over what follows, add TreeOptions.DataBlocks=%d\n", g.DataBlocks, g.DataBlocks)
	if !device {
		hint += fmt.Sprintf("to keep all of DATA, put the tree past its end: TreeOptions.HashOffset=%d\n", roundUp(size, align))
	}
	hint += "to write the tree there anyway, add FormatOptions.Force"
	return errorf(KindRefused, hint,
		"DATA %s holds data from TreeOptions.HashOffset %d on (a non-zero byte at %d, in no earlier tree of ours%s): without TreeOptions.DataBlocks "+
			"the data is all of DATA, and the tree would be written over it", l.DataPath, g.HashOffset, off, noSuperblockNote(g))
}

// readError is the error of a failed check read, or ctx's error as it is.
func readError(err error, role, path string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return interrupted(err, "", "interrupted; nothing was written")
	}
	return errorf(KindIO, "", "reading %s %s: %w", role, path, unwrapPath(err))
}

// noSuperblockNote says, for a tree without superblock, what makes an
// earlier one there count as ours.
func noSuperblockNote(g *merkle.Geometry) string {
	if g.Superblock {
		return ""
	}
	return "; without a superblock, one counts only if it verifies with the TreeOptions.Salt and parameters given"
}

// checkLoopOverlap refuses a tree or parity written into the file behind a
// loop device that is DATA (or into a loop device over DATA) where it
// would go over the data as the device shows it: veritysetup sees two
// devices there, but they are the same bytes.
func (l *Layout) checkLoopOverlap(dataInfo fs.FileInfo) error {
	if l.TreeInData {
		return nil
	}
	g, fl := l.Geometry, l.FEC
	type output struct {
		role, path string
		info       fs.FileInfo
		at         extent // where it is written
	}
	outputs := []output{{"HASH", l.HashPath, l.hashInfo, extent{g.HashOffset, l.HashOutputEnd}}}
	if fl != nil && !fl.InHash && !fl.InData {
		outputs = append(outputs, output{"FormatOptions.FECDevice", fl.Path, l.fecFile, extent{fl.Offset, fl.Offset + fl.Size}})
	}
	for _, o := range outputs {
		if o.info == nil {
			continue
		}
		// Both in the backing file's bytes.
		written, data := o.at, extent{0, g.DataSize()}
		how := fmt.Sprintf("DATA %s is a loop device over %s %s", l.DataPath, o.role, o.path)
		w, ok := loopWindow(l.DataPath, dataInfo, o.info)
		if ok {
			data = extent{w.from, min(w.to, w.from+data.to)}
		} else if w, ok = loopWindow(o.path, o.info, dataInfo); ok {
			written = extent{w.from + o.at.from, w.from + o.at.to}
			how = fmt.Sprintf("%s %s is a loop device over DATA %s", o.role, o.path, l.DataPath)
		}
		if ok && written.from < data.to && data.from < written.to {
			return errorf(KindRefused, "put the tree (or the parity) in a file of its own, or past the data",
				"%s: what would be written there (bytes %d to %d of the file) goes over the data (bytes %d to %d of it)", how, written.from, written.to, data.from, data.to)
		}
	}
	return nil
}
