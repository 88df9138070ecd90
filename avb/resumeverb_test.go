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
	appendTree := func() error {
		_, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", DoNotAppendVBMeta: true, VerityAppend: true})
		return err
	}
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
		// veritygen --append of a sparse image writes its tree as
		// add_hashtree_footer does, without vbmeta: neither finishes the
		// other's run.
		{"veritygen --append's, add_hashtree_footer", withRecord(safefile.VerbAppend, size/2), addTree,
			"an interrupted veritygen --append left", ""},
		{"add_hashtree_footer's, veritygen --append", withRecord("add_hashtree_footer", size/2), appendTree,
			"an interrupted add_hashtree_footer left", ""},
		{"add_hash_footer's, veritygen --append", withRecord("add_hash_footer", size/2), appendTree,
			"an interrupted add_hash_footer left", ""},
		{"veritygen --append's, resize_image", withRecord(safefile.VerbAppend, size/2), resize,
			"an interrupted veritygen --append left", ""},
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

// TestVerityAppendFinishesItsRecord: what a killed VerityAppend run leaves
// (its chunks past the image's, uncounted or counted, and its record past
// them, naming its verb) is finished by the same run into the file an
// uninterrupted run makes.
func TestVerityAppendFinishesItsRecord(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.simg")
	toSparse(t, makeImage(t, "blockbyte:4096:40+zero:8192+blockbyte:4096:7"), image)
	start, _ := os.ReadFile(image)
	o := func() *HashtreeFooterOptions {
		return &HashtreeFooterOptions{HashAlgorithm: "sha256", Salt: []byte{1, 2, 3}, FEC: true, DoNotAppendVBMeta: true, VerityAppend: true}
	}
	if _, err := AddHashtreeFooter(context.Background(), image, o()); err != nil {
		t.Fatal(err)
	}
	finished, _ := os.ReadFile(image)
	for _, state := range []string{"uncounted", "counted"} {
		b := append(append([]byte{}, start...), finished[len(start):len(start)+(len(finished)-len(start))/2]...)
		if state == "counted" {
			b = append(append([]byte{}, finished...), 1, 2, 3)
		}
		at := roundUp(uint64(len(b)), safefile.ResumeRecordSize)
		rec := &safefile.ResumeRecord{OriginalSize: uint64(len(expand(t, start))), Sparse: true, End: at + safefile.ResumeRecordSize, Verb: safefile.VerbAppend}
		b = append(append(b, make([]byte, at-uint64(len(b)))...), rec.Encode()...)
		if err := os.WriteFile(image, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := AddHashtreeFooter(context.Background(), image, o()); err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
			t.Errorf("%s: the rerun gives %d bytes, not the uninterrupted run's %d", state, len(got), len(finished))
		}
	}
}

// TestVerityAppendRefusals: HashtreeFooterOptions.VerityAppend is an
// append to a sparse image without vbmeta; a raw image, or a vbmeta asked
// for, is refused before anything is written.
func TestVerityAppendRefusals(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "system.img")
	start := makeImage(t, "blockbyte:4096:40")
	if err := os.WriteFile(raw, start, 0o644); err != nil {
		t.Fatal(err)
	}
	sparseImg := filepath.Join(dir, "system.simg")
	toSparse(t, start, sparseImg)
	sparseStart, _ := os.ReadFile(sparseImg)
	for _, c := range []struct {
		name, image string
		state       []byte
		o           HashtreeFooterOptions
		want        string
	}{
		{"raw image", raw, start, HashtreeFooterOptions{DoNotAppendVBMeta: true, VerityAppend: true}, "not an Android sparse image"},
		{"with vbmeta", sparseImg, sparseStart, HashtreeFooterOptions{VerityAppend: true}, "writes no vbmeta"},
	} {
		_, err := AddHashtreeFooter(context.Background(), c.image, &c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		if got, _ := os.ReadFile(c.image); !bytes.Equal(got, c.state) {
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
