package verity

// The runs of an Android sparse image: FILL and DONT_CARE chunks map to
// runs of whole data blocks of one pattern.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
)

// TestAndroidSparseRuns: which data blocks the extents make known runs.
func TestAndroidSparseRuns(t *testing.T) {
	ext := func(start, blocks uint64, kind sparse.Kind, fill uint32) sparse.Extent {
		return sparse.Extent{Start: start, Blocks: blocks, Kind: kind, Fill: fill}
	}
	pat := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for _, tc := range []struct {
		name     string
		extents  []sparse.Extent
		sbs, dbs int
		blocks   uint64
		want     []merkle.Run
	}{
		{"same block size", []sparse.Extent{ext(0, 2, sparse.Raw, 0), ext(2, 3, sparse.DontCare, 0), ext(5, 4, sparse.Fill, 9)},
			4096, 4096, 9, []merkle.Run{{Start: 2, Count: 3}, {Start: 5, Count: 4, Pattern: pat(9)}}},
		// 1024-byte sparse blocks, 4096-byte data blocks: the DONT_CARE
		// from byte 1024 to 10240 holds data block 1 only.
		{"smaller sparse blocks", []sparse.Extent{ext(0, 1, sparse.Raw, 0), ext(1, 9, sparse.DontCare, 0), ext(10, 6, sparse.Raw, 0)},
			1024, 4096, 4, []merkle.Run{{Start: 1, Count: 1}}},
		{"too short for a data block", []sparse.Extent{ext(0, 1, sparse.Raw, 0), ext(1, 6, sparse.Fill, 5), ext(7, 1, sparse.Raw, 0)},
			1024, 4096, 2, nil},
		// DONT_CARE then FILL 0 read as one stretch of zeros.
		{"zeros joined", []sparse.Extent{ext(0, 2, sparse.DontCare, 0), ext(2, 2, sparse.Fill, 0), ext(4, 4, sparse.Raw, 0)},
			1024, 4096, 2, []merkle.Run{{Start: 0, Count: 1}}},
		{"different fills not joined", []sparse.Extent{ext(0, 2, sparse.Fill, 1), ext(2, 2, sparse.Fill, 2)},
			1024, 4096, 1, nil},
		{"larger sparse blocks", []sparse.Extent{ext(0, 1, sparse.Fill, 3), ext(1, 1, sparse.Raw, 0), ext(2, 3, sparse.DontCare, 0)},
			65536, 4096, 80, []merkle.Run{{Start: 0, Count: 16, Pattern: pat(3)}, {Start: 32, Count: 48}}},
		{"cut at the covered blocks", []sparse.Extent{ext(0, 10, sparse.DontCare, 0)}, 4096, 4096, 7, []merkle.Run{{Start: 0, Count: 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runsOfExtents(tc.extents, tc.sbs, tc.dbs, tc.blocks)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzAndroidSparseRuns: for any extents and block sizes, every block of
// every run really is its pattern in the expansion, and every data block
// that lies inside one stretch of one pattern is in a run.
func FuzzAndroidSparseRuns(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 2, 9}, uint8(0), uint8(3))
	f.Add([]byte{3, 9, 0, 5, 2, 1, 2, 7}, uint8(2), uint8(1))
	f.Add([]byte{2, 2, 7, 2, 3, 7, 0, 1, 1, 4}, uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, spec []byte, sbsSel, dbsSel uint8) {
		sbs := []int{512, 1024, 4096, 8192}[sbsSel%4]
		dbs := []int{512, 1024, 4096}[dbsSel%3]
		var extents []sparse.Extent
		var img []byte
		var pos uint64
		for i := 0; i+2 < len(spec) && len(extents) < 50; i += 3 {
			kind := sparse.Kind(1 + spec[i]%3)
			n := uint64(1 + spec[i+1]%8)
			var fill uint32
			if kind == sparse.Fill {
				fill = uint32(spec[i+2]%3) * 0x01010101
			}
			extents = append(extents, sparse.Extent{Start: pos, Blocks: n, Kind: kind, Fill: fill})
			b := make([]byte, int(n)*sbs)
			for j := range b {
				switch kind {
				case sparse.Raw:
					b[j] = byte(j*7 + i + 1) // never a whole block of one pattern
				case sparse.Fill:
					b[j] = byte(fill)
				}
			}
			img = append(img, b...)
			pos += n
		}
		blocks := uint64(len(img) / dbs)
		runs := runsOfExtents(extents, sbs, dbs, blocks)
		inRun := make([]bool, blocks)
		var prevEnd uint64
		for _, r := range runs {
			if r.Count == 0 || r.Start < prevEnd || r.Start+r.Count > blocks {
				t.Fatalf("bad run %v (after %d, of %d blocks)", r, prevEnd, blocks)
			}
			prevEnd = r.Start + r.Count
			want := make([]byte, dbs)
			if len(r.Pattern) > 0 {
				want = bytes.Repeat(r.Pattern, dbs/len(r.Pattern))
			}
			for b := r.Start; b < r.Start+r.Count; b++ {
				inRun[b] = true
				if !bytes.Equal(img[b*uint64(dbs):(b+1)*uint64(dbs)], want) {
					t.Fatalf("block %d of run %v is not its pattern", b, r)
				}
			}
		}
		// Completeness: a block inside one stretch of FILL/DONT_CARE of a
		// single value is in a run.
		val := func(off uint64) int { // -1 inside RAW
			for _, e := range extents {
				if off >= e.Start*uint64(sbs) && off < (e.Start+e.Blocks)*uint64(sbs) {
					if e.Kind == sparse.Raw {
						return -1
					}
					return int(e.Fill)
				}
			}
			return -1
		}
		for b := range blocks {
			v := val(b * uint64(dbs))
			uniform := v >= 0
			for off := b * uint64(dbs); uniform && off < (b+1)*uint64(dbs); off += 4 {
				uniform = val(off) == v
			}
			if uniform && !inRun[b] {
				t.Fatalf("block %d lies in one stretch of %#x but is in no run: %v", b, v, runs)
			}
		}
	})
}
