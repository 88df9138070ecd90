package avb_test

// The libavb decisions of package avb against libavb's own, recorded by
// testdata/libavb/record.sh (libavb compiled from AOSP's external/avb):
// avb_vbmeta_image_verify on hundreds of vbmeta blobs changed in one place
// (internal/avbcraft.Blobs), each a byte string made again here.

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbcraft"
	"github.com/veritytree/veritytree/internal/avbvectors"
)

// TestVerifyVBMetaBlobIsLibavbs: VerifyVBMetaBlob gives libavb's result on
// every blob, and an error exactly when the result is not OK.
func TestVerifyVBMetaBlobIsLibavbs(t *testing.T) {
	rows, err := avbvectors.ReadTSV("testdata/libavb/blobs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := avbcraft.Blobs("testdata/vectors/keys")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(blobs) || len(rows) < 500 {
		t.Fatalf("%d blobs, %d recorded: run testdata/libavb/record.sh", len(blobs), len(rows))
	}
	seen := map[string]int{}
	for i, b := range blobs {
		name, sum, want := rows[i][0], rows[i][1], rows[i][2]
		got := sha256.Sum256(b.Data)
		if b.Name != name || hex.EncodeToString(got[:]) != sum {
			t.Fatalf("blob %d is %s (sha256 %x), recorded %s (%s): run testdata/libavb/record.sh", i, b.Name, got, name, sum)
		}
		res, err := avb.VerifyVBMetaBlob(b.Data)
		if res.String() != want || (err == nil) != (res == avb.VBMetaOK) {
			t.Errorf("%s: %v (%v), libavb says %s", b.Name, res, err, want)
		}
		seen[want]++
	}
	// Every result libavb has is among the answers.
	for _, r := range []string{"OK", "OK_NOT_SIGNED", "INVALID_VBMETA_HEADER", "UNSUPPORTED_VERSION", "HASH_MISMATCH", "SIGNATURE_MISMATCH"} {
		if seen[r] == 0 {
			t.Errorf("no blob where libavb says %s", r)
		}
	}
}

// TestParseVBMetaTakesWhatLibavbTakes: a blob libavb verifies (signed or
// not) parses, but where the descriptors area is wrong: libavb reads it
// only later, and ParseVBMeta refuses it (LIBAVB.md, S11).
func TestParseVBMetaTakesWhatLibavbTakes(t *testing.T) {
	rows, err := avbvectors.ReadTSV("testdata/libavb/blobs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := avbcraft.Blobs("testdata/vectors/keys")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, b := range blobs {
		if r := rows[i][2]; r != "OK" && r != "OK_NOT_SIGNED" || strings.Contains(b.Name, "/descriptors-") {
			continue
		}
		n++
		if _, err := avb.ParseVBMeta(b.Data); err != nil {
			t.Errorf("%s: libavb says %s, ParseVBMeta: %v", b.Name, rows[i][2], err)
		}
	}
	if n < 100 {
		t.Fatalf("%d blobs libavb takes", n)
	}
}
