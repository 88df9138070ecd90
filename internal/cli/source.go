package cli

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strings"

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
}

// OpenData opens DATA and, unless raw, reads it as an Android sparse image
// when it starts with the sparse magic; prog names the command in warnings.
func OpenData(prog, path string, raw bool, stderr io.Writer) (*DataSource, error) {
	f, size, err := OpenImage("DATA", path)
	if err != nil {
		return nil, err
	}
	s := &DataSource{Path: path, File: f, R: f, Size: size}
	if raw || !sparse.IsSparse(f) {
		return s, nil
	}
	im, err := sparse.Open(f, size)
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
// of a raw regular file.
func (s *DataSource) Runs(dbs int, blocks uint64) []merkle.Run {
	if s.Sparse != nil {
		return SparseRuns(s.Sparse.Extents(), s.Sparse.BlockSize(), dbs, blocks)
	}
	if info, err := s.File.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	return HoleRuns(s.File, dbs, blocks)
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
func SparseRuns(extents []sparse.Extent, sbs, dbs int, blocks uint64) []merkle.Run {
	type region struct {
		start, end uint64 // bytes
		fill       uint32
	}
	var regions []region
	for _, e := range extents {
		if e.Kind != sparse.Fill && e.Kind != sparse.DontCare {
			continue
		}
		start, end := e.Start*uint64(sbs), (e.Start+e.Blocks)*uint64(sbs)
		if n := len(regions); n > 0 && regions[n-1].end == start && regions[n-1].fill == e.Fill {
			regions[n-1].end = end
			continue
		}
		regions = append(regions, region{start, end, e.Fill}) // DontCare has Fill 0
	}
	var runs []merkle.Run
	b := uint64(dbs)
	for _, r := range regions {
		first, last := (r.start+b-1)/b, min(r.end/b, blocks)
		if last <= first {
			continue
		}
		run := merkle.Run{Start: first, Count: last - first}
		if r.fill != 0 {
			run.Pattern = binary.LittleEndian.AppendUint32(nil, r.fill)
		}
		runs = append(runs, run)
	}
	return runs
}
