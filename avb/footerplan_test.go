package avb

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPlanHashtreeFooter: a plan reads what the image ends in (nothing, a
// footer, an interrupted run) without changing a byte, as ProbeFooterImage
// does first, and Apply writes the image it laid out, once.
func TestPlanHashtreeFooter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "system.img")
	start := bytes.Repeat([]byte{0x3c, 0x91, 0x07}, 64<<10) // 192 KiB
	o := &HashtreeFooterOptions{PartitionSize: 1 << 20, PartitionName: "system", HashAlgorithm: "sha256",
		Salt: bytes.Repeat([]byte{1}, 32), FEC: true}
	if err := os.WriteFile(path, start, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := AddHashtreeFooter(context.Background(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	finished, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	states := []struct {
		name  string
		image []byte
		found Found
	}{
		{"plain", start, FoundNothing},
		{"finished", finished, FoundFooter},
		{"interrupted", interruptedState(t, "first", start, finished, 1), FoundInterrupted},
		{"interrupted rerun", interruptedState(t, "rerun", finished, finished, 2), FoundInterrupted},
		{"record", interruptedState(t, "record", start, finished, 3), FoundInterrupted},
	}
	for _, s := range states {
		t.Run(s.name, func(t *testing.T) {
			if err := os.WriteFile(path, s.image, 0o644); err != nil {
				t.Fatal(err)
			}
			// What a caller that keeps avbtool's order reads first: the
			// plan's own findings, nothing written, the image not left locked.
			probe, err := ProbeFooterImage(path, "add_hashtree_footer")
			if err != nil {
				t.Fatal(err)
			}
			pl, err := PlanHashtreeFooter(path, o)
			if err != nil {
				t.Fatal(err)
			}
			if want := (FooterImage{Found: pl.Found, OriginalSize: pl.OriginalSize, FoundSize: pl.FoundSize, WholeBlocks: pl.t.wholeBlocks,
				Unit: pl.Unit, Sparse: pl.Sparse}); *probe != want {
				t.Errorf("probe %+v, want the plan's %+v", *probe, want)
			}
			if pl.Found != s.found || pl.OriginalSize != uint64(len(start)) || pl.FoundSize != uint64(len(s.image)) {
				t.Errorf("found %v, keeping %d of %d bytes; want %v, %d of %d", pl.Found, pl.OriginalSize, pl.FoundSize, s.found, len(start), len(s.image))
			}
			if pl.Size != res.Size || pl.VBMetaOffset != res.Footer.VBMetaOffset || pl.VBMetaSize != res.Footer.VBMetaSize {
				t.Errorf("plan: size %d, vbmeta at %d (%d bytes); the run wrote %d, %d (%d)", pl.Size, pl.VBMetaOffset, pl.VBMetaSize,
					res.Size, res.Footer.VBMetaOffset, res.Footer.VBMetaSize)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, s.image) {
				t.Fatalf("planning changed the image (%v)", err)
			}
			if _, err := pl.Apply(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := pl.Apply(context.Background()); err == nil {
				t.Error("a plan applied twice")
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, finished) {
				t.Fatalf("applied, the image is not the finished one (%v)", err)
			}
		})
	}
	// Closed, the plan lets the image go as it was.
	pl, err := PlanHashtreeFooter(path, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Apply(context.Background()); err == nil {
		t.Error("a closed plan applied")
	}
	if _, err := AddHashtreeFooter(context.Background(), path, o); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

// TestMaxImageSizeIsThePlans: --calc_max_image_size and the check of a run
// in a partition are one computation: the largest image MaxImageSize gives
// is taken (in whole blocks), one block more is refused, for trees with and without parity.
func TestMaxImageSizeIsThePlans(t *testing.T) {
	for _, o := range []HashtreeFooterOptions{
		{PartitionSize: 1 << 20, HashAlgorithm: "sha256"},
		{PartitionSize: 4 << 20, HashAlgorithm: "sha1", FEC: true, FECRoots: 8},
		{PartitionSize: 2 << 20, HashAlgorithm: "sha512", BlockSize: 1024},
		{PartitionSize: 2 << 20, HashAlgorithm: "sha256", FEC: true, NoHashtree: true},
	} {
		o.Salt = []byte{}
		max, err := MaxImageSize(&o)
		if err != nil || max <= 4096 {
			t.Fatalf("%+v: max image size %d, %v", o, max, err)
		}
		path := filepath.Join(t.TempDir(), "img")
		largest := max - max%4096 // images are whole 4096-byte blocks
		for _, size := range []int64{largest, largest + 4096} {
			if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
				t.Fatal(err)
			}
			pl, err := PlanHashtreeFooter(path, &o)
			if size == largest && (err != nil || pl.MaxImageSize != max) {
				t.Errorf("%+v: an image of %d, max image size %d: %v", o, size, max, err)
			}
			if size > max && err == nil {
				t.Errorf("%+v: an image of %d, past the max image size %d, taken", o, size, max)
			}
			if pl != nil {
				pl.Close()
			}
		}
	}
}
