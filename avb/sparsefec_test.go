package avb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// sparseFECImage is a test image: raw, the sparse file img2simg makes of
// it, with a DONT_CARE region and a RAW chunk appended by hand (img2simg
// writes zeros as FILL chunks), and rawBlock, a data block held in a RAW
// chunk of the sparse file.
type sparseFECImage struct {
	name         string
	raw, simg    string
	rawBlock     uint64
	wantDontCare bool
}

// makeSparseFECImage writes raw blocks (random, zeros, a fill pattern),
// then dontCare blocks of zeros and tail random blocks that only the
// sparse file holds as DONT_CARE and RAW chunks; raw gets the expansion,
// made by simg2img.
func makeSparseFECImage(t *testing.T, dir, name string, random, zeros, fill, dontCare, tail int) sparseFECImage {
	t.Helper()
	img2simg, simg2img := testtool.Require(t, "img2simg"), testtool.Require(t, "simg2img")
	rng := rand.NewChaCha8([32]byte{byte(random), byte(zeros), byte(fill), byte(tail)})
	data := make([]byte, (random+zeros+fill)*4096)
	rng.Read(data[:random*4096])
	for i := (random + zeros) * 4096; i < len(data); i++ {
		data[i] = 0x5a
	}
	im := sparseFECImage{name: name, raw: filepath.Join(dir, name+".img"), simg: filepath.Join(dir, name+".simg"), wantDontCare: dontCare > 0}
	head := filepath.Join(dir, name+".head")
	if err := os.WriteFile(head, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img2simg, head, im.simg).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	if dontCare > 0 || tail > 0 {
		f, err := os.OpenFile(im.simg, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		sw, err := openSparseWriter(f)
		if err != nil {
			t.Fatal(err)
		}
		if dontCare > 0 {
			if err := sw.appendDontCare(uint64(dontCare) * sw.blk); err != nil {
				t.Fatal(err)
			}
		}
		if tail > 0 {
			b := make([]byte, tail*4096)
			rng.Read(b)
			if err := sw.appendRaw(b); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	if out, err := exec.Command(simg2img, im.simg, im.raw).CombinedOutput(); err != nil {
		t.Fatalf("simg2img: %v\n%s", err, out)
	}
	im.rawBlock = uint64(random / 2)
	if random == 0 {
		im.rawBlock = uint64(random + zeros + fill + dontCare)
	}
	return im
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// sparseChunkTypes counts the chunks of a sparse file by type.
func sparseChunkTypes(t *testing.T, b []byte) map[uint16]int {
	t.Helper()
	le := binary.LittleEndian
	n := map[uint16]int{}
	pos := int(le.Uint16(b[8:]))
	for i := uint32(0); i < le.Uint32(b[20:]); i++ {
		n[le.Uint16(b[pos:])]++
		pos += int(le.Uint32(b[pos+8:]))
	}
	if pos != len(b) {
		t.Fatalf("chunks end at %d of %d bytes", pos, len(b))
	}
	return n
}

// AddHashtreeFooter with FEC on an Android sparse image: the expansion of
// its sparse output is byte for byte its output on the expanded input
// (whose FEC path is checked against veritysetup and the kernel), the
// output stays sparse (its FILL and DONT_CARE chunks kept, the tree and
// the parity appended as RAW chunks), a rerun gives the same file, and the
// check through the expansion verifies it and plans the repair of a block
// corrupted in a RAW chunk. Before, FEC on a sparse image was refused.
func TestAddHashtreeFooterSparseFEC(t *testing.T) {
	simg2img := testtool.Require(t, "simg2img")
	dir := t.TempDir()
	images := []sparseFECImage{
		makeSparseFECImage(t, dir, "mixed", 40, 64, 16, 100, 3),
		makeSparseFECImage(t, dir, "rounds", 600, 10, 200, 300, 1), // several FEC rounds at 8 roots
		makeSparseFECImage(t, dir, "one-block", 1, 0, 0, 0, 0),     // no tree: the parity covers the data only
	}
	for _, im := range images {
		input, err := os.ReadFile(im.simg)
		if err != nil {
			t.Fatal(err)
		}
		rawInput, err := os.ReadFile(im.raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, roots := range []int{2, 8} {
			for _, psize := range []uint64{0, 8 << 20} {
				if testing.Short() && (roots == 8) != (psize != 0) {
					continue // -short: roots 2 unpartitioned, roots 8 in a partition
				}
				t.Run(fmt.Sprintf("%s/roots-%d/psize-%d", im.name, roots, psize), func(t *testing.T) {
					sub := t.TempDir()
					simg, raw := filepath.Join(sub, "system.simg"), filepath.Join(sub, "system.img")
					os.WriteFile(simg, input, 0o644)
					os.WriteFile(raw, rawInput, 0o644)
					opts := func() *HashtreeFooterOptions {
						return &HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256", Salt: []byte("salt"),
							FEC: true, FECRoots: roots, PartitionSize: psize}
					}
					made := checkSparseFECOutput(t, simg2img, im, raw, simg, opts)
					if _, err := AddHashtreeFooter(context.Background(), simg, opts()); err != nil {
						t.Fatal(err)
					}
					if again, _ := os.ReadFile(simg); !bytes.Equal(again, made) {
						t.Fatal("a rerun on the sparse output changed it")
					}
					checkSparseFECRepair(t, im, simg, made, roots)
				})
			}
		}
	}
}

// checkSparseFECOutput adds the footer of opts to the raw image and to the
// sparse one, checks that the sparse output expands to the raw one and
// stays sparse, and returns it.
func checkSparseFECOutput(t *testing.T, simg2img string, im sparseFECImage, raw, simg string, opts func() *HashtreeFooterOptions) []byte {
	t.Helper()
	rr, err := AddHashtreeFooter(context.Background(), raw, opts())
	if err != nil {
		t.Fatal(err)
	}
	sr, err := AddHashtreeFooter(context.Background(), simg, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !sr.Sparse || sr.Size != rr.Size || !bytes.Equal(sr.VBMeta, rr.VBMeta) {
		t.Fatalf("sparse result %+v, raw %+v", sr, rr)
	}
	if d := sr.Descriptor; d.FECNumRoots != uint32(opts().FECRoots) || d.FECSize == 0 || d.FECOffset != d.TreeOffset+d.TreeSize {
		t.Fatalf("descriptor %+v", d)
	}
	expanded := filepath.Join(filepath.Dir(simg), "expanded.img")
	if out, err := exec.Command(simg2img, simg, expanded).CombinedOutput(); err != nil {
		t.Fatalf("simg2img: %v\n%s", err, out)
	}
	if got, want := fileSHA256(t, expanded), fileSHA256(t, raw); got != want {
		t.Fatalf("the sparse output expands to %s, the raw output is %s", got, want)
	}
	made, _ := os.ReadFile(simg)
	rawInput, err := os.Stat(im.raw)
	if err != nil {
		t.Fatal(err)
	}
	types := sparseChunkTypes(t, made)
	if types[chunkRaw] == 0 || im.wantDontCare && types[chunkDontCare] == 0 || int64(len(made)) >= rawInput.Size() && im.name != "one-block" {
		t.Fatalf("sparse output of %d bytes, chunks %v", len(made), types)
	}
	return made
}

// checkSparseFECRepair checks the sparse output made through its
// expansion: it verifies, and a block corrupted in a RAW chunk is found
// and its repair planned.
func checkSparseFECRepair(t *testing.T, im sparseFECImage, simg string, made []byte, roots int) {
	t.Helper()
	img, res, got := verifySparseReport(t, simg, nil)
	if !img.Sparse || !res.Verified || res.FEC == nil || res.FEC.Roots != roots {
		t.Fatalf("check of the sparse output: %s", got)
	}
	corrupt := append([]byte{}, made...)
	corrupt[sparseOffset(t, corrupt, im.rawBlock*4096+7)] ^= 0x40
	os.WriteFile(simg, corrupt, 0o644)
	_, res, got = verifySparseReport(t, simg, &verity.VerifyOptions{MaxProblems: -1})
	if res.Verified || res.Report.CorruptDataBlocks != 1 || res.Repair == nil || !res.Repair.Whole() ||
		!strings.Contains(got, fmt.Sprintf("data block %d", im.rawBlock)) {
		t.Fatalf("corrupted sparse output: %s, repair %+v", got, res.Repair)
	}
}

// Sparse block sizes other than 4096: the parity covers the expansion up
// to where it starts (with 8192-byte sparse blocks, the tree's chunk
// padded to a whole block is covered too, as the kernel reads fec_blocks),
// the check through the expansion verifies it and plans a repair. With
// 1024-byte blocks the data, tree and parity are the raw output's (only
// the vbmeta's padding differs: avbtool pads it to the sparse block size).
func TestAddHashtreeFooterSparseFECBlockSizes(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	for _, sbs := range []int{1024, 8192} {
		t.Run(fmt.Sprint(sbs), func(t *testing.T) {
			dir := t.TempDir()
			// 700 blocks: a tree of 7 blocks, padded to 8 in an
			// 8192-byte sparse chunk.
			data := make([]byte, 700*4096)
			rand.NewChaCha8([32]byte{9}).Read(data[:300*4096])
			for i := 400 * 4096; i < len(data); i++ {
				data[i] = 0xa5
			}
			raw, simg := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
			os.WriteFile(raw, data, 0o644)
			if out, err := exec.Command(img2simg, raw, simg, fmt.Sprint(sbs)).CombinedOutput(); err != nil {
				t.Fatalf("img2simg: %v\n%s", err, out)
			}
			opts := func() *HashtreeFooterOptions {
				return &HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256", Salt: []byte("salt"), FEC: true, FECRoots: 8}
			}
			rr, err := AddHashtreeFooter(context.Background(), raw, opts())
			if err != nil {
				t.Fatal(err)
			}
			sr, err := AddHashtreeFooter(context.Background(), simg, opts())
			if err != nil {
				t.Fatal(err)
			}
			d := sr.Descriptor
			if d.TreeSize != 7*4096 || d.FECOffset != roundUp(d.TreeOffset+d.TreeSize, uint64(sbs)) || d.FECSize == 0 {
				t.Fatalf("descriptor %+v", d)
			}
			made, _ := os.ReadFile(simg)
			if sbs == 1024 {
				want, _ := os.ReadFile(raw)
				end := d.FECOffset + d.FECSize
				if got := expand(t, made); !bytes.Equal(got[:end], want[:end]) || !bytes.Equal(rr.Descriptor.Encode(), d.Encode()) {
					t.Fatal("data, tree and parity are not the raw output's")
				}
			}
			img, res, got := verifySparseReport(t, simg, nil)
			if !img.Sparse || !res.Verified || res.FEC == nil || res.FEC.Roots != 8 {
				t.Fatalf("check: %s", got)
			}
			made[sparseOffset(t, made, 100*4096+3)] ^= 1
			os.WriteFile(simg, made, 0o644)
			_, res, got = verifySparseReport(t, simg, &verity.VerifyOptions{MaxProblems: -1})
			if res.Verified || res.Repair == nil || !res.Repair.Whole() || !strings.Contains(got, "data block 100") {
				t.Fatalf("corrupted: %s, repair %+v", got, res.Repair)
			}
		})
	}
}

// With --no_hashtree there is no parity either: the descriptor says where
// it would start, and avbtool appends its empty output as a RAW chunk of
// no blocks; the expansion is the raw output.
func TestAddHashtreeFooterSparseFECNoHashtree(t *testing.T) {
	dir := t.TempDir()
	im := makeSparseFECImage(t, dir, "nohashtree", 20, 5, 5, 10, 2)
	opts := func() *HashtreeFooterOptions {
		return &HashtreeFooterOptions{HashAlgorithm: "sha256", Salt: []byte("salt"), FEC: true, NoHashtree: true}
	}
	rr, err := AddHashtreeFooter(context.Background(), im.raw, opts())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(im.simg)
	sr, err := AddHashtreeFooter(context.Background(), im.simg, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sr.VBMeta, rr.VBMeta) || sr.Descriptor.FECNumRoots != 2 || sr.Descriptor.FECOffset != sr.Descriptor.ImageSize || sr.Descriptor.FECSize != 0 {
		t.Fatalf("descriptor %+v", sr.Descriptor)
	}
	made, _ := os.ReadFile(im.simg)
	want, _ := os.ReadFile(im.raw)
	if !bytes.Equal(expand(t, made), want) {
		t.Fatal("the sparse output does not expand to the raw output")
	}
	// The chunks appended: an empty RAW one, the vbmeta, the footer.
	if n := sparseChunkTypes(t, made)[chunkRaw] - sparseChunkTypes(t, before)[chunkRaw]; n != 3 {
		t.Fatalf("%d RAW chunks appended, want 3", n)
	}
}

// Ctrl-C while the parity is computed: the error is the context's, and the
// sparse image is cut back to what it was, byte for byte. Progress reports
// the bytes of the message (image and tree) up to its size.
func TestAddHashtreeFooterSparseFECCancel(t *testing.T) {
	dir := t.TempDir()
	im := makeSparseFECImage(t, dir, "cancel", 300, 10, 10, 50, 1)
	before, _ := os.ReadFile(im.simg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := AddHashtreeFooter(ctx, im.simg, &HashtreeFooterOptions{HashAlgorithm: "sha256", FEC: true,
		Progress: func(stage verity.Stage, done, total uint64) {
			if stage == verity.StageFEC {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if after, _ := os.ReadFile(im.simg); !bytes.Equal(after, before) {
		t.Fatalf("the canceled run left %d bytes, not the %d of the image", len(after), len(before))
	}

	var last, total uint64
	if _, err := AddHashtreeFooter(context.Background(), im.simg, &HashtreeFooterOptions{HashAlgorithm: "sha256", FEC: true, Jobs: 2,
		Progress: func(stage verity.Stage, done, tot uint64) {
			if stage == verity.StageFEC {
				if done < last || done > tot {
					t.Errorf("FEC progress %d of %d after %d", done, tot, last)
				}
				last, total = done, tot
			}
		}}); err != nil {
		t.Fatal(err)
	}
	img, err := ReadImage(im.simg)
	if err != nil {
		t.Fatal(err)
	}
	ht := img.VBMeta.FirstHashtree()
	if msg := ht.TreeOffset + ht.TreeSize; total != msg || last != total {
		t.Fatalf("FEC progress ended at %d of %d, the image and tree are %d bytes", last, total, msg)
	}
}

// An Android sparse image whose size is not a multiple of the tree's block
// size (img2simg's 1024-byte blocks): avbtool pads it with a RAW chunk of
// zeros up to a whole tree block, hashes that, and goes on as usual. The
// sizes and SHA-256 are avbtool 1.3.0's answers, recorded with
//
//	img2simg X.raw X.simg 1024
//	avbtool add_hashtree_footer --image X.simg [--partition_size 118784] \
//	    --partition_name system --hash_algorithm sha256 --salt 00 --do_not_generate_fec
//
// on the bytes (7*i+3) mod 251 (tests/peer seed 1 case 170 is the first).
// A second run (on the output) gives the same file.
func TestAddHashtreeFooterSparsePadded(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	for _, c := range []struct {
		name              string
		size, psize       uint64
		inSum, sum        string
		outSize, imageEnd uint64
	}{
		{"3072 bytes, a partition", 3072, 118784,
			"9aa2f18c05e1e0f860ea309d4a52149146639d6a9c0c70fea5450a66925e58e6",
			"2bdcc8a86814820237a6d58a3371f70d5f3f7e13ebb69bc8ea3afa6668f263f2", 6232, 4096},
		{"17408 bytes, no partition size", 17408, 0,
			"60f0f511be40e8fe6df6293d0f6fbb6f267a56edfc159fb1b55a5dbf30be7262",
			"35c8f3bf6f0dd50f8d20199950fbbdc944be0839172f8196b73c9c581026f0ef", 26712, 20480},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data := make([]byte, c.size)
			for i := range data {
				data[i] = byte((7*i + 3) % 251)
			}
			raw, simg := filepath.Join(dir, "x.raw"), filepath.Join(dir, "x.simg")
			if err := os.WriteFile(raw, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(img2simg, raw, simg, "1024").CombinedOutput(); err != nil {
				t.Fatalf("img2simg: %v\n%s", err, out)
			}
			if _, sum := fileSum(t, simg); sum != c.inSum {
				t.Skipf("this img2simg makes another sparse image (sha256 %s) than the one avbtool was run on", sum)
			}
			for run := range 2 {
				res, err := AddHashtreeFooter(context.Background(), simg, &HashtreeFooterOptions{PartitionSize: c.psize,
					PartitionName: "system", HashAlgorithm: "sha256", Salt: []byte{0}})
				if err != nil {
					t.Fatalf("run %d: %v", run+1, err)
				}
				if res.Descriptor.ImageSize != c.imageEnd || res.OriginalSize != c.size {
					t.Fatalf("run %d: image size %d, original %d; want %d, %d", run+1, res.Descriptor.ImageSize, res.OriginalSize, c.imageEnd, c.size)
				}
				if size, sum := fileSum(t, simg); size != c.outSize || sum != c.sum {
					t.Fatalf("run %d: %d bytes, sha256 %s; avbtool: %d bytes, %s", run+1, size, sum, c.outSize, c.sum)
				}
			}
			// The padding reads as zeros in the expansion, the data as given.
			exp := expand(t, mustRead(t, simg))
			if !bytes.Equal(exp[:c.size], data) || !bytes.Equal(exp[c.size:c.imageEnd], make([]byte, c.imageEnd-c.size)) {
				t.Fatal("the expansion is not the data and zeros")
			}
		})
	}
}

func fileSum(t *testing.T, path string) (uint64, string) {
	t.Helper()
	b := mustRead(t, path)
	return uint64(len(b)), fmt.Sprintf("%x", sha256.Sum256(b))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
