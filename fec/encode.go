package fec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// unitBytes is about how much message one job reads and encodes at once: a
// few rounds of 4 KiB blocks, or a column slice of one round of big blocks.
const unitBytes = 2 << 20

// tileCodewords is how many codewords are encoded side by side: their
// registers (8 to 24 bytes each) stay in the L1 cache while the k message
// rows stream past, and the independent updates keep the CPU busy.
const tileCodewords = 512

// plan splits the encoding into units of work. A unit is either a run of
// whole rounds (for small blocks) or a column slice of one round (for big
// blocks): either way its message is k runs of bytes, one per codeword
// position j, and its parity is one contiguous range of the output.
type plan struct {
	p      Params
	k      int
	bs     int
	rounds uint64
	// width is the number of columns (bytes of each block, codewords of each
	// round) in a unit: a power of two dividing bs.
	width int
	// roundsPer is the number of rounds in a unit: 1 when width < bs.
	roundsPer uint64
	units     uint64
	// impl names the encoder ("" for the default: see ImplEnv).
	impl string
}

func newPlan(p Params) *plan {
	pl := &plan{p: p, k: p.K(), bs: p.BlockSize, rounds: p.Rounds()}
	perRound := pl.k * pl.bs
	if perRound <= unitBytes {
		pl.width = pl.bs
		pl.roundsPer = uint64(unitBytes / perRound)
		pl.units = (pl.rounds + pl.roundsPer - 1) / pl.roundsPer
	} else {
		pl.width = pl.bs
		for pl.width > MinBlockSize && pl.width*pl.k > unitBytes {
			pl.width /= 2
		}
		pl.roundsPer = 1
		pl.units = pl.rounds * uint64(pl.bs/pl.width)
	}
	return pl
}

// unit describes one unit of work: rounds [round, round+nrounds), columns
// [col, col+width).
type unit struct {
	round   uint64
	nrounds int
	col     int
}

func (pl *plan) unit(u uint64) unit {
	if pl.width == pl.bs {
		r := u * pl.roundsPer
		return unit{round: r, nrounds: int(min(pl.roundsPer, pl.rounds-r)), col: 0}
	}
	per := uint64(pl.bs / pl.width)
	return unit{round: u / per, nrounds: 1, col: int(u%per) * pl.width}
}

// firstCodeword returns the index of the first codeword of un; the unit's
// codewords are consecutive.
func (pl *plan) firstCodeword(un unit) uint64 {
	return un.round*uint64(pl.bs) + uint64(un.col)
}

// readUnit fills buf with the message of un: for each j, the columns of the
// blocks j*rounds + round ... (nrounds of them), one after the other. Bytes
// past the end of the message are zero; nothing past it is read.
func (pl *plan) readUnit(msg io.ReaderAt, un unit, buf []byte) error {
	run := un.nrounds * pl.width
	for j := range pl.k {
		dst := buf[j*run : (j+1)*run]
		first := uint64(j)*pl.rounds + un.round
		have := 0 // blocks of this run inside the message
		if first < pl.p.Blocks {
			have = int(min(uint64(un.nrounds), pl.p.Blocks-first))
		}
		// With width < bs there is one round, so the run is one slice of
		// one block; with width == bs it is have whole blocks.
		n := have * pl.width
		if n > 0 {
			off := int64(first)*int64(pl.bs) + int64(un.col)
			got, err := msg.ReadAt(dst[:n], off)
			if got < n {
				if err == nil || err == io.EOF {
					err = fmt.Errorf("%w: the message ends at byte %d, but it is %d blocks of %d bytes",
						io.ErrUnexpectedEOF, off+int64(got), pl.p.Blocks, pl.bs)
				}
				return fmt.Errorf("reading message block %d: %w", first+uint64(got/pl.bs), err)
			}
		}
		clear(dst[n:])
	}
	return nil
}

// tileEncoder encodes the leading codewords of a tile with a SIMD kernel
// and returns how many (at most tl; the Go LFSR does the rest): the message
// byte j of codeword b is src[j*stride+b] (k rows), and its parity goes to
// out[b*roots : (b+1)*roots]. newTileEncoder (encode_amd64.go,
// encode_other.go) returns nil where no kernel applies.
type tileEncoder func(src []byte, stride, k, tl int, out []byte) int

// worker holds one job's buffers.
type worker struct {
	pl    *plan
	enc   *encoder
	vec   tileEncoder
	buf   []byte
	out   []byte
	state [maxWords][]uint64
}

func newWorker(pl *plan) *worker {
	w := &worker{pl: pl, enc: encoderFor(pl.p.Roots), vec: newTileEncoder(pl.p.Roots, pl.impl)}
	cols := int(pl.roundsPer) * pl.width
	w.buf = make([]byte, pl.k*cols)
	w.out = make([]byte, cols*pl.p.Roots)
	for i := range w.enc.words {
		w.state[i] = make([]uint64, min(tileCodewords, pl.width))
	}
	return w
}

// encodeUnit computes the parity of the unit whose message is in w.buf and
// returns it (in w.out).
func (w *worker) encodeUnit(un unit) []byte {
	pl, e := w.pl, w.enc
	roots := pl.p.Roots
	run := un.nrounds * pl.width
	for rr := range un.nrounds {
		for t0 := 0; t0 < pl.width; t0 += tileCodewords {
			tl := min(tileCodewords, pl.width-t0)
			base := rr*pl.width + t0
			if w.vec != nil {
				done := w.vec(w.buf[base:], run, pl.k, tl, w.out[base*roots:(base+tl)*roots])
				base, tl = base+done, tl-done
				if tl == 0 {
					continue
				}
			}
			for i := range e.words {
				clear(w.state[i][:tl])
			}
			for j := range pl.k {
				row := w.buf[j*run+base : j*run+base+tl]
				switch e.words {
				case 1:
					step1(w.state[0], row, &e.tab[0])
				case 2:
					step2(w.state[0], w.state[1], row, &e.tab[0], &e.tab[1])
				default:
					step3(w.state[0], w.state[1], w.state[2], row, &e.tab[0], &e.tab[1], &e.tab[2])
				}
			}
			// Codeword base+b of the unit: its roots bytes, r[0] first.
			out := w.out[base*roots : (base+tl)*roots]
			for i := range roots {
				s, shift := w.state[i/8], 8*(i%8)
				for b := range tl {
					out[b*roots+i] = byte(s[b] >> shift)
				}
			}
		}
	}
	return w.out[:run*roots]
}

// step1 feeds one message byte to each of len(row) registers of one word
// (roots <= 8): register b takes row[b].
func step1(s0 []uint64, row []byte, t0 *[256]uint64) {
	s0 = s0[:len(row)]
	_ = t0[0] // one nil check, not one per byte
	for b, m := range row {
		x := s0[b]
		s0[b] = (x >> 8) ^ t0[byte(x)^m]
	}
}

// step2 is step1 for registers of two words (roots 9 to 16).
func step2(s0, s1 []uint64, row []byte, t0, t1 *[256]uint64) {
	s0, s1 = s0[:len(row)], s1[:len(row)]
	_, _ = t0[0], t1[0]
	for b, m := range row {
		x0, x1 := s0[b], s1[b]
		f := byte(x0) ^ m
		s0[b] = (x0>>8 | x1<<56) ^ t0[f]
		s1[b] = (x1 >> 8) ^ t1[f]
	}
}

// step3 is step1 for registers of three words (roots 17 to 24).
func step3(s0, s1, s2 []uint64, row []byte, t0, t1, t2 *[256]uint64) {
	s0, s1, s2 = s0[:len(row)], s1[:len(row)], s2[:len(row)]
	_, _, _ = t0[0], t1[0], t2[0]
	for b, m := range row {
		x0, x1, x2 := s0[b], s1[b], s2[b]
		f := byte(x0) ^ m
		s0[b] = (x0>>8 | x1<<56) ^ t0[f]
		s1[b] = (x1>>8 | x2<<56) ^ t1[f]
		s2[b] = (x2 >> 8) ^ t2[f]
	}
}

// Encode reads the message (p.Blocks blocks of p.BlockSize bytes) through
// msg and writes its p.ParitySize() bytes of parity to out at outOff.
//
// msg is read only inside the message: it may hold more (a hash device
// with the parity after the tree, say), and a read that ends early inside
// the message is an error, never taken as zeros. Memory is bounded (about
// 2 MiB of message per job): the work is split into units of whole rounds,
// or for big blocks column slices of a round, encoded on jobs goroutines (0
// means one per CPU). The output is the same for every number of jobs. msg
// is read concurrently (as io.ReaderAt allows); writes to out are
// serialized, one per unit, at disjoint offsets. On amd64 the codewords go
// through SIMD kernels when the CPU has them (see ImplEnv), with the same
// output.
func Encode(ctx context.Context, p Params, msg io.ReaderAt, out io.WriterAt, outOff int64, jobs int) error {
	return encode(ctx, p, msg, out, outOff, jobs, "")
}

// encode is Encode with the implementation named (tests force each one).
func encode(ctx context.Context, p Params, msg io.ReaderAt, out io.WriterAt, outOff int64, jobs int, impl string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if outOff < 0 || p.ParitySize() > uint64(1<<63-1-outOff) {
		return fmt.Errorf("%w: parity at offset %d does not fit in 63 bits", ErrInvalidParams, outOff)
	}
	pl := newPlan(p)
	pl.impl = impl
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	if uint64(jobs) > pl.units {
		jobs = int(pl.units)
	}

	var (
		next    atomic.Uint64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		writeMu sync.Mutex
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		errOnce.Do(func() { first = err })
		failed.Store(true)
	}
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker(pl)
			for !failed.Load() {
				u := next.Add(1) - 1
				if u >= pl.units {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				un := pl.unit(u)
				if err := pl.readUnit(msg, un, w.buf); err != nil {
					fail(err)
					return
				}
				parity := w.encodeUnit(un)
				off := outOff + int64(pl.firstCodeword(un))*int64(p.Roots)
				writeMu.Lock()
				_, err := out.WriteAt(parity, off)
				writeMu.Unlock()
				if err != nil {
					fail(fmt.Errorf("writing parity at byte %d: %w", off, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && next.Load() < pl.units {
		first = errors.New("fec: internal error: units left unencoded")
	}
	return first
}
