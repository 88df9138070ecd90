package avb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

// footerImage is an image of size bytes: the blob at vbOff, the footer
// (original size orig, the blob's size) at the end.
func footerImage(blob []byte, size, orig, vbOff int) []byte {
	b := make([]byte, size)
	copy(b[vbOff:], blob)
	copy(b[size-FooterSize:], NewFooter(uint64(orig), uint64(vbOff), uint64(len(blob))).Encode())
	return b
}

// lenientSeeds are images with the fields avbtool reads past damaged: the
// seeds of FuzzVBMetaWalkMemory's lenient reading.
func lenientSeeds(tb testing.TB) [][]byte {
	blob := testBlob(slices.Concat((&PropertyDescriptor{Key: "k", Value: []byte("v")}).Encode(), manyUnknown(4)))
	descOff := slices.Clone(blob)
	binary.BigEndian.PutUint64(descOff[96:], 0xc0000) // past the file
	huge := slices.Clone(blob)
	for _, at := range []int{12, 20, 104} { // both blocks, the descriptors: 2^63 bytes
		binary.BigEndian.PutUint64(huge[at:], math.MaxInt64)
	}
	img := footerImage(blob, 16384, 4096, 8192)
	vbSize := slices.Clone(img)
	binary.BigEndian.PutUint64(vbSize[len(img)-FooterSize+28:], uint64(len(blob))-41) // shorter than the blob
	orig := slices.Clone(img)
	binary.BigEndian.PutUint64(orig[len(img)-FooterSize+12:], 31806672368345088)
	return [][]byte{padTo(descOff, 4096), padTo(huge, 4096), vbSize, orig}
}

func padTo(b []byte, n int) []byte { return append(b, make([]byte, n-len(b))...) }

// TestParseImageLenient: where ParseImage refuses damaged fields,
// ParseImageLenient reads what avbtool's info_image and resize_image read
// (tests/peer seed 1 cases 546, 1821, 290); the strict reading, which
// verification uses, still refuses.
func TestParseImageLenient(t *testing.T) {
	seeds := lenientSeeds(t)
	for _, c := range []struct {
		name   string
		b      []byte
		descs  int
		footer bool
		orig   uint64
	}{
		{name: "descriptors past the file", b: seeds[0], descs: 0},
		{name: "blocks of 2^63 bytes", b: seeds[1], descs: 0}, // the descriptors' offset past them
		{name: "footer's vbmeta size", b: seeds[2], descs: 5, footer: true, orig: 4096},
		{name: "footer's original size", b: seeds[3], descs: 5, footer: true, orig: 31806672368345088},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bytes.NewReader(c.b)
			if _, err := ParseImage(r, int64(len(c.b))); !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseImage: %v; want it refused as malformed", err)
			}
			img, err := ParseImageLenient(r, int64(len(c.b)))
			if err != nil {
				t.Fatal(err)
			}
			if img.VBMeta.NumDescriptors() != c.descs || (img.Footer != nil) != c.footer ||
				c.footer && img.Footer.OriginalImageSize != c.orig {
				t.Fatalf("%d descriptors, footer %+v", img.VBMeta.NumDescriptors(), img.Footer)
			}
			var info bytes.Buffer
			if err := img.WriteInfo(&info); err != nil {
				t.Fatal(err)
			}
			if c.descs == 0 && !bytes.HasSuffix(info.Bytes(), []byte("Descriptors:\n    (none)\n")) {
				t.Fatalf("info:\n%s", info.Bytes())
			}
		})
	}
}

// A header declaring blocks and descriptors far larger than the image is
// read in the bytes the image holds.
func TestParseImageLenientMemory(t *testing.T) {
	b := lenientSeeds(t)[0]
	binary.BigEndian.PutUint64(b[104:], math.MaxInt64) // 2^63 bytes of descriptors, at 0xc0000
	binary.BigEndian.PutUint64(b[96:], 0)              // now in the file: all of it after the blob is read
	if a := allocated(func() { _, _ = ParseImageLenient(bytes.NewReader(b), int64(len(b))) }); a > lenientAllocBound(b) {
		t.Fatalf("allocated %d bytes for an image of %d", a, len(b))
	}
}
