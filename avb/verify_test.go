package avb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/verity"
	"golang.org/x/sys/unix"
)

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
			if err := img.VerifyVBMeta(nil); err != nil {
				t.Fatal(err)
			}
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
	line, err := CalculateKernelCmdline(image, false)
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
