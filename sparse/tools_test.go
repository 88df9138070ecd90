package sparse

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// rawImage returns an image of about blocks blocks of bs bytes (plus tail
// bytes) mixing random data, zeros, repeated 4-byte patterns and near
// misses (a pattern with one byte off), so img2simg writes RAW and FILL
// chunks.
func rawImage(rng *rand.Rand, blocks, bs, tail int) []byte {
	var img []byte
	for len(img) < blocks*bs {
		n := (1 + rng.IntN(6)) * bs
		switch rng.IntN(5) {
		case 0:
			img = append(img, randBytes(rng, n)...)
		case 1:
			img = append(img, make([]byte, n)...)
		case 2, 3:
			var p [4]byte
			binary.LittleEndian.PutUint32(p[:], []uint32{0xdeadbeef, 0x01010101, 0xffffffff, rng.Uint32()}[rng.IntN(4)])
			img = append(img, bytes.Repeat(p[:], n/4)...)
		case 4:
			r := bytes.Repeat([]byte{1, 2, 3, 4}, n/4)
			r[rng.IntN(n)] ^= 0x40
			img = append(img, r...)
		}
	}
	img = img[:blocks*bs]
	return append(img, randBytes(rng, tail)...)
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func openFile(t *testing.T, path string) *Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if !IsSparse(f) {
		t.Fatalf("%s: IsSparse is false", path)
	}
	im, err := Open(f, fi.Size())
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return im
}

// simg2img expands path with simg2img and returns the result.
func simg2img(t *testing.T, paths ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "expanded.raw")
	run(t, testtool.Require(t, "simg2img"), append(paths, out)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImg2simg converts raw images with img2simg (at several block sizes,
// including ones that are not powers of two and sizes that are not
// multiples of the block size), and checks that the expansion equals the
// raw image padded with zeros to whole blocks, that Extents match the
// data, and that simg2img expands the same file to the same bytes.
func TestImg2simg(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	testtool.Require(t, "simg2img")
	cases := []struct {
		bs           int // 0: img2simg's default, 4096
		blocks, tail int
	}{
		{0, 300, 0},
		{0, 100, 1234},
		{0, 0, 10},
		{1024, 700, 0},
		{1024, 200, 1000},
		{1028, 500, 3},
		{3072, 150, 100},
		{8192, 120, 8191},
		{65536, 20, 1},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("bs=%d/blocks=%d/tail=%d", c.bs, c.blocks, c.tail), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			bs := c.bs
			if bs == 0 {
				bs = 4096
			}
			raw := rawImage(rng, c.blocks, bs, c.tail)
			dir := t.TempDir()
			rawPath, simgPath := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
			if err := os.WriteFile(rawPath, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{rawPath, simgPath}
			if c.bs != 0 {
				args = append(args, strconv.Itoa(c.bs))
			}
			run(t, img2simg, args...)
			im := openFile(t, simgPath)
			if im.BlockSize() != bs {
				t.Fatalf("BlockSize = %d, want %d", im.BlockSize(), bs)
			}
			// img2simg pads the last partial block with zeros.
			padded := append(raw, make([]byte, (bs-len(raw)%bs)%bs)...)
			checkImage(t, im, padded, rng)
			if err := im.CheckCRC(); err != nil {
				t.Fatal(err)
			}
			if got := simg2img(t, simgPath); !bytes.Equal(got, padded) {
				t.Fatalf("simg2img's expansion (%d bytes) differs from ours (%d bytes) at byte %d", len(got), len(padded), firstDiff(got, padded))
			}
			kinds := map[Kind]int{}
			for _, e := range im.Extents() {
				kinds[e.Kind]++
			}
			t.Logf("%d bytes -> %d extents %v", len(raw), len(im.Extents()), kinds)
			if c.blocks >= 100 && (kinds[Raw] == 0 || kinds[Fill] == 0) {
				t.Fatalf("expected raw and fill extents, got %v", kinds)
			}
		})
	}
}

// TestSimg2simg splits a sparse image with simg2simg, whose pieces cover
// what other pieces hold with DONT_CARE chunks: each piece must expand as
// simg2img expands it, and the non-DONT_CARE extents of all pieces must
// put the original image back together.
func TestSimg2simg(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	simg2simg := testtool.Require(t, "simg2simg")
	rng := rand.New(rand.NewPCG(77, 78))
	const bs = 4096
	raw := rawImage(rng, 600, bs, 0)
	dir := t.TempDir()
	rawPath, simgPath := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(rawPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, img2simg, rawPath, simgPath)
	run(t, simg2simg, simgPath, filepath.Join(dir, "piece"), "300000")
	pieces, _ := filepath.Glob(filepath.Join(dir, "piece.*"))
	if len(pieces) < 2 {
		t.Fatalf("simg2simg wrote %d pieces", len(pieces))
	}
	joined := make([]byte, len(raw))
	dontCares := 0
	for _, p := range pieces {
		im := openFile(t, p)
		exp := simg2img(t, p)
		checkImage(t, im, exp, rng)
		buf := make([]byte, 0)
		for _, e := range im.Extents() {
			if e.Kind == DontCare {
				dontCares++
				continue
			}
			off, n := int64(e.Start)*bs, int(e.Blocks)*bs
			buf = append(buf[:0], make([]byte, n)...)
			if _, err := im.ReadAt(buf, off); err != nil {
				t.Fatal(err)
			}
			copy(joined[off:], buf)
		}
	}
	if dontCares == 0 {
		t.Fatal("no DONT_CARE extents in the pieces")
	}
	if !bytes.Equal(joined, raw) {
		t.Fatalf("joined pieces differ from the raw image at byte %d", firstDiff(joined, raw))
	}
	// simg2img writes the pieces over one another into the same output.
	if got := simg2img(t, pieces...); !bytes.Equal(got, raw) {
		t.Fatal("simg2img of all pieces differs from the raw image")
	}
}

// TestHandmadeWithSimg2img: simg2img agrees with us on hand-made files,
// including ones with CRC32 chunks, FILL and DONT_CARE chunks, larger
// headers and tiny block sizes.
func TestHandmadeWithSimg2img(t *testing.T) {
	testtool.Require(t, "simg2img")
	rng := rand.New(rand.NewPCG(5, 5))
	b1 := newBuilder(4096).raw(randBytes(rng, 8192)).crc().fill(0xdeadbeef, 3).dontCare(2).fill(0, 1).raw(randBytes(rng, 4096)).crc()
	b2 := newBuilder(1024)
	b2.fileHdrSz, b2.chunkHdrSz = 32, 16
	b2.raw(randBytes(rng, 2048)).fill(0x11223344, 2).crc().dontCare(1).raw(randBytes(rng, 1024))
	b3 := newBuilder(4).raw([]byte{1, 2, 3, 4}).fill(0xa1b2c3d4, 7).dontCare(5).raw([]byte{5, 6, 7, 8})
	for i, b := range []*builder{b1, b2, b3} {
		path := filepath.Join(t.TempDir(), "hand.simg")
		if err := os.WriteFile(path, b.bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		im := openFile(t, path)
		checkImage(t, im, b.want, rng)
		if err := im.CheckCRC(); err != nil {
			t.Fatal(err)
		}
		if got := simg2img(t, path); !bytes.Equal(got, b.want) {
			t.Fatalf("file %d: simg2img's expansion differs from ours at byte %d", i, firstDiff(got, b.want))
		}
	}
}
