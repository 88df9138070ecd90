package avb

import (
	"bytes"
	"testing"
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
		enc := EncodeDescriptors(v.Descriptors)
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
		for _, ht := range v.HashtreeDescriptors() {
			RootfsCmdlineDescriptors(ht)
		}
	})
}

// FuzzParseImage: an image of any bytes (footer included) gives its
// metadata or an error.
func FuzzParseImage(f *testing.F) {
	blobs := vectorBlobs(f)
	img := make([]byte, 8192)
	copy(img, blobs[0])
	copy(img[len(img)-FooterSize:], NewFooter(0, 0, uint64(len(blobs[0]))).Encode())
	f.Add(img)
	f.Add(blobs[1])
	f.Fuzz(func(t *testing.T, b []byte) {
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
