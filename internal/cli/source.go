package cli

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
)

// DataSource is what a tree covers: DATA as it is, or the image an Android
// sparse DATA expands to (read through the sparse index, never expanded on
// disk).
type DataSource struct {
	Path   string
	File   *os.File // DATA itself
	R      io.ReaderAt
	Size   int64         // of the image the tree covers (expanded for sparse)
	Sparse *sparse.Image // nil for a raw image
	// FileSize is the size of DATA itself: for a sparse image, of the
	// sparse file.
	FileSize int64
}

// OpenData opens DATA and, unless raw, reads it as an Android sparse image
// when it starts with the sparse magic; prog names the command in warnings.
func OpenData(prog, path string, raw bool, stderr io.Writer) (*DataSource, error) {
	f, size, err := OpenImage("DATA", path)
	if err != nil {
		return nil, err
	}
	// Reads that end early say what DATA shrank to, also through the
	// sparse reader.
	guarded := GuardShrink(f, "DATA", path, size)
	s := &DataSource{Path: path, File: f, R: guarded, Size: size, FileSize: size}
	if raw || !sparse.IsSparse(f) {
		return s, nil
	}
	im, err := sparse.Open(guarded, size)
	if err == nil {
		// CRC32 chunks and the header's image CRC are rare (img2simg
		// writes neither); when there are some, check them before the
		// data they protect is blessed by a tree. CheckCRC costs one read
		// of the RAW chunks, and nothing when there are no checksums.
		err = im.CheckCRC()
	}
	if err != nil {
		f.Close()
		return nil, sparseError(path, err)
	}
	if n := im.Trailing(); n > 0 {
		Warn(stderr, prog, "DATA %s has %d bytes after its last sparse chunk; they are ignored, as simg2img ignores them", path, n)
	}
	s.R, s.Size, s.Sparse = im, im.Size(), im
	return s, nil
}

// sparseError is the user's message for an error of the sparse reader.
func sparseError(path string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "sparse: ")
	switch {
	case errors.Is(err, sparse.ErrFormat):
		return Errorf("if DATA is a raw image that merely starts with the sparse magic (0xed26ff3a), add --raw",
			"DATA %s is a malformed Android sparse image: %s", path, msg)
	case errors.Is(err, sparse.ErrChecksum):
		return Errorf("the sparse image is damaged; make it again (img2simg) or fetch it again",
			"DATA %s is an Android sparse image whose checksum does not match: %s", path, msg)
	}
	return Errorf("", "reading the Android sparse image DATA %s: %s", path, msg)
}

// Expansion is what to say before hashing a sparse DATA, which may stand
// for far more than it holds (a 40-byte file can declare 16 TiB of
// DONT_CARE), so that a mistaken input is noticed at once: how large the
// file is, how large its expansion, and with treeBytes > 0 its tree. ""
// for a raw DATA.
func (s *DataSource) Expansion(treeBytes uint64) string {
	if s.Sparse == nil {
		return ""
	}
	msg := fmt.Sprintf("DATA %s is an Android sparse image of %s that expands to %s (%d bytes)",
		s.Path, humanize.IBytes(uint64(s.FileSize)), humanize.IBytes(uint64(s.Size)), s.Size)
	if treeBytes > 0 {
		msg += "; its tree will be " + humanize.IBytes(treeBytes)
	}
	return msg
}

// ProgressLabel is the progress bar's label: verb, and for a sparse DATA
// how much of its expansion the run covers ("hashing 16 TiB expanded").
func (s *DataSource) ProgressLabel(verb string, covered uint64) string {
	if s.Sparse == nil {
		return verb
	}
	return verb + " " + humanize.IBytes(covered) + " expanded"
}

// Format names the kind of DATA for reports.
func (s *DataSource) Format() string {
	if s.Sparse != nil {
		return "android-sparse"
	}
	return "raw"
}

func (s *DataSource) Close() error { return s.File.Close() }

// Runs lists the data blocks of the first blocks whose content is known
// without reading them: FILL and DONT_CARE chunks of a sparse image, holes
// of a raw regular file; at most maxRuns of them, the longest.
func (s *DataSource) Runs(dbs int, blocks uint64) []merkle.Run {
	if s.Sparse != nil {
		// A failed read of the chunk headers ends the list early: the
		// blocks not in a run are read, and the read fails again there.
		return sparseRuns(s.Sparse.WalkExtents, s.Sparse.BlockSize(), dbs, blocks)
	}
	if info, err := s.File.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	return HoleRuns(s.File, dbs, blocks)
}

// maxRuns caps the runs handed to the tree builder, which keeps about 100
// bytes per run: runs only spare reads, so an image of millions of short
// ones (alternating FILL chunks, a file of many holes) has only its
// longest ones skipped, in a few MiB. A variable for tests.
var maxRuns = 1 << 16

// runKeeper keeps the maxRuns longest runs it is given: past maxRuns, in a
// heap with the shortest on top.
type runKeeper struct {
	runs []keptRun
}

type keptRun struct {
	start, count uint64
	fill         uint32 // 0: zeros
}

func (k *runKeeper) Len() int           { return len(k.runs) }
func (k *runKeeper) Less(i, j int) bool { return k.runs[i].count < k.runs[j].count }
func (k *runKeeper) Swap(i, j int)      { k.runs[i], k.runs[j] = k.runs[j], k.runs[i] }
func (k *runKeeper) Push(any)           { panic("unused") }
func (k *runKeeper) Pop() any           { panic("unused") }

func (k *runKeeper) add(r keptRun) {
	switch {
	case len(k.runs) < maxRuns:
		k.runs = append(k.runs, r)
		if len(k.runs) == maxRuns {
			heap.Init(k)
		}
	case len(k.runs) > 0 && r.count > k.runs[0].count:
		k.runs[0] = r
		heap.Fix(k, 0)
	}
}

// result returns the runs kept, sorted by Start as merkle wants them (they
// came in order and do not overlap, so they still do not).
func (k *runKeeper) result() []merkle.Run {
	if len(k.runs) == 0 {
		return nil
	}
	slices.SortFunc(k.runs, func(a, b keptRun) int { return cmp.Compare(a.start, b.start) })
	out := make([]merkle.Run, len(k.runs))
	var patterns []byte
	for i, r := range k.runs {
		out[i] = merkle.Run{Start: r.start, Count: r.count}
		if r.fill != 0 {
			if len(patterns) == cap(patterns) {
				patterns = make([]byte, 0, 4096)
			}
			patterns = binary.LittleEndian.AppendUint32(patterns, r.fill)
			out[i].Pattern = patterns[len(patterns)-4 : len(patterns) : len(patterns)]
		}
	}
	return out
}

// SparseRuns maps the FILL and DONT_CARE extents of a sparse image (in its
// block size sbs) to runs of whole data blocks of dbs bytes, among the
// first blocks. A data block is in a run only if it lies entirely inside
// one stretch of a single 4-byte pattern (DONT_CARE reads as the pattern
// 0): adjacent FILL and DONT_CARE extents of the same content are joined
// first, so a data block across their border counts too. Every pattern
// starts at an offset that is a multiple of 4 (chunks start at multiples of
// the sparse block size, itself a multiple of 4), and so does every data
// block: each such data block is the pattern repeated from its first byte.
// Of more than maxRuns runs, the longest are kept.
func SparseRuns(extents []sparse.Extent, sbs, dbs int, blocks uint64) []merkle.Run {
	return sparseRuns(func(fn func(sparse.Extent) bool) error {
		for _, e := range extents {
			if !fn(e) {
				break
			}
		}
		return nil
	}, sbs, dbs, blocks)
}

// sparseRuns is SparseRuns on a stream of extents, in bounded memory.
func sparseRuns(walk func(func(sparse.Extent) bool) error, sbs, dbs int, blocks uint64) []merkle.Run {
	var keep runKeeper
	b := uint64(dbs)
	// The stretch of one pattern being joined: bytes [start, end).
	var start, end uint64
	var fill uint32
	flush := func() {
		first, last := (start+b-1)/b, min(end/b, blocks)
		if last > first {
			keep.add(keptRun{start: first, count: last - first, fill: fill})
		}
	}
	walk(func(e sparse.Extent) bool {
		if e.Kind != sparse.Fill && e.Kind != sparse.DontCare {
			return true
		}
		s, t := e.Start*uint64(sbs), (e.Start+e.Blocks)*uint64(sbs)
		if end == s && fill == e.Fill && end > 0 {
			end = t
			return true
		}
		flush()
		start, end, fill = s, t, e.Fill // DontCare has Fill 0
		return s < blocks*b             // past the covered blocks, nothing more counts
	})
	flush()
	return keep.result()
}
