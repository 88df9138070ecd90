package avb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// TestResumeRecordVerbRefusals: a record past a sparse image's chunks
// that names its verb is refused by that name by a verb that cannot
// finish it, the file untouched; a record without a name (a run of an
// older version killed) keeps the guess made before records named their
// verb.
func TestResumeRecordVerbRefusals(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.simg")
	toSparse(t, makeImage(t, "blockbyte:4096:40+zero:8192"), image)
	if _, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", PartitionSize: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	start, _ := os.ReadFile(image)
	size := uint64(len(expand(t, start)))
	withRecord := func(verb string, orig uint64) []byte {
		at := roundUp(uint64(len(start)), safefile.ResumeRecordSize)
		b := append(append([]byte{}, start...), make([]byte, at-uint64(len(start)))...)
		return append(b, (&safefile.ResumeRecord{OriginalSize: orig, Sparse: true, End: at + safefile.ResumeRecordSize, Verb: verb}).Encode()...)
	}
	addTree := func() error {
		_, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", PartitionSize: 1 << 20})
		return err
	}
	resize := func() error { return ResizeImage(context.Background(), image, 2<<20) }
	for _, c := range []struct {
		name   string
		state  []byte
		run    func() error
		want   string
		unwant string
	}{
		{"zero_hashtree's, add_hashtree_footer", withRecord("zero_hashtree", size), addTree,
			"an interrupted zero_hashtree left", "resize_image or"},
		{"resize_image's, add_hashtree_footer", withRecord("resize_image", size), addTree,
			"an interrupted resize_image left", "or zero_hashtree"},
		{"no verb, add_hashtree_footer", withRecord("", size), addTree,
			"an interrupted resize_image or zero_hashtree left", ""},
		{"erase_footer's, resize_image", withRecord("erase_footer", size/2), resize,
			"an interrupted erase_footer left", "add_hashtree_footer, say"},
		{"add_hash_footer's, resize_image", withRecord("add_hash_footer", size/2), resize,
			"an interrupted add_hash_footer left", "add_hashtree_footer, say"},
		{"no verb, resize_image", withRecord("", size/2), resize,
			"in the middle of adding a footer", ""},
	} {
		if err := os.WriteFile(image, c.state, 0o644); err != nil {
			t.Fatal(err)
		}
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) || c.unwant != "" && strings.Contains(err.Error()+hintOf(err), c.unwant) {
			t.Errorf("%s: got %v (hint %q), want %q", c.name, err, hintOf(err), c.want)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, c.state) {
			t.Errorf("%s: the refused run changed the file", c.name)
		}
	}
}

func hintOf(err error) string {
	var e *verity.Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
