package fec

import (
	"fmt"
	"io"
	"sync"
)

// BlockState is what the caller knows of a message block when its round is
// decoded.
type BlockState uint8

const (
	// Good: verified. A correction that would change it is a
	// miscorrection, and is not taken.
	Good BlockState = iota
	// Bad: known corrupted (its digest does not match): an erasure
	// whenever the round's erasures fit in the parity.
	Bad
	// Unknown: not verified (under a corrupted hash block, or outside
	// what the tree covers): it may be changed, and is erased with the
	// bad blocks when they all fit.
	Unknown
)

// Strategy is the first decoding tried on each codeword of a round; the
// later ones are its fallbacks.
type Strategy int

const (
	// EraseSuspects erases the bad and the unknown blocks (when they
	// fit), then the bad blocks only, then none.
	EraseSuspects Strategy = iota
	// EraseBad erases the bad blocks (when they fit), then none.
	EraseBad
	// ErrorsOnly erases nothing: up to roots/2 errors per codeword, as
	// the kernel and veritysetup decode.
	ErrorsOnly
)

// RoundResult is what decoding a round gave.
type RoundResult struct {
	// Blocks holds the decoded content of each Bad block of the round, by
	// message block index. Where a codeword could not be decoded, its
	// byte is left as read: the caller checks every block against its
	// digest anyway.
	Blocks map[uint64][]byte
	// Failed counts the codewords that could not be decoded.
	Failed int
	// Bad is the number of Bad blocks in the round.
	Bad int
}

// RoundDecoder decodes the codewords of one round at a time: it reads the
// round once (in column slices, so memory stays about 2 MiB for any block
// size, plus the Bad blocks' contents), recomputes its parity with the
// encoder to find the codewords that are not codewords, and decodes only
// those. A RoundDecoder is not safe for concurrent use: make one per
// goroutine.
type RoundDecoder struct {
	p           Params
	pl          *plan
	w           *worker
	par         []byte
	msg, parity io.ReaderAt
}

// NewRoundDecoder returns a decoder of the message read through msg, with
// its parity read through parity at offset 0.
func NewRoundDecoder(p Params, msg, parity io.ReaderAt) (*RoundDecoder, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	pl := newPlan(p)
	pl.roundsPer = 1 // one round at a time: only damaged rounds are read
	d := &RoundDecoder{p: p, pl: pl, w: newWorker(pl), msg: msg, parity: parity}
	d.par = make([]byte, pl.width*p.Roots)
	return d, nil
}

// Decode decodes round r. state gives the state of each message block of
// the round (blocks past the message are zeros, always Good). Per codeword,
// the decodings of s are tried in turn, and the first that yields a
// codeword without changing a Good block is taken.
func (d *RoundDecoder) Decode(r uint64, state func(b uint64) BlockState, s Strategy) (*RoundResult, error) {
	pl, p := d.pl, d.p
	if r >= pl.rounds {
		return nil, fmt.Errorf("fec: round %d is outside the %d rounds", r, pl.rounds)
	}
	k, bs, roots, w := pl.k, pl.bs, p.Roots, pl.width
	states := make([]BlockState, k)
	var bad, suspects []int
	for j := range k {
		b := uint64(j)*pl.rounds + r
		if b >= p.Blocks {
			continue
		}
		states[j] = state(b)
		switch states[j] {
		case Bad:
			bad = append(bad, j)
			suspects = append(suspects, j)
		case Unknown:
			suspects = append(suspects, j)
		}
	}
	var solvers []*erasureSolver
	if s == EraseSuspects && len(suspects) <= roots && len(suspects) > len(bad) {
		solvers = append(solvers, newErasureSolver(roots, suspects))
	}
	if s <= EraseBad && len(bad) > 0 && len(bad) <= roots {
		solvers = append(solvers, newErasureSolver(roots, bad))
	}
	res := &RoundResult{Blocks: make(map[uint64][]byte, len(bad)), Bad: len(bad)}
	out := make([][]byte, len(bad))
	for i, j := range bad {
		out[i] = make([]byte, bs)
		res.Blocks[uint64(j)*pl.rounds+r] = out[i]
	}
	cw := make([]byte, N)
	buf := d.w.buf
	for col := 0; col < bs; col += w {
		un := unit{round: r, nrounds: 1, col: col}
		if err := pl.readUnit(d.msg, un, buf); err != nil {
			return nil, err
		}
		rem := d.w.encodeUnit(un)
		off := int64(pl.firstCodeword(un)) * int64(roots)
		if err := readFull(d.parity, d.par, off); err != nil {
			return nil, fmt.Errorf("reading parity for round %d: %w", r, err)
		}
		for c := range w {
			rc := rem[c*roots : (c+1)*roots]
			nz := byte(0)
			for i := range rc {
				rc[i] ^= d.par[c*roots+i]
				nz |= rc[i]
			}
			if nz == 0 {
				continue // a codeword already
			}
			ok := false
			for _, sv := range solvers {
				if ok = sv.apply(rc, buf, w, c); ok {
					break
				}
			}
			if !ok {
				ok = d.slow(cw, buf, c, states, bad, s)
			}
			if !ok {
				res.Failed++
			}
		}
		for i, j := range bad {
			copy(out[i][col:col+w], buf[j*w:(j+1)*w])
		}
	}
	return res, nil
}

// slow decodes codeword c of the column slice in buf (its parity in d.par)
// with the general decoder: the bad blocks erased and errors elsewhere,
// then errors only; it takes the first result that leaves the Good blocks
// alone.
func (d *RoundDecoder) slow(cw, buf []byte, c int, states []BlockState, bad []int, s Strategy) bool {
	k, roots, w := d.pl.k, d.p.Roots, d.pl.width
	var tries [][]int
	if s <= EraseBad && len(bad) > 0 && len(bad) <= roots {
		tries = append(tries, bad)
	}
	tries = append(tries, nil)
	for _, eras := range tries {
		for j := range k {
			cw[j] = buf[j*w+c]
		}
		copy(cw[k:], d.par[c*roots:(c+1)*roots])
		if _, err := DecodeCodeword(roots, cw, eras); err != nil {
			continue
		}
		ok := true
		for j := range k {
			if cw[j] != buf[j*w+c] && states[j] == Good {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for j := range k {
			buf[j*w+c] = cw[j]
		}
		return true
	}
	return false
}

// erasureSolver finds the error values at a fixed set of f message
// positions from a codeword's remainder (its message's parity recomputed,
// plus its parity: the remainder mod g of the received word), which is
// linear in them: rem = sum of v_i * (x^P_i mod g). T, with T*A = [I; 0]
// for A the columns x^P_i mod g, gives the values in its first f rows and,
// in the other roots-f, what must be zero if there are no other errors.
// T is applied with one table lookup per remainder byte and 64-bit word.
type erasureSolver struct {
	roots, f, words int
	pos             []int
	tab             [][maxWords][256]uint64 // [t][word][x]: column t of T times x, rows packed
}

func newErasureSolver(roots int, pos []int) *erasureSolver {
	f := len(pos)
	cols := columnsFor(roots)
	// [A | I], reduced on A's f columns; A has full rank (any roots
	// columns of an MDS code's check matrix are independent).
	m := make([][]byte, roots)
	for r := range roots {
		m[r] = make([]byte, f+roots)
		for i, j := range pos {
			m[r][i] = cols[j][r]
		}
		m[r][f+r] = 1
	}
	for i := range f {
		p := i
		for p < roots && m[p][i] == 0 {
			p++
		}
		if p == roots {
			panic("fec: erasure columns are dependent") // impossible for an MDS code
		}
		m[i], m[p] = m[p], m[i]
		inv := gfInv(m[i][i])
		for c := range m[i] {
			m[i][c] = gfMul(m[i][c], inv)
		}
		for r := range roots {
			if r != i && m[r][i] != 0 {
				q := m[r][i]
				for c := range m[r] {
					m[r][c] ^= gfMul(q, m[i][c])
				}
			}
		}
	}
	sv := &erasureSolver{roots: roots, f: f, words: (roots + 7) / 8, pos: pos}
	sv.tab = make([][maxWords][256]uint64, roots)
	for t := range roots {
		tt := &sv.tab[t]
		for b := 0; b < 8; b++ {
			x := byte(1) << b
			for r := range roots {
				tt[r/8][x] |= uint64(gfMul(m[r][f+t], x)) << (8 * (r % 8))
			}
		}
		for wd := range sv.words {
			for x := 3; x < 256; x++ {
				if low := x & -x; low != x {
					tt[wd][x] = tt[wd][x&(x-1)] ^ tt[wd][low]
				}
			}
		}
	}
	return sv
}

// apply solves codeword c of the slice in buf (rows of w bytes) from its
// remainder rc; it corrects the erased bytes and returns true, or returns
// false when the remainder shows errors elsewhere.
func (sv *erasureSolver) apply(rc []byte, buf []byte, w, c int) bool {
	var y [maxWords]uint64
	for t, x := range rc {
		if x == 0 {
			continue
		}
		for wd := range sv.words {
			y[wd] ^= sv.tab[t][wd][x]
		}
	}
	for r := sv.f; r < sv.roots; r++ {
		if byte(y[r/8]>>(8*(r%8))) != 0 {
			return false
		}
	}
	for i, j := range sv.pos {
		buf[j*w+c] ^= byte(y[i/8] >> (8 * (i % 8)))
	}
	return true
}

var (
	columns     [MaxRoots + 1][][]byte
	columnsOnce [MaxRoots + 1]sync.Once
)

// columnsFor returns, for each message position j, x^(254-j) mod g as the
// encoder lays out parity (coefficient of x^(roots-1) first): what an
// error of value 1 at j adds to a codeword's remainder.
func columnsFor(roots int) [][]byte {
	columnsOnce[roots].Do(func() {
		k := N - roots
		e := encoderFor(roots)
		msg := make([]byte, k)
		cols := make([][]byte, k)
		for j := range k {
			msg[j] = 1
			cols[j] = make([]byte, roots)
			e.codeword(msg, cols[j])
			msg[j] = 0
		}
		columns[roots] = cols
	})
	return columns[roots]
}
