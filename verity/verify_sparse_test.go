package verity

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSparse writes raw (a whole number of 4096-byte blocks) as an
// Android sparse image, as img2simg would: zero blocks as DONT_CARE, blocks
// of one 4-byte pattern as FILL, the others as RAW, one chunk per run.
func writeSparse(t testing.TB, path string, raw []byte) {
	t.Helper()
	const bs = 4096
	if len(raw)%bs != 0 {
		t.Fatalf("writeSparse: %d bytes is not a whole number of blocks", len(raw))
	}
	kind := func(b []byte) (uint16, uint32) {
		p := binary.LittleEndian.Uint32(b)
		for i := 4; i < len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:]) != p {
				return 0xcac1, 0
			}
		}
		if p == 0 {
			return 0xcac3, 0
		}
		return 0xcac2, p
	}
	var chunks bytes.Buffer
	n := 0
	for start := 0; start < len(raw)/bs; {
		k, p := kind(raw[start*bs : (start+1)*bs])
		end := start + 1
		for end < len(raw)/bs {
			if k2, p2 := kind(raw[end*bs : (end+1)*bs]); k2 != k || p2 != p {
				break
			}
			end++
		}
		hdr := make([]byte, 12)
		binary.LittleEndian.PutUint16(hdr, k)
		binary.LittleEndian.PutUint32(hdr[4:], uint32(end-start))
		switch k {
		case 0xcac1:
			binary.LittleEndian.PutUint32(hdr[8:], uint32(12+(end-start)*bs))
			chunks.Write(hdr)
			chunks.Write(raw[start*bs : end*bs])
		case 0xcac2:
			binary.LittleEndian.PutUint32(hdr[8:], 16)
			chunks.Write(hdr)
			chunks.Write(binary.LittleEndian.AppendUint32(nil, p))
		default:
			binary.LittleEndian.PutUint32(hdr[8:], 12)
			chunks.Write(hdr)
		}
		n++
		start = end
	}
	h := make([]byte, 28)
	binary.LittleEndian.PutUint32(h, 0xed26ff3a)
	binary.LittleEndian.PutUint16(h[4:], 1)
	binary.LittleEndian.PutUint16(h[8:], 28)
	binary.LittleEndian.PutUint16(h[10:], 12)
	binary.LittleEndian.PutUint32(h[12:], bs)
	binary.LittleEndian.PutUint32(h[16:], uint32(len(raw)/bs))
	binary.LittleEndian.PutUint32(h[20:], uint32(n))
	if err := os.WriteFile(path, append(h, chunks.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifySparseInPlace: an Android sparse DATA that is also HASH, with
// the tree (superblock included) at HashOffset and the parity past it in
// its expansion, is checked through the sparse reader: intact it verifies;
// a corrupted data block and a corrupted hash block are listed, and the
// parity, read from the expansion too, can repair them; Repair is refused
// with nothing written. Before, Verify refused any tree inside a sparse
// DATA.
func TestVerifySparseInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const bs, blocks = 4096, 64
	data := make([]byte, blocks*bs)
	rng := rand.NewChaCha8([32]byte{7})
	rng.Read(data[:20*bs])             // RAW
	for i := 40 * bs; i < 50*bs; i++ { // FILL; 20-39 DONT_CARE
		data[i] = 0x5a
	}
	rng.Read(data[50*bs:])
	rawPath, simgPath := filepath.Join(dir, "image.raw"), filepath.Join(dir, "image.img")
	if err := os.WriteFile(rawPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	hashOffset, fecOffset := uint64(blocks*bs), uint64(blocks*bs+16*bs)
	fr, err := Format(ctx, rawPath, rawPath, &FormatOptions{TreeOptions: TreeOptions{HashOffset: hashOffset}, HashOffsetSet: true,
		FECDevice: rawPath, FECOffset: fecOffset, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, make([]byte, (bs-len(raw)%bs)%bs)...) // whole sparse blocks
	opts := func() *VerifyOptions {
		return &VerifyOptions{TreeOptions: TreeOptions{HashOffset: hashOffset}, FECDevice: simgPath, FECOffset: fecOffset, MaxProblems: -1, Jobs: 2}
	}

	writeSparse(t, simgPath, raw)
	res, err := Verify(ctx, simgPath, simgPath, fr.RootHash, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.DataFormat != "android-sparse" || res.FEC == nil || !res.FEC.InHash || res.Geometry.DataBlocks != blocks {
		t.Fatalf("intact sparse image: %+v, %s, FEC %+v", res.Report, res.DataFormat, res.FEC)
	}
	res.Close()

	bad := bytes.Clone(raw)
	bad[5*bs+100] ^= 0x40             // data block 5
	bad[int(hashOffset)+bs+7] ^= 0x01 // the first block after the superblock: the only level of the tree
	writeSparse(t, simgPath, bad)
	res, err = Verify(ctx, simgPath, simgPath, fr.RootHash, opts())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	got := strings.Join(listProblems(t, res), "\n")
	if res.Verified || res.Report.CorruptDataBlocks != 1 || res.Report.CorruptHashBlocks != 1 ||
		!strings.Contains(got, "data 5 20480") || res.Repair == nil || !res.Repair.Whole() {
		t.Fatalf("corrupted sparse image: %+v\nproblems:\n%s\nrepair %+v", res.Report, got, res.Repair)
	}

	o := opts()
	o.Repair = true
	before, _ := os.ReadFile(simgPath)
	_, err = Verify(ctx, simgPath, simgPath, fr.RootHash, o)
	var ve *Error
	if !errors.As(err, &ve) || ve.Kind != KindInput || !strings.Contains(err.Error(), "cannot write into it") || !strings.Contains(ve.Hint, "simg2img") {
		t.Fatalf("Repair of a sparse image: err = %v", err)
	}
	if after, _ := os.ReadFile(simgPath); !bytes.Equal(after, before) {
		t.Fatal("the refused repair changed the sparse image")
	}
}
