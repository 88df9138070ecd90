package avb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// hashFooterImage writes an image with a hash footer in a partition of
// size bytes and returns its path and bytes.
func hashFooterImage(t *testing.T, size uint64) (string, []byte) {
	t.Helper()
	image := filepath.Join(t.TempDir(), "boot.img")
	if err := os.WriteFile(image, makeImage(t, "blockbyte:4096:6+fill:ee:100"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AddHashFooter(context.Background(), image, &HashFooterOptions{PartitionSize: size, PartitionName: "boot", Salt: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(image)
	if err != nil {
		t.Fatal(err)
	}
	return image, b
}

// TestResizeImageInterrupted: ResizeImage killed between its writes (the
// footer block at its new place, the file not yet cut or the old footer
// block not yet zeroed) leaves an image whose last block is its footer,
// and the same call finishes it into the file an uninterrupted call makes.
func TestResizeImageInterrupted(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to uint64
	}{{"grow", 128 << 10, 256 << 10}, {"shrink", 256 << 10, 96 << 10}} {
		t.Run(c.name, func(t *testing.T) {
			image, start := hashFooterImage(t, c.from)
			if err := ResizeImage(context.Background(), image, c.to); err != nil {
				t.Fatal(err)
			}
			finished, _ := os.ReadFile(image)
			if uint64(len(finished)) != c.to || !bytes.Equal(finished[c.to-FooterSize:], start[c.from-FooterSize:]) {
				t.Fatalf("resized to %d bytes, footer moved: %v", len(finished), bytes.Equal(finished[c.to-FooterSize:], start[c.from-FooterSize:]))
			}
			// Killed after the first write: the footer block at its new place.
			b := append([]byte{}, start...)
			if uint64(len(b)) < c.to {
				b = append(b, make([]byte, c.to-uint64(len(b)))...)
			}
			copy(b[c.to-imageBlockSize:], finished[c.to-imageBlockSize:])
			if err := os.WriteFile(image, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadImage(image); err != nil {
				t.Fatalf("the interrupted state is not an image with a footer: %v", err)
			}
			if err := ResizeImage(context.Background(), image, c.to); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
				t.Errorf("the run on the interrupted state gives %d bytes, not the finished file's %d", len(got), len(finished))
			}
		})
	}
}

// TestFooterVerbsRefuseToCutData: a footer (not signed) whose vbmeta is
// placed inside the data the signed hash descriptor covers is refused by
// ResizeImage and AppendVBMetaImage's rerun, the image untouched.
func TestFooterVerbsRefuseToCutData(t *testing.T) {
	image, b := hashFooterImage(t, 128<<10)
	ft, err := ReadFooter(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The vbmeta copied to 8192, inside the image's 24676 bytes, the
	// footer pointing to it with an original size below.
	copy(b[8192:], b[ft.VBMetaOffset:ft.VBMetaOffset+ft.VBMetaSize])
	copy(b[len(b)-FooterSize:], NewFooter(4096, 8192, ft.VBMetaSize).Encode())
	if err := os.WriteFile(image, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = ResizeImage(context.Background(), image, 64<<10+96<<10)
	if !errors.Is(err, ErrFooterMismatch) {
		t.Errorf("resize: got %v", err)
	}
	vb := filepath.Join(t.TempDir(), "vbmeta.img")
	if err := os.WriteFile(vb, b[ft.VBMetaOffset:ft.VBMetaOffset+ft.VBMetaSize], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = AppendVBMetaImage(context.Background(), image, vb, 256<<10)
	if !errors.Is(err, ErrFooterMismatch) {
		t.Errorf("append_vbmeta_image: got %v", err)
	}
	if got, _ := os.ReadFile(image); !bytes.Equal(got, b) {
		t.Error("a refused run changed the image")
	}
}

// TestZeroHashtreeInterrupted: ZeroHashtree killed after its markers, the
// zeros half written, is finished by the same call; the image then reads
// as zeroed (the marker) whatever the moment.
func TestZeroHashtreeInterrupted(t *testing.T) {
	image := filepath.Join(t.TempDir(), "system.img")
	if err := os.WriteFile(image, makeImage(t, "blockbyte:4096:300"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", Salt: []byte{2}, FEC: true})
	if err != nil {
		t.Fatal(err)
	}
	start, _ := os.ReadFile(image)
	if err := ZeroHashtree(context.Background(), image); err != nil {
		t.Fatal(err)
	}
	finished, _ := os.ReadFile(image)
	ht := r.Descriptor
	for _, off := range []uint64{ht.TreeOffset, ht.FECOffset} {
		if string(finished[off:off+8]) != zeroedMarker {
			t.Fatalf("no marker at %d", off)
		}
	}
	if !bytes.Equal(finished[:ht.TreeOffset], start[:ht.TreeOffset]) || !bytes.Equal(finished[ht.FECOffset+ht.FECSize:], start[ht.FECOffset+ht.FECSize:]) {
		t.Fatal("bytes outside the tree and the parity changed")
	}
	b := append([]byte{}, start...)
	copy(b[ht.TreeOffset:], finished[ht.TreeOffset:ht.TreeOffset+imageBlockSize])
	copy(b[ht.FECOffset:], finished[ht.FECOffset:ht.FECOffset+imageBlockSize])
	clear(b[ht.TreeOffset+imageBlockSize : ht.TreeOffset+ht.TreeSize/2])
	if err := os.WriteFile(image, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ZeroHashtree(context.Background(), image); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
		t.Error("the run on the interrupted state is not the finished file")
	}
}

// TestAppendVBMetaImageInterrupted: what AppendVBMetaImage killed in its
// middle leaves (its provisional footer past the half-written metadata) is
// finished by the same call.
func TestAppendVBMetaImageInterrupted(t *testing.T) {
	_, withFooter := hashFooterImage(t, 128<<10)
	dir := t.TempDir()
	vb := filepath.Join(dir, "vbmeta.img")
	ft, _ := ReadFooter(bytes.NewReader(withFooter), int64(len(withFooter)))
	if err := os.WriteFile(vb, withFooter[ft.VBMetaOffset:ft.VBMetaOffset+ft.VBMetaSize], 0o644); err != nil {
		t.Fatal(err)
	}
	image := filepath.Join(dir, "av.img")
	start := makeImage(t, "blockbyte:4096:4+fill:ee:100")
	if err := os.WriteFile(image, start, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendVBMetaImage(context.Background(), image, vb, 192<<10); err != nil {
		t.Fatal(err)
	}
	finished, _ := os.ReadFile(image)
	for i, state := range []string{"garbage", "metadata"} {
		b := hashInterruptedState(t, state, start, finished, uint64(i))
		if err := os.WriteFile(image, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := AppendVBMetaImage(context.Background(), image, vb, 192<<10); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
			t.Errorf("%s: the run on the interrupted state is not the finished file", state)
		}
	}
}
