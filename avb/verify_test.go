package avb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
	"golang.org/x/sys/unix"
)

// checkVBMeta requires libavb's verdict on the image's vbmeta: verified
// when signed, ErrNotSigned (KindCorrupt) when not.
func checkVBMeta(t *testing.T, img *Image) {
	t.Helper()
	err := img.VerifyVBMeta(nil)
	if img.VBMeta.Algorithm.Type != 0 {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if !errors.Is(err, ErrNotSigned) || !errors.Is(err, verity.ErrCorrupt) {
		t.Fatalf("unsigned vbmeta: err = %v, want ErrNotSigned", err)
	}
}

// Every footer vector checks out with its embedded key and against its
// tree; a flipped data byte is found.
func TestVerifyHashtreeVectors(t *testing.T) {
	for _, name := range []string{"none-sha256", "sha512-rsa8192", "one-block", "bs-512", "bs-16384", "size-4097", "psize-1m", "levels-512-sha512", "persistent-digest"} {
		t.Run(name, func(t *testing.T) {
			_, image, _ := runCase(t, name)
			img, err := ReadImage(image)
			if err != nil {
				t.Fatal(err)
			}
			checkVBMeta(t, img)
			res, err := VerifyHashtree(context.Background(), image, img, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Verified {
				t.Fatalf("not verified: %+v", res.Report)
			}
			res.Close()
			f, _ := os.OpenFile(image, os.O_RDWR, 0)
			f.WriteAt([]byte{0xaa}, 100)
			f.Close()
			res, err = VerifyHashtree(context.Background(), image, img, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			if res.Verified {
				t.Fatal("a corrupted image verifies")
			}
		})
	}
}

func TestVerifyVBMetaWrongKey(t *testing.T) {
	_, image, _ := runCase(t, "sha256-rsa2048")
	img, err := ReadImage(image)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := os.ReadFile(filepath.Join(vectorDir, "keys/rsa4096.avbpubkey"))
	err = img.VerifyVBMeta(other)
	var ve *verity.Error
	if !errors.Is(err, ErrSignature) || !errors.As(err, &ve) || ve.Kind != verity.KindCorrupt {
		t.Fatalf("err = %v", err)
	}
	own, _ := os.ReadFile(filepath.Join(vectorDir, "keys/rsa2048.avbpubkey"))
	if err := img.VerifyVBMeta(own); err != nil {
		t.Fatal(err)
	}
}

// With FEC the descriptor points at the parity verity.Format appends
// (libfec's size less its 4096-byte header), the kernel line names it, a
// second run gives the same file, and the parity repairs a corrupted block.
func TestAddHashtreeFooterFEC(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.img")
	os.WriteFile(image, makeImage(t, "blockbyte:4096:300"), 0o644)
	o := &HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256", Salt: []byte{1, 2, 3}, FEC: true, FECRoots: 8, SetupAsRootfsFromKernel: true}
	res, err := AddHashtreeFooter(context.Background(), image, o)
	if err != nil {
		t.Fatal(err)
	}
	ht := res.Descriptor
	if ht.FECNumRoots != 8 || ht.FECOffset != ht.TreeOffset+ht.TreeSize || ht.FECSize != FECSize(ht.FECOffset, 8)-4096 {
		t.Fatalf("FEC fields %d %d %d (tree %d+%d)", ht.FECNumRoots, ht.FECOffset, ht.FECSize, ht.TreeOffset, ht.TreeSize)
	}
	if res.Footer.VBMetaOffset != ht.FECOffset+ht.FECSize {
		t.Fatalf("vbmeta at %d", res.Footer.VBMetaOffset)
	}
	line, err := CalculateKernelCmdline(context.Background(), image, false)
	if err != nil {
		t.Fatal(err)
	}
	blocks := ht.FECOffset / 4096
	if want := " 10 $(ANDROID_VERITY_MODE) ignore_zero_blocks use_fec_from_device PARTUUID=$(ANDROID_SYSTEM_PARTUUID) fec_roots 8 fec_blocks " +
		itoa(blocks) + " fec_start " + itoa(blocks) + `" root=/dev/dm-0`; !strings.HasSuffix(line, want) {
		t.Fatalf("kernel line %q does not end in %q", line, want)
	}
	first, _ := os.ReadFile(image)
	if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(image); string(again) != string(first) {
		t.Fatal("a second run changed the file")
	}
	f, _ := os.OpenFile(image, os.O_RDWR, 0)
	f.WriteAt(make([]byte, 4096), 4096*7)
	f.Close()
	img, err := ReadImage(image)
	if err != nil {
		t.Fatal(err)
	}
	vr, err := VerifyHashtree(context.Background(), image, img, &verity.VerifyOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vr.Close()
	if !vr.Repaired || !vr.Verified {
		t.Fatalf("not repaired: %+v", vr.Report)
	}
	if fixed, _ := os.ReadFile(image); string(fixed) != string(first) {
		t.Fatal("the repair did not restore the image")
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// A canceled run leaves the image as it was (cut back to its original
// size), and so does a second run canceled on an image with a footer,
// except for that footer, as avbtool.
func TestAddHashtreeFooterCanceled(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.img")
	data := makeImage(t, "blockbyte:4096:1000+fill:11:100")
	os.WriteFile(image, data, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := AddHashtreeFooter(ctx, image, &HashtreeFooterOptions{PartitionSize: 8 << 20, HashAlgorithm: "sha256"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got, _ := os.ReadFile(image); string(got) != string(data) {
		t.Fatalf("image changed: %d bytes", len(got))
	}
}

// An image that merely ends in the footer magic is not cut: the footer and
// its vbmeta must be sound before anything past the original size goes.
func TestAddHashtreeFooterBogusFooter(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.img")
	data := makeImage(t, "blockbyte:4096:16")
	copy(data[len(data)-FooterSize:], NewFooter(4096, 8192, 512).Encode()) // no vbmeta at 8192
	os.WriteFile(image, data, 0o644)
	_, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256"})
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	if got, _ := os.ReadFile(image); string(got) != string(data) {
		t.Fatal("image changed")
	}
	// A sparse image is written without verity.Format: the lock is ours.
	simg, _ := os.ReadFile(filepath.Join(vectorDir, "sparse/sparse-p0.simg"))
	sparsePath := filepath.Join(dir, "sparse.img")
	os.WriteFile(sparsePath, simg, 0o644)
	held, _ := os.Open(sparsePath)
	defer held.Close()
	unix.Flock(int(held.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if _, err := AddHashtreeFooter(context.Background(), sparsePath, &HashtreeFooterOptions{HashAlgorithm: "sha256"}); !errors.Is(err, verity.ErrLocked) {
		t.Fatalf("sparse: err = %v, want ErrLocked", err)
	}
	if got, _ := os.ReadFile(sparsePath); string(got) != string(simg) {
		t.Fatal("sparse image changed")
	}
}

// An image another process holds is refused at once, unchanged.
func TestAddHashtreeFooterLocked(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.img")
	data := makeImage(t, "blockbyte:4096:16")
	os.WriteFile(image, data, 0o644)
	other, err := os.Open(image)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256"})
	if !errors.Is(err, verity.ErrLocked) {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
	if err := EraseFooter(image, false); !errors.Is(err, verity.ErrLocked) {
		t.Fatalf("EraseFooter: err = %v, want ErrLocked", err)
	}
	if got, _ := os.ReadFile(image); string(got) != string(data) {
		t.Fatal("image changed")
	}
	// A sparse image is written without verity.Format: the lock is ours.
	simg, _ := os.ReadFile(filepath.Join(vectorDir, "sparse/sparse-p0.simg"))
	sparsePath := filepath.Join(dir, "sparse.img")
	os.WriteFile(sparsePath, simg, 0o644)
	held, _ := os.Open(sparsePath)
	defer held.Close()
	unix.Flock(int(held.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if _, err := AddHashtreeFooter(context.Background(), sparsePath, &HashtreeFooterOptions{HashAlgorithm: "sha256"}); !errors.Is(err, verity.ErrLocked) {
		t.Fatalf("sparse: err = %v, want ErrLocked", err)
	}
	if got, _ := os.ReadFile(sparsePath); string(got) != string(simg) {
		t.Fatal("sparse image changed")
	}
}

// verifySparseReport is what the check of an image says, for comparing a
// sparse image's with its raw twin's.
func verifySparseReport(t *testing.T, path string, opts *verity.VerifyOptions) (*Image, *verity.VerifyResult, string) {
	t.Helper()
	img, err := ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	checkVBMeta(t, img)
	res, err := VerifyHashtree(context.Background(), path, img, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	var problems []string
	for p, err := range res.Problems() {
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, p.Error())
	}
	g := res.Geometry
	return img, res, fmt.Sprintf("%+v %d %d %d %x %+v %v %v", *res.Report, g.DataBlocks, g.HashOffset, g.HashBlocks, g.Salt, res.FEC, res.Verified, problems)
}

// The sparse outputs of the vectors (avbtool's, from a sparse input) are
// checked through their expansion, with the same result as their raw
// twins (the expansion, avbtool's output for the raw input); a FILL
// chunk's pattern changed is listed at its block. Before, VerifyHashtree
// refused sparse images.
func TestVerifyHashtreeSparse(t *testing.T) {
	cases := map[string]vectorCase{}
	for _, c := range loadCases(t) {
		cases[c.name] = c
	}
	for _, name := range []string{"sparse-p0", "sparse-psize"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := os.ReadFile(filepath.Join(vectorDir, "full", name+".img"))
			if err != nil {
				t.Fatal(err)
			}
			simg, raw := filepath.Join(dir, "sparse.img"), filepath.Join(dir, "raw.img")
			os.WriteFile(simg, b, 0o644)
			expanded := expand(t, b)
			if twin := cases["raw-"+strings.TrimPrefix(name, "sparse-")]; sha256Hex(expanded) != twin.sha256 {
				t.Fatalf("%s does not expand to %s", name, twin.name)
			}
			os.WriteFile(raw, expanded, 0o644)
			img, res, got := verifySparseReport(t, simg, nil)
			_, rawRes, want := verifySparseReport(t, raw, nil)
			if !img.Sparse || res.DataFormat != "android-sparse" || !res.Verified || !rawRes.Verified || got != want {
				t.Fatalf("sparse %v %s:\n%s\nraw:\n%s", img.Sparse, res.DataFormat, got, want)
			}

			// Block 3 is a FILL chunk of one block (03030303): another
			// pattern corrupts it.
			b[sparseOffset(t, b, 3*4096)] ^= 0x10
			os.WriteFile(simg, b, 0o644)
			os.WriteFile(raw, expand(t, b), 0o644)
			_, res, got = verifySparseReport(t, simg, &verity.VerifyOptions{MaxProblems: -1})
			_, _, want = verifySparseReport(t, raw, &verity.VerifyOptions{MaxProblems: -1})
			if res.Verified || res.Report.CorruptDataBlocks != 1 || !strings.Contains(got, "data block 3") || got != want {
				t.Fatalf("corrupted sparse:\n%s\nraw:\n%s", got, want)
			}
		})
	}
}

// A sparse image made with FEC: the parity is read from the expansion and
// can repair a corrupted block, but Repair is refused with nothing
// written (a sparse file is not written into).
func TestVerifyHashtreeSparseFEC(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	dir := t.TempDir()
	raw, simg := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	data := make([]byte, 300*4096) // random, then zeros: RAW and DONT_CARE chunks
	rand.NewChaCha8([32]byte{3}).Read(data[:200*4096])
	os.WriteFile(raw, data, 0o644)
	if _, err := AddHashtreeFooter(context.Background(), raw, &HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256",
		Salt: []byte{1, 2, 3}, FEC: true, FECRoots: 4}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img2simg, raw, simg).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	made, _ := os.ReadFile(simg)
	img, res, got := verifySparseReport(t, simg, nil)
	if !img.Sparse || !res.Verified || res.FEC == nil || !res.FEC.InHash || res.FEC.Roots != 4 {
		t.Fatalf("sparse with FEC: %s", got)
	}
	made[sparseOffset(t, made, 5*4096)] ^= 1
	os.WriteFile(simg, made, 0o644)
	_, res, got = verifySparseReport(t, simg, &verity.VerifyOptions{MaxProblems: -1})
	if res.Verified || res.Report.CorruptDataBlocks != 1 || res.Repair == nil || !res.Repair.Whole() || !strings.Contains(got, "data block 5") {
		t.Fatalf("corrupted sparse with FEC: %s, repair %+v", got, res.Repair)
	}
	_, err := VerifyHashtree(context.Background(), simg, img, &verity.VerifyOptions{Repair: true})
	var ve *verity.Error
	if !errors.As(err, &ve) || ve.Kind != verity.KindInput || !strings.Contains(err.Error(), "cannot write into it") || !strings.Contains(ve.Hint, "simg2img") {
		t.Fatalf("Repair of a sparse image: err = %v", err)
	}
	if after, _ := os.ReadFile(simg); !bytes.Equal(after, made) {
		t.Fatal("the refused repair changed the image")
	}
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

// A sparse image whose descriptor stores no root digest (persistent
// digest): the root is computed from the expansion, then checked.
func TestVerifyHashtreeSparsePersistentDigest(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	dir := t.TempDir()
	raw, simg := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	data := make([]byte, 100*4096)
	rand.NewChaCha8([32]byte{4}).Read(data[:50*4096])
	os.WriteFile(raw, data, 0o644)
	if _, err := AddHashtreeFooter(context.Background(), raw, &HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256",
		UsePersistentDigest: true, DoNotUseAB: true}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img2simg, raw, simg).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	img, res, got := verifySparseReport(t, simg, nil)
	_, _, want := verifySparseReport(t, raw, nil)
	if !img.Sparse || len(img.VBMeta.FirstHashtree().RootDigest) != 0 || !res.Verified || got != want {
		t.Fatalf("sparse, persistent digest:\n%s\nraw:\n%s", got, want)
	}
}
