package veritycheck

// Android sparse images with an AVB footer (avbtool's sparse outputs, and
// img2simg of an image with FEC) are checked through their expansion.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// expandTo writes the expansion of the sparse image simg to raw (as
// simg2img does) and returns its SHA-256.
func expandTo(t *testing.T, simg, raw string) string {
	t.Helper()
	src, err := verity.OpenSource(simg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b := make([]byte, src.Size())
	if _, err := src.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sparseOffset returns the offset in the sparse file b of the byte at off
// in its expansion: in a RAW chunk, or a FILL chunk's pattern.
func sparseOffset(t *testing.T, b []byte, off uint64) int {
	t.Helper()
	hdrSize, chunkHdr := int(binary.LittleEndian.Uint16(b[8:])), int(binary.LittleEndian.Uint16(b[10:]))
	bs := uint64(binary.LittleEndian.Uint32(b[12:]))
	pos, start := hdrSize, uint64(0)
	for pos+chunkHdr <= len(b) {
		kind, blocks, total := binary.LittleEndian.Uint16(b[pos:]), uint64(binary.LittleEndian.Uint32(b[pos+4:])), int(binary.LittleEndian.Uint32(b[pos+8:]))
		if end := start + blocks*bs; off < end {
			switch kind {
			case 0xcac1:
				return pos + chunkHdr + int(off-start)
			case 0xcac2:
				return pos + chunkHdr + int(off%4)
			}
			t.Fatalf("byte %d of the expansion is in a chunk of type %#x", off, kind)
		}
		pos, start = pos+total, start+blocks*bs
	}
	t.Fatalf("byte %d is past the expansion", off)
	return 0
}

// sameReport requires the stdout of the check of the sparse image to be
// that of its raw twin, the paths aside.
func sameReport(t *testing.T, sparse, raw vcResult, sparsePath, rawPath string) {
	t.Helper()
	if s, r := strings.ReplaceAll(sparse.stdout, sparsePath, "IMAGE"), strings.ReplaceAll(raw.stdout, rawPath, "IMAGE"); s != r {
		t.Errorf("the sparse image's report differs from its raw twin's:\n%v\n%v", sparse, raw)
	}
}

// avbtool's sparse outputs verify with the same report as their raw twins
// (the raw-* cases, avbtool's output of the expanded input: their SHA-256
// from cases.tsv); a corrupted block is listed as in the twin (exit 1);
// --repair is refused, nothing written (exit 2). Before, the AVB check
// refused sparse images.
func TestAVBSparse(t *testing.T) {
	for _, c := range []struct{ name, twinSHA256, keyFlag string }{
		{"sparse-p0", "5eee0aecb55ec112eb30cc607aa8b6eb263a7d0e6544e35df203f1915ed5998e", ""},
		{"sparse-psize", "f6f5103c07b74fc75d8491a6b88db9bbaa57a1d91e56a522e5f7bd6dd53ecd8b", "--avb-key=" + filepath.Join(avbVectors, "keys/rsa2048.pub.pem")},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := os.ReadFile(filepath.Join(avbVectors, "full", c.name+".img"))
			if err != nil {
				t.Fatal(err)
			}
			simg, raw := filepath.Join(dir, "sparse.img"), filepath.Join(dir, "raw.img")
			os.WriteFile(simg, b, 0o644)
			if got := expandTo(t, simg, raw); got != c.twinSHA256 {
				t.Fatalf("%s expands to sha256 %s, not its raw twin's", c.name, got)
			}
			args := func(path string) []string {
				if c.keyFlag != "" {
					return []string{c.keyFlag, path}
				}
				return []string{path}
			}
			// sparse-p0 is unsigned: checked through, then exit 1 (libavb's
			// OK_NOT_SIGNED).
			code, what := 0, "verified: "
			if c.keyFlag == "" {
				code, what = 1, "not signed: "
			}
			rs := avbExpect(t, code, []string{what + "123 data blocks of 4096 bytes and 1 hash blocks match the root digest",
				"DATA " + simg + " is an Android sparse image of"}, args(simg)...)
			rr := avbExpect(t, code, nil, args(raw)...)
			sameReport(t, rs, rr, simg, raw)

			// Block 3 is a FILL chunk of one block (03030303): another
			// pattern corrupts it in the expansion.
			b[sparseOffset(t, b, 3*4096)] ^= 0x10
			os.WriteFile(simg, b, 0o644)
			expandTo(t, simg, raw)
			rs = avbExpect(t, 1, []string{"corrupted: data block 3 (byte 12288 of " + simg, "verification failed: 1 corrupted data block"}, args(simg)...)
			rr = avbExpect(t, 1, nil, args(raw)...)
			sameReport(t, rs, rr, simg, raw)

			avbExpect(t, 2, []string{"--repair: " + simg + " is an Android sparse image, and a repair cannot write into it", "simg2img " + simg}, "--repair", simg)
			if after, _ := os.ReadFile(simg); !bytes.Equal(after, b) {
				t.Error("the refused --repair changed the image")
			}
		})
	}
}

// An image with FEC made sparse by img2simg: intact it verifies; corrupted,
// the parity read from the expansion can rebuild the block, as in the raw
// image, and the hint says to expand it to repair; --repair is refused.
func TestAVBSparseFEC(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	m := avbMake(t, 64, true, nil)
	simg := filepath.Join(filepath.Dir(m.path), "system.simg")
	if out, err := exec.Command(img2simg, m.path, simg).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	rs := avbExpect(t, 0, []string{"verified: 64 data blocks", "FEC 2 roots"}, simg)
	rr := avbExpect(t, 0, nil, m.path)
	sameReport(t, rs, rr, simg, m.path)

	b, err := os.ReadFile(simg)
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(filepath.Dir(m.path), "expanded.img")
	at := sparseOffset(t, b, 10*4096+5)
	b[at] ^= 0x41
	os.WriteFile(simg, b, 0o644)
	expandTo(t, simg, raw)
	rs = avbExpect(t, 1, []string{"corrupted: data block 10", "repairable: data block 10", "the FEC parity can fix all of it",
		"expand it first (simg2img) and run veritycheck --repair on the expanded image"}, simg)
	rr = avbExpect(t, 1, []string{"run again with --repair"}, raw)
	sameReport(t, rs, rr, simg, raw)

	avbExpect(t, 2, []string{"is an Android sparse image, and a repair cannot write into it"}, "--repair", simg)
	if after, _ := os.ReadFile(simg); !bytes.Equal(after, b) {
		t.Error("the refused --repair changed the image")
	}
	// The expanded image is repaired as any other.
	avbExpect(t, 0, []string{"repaired: data block 10"}, "--repair", raw)
}
