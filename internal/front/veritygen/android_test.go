package veritygen

// Android sparse images as DATA: the tree is that of the expanded image,
// against img2simg/simg2img/simg2simg and veritysetup; FILL and DONT_CARE
// chunks map to known runs; malformed images are one clear error.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/sparse"
)

// andrSparse writes Android sparse files by hand and keeps the image they
// expand to.
type andrSparse struct {
	bs     int
	body   []byte
	chunks int
	want   []byte
}

func (s *andrSparse) chunk(typ uint16, blocks int, data []byte) *andrSparse {
	h := make([]byte, 12)
	binary.LittleEndian.PutUint16(h[0:], typ)
	binary.LittleEndian.PutUint32(h[4:], uint32(blocks))
	binary.LittleEndian.PutUint32(h[8:], uint32(12+len(data)))
	s.body = append(append(s.body, h...), data...)
	s.chunks++
	return s
}

func (s *andrSparse) raw(data []byte) *andrSparse {
	s.want = append(s.want, data...)
	return s.chunk(sparse.ChunkRaw, len(data)/s.bs, data)
}

func (s *andrSparse) fill(pattern uint32, blocks int) *andrSparse {
	p := binary.LittleEndian.AppendUint32(nil, pattern)
	s.want = append(s.want, bytes.Repeat(p, blocks*s.bs/4)...)
	return s.chunk(sparse.ChunkFill, blocks, p)
}

func (s *andrSparse) dontCare(blocks int) *andrSparse {
	s.want = append(s.want, make([]byte, blocks*s.bs)...)
	return s.chunk(sparse.ChunkDontCare, blocks, nil)
}

func (s *andrSparse) crc(value uint32) *andrSparse {
	return s.chunk(sparse.ChunkCRC32, 0, binary.LittleEndian.AppendUint32(nil, value))
}

// bytes returns the file, with imageCRC in the header.
func (s *andrSparse) bytes(imageCRC uint32) []byte {
	h := make([]byte, 28)
	le := binary.LittleEndian
	le.PutUint32(h[0:], sparse.Magic)
	le.PutUint16(h[4:], 1)
	le.PutUint16(h[8:], 28)
	le.PutUint16(h[10:], 12)
	le.PutUint32(h[12:], uint32(s.bs))
	le.PutUint32(h[16:], uint32(len(s.want)/s.bs))
	le.PutUint32(h[20:], uint32(s.chunks))
	le.PutUint32(h[24:], imageCRC)
	return append(h, s.body...)
}

func andrRandom(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// andrRawImage returns about blocks blocks of bs bytes of random data,
// zeros, repeated 4-byte patterns (img2simg turns runs of them into FILL
// chunks) and near misses, plus tail bytes.
func andrRawImage(rng *rand.Rand, blocks, bs, tail int) []byte {
	var img []byte
	for len(img) < blocks*bs {
		n := (1 + rng.IntN(40)) * bs / (1 + rng.IntN(4))
		n -= n % 4
		switch rng.IntN(5) {
		case 0:
			img = append(img, andrRandom(rng, n)...)
		case 1:
			img = append(img, make([]byte, n)...)
		case 2, 3:
			p := binary.LittleEndian.AppendUint32(nil, []uint32{0xdeadbeef, 0x01010101, rng.Uint32()}[rng.IntN(3)])
			img = append(img, bytes.Repeat(p, n/4)...)
		case 4:
			r := bytes.Repeat([]byte{1, 2, 3, 4}, n/4)
			if n > 0 {
				r[rng.IntN(n)] ^= 0x40
			}
			img = append(img, r...)
		}
	}
	return append(img[:blocks*bs], andrRandom(rng, tail)...)
}

func andrExec(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// andrTree runs veritygen with fixed salt and UUID and returns the JSON
// report; the tree is in hash.
func andrTree(t *testing.T, data, hash string, extra ...string) map[string]any {
	t.Helper()
	args := append([]string{"--json", "--salt=" + cliSalt, "--uuid=" + cliUUID}, extra...)
	return cliJSON(t, cliOK(t, append(args, data, hash)...).stdout)
}

// andrSameFiles fails unless two files hold the same bytes.
func andrSameFiles(t *testing.T, a, b string) {
	t.Helper()
	x, y := fronttest.Read(t, a), fronttest.Read(t, b)
	if !bytes.Equal(x, y) {
		i := 0
		for i < min(len(x), len(y)) && x[i] == y[i] {
			i++
		}
		t.Errorf("%s (%d bytes) and %s (%d bytes) differ from byte %d", a, len(x), b, len(y), i)
	}
}

// TestAndroidSparseMatchesRaw: a raw image and its img2simg conversion (at
// several sparse block sizes, some smaller and some larger than the data
// block, sizes not a multiple of the block) give the same tree and root.
func TestAndroidSparseMatchesRaw(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	for i, c := range []struct {
		sbs, blocks, tail int // sparse block size 0: img2simg's default 4096
		extra             []string
	}{
		{0, 700, 0, nil},
		{0, 300, 1000, []string{"--data-block-size=512", "--hash-block-size=1024"}},
		{1024, 900, 0, nil},
		{1024, 2000, 512, []string{"--data-block-size=512", "--hash=sha1"}},
		{8192, 150, 4096, nil}, // a 4096-byte tail padded to a whole 8192-byte sparse block
		{65536, 40, 0, []string{"--format=0", "--hash=sha512", "--jobs=1"}},
	} {
		t.Run(fmt.Sprintf("sbs=%d/blocks=%d/tail=%d%s", c.sbs, c.blocks, c.tail, strings.Join(c.extra, "")), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			sbs := c.sbs
			if sbs == 0 {
				sbs = 4096
			}
			dir := t.TempDir()
			raw, simg := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
			img := andrRawImage(rng, c.blocks, sbs, c.tail)
			if err := os.WriteFile(raw, img, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{raw, simg}
			if c.sbs != 0 {
				args = append(args, strconv.Itoa(c.sbs))
			}
			andrExec(t, img2simg, args...)
			// img2simg pads the last partial block with zeros: the raw
			// side gets the same padding.
			if pad := (sbs - len(img)%sbs) % sbs; pad > 0 {
				if err := os.WriteFile(raw, append(img, make([]byte, pad)...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mr := andrTree(t, raw, filepath.Join(dir, "raw.verity"), c.extra...)
			ms := andrTree(t, simg, filepath.Join(dir, "sparse.verity"), c.extra...)
			andrSameFiles(t, filepath.Join(dir, "raw.verity"), filepath.Join(dir, "sparse.verity"))
			for _, k := range []string{"root_hash", "data_blocks", "uncovered_bytes"} {
				if fmt.Sprint(mr[k]) != fmt.Sprint(ms[k]) {
					t.Errorf("%s: raw %v, sparse %v", k, mr[k], ms[k])
				}
			}
			if f := cliString(t, ms, "data_format"); f != "android-sparse" {
				t.Errorf("data_format = %q, want android-sparse", f)
			}
			if f := cliString(t, mr, "data_format"); f != "raw" {
				t.Errorf("raw data_format = %q, want raw", f)
			}
			// The image really has FILL chunks for the runs to be tested.
			f, _ := os.Open(simg)
			defer f.Close()
			info, _ := f.Stat()
			im, err := sparse.Open(f, info.Size())
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[sparse.Kind]int{}
			for _, e := range im.Extents() {
				kinds[e.Kind]++
			}
			if kinds[sparse.Fill] == 0 {
				t.Errorf("img2simg wrote no FILL chunk: %v", kinds)
			}
		})
	}
}

// TestAndroidSparseVsVeritysetup: the tree of a sparse image is byte for
// byte veritysetup's tree of the simg2img expansion, also for the pieces
// simg2simg splits an image into (each a whole image with DONT_CARE
// chunks where the other pieces hold the data).
func TestAndroidSparseVsVeritysetup(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	img2simg := testtool.Require(t, "img2simg")
	simg2img := testtool.Require(t, "simg2img")
	simg2simg := testtool.Require(t, "simg2simg")
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	raw, simg := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(raw, andrRawImage(rng, 1500, 4096, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	andrExec(t, img2simg, raw, simg)
	info, err := os.Stat(simg)
	if err != nil {
		t.Fatal(err)
	}
	andrExec(t, simg2simg, simg, filepath.Join(dir, "piece"), fmt.Sprint(info.Size()/3))
	pieces, _ := filepath.Glob(filepath.Join(dir, "piece.*"))
	if len(pieces) < 2 {
		t.Fatalf("simg2simg wrote %d pieces", len(pieces))
	}
	dontCares := 0
	for _, img := range append([]string{simg}, pieces...) {
		name := filepath.Base(img)
		t.Run(name, func(t *testing.T) {
			f, _ := os.Open(img)
			info, _ := f.Stat()
			im, err := sparse.Open(f, info.Size())
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range im.Extents() {
				if e.Kind == sparse.DontCare {
					dontCares++
				}
			}
			expanded := filepath.Join(dir, name+".raw")
			andrExec(t, simg2img, img, expanded)
			for _, extra := range [][]string{nil, {"--no-superblock", "--hash=sha1", "--salt=-", "--data-block-size=1024"}} {
				ours, theirs := filepath.Join(dir, name+".ours"), filepath.Join(dir, name+".theirs")
				os.Remove(ours)
				os.Remove(theirs)
				m := andrTree(t, img, ours, extra...)
				args := append([]string{"format", "--salt=" + cliSalt, "--uuid=" + cliUUID}, extra...)
				out := andrExec(t, vs, append(args, expanded, theirs)...)
				andrSameFiles(t, ours, theirs)
				if root := cliString(t, m, "root_hash"); !strings.Contains(out, "Root hash:      \t"+root+"\n") {
					t.Errorf("root %s, veritysetup said:\n%s", root, out)
				}
			}
		})
	}
	if dontCares == 0 {
		t.Error("no piece has a DONT_CARE chunk")
	}
}

// TestAndroidSparseHandmade: sparse block sizes smaller than the data block
// with FILL and DONT_CARE extents that begin and end inside data blocks,
// adjacent FILL 0 and DONT_CARE, CRC32 chunks: the tree is the raw
// expansion's.
func TestAndroidSparseHandmade(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &andrSparse{bs: 1024}
	s.raw(andrRandom(rng, 3*1024)).fill(0xdeadbeef, 9).dontCare(3).fill(0, 6).dontCare(13)
	s.fill(0x01020304, 4).fill(0x01020304, 5).raw(andrRandom(rng, 1024)).fill(0xffffffff, 2)
	s.crc(crc32.ChecksumIEEE(s.want)).dontCare(40).raw(andrRandom(rng, 2048)).fill(7, 41).raw(andrRandom(rng, 1024))
	dir := t.TempDir()
	simg, raw := filepath.Join(dir, "hand.simg"), filepath.Join(dir, "hand.raw")
	if err := os.WriteFile(simg, s.bytes(crc32.ChecksumIEEE(s.want)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, s.want, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--data-block-size=512"}, {"--data-block-size=2048", "--jobs=1"}} {
		ms := andrTree(t, simg, filepath.Join(dir, "s.verity"), extra...)
		mr := andrTree(t, raw, filepath.Join(dir, "r.verity"), extra...)
		andrSameFiles(t, filepath.Join(dir, "s.verity"), filepath.Join(dir, "r.verity"))
		if ms["root_hash"] != mr["root_hash"] || ms["uncovered_bytes"] != mr["uncovered_bytes"] {
			t.Errorf("%v: sparse %v/%v, raw %v/%v", extra, ms["root_hash"], ms["uncovered_bytes"], mr["root_hash"], mr["uncovered_bytes"])
		}
	}
}

// TestAndroidSparseFEC: error correction over a sparse image's data is
// that over its expansion.
func TestAndroidSparseFEC(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	s := &andrSparse{bs: 4096}
	s.raw(andrRandom(rng, 40960)).dontCare(300).fill(0x5a5a5a5a, 100).raw(andrRandom(rng, 8192))
	dir := t.TempDir()
	simg, raw := filepath.Join(dir, "f.simg"), filepath.Join(dir, "f.raw")
	if err := os.WriteFile(simg, s.bytes(0), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, s.want, 0o644); err != nil {
		t.Fatal(err)
	}
	andrTree(t, simg, filepath.Join(dir, "s.verity"), "--fec-device="+filepath.Join(dir, "s.fec"), "--fec-roots=7")
	andrTree(t, raw, filepath.Join(dir, "r.verity"), "--fec-device="+filepath.Join(dir, "r.fec"), "--fec-roots=7")
	andrSameFiles(t, filepath.Join(dir, "s.verity"), filepath.Join(dir, "r.verity"))
	andrSameFiles(t, filepath.Join(dir, "s.fec"), filepath.Join(dir, "r.fec"))
	// Parity cannot go into the sparse file itself.
	res := cliRun(t, t.Context(), "--fec-device="+simg, "--fec-offset=4194304", simg, filepath.Join(dir, "x.verity"))
	if res.code != 2 || !strings.Contains(res.stderr, "is an Android sparse image: error correction cannot go inside it") {
		t.Errorf("exit %d:\n%s", res.code, res.stderr)
	}
}

// TestAndroidSparseErrors: malformed and unsuitable sparse images.
func TestAndroidSparseErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	good := func() *andrSparse {
		s := &andrSparse{bs: 4096}
		return s.raw(andrRandom(rng, 8192)).fill(0x11223344, 3).dontCare(2).raw(andrRandom(rng, 4096))
	}
	g := good()
	file := g.bytes(0)
	truncated := file[:len(file)-100]
	badType := slices.Clone(file)
	binary.LittleEndian.PutUint16(badType[28+12+8192:], 0xcac9) // the FILL chunk's type
	badCRC := good()
	badCRC.crc(12345)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		extra []string
		inDir bool // HASH is DATA
		want  string
		hint  string
	}{
		{"truncated", truncated, nil, false,
			"is a malformed Android sparse image: chunk 3 (byte 8260): RAW chunk of 4108 bytes runs past the end of the file", "add --raw"},
		{"unknown chunk type", badType, nil, false,
			"is a malformed Android sparse image: chunk 1 (byte 8232): unknown chunk type 0xcac9", "add --raw"},
		{"header only", file[:20], nil, false,
			"is a malformed Android sparse image: header (byte 0): file is 20 bytes, shorter than the 28-byte sparse header", "add --raw"},
		{"bad CRC32 chunk", badCRC.bytes(0), nil, false,
			"is an Android sparse image whose checksum does not match: chunk 4 (byte 12368): CRC32 chunk holds 0x00003039, but the first 32768 bytes", ""},
		{"bad image CRC", good().bytes(1), nil, false,
			"is an Android sparse image whose checksum does not match: header (byte 24): header's image CRC32 is 0x00000001, but the 32768-byte expanded image", ""},
		{"tree inside", file, []string{"--hash-offset=65536"}, true,
			"is an Android sparse image: a tree cannot go inside it", "simg2img"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := write(strings.ReplaceAll(tc.name, " ", "_")+".simg", tc.data)
			before := cliFileState(t, data)
			args := append([]string{}, tc.extra...)
			args = append(args, data)
			hash := data + ".verity"
			if tc.inDir {
				args = append(args, data)
			}
			res := cliRun(t, t.Context(), args...)
			if res.code != 2 {
				t.Fatalf("exit %d, want 2", res.code)
			}
			lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
			if want := "veritygen: error: DATA " + data + " " + tc.want; !strings.HasPrefix(lines[0], want) {
				t.Errorf("error line\n%s\nwant it to start with\n%s", lines[0], want)
			}
			if tc.hint != "" && (len(lines) < 2 || !strings.Contains(lines[1], tc.hint)) {
				t.Errorf("no hint with %q:\n%s", tc.hint, res.stderr)
			}
			if after := cliFileState(t, data); after != before {
				t.Error("DATA changed")
			}
			if _, err := os.Stat(hash); err == nil {
				t.Error("a tree was written")
			}
		})
	}

	t.Run("--raw reads the sparse file as it is", func(t *testing.T) {
		data := write("raw.simg", truncated)
		m := andrTree(t, data, data+".verity", "--raw")
		if cliString(t, m, "data_format") != "raw" || cliUint(t, m, "data_blocks") != uint64(len(truncated)/4096) {
			t.Errorf("--raw: %v", m)
		}
		salt, _ := hex.DecodeString(cliSalt)
		root, _ := cliRefTree(truncated, 4096, 4096, salt)
		if got := cliString(t, m, "root_hash"); got != fmt.Sprintf("%x", root) {
			t.Errorf("--raw root %s, want the raw bytes' %x", got, root)
		}
	})

	t.Run("bytes after the last chunk", func(t *testing.T) {
		data := write("trailing.simg", append(slices.Clone(file), 1, 2, 3))
		res := cliOK(t, "--salt="+cliSalt, data)
		if want := fmt.Sprintf("veritygen: warning: DATA %s has 3 bytes after its last sparse chunk; they are ignored", data); !strings.HasPrefix(res.stderr, want) {
			t.Errorf("stderr:\n%s\nwant a line starting with\n%s", res.stderr, want)
		}
	})
}
