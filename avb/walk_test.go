package avb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// walkAllocBound is what parsing a vbmeta blob (ParseVBMeta, every
// descriptor checked) and walking its descriptors' tags and bytes may
// allocate, whatever the blob holds: the header and the VBMeta (336 bytes
// here), or an error, and nothing per descriptor. A walk that kept an
// object per descriptor (as ParseVBMeta once did: 188 MB of RSS for a
// million of them) allocates about 64 bytes or more for each, past the
// bound from about 64 descriptors: the seeds hold hundreds.
const walkAllocBound = 4 << 10

// walkAll parses b and walks its descriptors, returning how many there are
// (-1 if b does not parse).
func walkAll(b []byte) int {
	v, err := ParseVBMeta(b)
	if err != nil {
		return -1
	}
	n := 0
	v.walk(func(tag uint64, raw []byte) bool {
		n++
		return true
	})
	return n
}

// allocated is what f allocates, in bytes (runtime.MemStats.TotalAlloc):
// the least of three runs on one P, since what other goroutines allocate
// meanwhile (the fuzzing engine's) is counted too.
func allocated(f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// FuzzVBMetaWalkMemory: parsing any bytes as a vbmeta and walking its
// descriptors allocates at most walkAllocBound, and the walk sees the
// descriptors the typed walk (Descriptors) decodes, as many as counted.
// Read as an image by ParseImageLenient, which follows damaged fields as
// avbtool does, the same bytes cost at most what they hold three times
// over (the strict attempt, the blob, the descriptors) and twice
// walkAllocBound (the errors of both readings), whatever sizes the fields
// declare.
func FuzzVBMetaWalkMemory(f *testing.F) {
	for _, b := range vectorBlobs(f) {
		f.Add(b)
	}
	for _, b := range lenientSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ln int
		if a := allocated(func() { ln = walkLenient(b) }); a > lenientAllocBound(b) {
			t.Fatalf("reading %d bytes leniently (%d descriptors) allocated %d bytes, more than %d", len(b), ln, a, lenientAllocBound(b))
		}
		var n int
		if a := allocated(func() { n = walkAll(b) }); a > walkAllocBound {
			t.Fatalf("parsing and walking %d bytes (%d descriptors) allocated %d bytes, more than %d", len(b), n, a, walkAllocBound)
		}
		if n < 0 {
			return
		}
		v, err := ParseVBMeta(b)
		if err != nil {
			t.Fatalf("parses once, not twice: %v", err)
		}
		typed := 0
		for d := range v.Descriptors() {
			if d == nil {
				t.Fatal("a nil descriptor")
			}
			typed++
		}
		if typed != n || v.NumDescriptors() != n {
			t.Fatalf("walked %d descriptors, decoded %d, counted %d", n, typed, v.NumDescriptors())
		}
	})
}

func lenientAllocBound(b []byte) uint64 { return 2*walkAllocBound + 3*uint64(len(b)) }

// walkLenient reads b as an image with ParseImageLenient and walks its
// descriptors, returning how many there are (-1 if it is refused).
func walkLenient(b []byte) int {
	img, err := ParseImageLenient(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return -1
	}
	n := 0
	img.VBMeta.walk(func(tag uint64, raw []byte) bool {
		n++
		return true
	})
	return n
}

// testBlob is an unsigned vbmeta blob holding the encoded descriptors.
func testBlob(descs []byte) []byte {
	h := &Header{RequiredLibavbMajor: 1, AuxiliaryBlockSize: roundUp(uint64(len(descs)), 64), DescriptorsSize: uint64(len(descs)),
		ReleaseString: ReleaseString}
	b := make([]byte, HeaderSize+h.AuxiliaryBlockSize)
	copy(b, h.Encode())
	copy(b[HeaderSize:], descs)
	return b
}

// manyUnknown is n descriptors of an unknown tag and no body: 16 bytes
// each, the most a vbmeta holds (a million in 16 MiB).
func manyUnknown(n int) []byte {
	b := make([]byte, 16*n)
	for o := 0; o < len(b); o += 16 {
		binary.BigEndian.PutUint64(b[o:], 99)
	}
	return b
}

// The shapes of the worst vbmetas, small: the seeds of
// FuzzVBMetaWalkMemory (testdata/fuzz), written by
// TestWriteWalkSeeds.
func walkSeeds() map[string][]byte {
	rep := func(n int, d Descriptor) []byte { return bytes.Repeat(d.Encode(), n) }
	var hashtrees []byte
	for i := range 64 {
		hashtrees = append(hashtrees, (&HashtreeDescriptor{DMVerityVersion: 1, HashAlgorithm: "sha256", PartitionName: fmt.Sprintf("p%05d", i)}).Encode()...)
	}
	mixed := slices.Concat(rep(100, &PropertyDescriptor{Key: "k", Value: []byte("v")}), manyUnknown(300), rep(100, &KernelCmdlineDescriptor{Cmdline: "x"}))
	cut := testBlob(manyUnknown(512))
	binary.BigEndian.PutUint64(cut[HeaderSize+511*16+8:], 1) // the last one goes past the area
	return map[string][]byte{
		"million-shape":   testBlob(manyUnknown(512)),
		"properties":      testBlob(rep(256, &PropertyDescriptor{Key: "k", Value: []byte("v")})),
		"hashtrees":       testBlob(hashtrees),
		"kernel-cmdlines": testBlob(rep(256, &KernelCmdlineDescriptor{Cmdline: "x"})),
		"mixed":           testBlob(mixed),
		"last-cut":        cut,
	}
}

// TestWriteWalkSeeds writes the seeds into testdata/fuzz when
// AVB_WRITE_SEEDS=1; otherwise it checks that the committed ones are
// those walkSeeds makes.
func TestWriteWalkSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzVBMetaWalkMemory")
	for name, b := range walkSeeds() {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		path := filepath.Join(dir, name)
		if os.Getenv("AVB_WRITE_SEEDS") == "1" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not the seed walkSeeds makes (AVB_WRITE_SEEDS=1 go test -run TestWriteWalkSeeds ./avb writes it): %v", path, err)
		}
	}
}

// The worst vbmeta, a million descriptors of 16 bytes in 16 MiB: read,
// parsed and walked in its own bytes and walkAllocBound more; its info
// text (about 70 MB) written as the walk goes. Before, parsing it kept a
// million descriptors (188 MB of RSS in veritycheck). -short takes a
// sixteenth of it, 1 MiB (a whole number of pages, as 16 MiB: a blob just
// past one is rounded up by more than the bound): 65,536 descriptors are
// already far past what the bound allows one object each (about 64), and
// the pass over the million costs tens of seconds under -race.
func TestWorstVBMetaWalkMemory(t *testing.T) {
	size := MaxVBMetaSize
	if testing.Short() {
		size /= 16
	}
	n := (size - HeaderSize) / 16
	blob := testBlob(manyUnknown(n))
	if len(blob) > MaxVBMetaSize {
		t.Fatalf("blob of %d bytes", len(blob))
	}
	var got int
	if a := allocated(func() { got = walkAll(blob) }); a > walkAllocBound || got != n {
		t.Fatalf("%d descriptors walked, %d bytes allocated; want %d, at most %d", got, a, n, walkAllocBound)
	}
	var v *VBMeta
	r := bytes.NewReader(blob)
	if a := allocated(func() { v, _ = ReadVBMeta(r, 0, uint64(len(blob))) }); v == nil || a > uint64(len(blob))+walkAllocBound {
		t.Fatalf("ReadVBMeta allocated %d bytes for a blob of %d", a, len(blob))
	}
	// The text is written as it is made, in pieces of the writer's
	// buffer, never whole.
	w := &countingWriter{}
	if err := (&Image{VBMeta: v}).WriteInfo(w); err != nil {
		t.Fatal(err)
	}
	if w.n < 60*n || w.largest > 64<<10 {
		t.Fatalf("info text of %d bytes written in pieces of up to %d bytes", w.n, w.largest)
	}
}

// countingWriter counts what it is given, and its largest piece.
type countingWriter struct{ n, largest int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.largest = max(w.largest, len(p))
	return len(p), nil
}

// The million descriptors' info text is avbtool's, descriptor by
// descriptor (its lines for an unknown descriptor of no data).
func TestInfoOfManyDescriptors(t *testing.T) {
	v, err := ParseVBMeta(testBlob(manyUnknown(3)))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := (&Image{VBMeta: v}).WriteInfo(&b); err != nil {
		t.Fatal(err)
	}
	one := "    Unknown descriptor:\n      Tag:  99\n      Data: \"b''\" (0 bytes)\n"
	if !strings.HasSuffix(b.String(), "Descriptors:\n"+strings.Repeat(one, 3)) {
		t.Fatalf("got\n%s", b.String())
	}
}
