package verity

// The problem list in bounded memory: an image overwritten whole has a
// problem per block, and a caller may want them all.

import (
	"bufio"
	"encoding/binary"
	"io"
	"iter"
	"os"

	"github.com/veritytree/veritytree/merkle"
)

// spoolMemory is how many problems a problemSpool keeps in memory before
// it spills to a temporary file (a variable for the tests).
var spoolMemory = 1024

// problemSpool keeps the problems Verify finds, in order, up to limit (all
// when limit < 0): the first spoolMemory in memory, the rest in an unlinked
// temporary file.
type problemSpool struct {
	limit int
	kept  int
	mem   []*merkle.CorruptionError
	file  *os.File
	w     *bufio.Writer
	err   error
}

// newProblemSpool returns a spool for max problems: 0 means 100, negative
// means all.
func newProblemSpool(max int) *problemSpool {
	if max == 0 {
		max = 100
	}
	return &problemSpool{limit: max}
}

// add keeps p if there is room; a failure to spill is kept for each.
func (sp *problemSpool) add(p *merkle.CorruptionError) {
	if sp.err != nil || sp.limit >= 0 && sp.kept >= sp.limit {
		return
	}
	sp.kept++
	if len(sp.mem) < spoolMemory {
		sp.mem = append(sp.mem, p)
		return
	}
	if sp.file == nil {
		f, err := os.CreateTemp("", "veritycheck-problems-*")
		if err != nil {
			sp.err = errorf(KindIO, "set TMPDIR to a directory with room, or list fewer with VerifyOptions.MaxProblems",
				"more corrupted blocks to list than fit in memory, and no temporary file for them: %v", err)
			return
		}
		os.Remove(f.Name()) // the open file stays usable, and goes away with it
		sp.file, sp.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	var rec [6 * binary.MaxVarintLen64]byte
	n := binary.PutVarint(rec[:], int64(p.Level))
	n += binary.PutUvarint(rec[n:], uint64(p.Fault))
	n += binary.PutUvarint(rec[n:], uint64(p.PaddingAt))
	n += binary.PutUvarint(rec[n:], p.Index)
	n += binary.PutUvarint(rec[n:], p.Offset)
	n += binary.PutUvarint(rec[n:], uint64(len(p.Reason)))
	sp.w.Write(rec[:n])
	if _, err := sp.w.WriteString(p.Reason); err != nil {
		sp.err = errorf(KindIO, "set TMPDIR to a directory with room, or list fewer with VerifyOptions.MaxProblems", "keeping the list of corrupted blocks in a temporary file: %w", err)
	}
}

// reader returns a function that gives the kept problems in order, then
// nil.
func (sp *problemSpool) reader() (func() (*merkle.CorruptionError, error), error) {
	if sp.err != nil {
		return nil, sp.err
	}
	i := 0
	var r *bufio.Reader
	if sp.file != nil {
		if err := sp.w.Flush(); err != nil {
			return nil, errorf(KindIO, "set TMPDIR to a directory with room, or list fewer with VerifyOptions.MaxProblems", "keeping the list of corrupted blocks in a temporary file: %w", err)
		}
		r = bufio.NewReaderSize(io.NewSectionReader(sp.file, 0, 1<<62), 64<<10)
	}
	return func() (*merkle.CorruptionError, error) {
		if i < len(sp.mem) {
			i++
			return sp.mem[i-1], nil
		}
		if r == nil {
			return nil, nil
		}
		level, err := binary.ReadVarint(r)
		if err == io.EOF {
			return nil, nil
		}
		p := &merkle.CorruptionError{Level: merkle.Level(level)}
		var n, fault, pad uint64
		if err == nil {
			fault, err = binary.ReadUvarint(r)
			p.Fault = merkle.Fault(fault)
		}
		if err == nil {
			pad, err = binary.ReadUvarint(r)
			p.PaddingAt = int(pad)
		}
		if err == nil {
			p.Index, err = binary.ReadUvarint(r)
		}
		if err == nil {
			p.Offset, err = binary.ReadUvarint(r)
		}
		if err == nil {
			n, err = binary.ReadUvarint(r)
		}
		if err == nil {
			b := make([]byte, n)
			_, err = io.ReadFull(r, b)
			p.Reason = string(b)
		}
		if err != nil {
			return nil, errorf(KindIO, "", "reading the list of corrupted blocks back from a temporary file: %w", err)
		}
		return p, nil
	}, nil
}

func (sp *problemSpool) close() {
	if sp != nil && sp.file != nil {
		sp.file.Close()
	}
}

// Problems returns an iterator over the corrupted blocks listed, at most
// VerifyOptions.MaxProblems of them, in the report's order (the superblock
// area, the tree from the top down, then the data): those the verification
// found, and with a repair plan those found under the hash blocks it
// rebuilt, merged in. The list may have been kept in a temporary file
// (bounded memory): reading it back can fail.
//
// Each pair is a problem and a nil error, or, once and last, a nil
// problem and the error that ended the list. The standard library has no
// iterator that can fail midway; this is the usual shape for one, which
// puts the error in the loop (a separate Err method, as bufio.Scanner's,
// is easy to forget). Range with both variables (with one, the error's
// pair gives a nil problem); a loop that stops early never sees an error:
//
//	for p, err := range res.Problems() {
//		if err != nil {
//			return err
//		}
//		fmt.Println(p)
//	}
//
// The iterator can be ranged over again, each time from the first problem,
// until the result is closed.
func (r *VerifyResult) Problems() iter.Seq2[*merkle.CorruptionError, error] {
	return func(yield func(*merkle.CorruptionError, error) bool) {
		stopped := false
		err := eachProblem(r.Geometry, r.spool, r.Repair, r.spool.limit, func(p *merkle.CorruptionError) bool {
			stopped = !yield(p, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// EachProblem calls fn with each corrupted block Problems gives, in its
// order, until fn returns false. The error is for a failure to read them
// back from their temporary file.
//
// Deprecated: range over Problems.
func (r *VerifyResult) EachProblem(fn func(*merkle.CorruptionError) bool) error {
	return eachProblem(r.Geometry, r.spool, r.Repair, r.spool.limit, fn)
}

// eachProblem calls fn with the problems to list, at most limit (all when
// limit < 0), in the report's order (the superblock area, the tree from the
// top down, then the data): those Verify found, kept in sp, and with a
// repair plan those found under the rebuilt hash blocks, merged in.
func eachProblem(g *merkle.Geometry, sp *problemSpool, rp *RepairPlan, limit int, each func(*merkle.CorruptionError) bool) error {
	next, err := sp.reader()
	if err != nil {
		return err
	}
	count := 0
	stopped := false
	fn := func(p *merkle.CorruptionError) { stopped = !each(p) }
	more := func() bool { return !stopped && (limit < 0 || count < limit) }
	if rp == nil || rp.foundData+rp.foundHash == 0 {
		for more() {
			p, err := next()
			if p == nil || err != nil {
				return err
			}
			fn(p)
			count++
		}
		return nil
	}
	// The blocks found corrupted are marked in rp.marks; those Verify
	// found come from sp in the same order.
	cur, err := next()
	for ; err == nil && cur != nil && cur.Level == merkle.HeaderLevel && more(); cur, err = next() {
		fn(cur)
		count++
	}
	for level := topLevel(g); level >= merkle.DataLevel && err == nil && more(); level-- {
		n := g.DataBlocks
		if level >= 0 {
			n = g.LevelBlocks[level]
		}
		for i := uint64(0); i < n && err == nil && more(); i++ {
			m := msgIndex(g, level, i)
			switch {
			case !rp.marks.has(m, markBad):
				continue
			case rp.marks.has(m, markReported):
				if cur == nil {
					return nil // the spool ran out at the limit
				}
				fn(cur)
				cur, err = next()
			default:
				off := i * uint64(g.DataBlockSize)
				if level >= 0 {
					off = g.BlockOffset(level, i)
				}
				fn(&merkle.CorruptionError{Level: level, Index: i, Offset: off, Reason: "digest mismatch"})
			}
			count++
		}
	}
	return err
}
