package verity

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
)

// TestAppendRecordOfAnotherVerb: Append finishes what its own record (or a
// record without a verb, an older version's) says, and refuses by name a
// record another verb wrote, the file untouched.
func TestAppendRecordOfAnotherVerb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	const size = 1 << 20
	img := fmtImage(t, path, size)
	opts := appendCases[1].options([]byte{7})
	for _, verb := range []string{"add_hash_footer", safefile.VerbAppend, ""} {
		b := append(append([]byte{}, img...), make([]byte, 4096)...)
		rec := &safefile.ResumeRecord{OriginalSize: size, End: uint64(len(b)) + safefile.ResumeRecordSize, Verb: verb}
		b = append(b, rec.Encode()...)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Format(context.Background(), path, "", opts)
		if verb == "add_hash_footer" {
			fmtWantError(t, err, KindRefused, "", "ends in the record of an interrupted add_hash_footer of its first 1048576 bytes, not of a FormatOptions.Append")
			if got := fmtRead(t, path); !bytes.Equal(got, b) {
				t.Error("the refused Append changed DATA")
			}
			continue
		}
		if err != nil {
			t.Errorf("verb %q: %v", verb, err)
		}
	}
}
