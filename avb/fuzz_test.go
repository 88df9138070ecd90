package avb

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"

	"github.com/veritytree/veritytree/verity"
)

// FuzzParseVBMeta: any bytes give a blob or an error, never a panic, and a
// blob's descriptors encode to bytes that parse to the same.
func FuzzParseVBMeta(f *testing.F) {
	for _, b := range vectorBlobs(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseVBMeta(b)
		if err != nil {
			return
		}
		enc := EncodeDescriptors(slices.Collect(v.Descriptors()))
		ds, err := ParseDescriptors(enc)
		if err != nil {
			t.Fatalf("re-encoded descriptors do not parse: %v", err)
		}
		if !bytes.Equal(EncodeDescriptors(ds), enc) {
			t.Fatal("descriptors do not round-trip")
		}
		_ = v.Verify()
		var info bytes.Buffer
		_ = (&Image{VBMeta: v}).WriteInfo(&info)
		for ht := range v.HashtreeDescriptors() {
			RootfsCmdlineDescriptors(ht)
		}
	})
}

// FuzzParseImage: an image of any bytes (footer included) gives its
// metadata or an error, read strictly or as avbtool reads it.
func FuzzParseImage(f *testing.F) {
	blobs := vectorBlobs(f)
	img := make([]byte, 8192)
	copy(img, blobs[0])
	copy(img[len(img)-FooterSize:], NewFooter(0, 0, uint64(len(blobs[0]))).Encode())
	f.Add(img)
	f.Add(blobs[1])
	for _, b := range lenientSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Read as avbtool reads it too: whatever the damaged fields say,
		// no panic in the reading or in the text.
		if im, err := ParseImageLenient(bytes.NewReader(b), int64(len(b))); err == nil {
			var info bytes.Buffer
			_ = im.WriteInfo(&info)
		}
		im, err := ParseImage(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		var info bytes.Buffer
		_ = im.WriteInfo(&info)
	})
}

// FuzzDecodePublicKey: any bytes decode to a key or an error.
func FuzzDecodePublicKey(f *testing.F) {
	f.Add([]byte{0, 0, 8, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodePublicKey(b)
		if err != nil {
			return
		}
		if _, err := EncodePublicKey(k); err != nil && k.N.Bit(0) == 1 {
			t.Fatalf("decoded key does not encode: %v", err)
		}
	})
}

// FuzzSparseTruncate: any file is refused or cut to a sparse image that
// expands to the first bytes of what it expanded to.
func FuzzSparseTruncate(f *testing.F) {
	for _, name := range []string{"sparse-p0", "sparse-psize"} {
		b, err := os.ReadFile(filepath.Join(vectorDir, "sparse", name+".simg"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint32(7))
		f.Add(b, uint32(40))
		// What an interrupted AddHashtreeFooter leaves past the chunks.
		at := roundUp(uint64(len(b))+100, safefile.ResumeRecordSize)
		rec := &safefile.ResumeRecord{OriginalSize: 4096, Sparse: true, End: at + safefile.ResumeRecordSize}
		f.Add(append(append(bytes.Clone(b), make([]byte, at-uint64(len(b)))...), rec.Encode()...), uint32(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint32) {
		path := filepath.Join(t.TempDir(), "x.simg")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := verity.OpenSource(path, nil)
		if err != nil {
			return
		}
		before := make([]byte, min(src.Size(), 1<<22))
		_, rerr := src.ReadAt(before, 0)
		src.Close()
		if rerr != nil || src.Size() > 1<<22 {
			return
		}
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		sw, err := openSparseWriter(fh)
		if err != nil {
			return
		}
		size := uint64(cut) * sw.blk % (sw.size() + 1) / sw.blk * sw.blk
		if err := sw.truncate(size); err != nil {
			t.Fatalf("truncate to %d: %v", size, err)
		}
		after := expandFile(t, path)
		if !bytes.Equal(after, before[:size]) {
			t.Fatalf("cut to %d: expands to %d bytes, not the first %d", size, len(after), size)
		}
	})
}

func expandFile(t *testing.T, path string) []byte {
	s, err := verity.OpenSource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := make([]byte, s.Size())
	if _, err := s.ReadAt(out, 0); err != nil && len(out) > 0 {
		t.Fatal(err)
	}
	return out
}

// FuzzVerifyVBMetaBlob: libavb's decision on any bytes is one of its
// results, an error exactly when it is not OK, never a panic; a blob it
// passes is signed, and VerifyWith its own key passes it too.
func FuzzVerifyVBMetaBlob(f *testing.F) {
	for _, b := range vectorBlobs(f) {
		f.Add(b)
	}
	f.Add([]byte("AVB0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := VerifyVBMetaBlob(b)
		if res < VBMetaOK || res > VBMetaSignatureMismatch || (err == nil) != (res == VBMetaOK) {
			t.Fatalf("result %v, error %v", res, err)
		}
		if res != VBMetaOK {
			return
		}
		v, err := ParseVBMeta(b)
		if err != nil {
			return // libavb reads the descriptors later
		}
		if v.Algorithm.Type == 0 {
			t.Fatal("an unsigned blob verified")
		}
		if err := v.VerifyWith(v.PublicKey); err != nil {
			t.Fatalf("VerifyWith its own key: %v", err)
		}
	})
}
