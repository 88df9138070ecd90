package safefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"os"
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
	// Verb names the run that wrote the record (VerbAppend, or avbtool's
	// name of an avb verb: "add_hashtree_footer", "resize_image"...), so
	// that a run of another verb can refuse it by name. "" for a record
	// written before records named their verb.
	Verb string
}

// VerbAppend is the Verb of the record of the verity package's Append, and
// of veritygen --append of an Android sparse image (which appends through
// the avb package, as HashtreeFooterOptions.VerityAppend).
const VerbAppend = "append"

// The verb's name lies at verbAt, past the text, NUL-padded: bytes a
// record without one has as zeros, so that such records read as before,
// with Verb "".
const verbAt, verbSize = 128, 32

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
	copy(b[verbAt:verbAt+verbSize], r.Verb)
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
	verb := b[verbAt : verbAt+verbSize]
	if i := bytes.IndexByte(verb, 0); i >= 0 {
		if bytes.ContainsFunc(verb[i:], func(r rune) bool { return r != 0 }) {
			return nil
		}
		verb = verb[:i]
	}
	rec := &ResumeRecord{Sparse: be.Uint32(b[12:]) == 1, OriginalSize: be.Uint64(b[16:]), End: be.Uint64(b[24:]), Verb: string(verb)}
	if rec.End != uint64(size) || rec.OriginalSize == 0 || !rec.Sparse && rec.OriginalSize > uint64(size)-ResumeRecordSize {
		return nil
	}
	return rec
}

// WriteResumeRecord writes a record of the original size origSize (sparse:
// of an Android sparse image's expansion) at the multiple of 512 at or past
// at, in one write, and returns where it went; verb is the record's Verb.
func WriteResumeRecord(f *os.File, at, origSize uint64, sparse bool, verb string) (uint64, error) {
	at = (at + ResumeRecordSize - 1) / ResumeRecordSize * ResumeRecordSize
	rec := &ResumeRecord{OriginalSize: origSize, Sparse: sparse, End: at + ResumeRecordSize, Verb: verb}
	if _, err := f.WriteAt(rec.Encode(), int64(at)); err != nil {
		return 0, errorf(KindIO, "", "writing %s: %w", f.Name(), unwrapPath(err))
	}
	return at, nil
}

// ProvisionalAVBMarker is a property key that only the provisional vbmeta
// of an interrupted add_hashtree_footer (the avb package) holds; the
// verity package's Append tells such an image from a finished one by it.
const ProvisionalAVBMarker = "veritytree.interrupted"
