package verity

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A run that appends to an image in place (Append, and the avb package's
// AddHashtreeFooter) keeps this invariant: killed at any moment, it leaves
// the image as it was, the finished image, or a file whose last bytes say
// where the image ends, so that running the same command again finishes
// it. Before its first write into what it appends, such a run writes a
// ResumeRecord (or, for a raw AVB image, a provisional AVB footer) past
// everything the file holds and everything the run will write; the run's
// last step cuts the file where the finished image ends, which drops the
// record with whatever an earlier run left past that end. Every state in
// between ends in the record, and a run that finds a record starts from
// the original size it gives, as if it had been given that size.

// ResumeRecordSize is the size of a ResumeRecord: a 512-byte block, written
// at a multiple of 512 so that the write never crosses a page.
const ResumeRecordSize = 512

var resumeMagic = []byte("VTRESUME")

// resumeText makes the record say what it is to whoever dumps the file.
const resumeText = "veritytree: an interrupted run appended to this image; run it again to finish it\n"

// ResumeRecord is what an appending run writes past the end of the file
// before it writes anything else: the image's size before the run.
type ResumeRecord struct {
	// OriginalSize is the image's size before the run; for an Android
	// sparse image, the size of its expansion (the record then lies past
	// the sparse image's last chunk, where a sparse reader ignores it).
	OriginalSize uint64
	// Sparse says the record was written past an Android sparse image.
	Sparse bool
	// End is the file offset just past the record: the file's size while
	// the record is its last block.
	End uint64
}

// Encode returns the record's ResumeRecordSize bytes.
func (r *ResumeRecord) Encode() []byte {
	b := make([]byte, ResumeRecordSize)
	copy(b, resumeMagic)
	be := binary.BigEndian
	be.PutUint32(b[8:], 1) // version
	if r.Sparse {
		be.PutUint32(b[12:], 1)
	}
	be.PutUint64(b[16:], r.OriginalSize)
	be.PutUint64(b[24:], r.End)
	copy(b[32:], resumeText)
	sum := sha256.Sum256(b[:ResumeRecordSize-sha256.Size])
	copy(b[ResumeRecordSize-sha256.Size:], sum[:])
	return b
}

// ReadResumeRecord returns the record the last ResumeRecordSize bytes of r
// (size bytes) hold, or nil if they hold none: a record counts only with
// its checksum, at the end it names, and with an original size before it
// (of a raw image) or not zero.
func ReadResumeRecord(r io.ReaderAt, size int64) *ResumeRecord {
	if size < ResumeRecordSize {
		return nil
	}
	b := make([]byte, ResumeRecordSize)
	if _, err := r.ReadAt(b, size-ResumeRecordSize); err != nil {
		return nil
	}
	sum := sha256.Sum256(b[:ResumeRecordSize-sha256.Size])
	be := binary.BigEndian
	if !bytes.Equal(b[:8], resumeMagic) || be.Uint32(b[8:]) != 1 || be.Uint32(b[12:]) > 1 ||
		!bytes.Equal(sum[:], b[ResumeRecordSize-sha256.Size:]) {
		return nil
	}
	rec := &ResumeRecord{Sparse: be.Uint32(b[12:]) == 1, OriginalSize: be.Uint64(b[16:]), End: be.Uint64(b[24:])}
	if rec.End != uint64(size) || rec.OriginalSize == 0 || !rec.Sparse && rec.OriginalSize > uint64(size)-ResumeRecordSize {
		return nil
	}
	return rec
}

// WriteResumeRecord writes a record of the original size origSize (sparse:
// of an Android sparse image's expansion) at the multiple of 512 at or past
// at, in one write, and returns where it went.
func WriteResumeRecord(f *os.File, at, origSize uint64, sparse bool) (uint64, error) {
	at = roundUp(at, ResumeRecordSize)
	rec := &ResumeRecord{OriginalSize: origSize, Sparse: sparse, End: at + ResumeRecordSize}
	if _, err := f.WriteAt(rec.Encode(), int64(at)); err != nil {
		return 0, errorf(KindIO, "", "writing %s: %w", f.Name(), unwrapPath(err))
	}
	return at, nil
}

// ZeroRange makes bytes [from, to) of the regular file f read as zeros,
// punching a hole where the file system can and writing zeros over what
// it holds where it cannot. It is for the bytes an appending run will
// own, before it writes them.
func ZeroRange(f *os.File, from, to uint64) error {
	if to <= from {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(from), int64(to-from))
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return errorf(KindIO, "", "writing %s: %w", f.Name(), err)
	}
	buf := make([]byte, min(to-from, 1<<20))
	fd := int(f.Fd())
	for off := from; off < to; {
		// Holes already read as zeros: only the data between them is
		// written over.
		start, end := off, to
		d, err := unix.Seek(fd, int64(off), unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			return nil // no data from off to the end of the file
		case err == nil:
			if start = max(off, uint64(d)); start >= to {
				return nil
			}
			if h, err := unix.Seek(fd, int64(start), unix.SEEK_HOLE); err == nil {
				end = min(to, uint64(h))
			}
		}
		for p := start; p < end; {
			n := min(end-p, uint64(len(buf)))
			if _, err := f.WriteAt(buf[:n], int64(p)); err != nil {
				return errorf(KindIO, "", "writing %s: %w", f.Name(), unwrapPath(err))
			}
			p += n
		}
		off = end
	}
	return nil
}

// avbFooter describes the AVB footer at the end of an image, as far as
// this package needs to know one: only to refuse appending a tree after it.
type avbFooter struct {
	originalSize uint64
	// provisional: the footer and vbmeta an interrupted add_hashtree_footer
	// leaves, not a finished image's.
	provisional bool
}

// ProvisionalAVBMarker is a property key that only the provisional vbmeta
// of an interrupted add_hashtree_footer (package avb) holds.
const ProvisionalAVBMarker = "veritytree.interrupted"

// findAVBFooter returns the AVB footer at the end of r (size bytes), or nil
// if there is none: the footer magic, version 1, a vbmeta blob (its magic)
// where the footer says, inside the image and past the original image.
func findAVBFooter(r io.ReaderAt, size uint64) *avbFooter {
	const footerSize, headerSize = 64, 256
	if size < footerSize+headerSize {
		return nil
	}
	b := make([]byte, footerSize)
	if _, err := r.ReadAt(b, int64(size-footerSize)); err != nil || string(b[:4]) != "AVBf" {
		return nil
	}
	be := binary.BigEndian
	orig, off, n := be.Uint64(b[12:]), be.Uint64(b[20:]), be.Uint64(b[28:])
	end := size - footerSize
	if be.Uint32(b[4:]) != 1 || n < headerSize || off > end || n > end-off || orig > off {
		return nil
	}
	vb := make([]byte, min(n, 4096))
	if _, err := r.ReadAt(vb, int64(off)); err != nil || string(vb[:4]) != "AVB0" {
		return nil
	}
	return &avbFooter{originalSize: orig, provisional: bytes.Contains(vb, []byte(ProvisionalAVBMarker))}
}
