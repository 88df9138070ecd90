package avb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// toSparse writes what img2simg makes of raw to path.
func toSparse(t *testing.T, raw []byte, path string) {
	t.Helper()
	img2simg := testtool.Require(t, "img2simg")
	in := path + ".raw"
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img2simg, in, path).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	os.Remove(in)
}

// TestSparseFooterVerbsRefuseToCutData: the checks of the raw verbs hold
// for a sparse image: a footer (not signed) whose vbmeta lies inside the
// data the signed hash descriptor covers is refused by ResizeImage, and a
// tree said to lie after the vbmeta by ZeroHashtree, the file untouched.
func TestSparseFooterVerbsRefuseToCutData(t *testing.T) {
	_, b := hashFooterImage(t, 128<<10)
	ft, err := ReadFooter(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	copy(b[8192:], b[ft.VBMetaOffset:ft.VBMetaOffset+ft.VBMetaSize])
	copy(b[len(b)-FooterSize:], NewFooter(4096, 8192, ft.VBMetaSize).Encode())
	image := filepath.Join(t.TempDir(), "boot.simg")
	toSparse(t, b, image)
	before, _ := os.ReadFile(image)
	if err := ResizeImage(context.Background(), image, 256<<10); !errors.Is(err, ErrFooterMismatch) {
		t.Errorf("resize: got %v", err)
	}

	raw := filepath.Join(t.TempDir(), "system.img")
	if err := os.WriteFile(raw, makeImage(t, "blockbyte:4096:40"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := AddHashtreeFooter(context.Background(), raw, &HashtreeFooterOptions{HashAlgorithm: "sha256", Salt: []byte{3}, PartitionSize: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := os.ReadFile(raw)
	hft, _ := ReadFooter(bytes.NewReader(hb), int64(len(hb)))
	// The vbmeta copied into the tree, the footer pointing to it: the
	// tree would then run past the vbmeta.
	copy(hb[r.Descriptor.TreeOffset:], hb[hft.VBMetaOffset:hft.VBMetaOffset+hft.VBMetaSize])
	copy(hb[len(hb)-FooterSize:], NewFooter(hft.OriginalImageSize, r.Descriptor.TreeOffset, hft.VBMetaSize).Encode())
	himage := filepath.Join(t.TempDir(), "system.simg")
	toSparse(t, hb, himage)
	hbefore, _ := os.ReadFile(himage)
	if err := ZeroHashtree(context.Background(), himage); err == nil || !strings.Contains(err.Error(), "not between the image data") {
		t.Errorf("zero_hashtree: got %v", err)
	}
	if got, _ := os.ReadFile(image); !bytes.Equal(got, before) {
		t.Error("a refused resize changed the image")
	}
	if got, _ := os.ReadFile(himage); !bytes.Equal(got, hbefore) {
		t.Error("a refused zero_hashtree changed the image")
	}
}

// TestSparseRewriteInterrupted: the states a sparse ZeroHashtree killed in
// its phase B leaves (the staging block written, the staged chunks copied
// in part or not at all, the header's counts old) are refused by the other
// footer verbs, the file untouched, and finished by the same call into
// the file an uninterrupted call makes; so is what a run killed in its
// phase A leaves (a record past garbage, no staging block), even when the
// rerun is killed in turn.
func TestSparseRewriteInterrupted(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "system.img")
	if err := os.WriteFile(raw, makeImage(t, "blockbyte:4096:60+zero:16384+fill:09:8192"), 0o644); err != nil {
		t.Fatal(err)
	}
	rawBytes, _ := os.ReadFile(raw)
	image := filepath.Join(dir, "system.simg")
	toSparse(t, rawBytes, image)
	r, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", Salt: []byte{4}, FEC: true, PartitionSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	start, _ := os.ReadFile(image)
	if err := ZeroHashtree(context.Background(), image); err != nil {
		t.Fatal(err)
	}
	finished, _ := os.ReadFile(image)
	if bytes.Equal(start, finished) {
		t.Fatal("nothing zeroed")
	}
	// Where the cut at the tree leaves the chunks, from the start image.
	f, err := os.Open(image)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(image, start, 0o644); err != nil {
		t.Fatal(err)
	}
	sw, err := openSparseWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	cut, err := sw.planCut(r.Descriptor.TreeOffset)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	s := &staging{verb: "zero_hashtree", cutHeader: cut.header, cutHeaderAt: uint64(cut.headerAt), to: uint64(cut.end),
		length: uint64(len(finished)) - uint64(cut.end), totalBlocks: le.Uint32(finished[16:]), totalChunks: le.Uint32(finished[20:])}
	s.from = roundUp(uint64(max(len(start), len(finished))), safefile.ResumeRecordSize)
	stagingAt := roundUp(s.from+s.length, safefile.ResumeRecordSize)
	phaseB := func(copied uint64) []byte {
		b := make([]byte, stagingAt+stagingSize+safefile.ResumeRecordSize)
		copy(b, start)
		copy(b[s.to:], finished[s.to:s.to+copied])
		copy(b[s.from:], finished[s.to:])
		copy(b[stagingAt:], s.encode())
		rec := &safefile.ResumeRecord{OriginalSize: uint64(len(expand(t, start))), Sparse: true, End: uint64(len(b))}
		copy(b[stagingAt+stagingSize:], rec.Encode())
		return b
	}
	for _, copied := range []uint64{0, s.length / 2, s.length} {
		b := phaseB(copied)
		if err := os.WriteFile(image, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256"}); err == nil ||
			!strings.Contains(err.Error(), "interrupted zero_hashtree") {
			t.Errorf("copied %d: add_hashtree_footer on the interrupted state: got %v", copied, err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, b) {
			t.Fatalf("copied %d: add_hashtree_footer changed the interrupted state", copied)
		}
		if err := ZeroHashtree(context.Background(), image); err != nil {
			t.Fatalf("copied %d: %v", copied, err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
			t.Errorf("copied %d: the run on the interrupted state is not the finished file", copied)
		}
	}
	// Phase A killed: a record past garbage where the chunks are staged,
	// no staging block; the rerun killed in turn leaves its own record
	// before the first one's.
	b := phaseB(0)
	clear(b[stagingAt : stagingAt+stagingSize])
	for i := s.from; i < s.from+s.length/2; i++ {
		b[i] = byte(i * 7)
	}
	longer := append(append([]byte{}, b...), make([]byte, 3*safefile.ResumeRecordSize)...)
	copy(longer[len(longer)-safefile.ResumeRecordSize:], (&safefile.ResumeRecord{OriginalSize: uint64(len(expand(t, start))), Sparse: true,
		End: uint64(len(longer))}).Encode())
	for name, state := range map[string][]byte{"phase A": b, "phase A twice": longer} {
		if err := os.WriteFile(image, state, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256"}); err == nil ||
			!strings.Contains(err.Error(), "interrupted resize_image or zero_hashtree") {
			t.Errorf("%s: add_hashtree_footer on the interrupted state: got %v", name, err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, state) {
			t.Fatalf("%s: add_hashtree_footer changed the interrupted state", name)
		}
		if err := ZeroHashtree(context.Background(), image); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
			t.Errorf("%s: the run on the interrupted state is not the finished file", name)
		}
	}
}

// laterCtx is a context that ends at the after-th call of Err.
type laterCtx struct {
	context.Context
	calls *int
	after int
}

func (c laterCtx) Err() error {
	*c.calls++
	if *c.calls >= c.after {
		return context.Canceled
	}
	return nil
}

// TestSparseZeroHashtreeCanceled: a ZeroHashtree of a sparse image whose
// context ends while it copies the image's end (phase A) returns the
// context's error and leaves the file as it was.
func TestSparseZeroHashtreeCanceled(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.simg")
	toSparse(t, makeImage(t, "blockbyte:4096:20"), image)
	if _, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", PartitionSize: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	start, _ := os.ReadFile(image)
	calls := 0
	err := ZeroHashtree(laterCtx{Context: context.Background(), calls: &calls, after: 10}, image)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v after %d calls of Err", err, calls)
	}
	if got, _ := os.ReadFile(image); !bytes.Equal(got, start) {
		t.Errorf("the canceled run left %d bytes, not the image's %d", len(got), len(start))
	}
}

// TestSparseTrailingBytesRefused: a sparse image with bytes after its last
// chunk is not read for its AVB metadata (avbtool refuses it: "There were
// N bytes of extra data at the end of the file."); the same image without
// them is.
func TestSparseTrailingBytesRefused(t *testing.T) {
	_, b := hashFooterImage(t, 128<<10)
	image := filepath.Join(t.TempDir(), "boot.simg")
	toSparse(t, b, image)
	if _, err := ReadImage(image); err != nil {
		t.Fatalf("the sparse image as img2simg made it: %v", err)
	}
	f, err := os.OpenFile(image, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0xfd, 0, 0}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, read := range map[string]func() error{
		"ReadImage":        func() error { _, err := ReadImage(image); return err },
		"ExtractVBMeta":    func() error { _, err := ExtractVBMeta(image); return err },
		"ReadImageLenient": func() error { _, err := ReadImageLenient(image); return err },
	} {
		err := read()
		var ve *verity.Error
		if !errors.As(err, &ve) || ve.Kind != verity.KindInput || !strings.Contains(err.Error(), "3 bytes after its last chunk") {
			t.Errorf("%s of a sparse image with 3 bytes after its chunks: got %v, want a KindInput error naming them", name, err)
		}
	}
}
