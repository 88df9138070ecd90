package fec

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// UnrecoverableError names the message blocks RepairBlocks could not
// rebuild. It wraps ErrTooManyErrors.
type UnrecoverableError struct {
	// Blocks are the message block indices that were not recovered, in
	// increasing order.
	Blocks []uint64
	// Reasons says why, one line per round that failed.
	Reasons []string
}

func (e *UnrecoverableError) Error() string {
	return fmt.Sprintf("fec: cannot recover message blocks %s: %s",
		formatBlocks(e.Blocks), strings.Join(e.Reasons, "; "))
}

func (e *UnrecoverableError) Unwrap() error { return ErrTooManyErrors }

func formatBlocks(b []uint64) string {
	const most = 32
	parts := make([]string, 0, min(len(b), most)+1)
	for i, v := range b {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(b)-most))
			break
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ", ")
}

// Round returns the round and the position in its codewords of message
// block b: b = j*rounds + round. A block shares its codewords with the
// other blocks of its round only.
func (p Params) Round(b uint64) (round uint64, j int) {
	r := p.Rounds()
	return b % r, int(b / r)
}

// RepairBlocks rebuilds the message blocks listed in bad (indices below
// p.Blocks, known corrupt or unreadable: they are never read) from the rest
// of the message, read through msg, and from the parity, read through
// parity at offset 0. It returns the rebuilt contents of each block.
//
// Each codeword of a round has one byte in each of the round's blocks, so a
// round can lose up to p.Roots blocks (erasures). The decoder also corrects
// unknown errors with what capacity remains (2*errors + erasures <=
// roots per codeword), in the other blocks and in the parity. When rounds
// cannot be repaired (more than p.Roots bad blocks in one, or too many other
// errors), the error is an *UnrecoverableError naming the blocks of those
// rounds, and the map still holds the blocks of the rounds that could be
// repaired. An I/O error reading msg or parity is returned as is.
func RepairBlocks(p Params, msg io.ReaderAt, parity io.ReaderAt, bad []uint64) (map[uint64][]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// Bad positions j, by round.
	byRound := map[uint64][]int{}
	for _, b := range bad {
		if b >= p.Blocks {
			return nil, fmt.Errorf("fec: block %d is outside the message (%d blocks)", b, p.Blocks)
		}
		r, j := p.Round(b)
		if !slices.Contains(byRound[r], j) {
			byRound[r] = append(byRound[r], j)
		}
	}
	rounds := make([]uint64, 0, len(byRound))
	for r := range byRound {
		rounds = append(rounds, r)
	}
	slices.Sort(rounds)

	pl := newPlan(p)
	out := map[uint64][]byte{}
	var failed UnrecoverableError
	for _, r := range rounds {
		js := byRound[r]
		slices.Sort(js)
		if len(js) > p.Roots {
			failed.add(p, r, js, fmt.Sprintf("round %d has %d corrupt blocks, more than the %d parity bytes per codeword",
				r, len(js), p.Roots))
			continue
		}
		blocks, err := repairRound(pl, msg, parity, r, js)
		if errors.Is(err, ErrTooManyErrors) {
			failed.add(p, r, js, fmt.Sprintf("round %d: %v", r, err))
			continue
		}
		if err != nil {
			return nil, err
		}
		for i, j := range js {
			out[uint64(j)*pl.rounds+r] = blocks[i]
		}
	}
	if len(failed.Blocks) > 0 {
		slices.Sort(failed.Blocks)
		return out, &failed
	}
	return out, nil
}

func (e *UnrecoverableError) add(p Params, r uint64, js []int, reason string) {
	rounds := p.Rounds()
	for _, j := range js {
		e.Blocks = append(e.Blocks, uint64(j)*rounds+r)
	}
	e.Reasons = append(e.Reasons, reason)
}

// repairRound decodes the codewords of round r with the blocks at positions
// js erased and returns the contents of those blocks, in the order of js.
// It works in column slices of pl.width bytes to bound memory.
func repairRound(pl *plan, msg, parity io.ReaderAt, r uint64, js []int) ([][]byte, error) {
	bs, k, roots := pl.bs, pl.k, pl.p.Roots
	w := pl.width
	isBad := make([]bool, k)
	for _, j := range js {
		isBad[j] = true
	}
	blocks := make([][]byte, len(js))
	for i := range blocks {
		blocks[i] = make([]byte, bs)
	}
	buf := make([]byte, k*w)
	par := make([]byte, w*roots)
	cw := make([]byte, N)
	for col := 0; col < bs; col += w {
		// Message columns; bad blocks and blocks past the end are zeros.
		for j := range k {
			dst := buf[j*w : (j+1)*w]
			b := uint64(j)*pl.rounds + r
			if isBad[j] || b >= pl.p.Blocks {
				clear(dst)
				continue
			}
			off := int64(b)*int64(bs) + int64(col)
			if err := readFull(msg, dst, off); err != nil {
				return nil, fmt.Errorf("reading message block %d: %w", b, err)
			}
		}
		off := (int64(r)*int64(bs) + int64(col)) * int64(roots)
		if err := readFull(parity, par, off); err != nil {
			return nil, fmt.Errorf("reading parity for round %d: %w", r, err)
		}
		for c := range w {
			for j := range k {
				cw[j] = buf[j*w+c]
			}
			copy(cw[k:], par[c*roots:(c+1)*roots])
			if _, err := DecodeCodeword(roots, cw, js); err != nil {
				return nil, fmt.Errorf("codeword %d: %w", r*uint64(bs)+uint64(col+c), err)
			}
			for i, j := range js {
				blocks[i][col+c] = cw[j]
			}
		}
	}
	return blocks, nil
}

// readFull reads len(b) bytes at off; a short read is an error.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("at byte %d: %w", off+int64(n), err)
}
