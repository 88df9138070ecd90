package fec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
)

// failingReader fails reads that touch the given blocks: RepairBlocks must
// not read the blocks it is asked to rebuild.
type failingReader struct {
	r   io.ReaderAt
	bs  int64
	bad map[uint64]bool
}

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	for b := off / f.bs; b*f.bs < off+int64(len(p)); b++ {
		if f.bad[uint64(b)] {
			return 0, fmt.Errorf("read of bad block %d", b)
		}
	}
	return f.r.ReadAt(p, off)
}

func TestRepairBlocks(t *testing.T) {
	rng := newRand(t, 7)
	for _, roots := range []int{2, 8, 24} {
		t.Run(fmt.Sprint("roots", roots), func(t *testing.T) {
			const bs = 512
			k := N - roots
			p := Params{Roots: roots, BlockSize: bs, Blocks: uint64(3*k - 7)} // 3 rounds, last partial
			rounds := p.Rounds()
			if rounds != 3 {
				t.Fatalf("rounds %d", rounds)
			}
			orig := make([]byte, p.MessageSize())
			fillRand(rng, orig)
			parity := encodeMem(t, p, bytes.NewReader(orig), 2)

			// Up to roots bad blocks in each round: round 0 gets exactly
			// roots, round 1 a random number, round 2 one.
			var bad []uint64
			for r := range rounds {
				n := []int{roots, 1 + rng.IntN(roots), 1}[r]
				for _, j := range rng.Perm(k)[:n] {
					if b := uint64(j)*rounds + r; b < p.Blocks {
						bad = append(bad, b)
					}
				}
			}
			// Corrupt the bad blocks (the decoder must not read them anyway).
			damaged := bytes.Clone(orig)
			isBad := map[uint64]bool{}
			for _, b := range bad {
				isBad[b] = true
				fillRand(rng, damaged[b*bs:(b+1)*bs])
			}
			msg := failingReader{bytes.NewReader(damaged), bs, isBad}
			got, err := RepairBlocks(p, msg, bytes.NewReader(parity), bad)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(bad) {
				t.Fatalf("got %d blocks, want %d", len(got), len(bad))
			}
			for _, b := range bad {
				want := sha256.Sum256(orig[b*bs : (b+1)*bs])
				if sha256.Sum256(got[b]) != want {
					t.Fatalf("block %d not restored", b)
				}
			}

			// With spare capacity, an unknown error elsewhere (a message
			// block not in the list, or the parity) is corrected too.
			if roots >= 4 {
				few := bad[:1]
				r, _ := p.Round(few[0])
				other := (uint64(rng.IntN(k))*rounds + r) % p.Blocks
				for other == few[0] || other%rounds != r {
					other = (uint64(rng.IntN(k))*rounds + r) % p.Blocks
				}
				d2 := bytes.Clone(orig)
				d2[other*bs+5] ^= 0x40
				par2 := bytes.Clone(parity)
				par2[(r*bs+9)*uint64(roots)] ^= 1
				got, err := RepairBlocks(p, bytes.NewReader(d2), bytes.NewReader(par2), few)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[few[0]], orig[few[0]*bs:(few[0]+1)*bs]) {
					t.Fatal("block not restored with an extra error in the round")
				}
			}

			// One more bad block than roots in round 1: its blocks are
			// named, the other rounds are still repaired.
			var tooMany []uint64
			for _, j := range rng.Perm(k - 1)[:roots+1] {
				tooMany = append(tooMany, uint64(j)*rounds+1)
			}
			okBlock := uint64(2) // round 2
			got, err = RepairBlocks(p, bytes.NewReader(orig), bytes.NewReader(parity), append(slices.Clone(tooMany), okBlock))
			var ue *UnrecoverableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrTooManyErrors) {
				t.Fatalf("got %v, want *UnrecoverableError", err)
			}
			slices.Sort(tooMany)
			if !slices.Equal(ue.Blocks, tooMany) {
				t.Fatalf("unrecoverable blocks %v, want %v", ue.Blocks, tooMany)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprint(tooMany[0]))) {
				t.Fatalf("error %q does not name block %d", err, tooMany[0])
			}
			if len(got) != 1 || !bytes.Equal(got[okBlock], orig[okBlock*bs:(okBlock+1)*bs]) {
				t.Fatalf("the recoverable block was not returned")
			}
		})
	}
}

func TestRepairBlocksBigBlocks(t *testing.T) {
	// Big blocks are repaired in column slices.
	rng := newRand(t, 8)
	p := Params{Roots: 4, BlockSize: 16 << 10, Blocks: 5}
	orig := make([]byte, p.MessageSize())
	fillRand(rng, orig)
	var par memFile
	if err := Encode(context.Background(), p, bytes.NewReader(orig), &par, 0, 0); err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(orig)
	clear(damaged[:2*p.BlockSize])
	got, err := RepairBlocks(p, bytes.NewReader(damaged), bytes.NewReader(par.b), []uint64{1, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	for b := range uint64(2) {
		if !bytes.Equal(got[b], orig[b*uint64(p.BlockSize):(b+1)*uint64(p.BlockSize)]) {
			t.Fatalf("block %d not restored", b)
		}
	}
	if _, err := RepairBlocks(p, bytes.NewReader(orig), bytes.NewReader(par.b), []uint64{5}); err == nil {
		t.Fatal("a block past the message was accepted")
	}
}
