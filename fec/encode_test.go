package fec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
)

// memFile is an in-memory io.WriterAt and io.ReaderAt that grows.
type memFile struct {
	mu sync.Mutex
	b  []byte
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	copy(m.b[off:], p)
	return len(p), nil
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(m.b).ReadAt(p, off)
}

// boundedReader fails any read that reaches past limit: Encode must not
// read past the message.
type boundedReader struct {
	r     io.ReaderAt
	limit int64
}

func (b boundedReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > b.limit {
		return 0, fmt.Errorf("read [%d, %d) past the message end %d", off, off+int64(len(p)), b.limit)
	}
	return b.r.ReadAt(p, off)
}

// referenceParity computes the parity codeword by codeword, straight from
// the definition.
func referenceParity(p Params, msg []byte) []byte {
	k := p.K()
	rounds := p.Rounds()
	bs := uint64(p.BlockSize)
	out := make([]byte, 0, p.ParitySize())
	cw := make([]byte, k)
	par := make([]byte, p.Roots)
	for c := uint64(0); c < rounds*bs; c++ {
		for j := range k {
			i := c + uint64(j)*rounds*bs
			cw[j] = 0
			if i < uint64(len(msg)) {
				cw[j] = msg[i]
			}
		}
		if err := encodeCodeword(p.Roots, cw, par); err != nil {
			panic(err)
		}
		out = append(out, par...)
	}
	return out
}

func encodeMem(t testing.TB, p Params, msg io.ReaderAt, jobs int) []byte {
	t.Helper()
	var out memFile
	const off = 3 * 512 // parity written at an offset, like --fec-offset
	if err := Encode(context.Background(), p, msg, &out, off, jobs); err != nil {
		t.Fatal(err)
	}
	if uint64(len(out.b)) != off+p.ParitySize() {
		t.Fatalf("wrote %d bytes, want %d", len(out.b)-off, p.ParitySize())
	}
	if !isZero(out.b[:off]) {
		t.Fatal("wrote before the offset")
	}
	return out.b[off:]
}

func TestEncodeMatchesReference(t *testing.T) {
	for i, tc := range []struct {
		roots, bs int
		blocks    uint64
	}{
		{2, 512, 1},
		{2, 512, 253}, // exactly one round
		{2, 512, 254}, // one byte more than a round
		{3, 512, 600}, // roots that do not divide the block size
		{5, 1024, 333},
		{8, 4096, 40},
		{9, 512, 1000}, // two-word register
		{16, 512, 478},
		{17, 512, 500}, // three-word register
		{24, 512, 231 * 3},
		{24, 4096, 232},
		{7, 16384, 10}, // big blocks: column slices of a round
		{23, 32768, 3}, // roots 23, column slices, most positions zero
	} {
		t.Run(fmt.Sprintf("roots%d-bs%d-blocks%d", tc.roots, tc.bs, tc.blocks), func(t *testing.T) {
			t.Parallel()
			rng := newRand(t, uint64(100+i))
			p := Params{Roots: tc.roots, BlockSize: tc.bs, Blocks: tc.blocks}
			size := int64(p.messageSize())
			// Garbage after the message must not be read (the reader refuses).
			backing := make([]byte, size+int64(tc.bs))
			fillRand(rng, backing)
			msg := backing[:size]
			want := referenceParity(p, msg)
			var first []byte
			for _, jobs := range []int{1, 2, 5} {
				got := encodeMem(t, p, boundedReader{bytes.NewReader(backing), size}, jobs)
				if !bytes.Equal(got, want) {
					t.Fatalf("jobs %d: parity differs from the reference at byte %d", jobs, firstDiff(got, want))
				}
				if first == nil {
					first = got
				} else if !bytes.Equal(got, first) {
					t.Fatalf("jobs %d: output differs from jobs 1", jobs)
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestEncodeShortMessageIsAnError(t *testing.T) {
	p := Params{Roots: 2, BlockSize: 512, Blocks: 600}
	msg := make([]byte, p.messageSize()-100)
	var out memFile
	err := Encode(context.Background(), p, bytes.NewReader(msg), &out, 0, 2)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
	// A failing reader's error comes through.
	boom := errors.New("boom")
	err = Encode(context.Background(), p, errReader{boom}, &out, 0, 3)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (e errReader) ReadAt([]byte, int64) (int, error) { return 0, e.err }

func TestEncodeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := Params{Roots: 2, BlockSize: 4096, Blocks: 10000}
	var out memFile
	if err := Encode(ctx, p, bytes.NewReader(make([]byte, p.messageSize())), &out, 0, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, p := range []Params{
		{Roots: 1, BlockSize: 4096, Blocks: 1},
		{Roots: 25, BlockSize: 4096, Blocks: 1},
		{Roots: 2, BlockSize: 4000, Blocks: 1},
		{Roots: 2, BlockSize: 256, Blocks: 1},
		{Roots: 2, BlockSize: 4096, Blocks: 0},
		{Roots: 2, BlockSize: 4096, Blocks: 1 << 52},
	} {
		if err := p.Validate(); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: got %v, want ErrInvalidParams", p, err)
		}
	}
	p := Params{Roots: 2, BlockSize: 4096, Blocks: 304}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.Rounds() != 2 || p.ParityBlocks() != 4 || p.ParitySize() != 4*4096 {
		t.Fatalf("rounds %d, parity blocks %d", p.Rounds(), p.ParityBlocks())
	}
}

func TestConcat(t *testing.T) {
	a := bytes.NewReader([]byte("0123456789"))
	b := bytes.NewReader([]byte("abcdefghij"))
	r := Concat(Part{a, 2, 5}, Part{b, 0, 0}, Part{b, 4, 3})
	buf := make([]byte, 10)
	n, err := r.ReadAt(buf, 0)
	if n != 8 || err != io.EOF || string(buf[:n]) != "23456efg" {
		t.Fatalf("got %q, %v", buf[:n], err)
	}
	n, err = r.ReadAt(buf[:3], 4)
	if n != 3 || err != nil || string(buf[:n]) != "6ef" {
		t.Fatalf("got %q, %v", buf[:n], err)
	}
	// A part whose reader ends early.
	r = Concat(Part{a, 8, 5})
	if _, err := r.ReadAt(buf[:5], 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
}

// BenchmarkEncode measures Encode from memory to memory, in MB/s of
// message (64 MiB of 4 KiB blocks), for each implementation this machine
// runs, on one job per GOMAXPROCS (go test -bench Encode -cpu 1,2).
func BenchmarkEncode(b *testing.B) {
	const size = 64 << 20
	msg := make([]byte, size)
	fillRand(newRand(b, 3), msg)
	for _, impl := range Implementations() {
		for _, roots := range []int{2, 8, 24} {
			b.Run(fmt.Sprintf("%s-roots%d", impl, roots), func(b *testing.B) {
				p := Params{Roots: roots, BlockSize: 4096, Blocks: size / 4096}
				out := &memFile{b: make([]byte, p.ParitySize())}
				b.SetBytes(size)
				for b.Loop() {
					err := encode(context.Background(), p, bytes.NewReader(msg), out, 0, runtime.GOMAXPROCS(0), impl)
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestPlanSlicesBigBlocks(t *testing.T) {
	// The big-block cases above really are split into column slices.
	for _, bs := range []int{16384, 32768, MaxBlockSize} {
		pl := newPlan(Params{Roots: 2, BlockSize: bs, Blocks: 1000})
		if pl.width >= bs || pl.roundsPer != 1 || pl.units != pl.rounds*uint64(bs/pl.width) {
			t.Fatalf("bs %d: width %d, %d rounds per unit, %d units", bs, pl.width, pl.roundsPer, pl.units)
		}
		if pl.width*pl.k > unitBytes {
			t.Fatalf("bs %d: unit of %d bytes", bs, pl.width*pl.k)
		}
	}
	pl := newPlan(Params{Roots: 2, BlockSize: 4096, Blocks: 100000})
	if pl.width != 4096 || pl.roundsPer < 2 {
		t.Fatalf("4096: width %d, %d rounds per unit", pl.width, pl.roundsPer)
	}
}
