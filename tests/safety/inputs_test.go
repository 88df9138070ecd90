package safety_test

// Makers of the attacks' inputs, all made on the fly in the test's
// directory.

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Fixed tree parameters, so that two runs give the same bytes.
const (
	salt = "5afe5afe00112233445566778899aabbccddeeff00112233445566778899aabb"
	uuid = "5afe0000-1111-4222-8333-444455556666"
	mib  = 1 << 20
)

// randomFile writes size pseudo-random bytes (from seed) to dir/name.
func randomFile(t *testing.T, dir, name string, size int, seed uint64) []byte {
	t.Helper()
	b := make([]byte, size)
	rng := rand.New(rand.NewPCG(seed, 0x5afe))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	writeFile(t, dir, name, b)
	return b
}

func writeFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ext4Image writes an image that any tool takes for ext2/3/4: random bytes
// with the superblock magic 0xEF53 at byte 1080.
func ext4Image(t *testing.T, dir, name string, size int, seed uint64) {
	t.Helper()
	b := randomFile(t, dir, name, size, seed)
	binary.LittleEndian.PutUint16(b[1080:], 0xEF53)
	writeFile(t, dir, name, b)
}

// avbImage writes an image with an Android Verified Boot footer ("AVBf" at
// the start of the last 64 bytes), as avbtool leaves at the end of a
// partition image.
func avbImage(t *testing.T, dir, name string, size int, seed uint64) {
	t.Helper()
	b := randomFile(t, dir, name, size, seed)
	copy(b[len(b)-64:], "AVBf")
	writeFile(t, dir, name, b)
}

// Android sparse chunk types.
const (
	chunkRaw      = 0xCAC1
	chunkFill     = 0xCAC2
	chunkDontCare = 0xCAC3
)

// sparseImage builds an Android sparse image chunk by chunk.
type sparseImage struct {
	bs     uint32
	blocks uint32
	chunks uint32
	body   bytes.Buffer
}

func (s *sparseImage) chunk(typ uint16, blocks uint32, data []byte) *sparseImage {
	var h [12]byte
	binary.LittleEndian.PutUint16(h[0:], typ)
	binary.LittleEndian.PutUint32(h[4:], blocks)
	binary.LittleEndian.PutUint32(h[8:], uint32(12+len(data)))
	s.body.Write(h[:])
	s.body.Write(data)
	s.blocks += blocks
	s.chunks++
	return s
}

func (s *sparseImage) fill(blocks uint32, pattern uint32) *sparseImage {
	return s.chunk(chunkFill, blocks, binary.LittleEndian.AppendUint32(nil, pattern))
}

func (s *sparseImage) bytes() []byte {
	var h [28]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], 0xed26ff3a)
	le.PutUint16(h[4:], 1)
	le.PutUint16(h[8:], 28)
	le.PutUint16(h[10:], 12)
	le.PutUint32(h[12:], s.bs)
	le.PutUint32(h[16:], s.blocks)
	le.PutUint32(h[20:], s.chunks)
	return append(h[:], s.body.Bytes()...)
}

// manyChunks is the memory attack: n one-block FILL chunks of
// alternating patterns, which no reader can merge (16 bytes each).
func manyChunks(n int) []byte {
	s := &sparseImage{bs: 4096}
	s.body.Grow(n * 16)
	for i := range n {
		s.fill(1, 0x11111111*uint32(1+i%2))
	}
	return s.bytes()
}

// run runs one of the commands to make an attack's inputs, and fails the
// test unless it succeeds.
func run(t *testing.T, dir, prog string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bins[prog], args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("setup: %s %s: %v\n%s", prog, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// lock holds an exclusive flock on dir/name until the test ends, as
// another veritygen writing it would.
func lock(t *testing.T, dir, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
}

// flipBytes inverts n bytes of dir/name from off.
func flipBytes(t *testing.T, dir, name string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, dir, from, to string) {
	t.Helper()
	writeFile(t, dir, to, readFile(t, dir, from))
}
