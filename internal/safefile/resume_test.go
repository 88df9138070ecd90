package safefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestResumeRecordVerb: a record names the verb that wrote it, read back
// as written; a record as written before records named their verb (no
// name past the text) still reads, with Verb ""; a name with bytes after
// its end is no record.
func TestResumeRecordVerb(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "img"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, verb := range []string{VerbAppend, "add_hashtree_footer", "zero_hashtree", ""} {
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		at, err := WriteResumeRecord(f, 1000, 700, true, verb)
		if err != nil {
			t.Fatal(err)
		}
		rec := ReadResumeRecord(f, int64(at)+ResumeRecordSize)
		if rec == nil || rec.Verb != verb || rec.OriginalSize != 700 || !rec.Sparse || rec.End != at+ResumeRecordSize {
			t.Errorf("verb %q: read back %+v", verb, rec)
		}
	}

	// The layout of a record before Verb, built by hand.
	old := make([]byte, ResumeRecordSize)
	copy(old, "VTRESUME")
	be := binary.BigEndian
	be.PutUint32(old[8:], 1)
	be.PutUint64(old[16:], 300)
	be.PutUint64(old[24:], 1024)
	copy(old[32:], "veritytree: an interrupted run appended to this image; run it again to finish it\n")
	sum := sha256.Sum256(old[:ResumeRecordSize-sha256.Size])
	copy(old[ResumeRecordSize-sha256.Size:], sum[:])
	file := append(make([]byte, 512), old...)
	rec := ReadResumeRecord(bytes.NewReader(file), int64(len(file)))
	if rec == nil || rec.Verb != "" || rec.OriginalSize != 300 || rec.Sparse {
		t.Fatalf("a record without a verb: read %+v", rec)
	}
	if want := (&ResumeRecord{OriginalSize: 300, End: 1024}).Encode(); !bytes.Equal(want, old) {
		t.Error("a record of Verb \"\" is not encoded as records were before Verb")
	}

	bad := (&ResumeRecord{OriginalSize: 300, End: 1024, Verb: "append"}).Encode()
	bad[verbAt+verbSize-1] = 'x'
	sum = sha256.Sum256(bad[:ResumeRecordSize-sha256.Size])
	copy(bad[ResumeRecordSize-sha256.Size:], sum[:])
	file = append(make([]byte, 512), bad...)
	if rec := ReadResumeRecord(bytes.NewReader(file), int64(len(file))); rec != nil {
		t.Errorf("a verb with a byte past its end: read %+v", rec)
	}
}
