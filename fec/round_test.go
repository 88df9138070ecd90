package fec

import (
	"bytes"
	"fmt"
	"testing"
)

// roundCase is a message of three rounds with its parity.
func roundCase(t *testing.T, roots, bs int, seed uint64) (Params, []byte, []byte) {
	t.Helper()
	k := N - roots
	p := Params{Roots: roots, BlockSize: bs, Blocks: uint64(3*k - 5)}
	msg := make([]byte, p.messageSize())
	fillRand(newRand(t, seed), msg)
	return p, msg, encodeMem(t, p, bytes.NewReader(msg), 1)
}

// decodeRound decodes round r of damaged with the states given and returns
// the result.
func decodeRound(t *testing.T, p Params, damaged, parity []byte, r uint64, states map[uint64]BlockState, s Strategy) *RoundResult {
	t.Helper()
	d, err := NewRoundDecoder(p, bytes.NewReader(damaged), bytes.NewReader(parity))
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Decode(r, func(b uint64) BlockState { return states[b] }, s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkBlocks(t *testing.T, what string, p Params, orig []byte, res *RoundResult, want []uint64) {
	t.Helper()
	bs := uint64(p.BlockSize)
	if len(res.Blocks) != len(want) {
		t.Fatalf("%s: %d blocks decoded, want %d", what, len(res.Blocks), len(want))
	}
	for _, b := range want {
		if !bytes.Equal(res.Blocks[b], orig[b*bs:(b+1)*bs]) {
			t.Errorf("%s: block %d decoded wrong (%d codewords failed)", what, b, res.Failed)
		}
	}
}

// TestRoundDecodeErasures: up to roots whole blocks of a round, known bad,
// are rebuilt (the erasure fast path), with and without a few damaged
// parity bytes besides (when fewer than roots blocks are erased).
func TestRoundDecodeErasures(t *testing.T) {
	for _, roots := range []int{2, 3, 8, 17, 24} {
		for _, bs := range []int{512, 4096} {
			t.Run(fmt.Sprintf("roots%d/bs%d", roots, bs), func(t *testing.T) {
				p, orig, parity := roundCase(t, roots, bs, uint64(roots*bs))
				rng := newRand(t, uint64(roots))
				rounds := p.Rounds()
				for _, n := range []int{1, roots / 2, roots} {
					r := rng.Uint64N(rounds)
					damaged := bytes.Clone(orig)
					states := map[uint64]BlockState{}
					var bad []uint64
					for _, j := range rng.Perm(N - roots) {
						b := uint64(j)*rounds + r
						if b >= p.Blocks || len(bad) == n {
							continue
						}
						bad = append(bad, b)
						states[b] = Bad
						fillRand(rng, damaged[b*uint64(bs):(b+1)*uint64(bs)])
					}
					par := bytes.Clone(parity)
					if n+2 <= roots {
						// One damaged parity byte per codeword at most: an error at an unknown place.
						for c := range 8 {
							par[(r*uint64(bs)+uint64(c*37))*uint64(roots)+uint64(c%roots)] ^= 0x5a
						}
					}
					res := decodeRound(t, p, damaged, par, r, states, EraseSuspects)
					checkBlocks(t, fmt.Sprintf("%d bad", n), p, orig, res, bad)
					if res.Failed != 0 {
						t.Errorf("%d bad: %d codewords failed", n, res.Failed)
					}
				}
			})
		}
	}
}

// TestRoundDecodeScattered is issue 12's case: roots 8, nine blocks of one
// round with 64 bytes each changed at different columns. Nine is more than
// roots erasures, but no codeword has more than roots/2 errors: decoded
// errors-only, as veritysetup does.
func TestRoundDecodeScattered(t *testing.T) {
	p, orig, parity := roundCase(t, 8, 4096, 12)
	damaged := bytes.Clone(orig)
	states := map[uint64]BlockState{}
	var bad []uint64
	r := uint64(1)
	for i := range 9 {
		b := uint64(3+i*20)*p.Rounds() + r
		bad = append(bad, b)
		states[b] = Bad
		for x := range 64 {
			damaged[b*4096+uint64(i*64*7+x*3)] ^= byte(x + 1)
		}
	}
	for _, s := range []Strategy{EraseSuspects, EraseBad, ErrorsOnly} {
		res := decodeRound(t, p, damaged, parity, r, states, s)
		checkBlocks(t, fmt.Sprint("strategy ", s), p, orig, res, bad)
	}
}

// TestRoundDecodeSuspects: a bad block and an unknown one that is damaged
// too, with roots 2: erasing both rebuilds them; erasing the bad one only
// cannot (one erasure leaves no room for an error).
func TestRoundDecodeSuspects(t *testing.T) {
	p, orig, parity := roundCase(t, 2, 512, 3)
	damaged := bytes.Clone(orig)
	r := uint64(2)
	bad, unknown := 5*p.Rounds()+r, 9*p.Rounds()+r
	fillRand(newRand(t, 1), damaged[bad*512:(bad+1)*512])
	fillRand(newRand(t, 2), damaged[unknown*512:(unknown+1)*512])
	states := map[uint64]BlockState{bad: Bad, unknown: Unknown}
	res := decodeRound(t, p, damaged, parity, r, states, EraseSuspects)
	checkBlocks(t, "suspects erased", p, orig, res, []uint64{bad})
	res = decodeRound(t, p, damaged, parity, r, states, EraseBad)
	if bytes.Equal(res.Blocks[bad], orig[bad*512:(bad+1)*512]) || res.Failed == 0 {
		t.Errorf("bad block erased alone: want failures, got %d", res.Failed)
	}
}

// TestRoundDecodeKeepsGood: a correction that would change a Good block is
// a miscorrection and is not taken. Roots 2, an all-zero message: blocks
// 152 and 153 get, at column 0, the bytes of the codeword x^100 g(x) there,
// whose third byte would be in block 154. Errors-only decoding finds that
// codeword one error away: taken when block 154 may change, refused when
// it is Good.
func TestRoundDecodeKeepsGood(t *testing.T) {
	p := Params{Roots: 2, BlockSize: 512, Blocks: N - 2}
	orig := make([]byte, p.messageSize())
	parity := encodeMem(t, p, bytes.NewReader(orig), 1)
	g := generator(2)
	damaged := bytes.Clone(orig)
	damaged[153*512] = g[1]
	damaged[152*512] = g[2]
	for _, tc := range []struct {
		state  BlockState
		failed int
	}{{Good, 1}, {Unknown, 0}} {
		states := map[uint64]BlockState{152: Bad, 153: Bad, 154: tc.state}
		res := decodeRound(t, p, damaged, parity, 0, states, ErrorsOnly)
		if res.Failed != tc.failed || res.Blocks[152][0] != g[2] || res.Blocks[153][0] != g[1] {
			t.Errorf("block 154 %v: %d failed codewords, want %d; blocks 152, 153 at 0: %x %x", tc.state, res.Failed, tc.failed,
				res.Blocks[152][0], res.Blocks[153][0])
		}
	}
	// Erased, the two bad bytes are rebuilt.
	res := decodeRound(t, p, damaged, parity, 0, map[uint64]BlockState{152: Bad, 153: Bad}, EraseBad)
	checkBlocks(t, "erased", p, orig, res, []uint64{152, 153})
}

// TestRoundDecodeRun: a run of rounds decoded at once gives what each
// round decoded alone gives.
func TestRoundDecodeRun(t *testing.T) {
	p, orig, parity := roundCase(t, 4, 512, 8)
	damaged := bytes.Clone(orig)
	rng := newRand(t, 8)
	states := map[uint64]BlockState{}
	var bad []uint64
	for r := range p.Rounds() {
		for _, j := range rng.Perm(N - 4)[:int(r)+2] {
			if b := uint64(j)*p.Rounds() + r; b < p.Blocks {
				states[b] = Bad
				bad = append(bad, b)
				fillRand(rng, damaged[b*512:(b+1)*512])
			}
		}
	}
	d, err := NewRoundDecoder(p, bytes.NewReader(damaged), bytes.NewReader(parity))
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxRun() < int(p.Rounds()) {
		t.Fatalf("MaxRun %d", d.MaxRun())
	}
	res, err := d.DecodeRun(0, int(p.Rounds()), func(b uint64) BlockState { return states[b] }, EraseSuspects)
	if err != nil {
		t.Fatal(err)
	}
	all := &RoundResult{Blocks: map[uint64][]byte{}}
	for _, r := range res {
		for b, c := range r.Blocks {
			all.Blocks[b] = c
		}
		all.Failed += r.Failed
	}
	checkBlocks(t, "run", p, orig, all, bad)
	if _, err := d.DecodeRun(1, int(p.Rounds()), nil, EraseSuspects); err == nil {
		t.Errorf("a run past the last round: no error")
	}
}

// TestRoundDecodeHopeless: a round overwritten whole is given up after
// hopelessAfter failed codewords instead of failing every one (a few
// random words decode to some codeword, which the caller's check refuses).
func TestRoundDecodeHopeless(t *testing.T) {
	p, orig, parity := roundCase(t, 8, 4096, 9)
	damaged := bytes.Clone(orig)
	fillRand(newRand(t, 99), damaged)
	states := map[uint64]BlockState{}
	for b := range p.Blocks {
		states[b] = Bad
	}
	res := decodeRound(t, p, damaged, parity, 1, states, ErrorsOnly)
	if res.Failed < 4096*7/8 || res.Bad != int((p.Blocks+1)/3) || len(res.Blocks) != res.Bad {
		t.Errorf("%d codewords failed, %d bad blocks", res.Failed, res.Bad)
	}
	for b, got := range res.Blocks {
		if bytes.Equal(got, orig[b*4096:(b+1)*4096]) {
			t.Errorf("block %d came back", b)
		}
	}
}
