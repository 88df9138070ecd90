package avb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

func vectorBlobs(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join(vectorDir, "vbmeta", "*.bin"))
	var bs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 { // the sparse cases' files are empty: see the README
			bs = append(bs, b)
		}
	}
	return bs
}

// Every vector blob parses, and its descriptors and header encode back to
// the same bytes.
func TestParseVBMetaRoundTrip(t *testing.T) {
	for _, b := range vectorBlobs(t) {
		v, err := ParseVBMeta(b)
		if err != nil {
			t.Fatal(err)
		}
		h := v.Header
		if !bytes.Equal(h.Encode(), b[:HeaderSize]) {
			t.Fatal("header does not encode back")
		}
		aux := b[HeaderSize+h.AuthenticationBlockSize:]
		if !bytes.Equal(EncodeDescriptors(slices.Collect(v.Descriptors())), aux[h.DescriptorsOffset:h.DescriptorsOffset+h.DescriptorsSize]) {
			t.Fatal("descriptors do not encode back")
		}
		if err := v.Verify(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnknownDescriptorKeptAsIs(t *testing.T) {
	raw := make([]byte, 16+24)
	binary.BigEndian.PutUint64(raw, 77)
	binary.BigEndian.PutUint64(raw[8:], 24)
	copy(raw[16:], "any bytes at all\x00\xff'\"\\")
	all := append(append([]byte{}, raw...), (&KernelCmdlineDescriptor{Cmdline: "x"}).Encode()...)
	ds, err := ParseDescriptors(all)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := ds[0].(*UnknownDescriptor); !ok || u.TagValue != 77 {
		t.Fatalf("got %#v", ds[0])
	}
	if !bytes.Equal(EncodeDescriptors(ds), all) {
		t.Fatal("not kept byte for byte")
	}
}

// Malformed input is a clear ErrMalformed (KindInput), never a panic.
func TestMalformed(t *testing.T) {
	good := vectorBlobs(t)[0]
	mut := func(f func(b []byte)) []byte {
		b := append([]byte{}, good...)
		f(b)
		return b
	}
	be := binary.BigEndian
	cases := map[string][]byte{
		"short":               good[:100],
		"aux beyond blob":     mut(func(b []byte) { be.PutUint64(b[20:], 1<<40) }),
		"aux not 64-aligned":  mut(func(b []byte) { be.PutUint64(b[20:], 65) }),
		"descriptors outside": mut(func(b []byte) { be.PutUint64(b[104:], 1<<62) }),
		"descriptor overflow": mut(func(b []byte) {
			h, _ := ParseHeader(b)
			o := HeaderSize + h.AuthenticationBlockSize + h.DescriptorsOffset
			be.PutUint64(b[o+8:], ^uint64(0)-8)
		}),
		"key offset wraps": mut(func(b []byte) { be.PutUint64(b[64:], ^uint64(0)); be.PutUint64(b[72:], 2) }),
	}
	for name, b := range cases {
		_, err := ParseVBMeta(b)
		var ve *verity.Error
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &ve) || ve.Kind != verity.KindInput {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	// A footer pointing past the image, or overlapping.
	for name, f := range map[string]*Footer{
		"vbmeta past end":   NewFooter(0, 1<<40, 512),
		"vbmeta wraps":      NewFooter(0, ^uint64(0)-10, 512),
		"original overlaps": NewFooter(8192, 4096, 512),
		"huge vbmeta":       NewFooter(0, 0, 1<<40),
	} {
		img := make([]byte, 16384)
		copy(img[len(img)-FooterSize:], f.Encode())
		_, err := ParseImage(bytes.NewReader(img), int64(len(img)))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestFooterRoundTrip(t *testing.T) {
	f := NewFooter(1, 2, 3)
	g, err := ParseFooter(f.Encode())
	if err != nil || !reflect.DeepEqual(f, g) {
		t.Fatalf("%v %v", g, err)
	}
	if _, err := ParseFooter(make([]byte, FooterSize)); !errors.Is(err, ErrNoFooter) {
		t.Fatal(err)
	}
}

// TestParseImageTooShort: an empty file, or one too short for a footer or
// a vbmeta header, says so in its own words (an empty file was "vbmeta of
// 0 bytes is shorter than its header").
func TestParseImageTooShort(t *testing.T) {
	for _, c := range []struct {
		b    string
		want string
	}{
		{"", "the file is empty: no AVB footer, no vbmeta blob"},
		{"AV", "no AVB footer and no vbmeta blob at the start"},
		{"xyzzy", "no AVB footer and no vbmeta blob at the start"},
	} {
		_, err := ParseImage(strings.NewReader(c.b), int64(len(c.b)))
		if err == nil || err.Error() != c.want || !errors.Is(err, verity.ErrInput) {
			t.Errorf("%q: %v, want %q", c.b, err, c.want)
		}
	}
}
