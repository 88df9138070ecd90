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
	// Bad and Unknown count the round's blocks in those states.
	Bad, Unknown int
}

// Same reports whether decoding the round with strategy s would do just
// what decoding it with s-1 did (gave res): the strategies differ only in
// the erasures they try first, and those may not apply to the round.
func (res *RoundResult) Same(roots int, s Strategy) bool {
	switch s {
	case EraseBad: // no bad-and-unknown erasures were tried
		return res.Unknown == 0 || res.Bad+res.Unknown > roots
	case ErrorsOnly: // no bad erasures were tried
		return res.Bad == 0 || res.Bad > roots
	}
	return false
}

// RoundDecoder decodes the codewords of a round, or of a run of
// consecutive rounds (their blocks are next to each other, so the run is
// read in k reads): it reads them once (in column slices for big blocks,
// so memory stays a few MiB for any block size, plus the Bad blocks'
// contents), recomputes their parity with the encoder to find the
// codewords that are not codewords, and decodes only those. A RoundDecoder
// is not safe for concurrent use: make one per goroutine.
type RoundDecoder struct {
	p           Params
	pl          *plan
	w           *worker
	par         []byte
	msg, parity io.ReaderAt
}

// runBytes bounds the message a RoundDecoder reads at once.
const runBytes = 4 << 20

// NewRoundDecoder returns a decoder of the message read through msg, with
// its parity read through parity at offset 0.
func NewRoundDecoder(p Params, msg, parity io.ReaderAt) (*RoundDecoder, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	pl := newPlan(p)
	pl.roundsPer = 1
	if pl.width == pl.bs {
		pl.roundsPer = uint64(max(1, runBytes/(pl.k*pl.bs)))
	}
	d := &RoundDecoder{p: p, pl: pl, w: newWorker(pl), msg: msg, parity: parity}
	d.par = make([]byte, int(pl.roundsPer)*pl.width*p.Roots)
	return d, nil
}

// MaxRun is the most rounds DecodeRun takes at once.
func (d *RoundDecoder) MaxRun() int { return int(d.pl.roundsPer) }

// Decode decodes round r. state gives the state of each message block of
// the round (blocks past the message are zeros, always Good). Per codeword,
// the decodings of s are tried in turn, and the first that yields a
// codeword without changing a Good block is taken.
func (d *RoundDecoder) Decode(r uint64, state func(b uint64) BlockState, s Strategy) (*RoundResult, error) {
	res, err := d.DecodeRun(r, 1, state, s)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// roundState is what Decode needs of one round of a run.
type roundState struct {
	states  []BlockState
	bad     []int
	solvers []*erasureSolver
	out     [][]byte
	decoded int // codewords corrected so far
}

// hopelessAfter is how many codewords of a round may fail to decode, with
// nearly none decoded (fewer than one in 8, which a random word near
// enough to another codeword also gives), before the round's other
// codewords are given up (counted as failed, left as read): a round that
// far gone (more blocks destroyed than the parity reaches, as in an image
// overwritten whole) would cost a failed decoding per codeword, and a block
// with bytes in a failed codeword cannot come back anyway.
const hopelessAfter = 256

// DecodeRun decodes rounds first to first+n-1 (n at most MaxRun) as
// Decode does, and returns their results in order.
func (d *RoundDecoder) DecodeRun(first uint64, n int, state func(b uint64) BlockState, s Strategy) ([]*RoundResult, error) {
	pl, p := d.pl, d.p
	if n < 1 || n > d.MaxRun() || first >= pl.rounds || uint64(n) > pl.rounds-first {
		return nil, fmt.Errorf("fec: rounds %d to %d: not a run of 1 to %d of the %d rounds", first, first+uint64(n)-1, d.MaxRun(), pl.rounds)
	}
	bs, roots, w := pl.bs, p.Roots, pl.width
	results := make([]*RoundResult, n)
	rs := make([]roundState, n)
	for i := range n {
		results[i] = d.startRound(&rs[i], first+uint64(i), state, s)
	}
	cw := make([]byte, N)
	buf := d.w.buf
	run := n * w // bytes of each row j in buf: the rounds' columns one after the other
	for col := 0; col < bs; col += w {
		un := unit{round: first, nrounds: n, col: col}
		if err := pl.readUnit(d.msg, un, buf); err != nil {
			return nil, err
		}
		rem := d.w.encodeUnit(un)
		par := d.par[:run*roots]
		off := int64(pl.firstCodeword(un)) * int64(roots)
		if err := readFull(d.parity, par, off); err != nil {
			return nil, fmt.Errorf("reading parity for rounds %d to %d: %w", first, first+uint64(n)-1, err)
		}
		for i := range n {
			st := &rs[i]
			for c := i * w; c < (i+1)*w; c++ {
				rc := rem[c*roots : (c+1)*roots]
				nz := byte(0)
				for x := range rc {
					rc[x] ^= par[c*roots+x]
					nz |= rc[x]
				}
				if nz == 0 {
					continue // a codeword already
				}
				if f := results[i].Failed; f >= hopelessAfter && f > 8*st.decoded {
					results[i].Failed++ // given up: see hopelessAfter
					continue
				}
				ok := false
				for _, sv := range st.solvers {
					if ok = sv.apply(rc, buf, run, c); ok {
						break
					}
				}
				if !ok {
					ok = d.slow(cw, buf, run, c, par[c*roots:(c+1)*roots], st.states, st.bad, s)
				}
				if ok {
					st.decoded++
				} else {
					results[i].Failed++
				}
			}
			for x, j := range st.bad {
				copy(st.out[x][col:col+w], buf[j*run+i*w:j*run+(i+1)*w])
			}
		}
	}
	return results, nil
}

// startRound sets st up for decoding round r: the states of its blocks,
// the erasure solvers strategy s tries, and the buffers of its bad blocks,
// which the result returned holds.
func (d *RoundDecoder) startRound(st *roundState, r uint64, state func(b uint64) BlockState, s Strategy) *RoundResult {
	pl, p := d.pl, d.p
	k, bs, roots := pl.k, pl.bs, p.Roots
	st.states = make([]BlockState, k)
	var suspects []int
	for j := range k {
		b := uint64(j)*pl.rounds + r
		if b >= p.Blocks {
			continue
		}
		st.states[j] = state(b)
		switch st.states[j] {
		case Bad:
			st.bad = append(st.bad, j)
			suspects = append(suspects, j)
		case Unknown:
			suspects = append(suspects, j)
		}
	}
	if s == EraseSuspects && len(suspects) <= roots && len(suspects) > len(st.bad) {
		st.solvers = append(st.solvers, newErasureSolver(roots, suspects))
	}
	if s <= EraseBad && len(st.bad) > 0 && len(st.bad) <= roots {
		st.solvers = append(st.solvers, newErasureSolver(roots, st.bad))
	}
	res := &RoundResult{Blocks: make(map[uint64][]byte, len(st.bad)), Bad: len(st.bad), Unknown: len(suspects) - len(st.bad)}
	st.out = make([][]byte, len(st.bad))
	for x, j := range st.bad {
		st.out[x] = make([]byte, bs)
		res.Blocks[uint64(j)*pl.rounds+r] = st.out[x]
	}
	return res
}

// slow decodes codeword c of buf (rows of stride bytes; its parity in par)
// with the general decoder: the bad blocks erased and errors elsewhere,
// then errors only; it takes the first result that leaves the Good blocks
// alone.
func (d *RoundDecoder) slow(cw, buf []byte, stride, c int, par []byte, states []BlockState, bad []int, s Strategy) bool {
	k, roots := d.pl.k, d.p.Roots
	var tries [][]int
	if s <= EraseBad && len(bad) > 0 && len(bad) <= roots {
		tries = append(tries, bad)
	}
	tries = append(tries, nil)
	for _, eras := range tries {
		for j := range k {
			cw[j] = buf[j*stride+c]
		}
		copy(cw[k:], par)
		if _, err := decodeCodeword(roots, cw, eras); err != nil {
			continue
		}
		ok := true
		for j := range k {
			if cw[j] != buf[j*stride+c] && states[j] == Good {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for j := range k {
			buf[j*stride+c] = cw[j]
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

// apply solves codeword c of buf (rows of stride bytes) from its
// remainder rc; it corrects the erased bytes and returns true, or returns
// false when the remainder shows errors elsewhere.
func (sv *erasureSolver) apply(rc []byte, buf []byte, stride, c int) bool {
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
		buf[j*stride+c] ^= byte(y[i/8] >> (8 * (i % 8)))
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
