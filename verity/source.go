package verity

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
)

// Source is the data a tree covers: a file or block device as it is, or
// the image an Android sparse file expands to (read through the sparse
// index, never expanded on disk), with the runs of blocks whose content is
// known without reading them (holes, FILL and DONT_CARE chunks), which the
// builder and the verifier hash once instead of reading.
type Source struct {
	path     string
	file     *os.File // nil for NewSource
	r        io.ReaderAt
	size     int64         // of the image the tree covers (expanded for sparse)
	sparse   *sparse.Image // nil for a raw image
	fileSize int64         // of the file itself
}

// SourceOptions tune OpenSource. The zero value is ready to use.
type SourceOptions struct {
	// Raw reads a file as it is, even if it starts with the Android sparse
	// magic.
	Raw bool
	// Warn, if set, is given warnings that do not stop the operation (e.g.
	// bytes after a sparse image's last chunk).
	Warn func(msg string)
	// Role names the file in errors: "DATA" if empty (e.g. "image").
	Role string
}

// OpenSource opens path (a regular file or a block device) for reading as
// the data of a tree; a file starting with the Android sparse magic is
// read as the image it expands to, after its CRC32 checksums (if any) are
// checked, unless opts.Raw. FIFOs, sockets and character devices are
// refused: an image is read at any offset. The file is locked shared until
// the Source is closed: a file another process writes (holding its
// exclusive lock) is a KindRefused error matching ErrLocked. The caller
// closes the Source.
func OpenSource(path string, opts *SourceOptions) (*Source, error) {
	if opts == nil {
		opts = &SourceOptions{}
	}
	role := opts.Role
	if role == "" {
		role = "DATA"
	}
	f, size, err := openImage(role, path)
	if err != nil {
		return nil, err
	}
	// Reads that end early say what DATA shrank to, also through the
	// sparse reader.
	guarded := guardShrink(f, role, path, size)
	s := &Source{path: path, file: f, r: guarded, size: size, fileSize: size}
	if opts.Raw || !sparse.IsSparse(f) {
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
		return nil, sparseError(role, path, err)
	}
	if n := im.Trailing(); n > 0 && opts.Warn != nil {
		opts.Warn(fmt.Sprintf("DATA %s has %d bytes after its last sparse chunk; they are ignored, as simg2img ignores them", path, n))
	}
	s.r, s.size, s.sparse = im, im.Size(), im
	return s, nil
}

// NewSource returns a Source reading size bytes of r, with no known runs.
func NewSource(r io.ReaderAt, size int64) *Source {
	return &Source{r: r, size: size, fileSize: size}
}

// sparseError is the user's message for an error of the sparse reader.
func sparseError(role, path string, err error) error {
	e := sparseErrorText(role, path, err)
	e.Role, e.Path = Role(role), path
	return e
}

func sparseErrorText(role, path string, err error) *Error {
	msg := err.Error()
	var se *sparse.Error
	if errors.As(err, &se) { // its place and reason, without the package's prefix
		msg = fmt.Sprintf("chunk %d (byte %d): %s", se.Chunk, se.Offset, se.Reason)
		if se.Chunk == sparse.HeaderChunk {
			msg = fmt.Sprintf("header (byte %d): %s", se.Offset, se.Reason)
		}
	}
	switch {
	case errors.Is(err, sparse.ErrFormat):
		return errorf(KindInput, "if "+role+" is a raw image that merely starts with the sparse magic (0xed26ff3a), add SourceOptions.Raw",
			"%s %s is a malformed Android sparse image: %s", role, path, msg)
	case errors.Is(err, sparse.ErrChecksum):
		return errorf(KindInput, "the sparse image is damaged; make it again (img2simg) or fetch it again",
			"%s %s is an Android sparse image whose checksum does not match: %s", role, path, msg)
	}
	return errorf(KindIO, "", "reading the Android sparse image %s %s: %s", role, path, msg)
}

// ReadAt reads the image the tree covers (io.ReaderAt).
func (s *Source) ReadAt(p []byte, off int64) (int, error) { return s.r.ReadAt(p, off) }

// Size is the size of the image the tree covers: a sparse file's expanded
// size.
func (s *Source) Size() int64 { return s.size }

// FileSize is the size of the file itself: for a sparse image, of the
// sparse file.
func (s *Source) FileSize() int64 { return s.fileSize }

// Path is the path the Source was opened from ("" for NewSource).
func (s *Source) Path() string { return s.path }

// Format names the kind of data for reports: "raw", or "android-sparse"
// for a sparse image read as the image it expands to.
func (s *Source) Format() string {
	if s.sparse != nil {
		return "android-sparse"
	}
	return "raw"
}

// Trailing is the number of bytes of a sparse image's file after its last
// chunk (0 for a raw image), which the expanded image does not include.
func (s *Source) Trailing() int64 {
	if s.sparse == nil {
		return 0
	}
	return s.sparse.Trailing()
}

// Close closes the file (nothing for NewSource).
func (s *Source) Close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}

// Runs lists, among the first blocks data blocks of dataBlockSize bytes,
// those whose content is known without reading them: FILL and DONT_CARE
// chunks of a sparse image, holes of a raw regular file; at most 65536
// runs, the longest, so that memory stays bounded (the other blocks are
// read). The result is what merkle.BuildOptions.Runs and
// merkle.VerifyOptions.Runs take.
func (s *Source) Runs(dataBlockSize int, blocks uint64) []merkle.Run {
	if s.sparse != nil {
		// A failed read of the chunk headers ends the list early: the
		// blocks not in a run are read, and the read fails again there.
		return sparseRuns(s.sparse.WalkExtents, s.sparse.BlockSize(), dataBlockSize, blocks)
	}
	if s.file == nil {
		return nil
	}
	if info, err := s.file.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	return holeRuns(s.file, dataBlockSize, blocks)
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

// runsOfExtents maps the FILL and DONT_CARE extents of a sparse image (in its
// block size sbs) to runs of whole data blocks of dbs bytes, among the
// first blocks. A data block is in a run only if it lies entirely inside
// one stretch of a single 4-byte pattern (DONT_CARE reads as the pattern
// 0): adjacent FILL and DONT_CARE extents of the same content are joined
// first, so a data block across their border counts too. Every pattern
// starts at an offset that is a multiple of 4 (chunks start at multiples of
// the sparse block size, itself a multiple of 4), and so does every data
// block: each such data block is the pattern repeated from its first byte.
// Of more than maxRuns runs, the longest are kept.
func runsOfExtents(extents []sparse.Extent, sbs, dbs int, blocks uint64) []merkle.Run {
	return sparseRuns(func(fn func(sparse.Extent) bool) error {
		for _, e := range extents {
			if !fn(e) {
				break
			}
		}
		return nil
	}, sbs, dbs, blocks)
}

// sparseRuns is runsOfExtents on a stream of extents, in bounded memory.
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
