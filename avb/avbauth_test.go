package avb_test

// The crafted images of internal/avbcraft against libavb's decisions on
// them (testdata/libavb/slot_verify.tsv: avb_slot_verify, recorded by
// testdata/libavb/record.sh) and against what erase_footer and a rerun of
// add_hashtree_footer may cut.

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbcraft"
	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/verity"
)

const craftKeys = "testdata/vectors/keys"

// crafted makes the crafted image name in a temporary directory.
func crafted(t *testing.T, name string) string {
	t.Helper()
	c := avbcraft.ByName(name)
	if c == nil {
		t.Fatalf("no crafted image %s", name)
	}
	path := filepath.Join(t.TempDir(), c.Partition+".img")
	if err := c.Make(path, craftKeys); err != nil {
		t.Fatal(err)
	}
	return path
}

// slotVerdict is what package avb decides about the image at path, in
// avb_slot_verify's words: its vbmeta (VerifyVBMeta with key, nil trusting
// the embedded one), what the vbmeta holds (CheckMetadata), the digests of
// the partition's hash descriptors (CheckPartitionDescriptors).
func slotVerdict(t *testing.T, path string, key []byte) string {
	t.Helper()
	img, err := avb.ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	err = img.VerifyVBMeta(key)
	if err == nil {
		err = img.CheckMetadata()
	}
	switch {
	case errors.Is(err, avb.ErrNotSigned), errors.Is(err, avb.ErrSignature):
		return "ERROR_VERIFICATION"
	case errors.Is(err, avb.ErrUnsupportedVersion):
		return "ERROR_UNSUPPORTED_VERSION"
	case errors.Is(err, avb.ErrMalformed):
		return "ERROR_INVALID_METADATA"
	case err != nil:
		t.Fatalf("an error libavb has no word for: %v", err)
	}
	checks, err := avb.CheckPartitionDescriptors(context.Background(), path, img, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if _, hash := c.Descriptor.(*avb.HashDescriptor); hash && !c.Matches {
			return "ERROR_VERIFICATION"
		}
	}
	return "OK"
}

// TestCraftedAsLibavb: on every crafted image, with and without the key,
// package avb decides as libavb's avb_slot_verify does on a locked device
// (the hashtree, the footer's sizes and further hashtree descriptors,
// which libavb leaves to others, aside), and VerifyVBMetaBlob says what
// avb_vbmeta_image_verify says of the blob a bootloader loads.
func TestCraftedAsLibavb(t *testing.T) {
	rows, err := avbvectors.ReadTSV("testdata/libavb/slot_verify.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(avbcraft.Cases) {
		t.Fatalf("%d rows for %d crafted images: run testdata/libavb/record.sh", len(rows), len(avbcraft.Cases))
	}
	for _, row := range rows {
		name, sum, keyFile, vbmetaVerify, locked := row[0], row[2], row[3], row[4], row[5]
		t.Run(name+"/"+filepath.Base(keyFile), func(t *testing.T) {
			path := crafted(t, name)
			if got, _ := avbcraft.Sum(path); got != sum {
				t.Fatalf("the crafted image is not the one libavb was run on")
			}
			var key []byte
			if keyFile != "-" {
				if key, err = os.ReadFile(filepath.Join("testdata/vectors", keyFile)); err != nil {
					t.Fatal(err)
				}
			}
			if got := slotVerdict(t, path, key); got != locked {
				t.Errorf("package avb: %s; libavb: %s", got, locked)
			}
			img, err := avb.ReadImage(path)
			if err != nil {
				t.Fatal(err)
			}
			if img.Footer.VBMetaSize > avb.LibavbMaxVBMetaSize {
				// libavb does not use the footer: it reads 64 KiB at 0.
				if err := img.VerifyVBMeta(nil); !errors.Is(err, avb.ErrMalformed) {
					t.Errorf("VerifyVBMeta: %v, want ErrMalformed", err)
				}
				return
			}
			if res, _ := avb.VerifyVBMetaBlob(img.VBMeta.Raw); res.String() != vbmetaVerify {
				t.Errorf("VerifyVBMetaBlob: %s; libavb: %s", res, vbmetaVerify)
			}
		})
	}
}

// An unsigned vbmeta embedding the victim's public key blob is not signed
// by the victim: VerifyWith and VerifyVBMeta say ErrNotSigned (before, they
// passed it). avbtool's own check (Verify) passes it, as avbtool does.
func TestEmbeddedKeyIsNoSignature(t *testing.T) {
	path := crafted(t, "none-victim-key")
	victim, err := avb.ExtractPublicKey(context.Background(), filepath.Join(craftKeys, avbcraft.PubKey))
	if err != nil {
		t.Fatal(err)
	}
	img, err := avb.ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img.VBMeta.PublicKey, victim) {
		t.Fatal("the crafted vbmeta does not embed the victim's key")
	}
	for what, err := range map[string]error{"VerifyWith": img.VBMeta.VerifyWith(victim), "VerifyVBMeta": img.VerifyVBMeta(victim)} {
		if !errors.Is(err, avb.ErrNotSigned) || !errors.Is(err, verity.ErrCorrupt) || !strings.Contains(err.Error(), "not with the key given") {
			t.Errorf("%s: %v, want ErrNotSigned", what, err)
		}
	}
	if err := img.VBMeta.Verify(); err != nil {
		t.Errorf("Verify (avbtool's check): %v, want nil as avbtool", err)
	}
}

// EraseFooter refuses to cut image data that the partition's descriptor
// covers, trusting a footer that says less (avbtool cuts; see the front's
// recordings): nothing is cut. A consistent footer, padding included, is
// erased as avbtool erases it.
func TestEraseFooterKeepsSignedData(t *testing.T) {
	for _, c := range []struct {
		name string
		keep bool
		size int64 // after; 0: refused
	}{
		{"footer-orig-4096", false, 0},
		{"footer-orig-minus-100", false, 0},
		{"hash-orig-small", false, 0},
		{"footer-orig-4096", true, 4231168}, // past the tree: avbtool's
		{"footer-orig-unpadded", false, 1<<20 + 100},
		{"signed", false, 1 << 20},
		{"hash", false, 100000},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := crafted(t, c.name)
			before, _ := os.ReadFile(path)
			err := avb.EraseFooter(path, c.keep)
			after, _ := os.ReadFile(path)
			if c.size == 0 {
				if !errors.Is(err, avb.ErrFooterMismatch) || !errors.Is(err, verity.ErrRefused) || !strings.Contains(err.Error(), "would cut the image to") {
					t.Fatalf("err = %v, want the refusal", err)
				}
				if !bytes.Equal(after, before) {
					t.Fatal("the image changed")
				}
				return
			}
			if err != nil || int64(len(after)) != c.size || !bytes.Equal(after, before[:c.size]) {
				t.Fatalf("err = %v, %d bytes; want %d bytes of the image", err, len(after), c.size)
			}
		})
	}
}

// A rerun of AddHashtreeFooter starts from the old footer's original size
// only when that cuts no image data the old descriptor covers.
func TestAddHashtreeFooterRerunKeepsSignedData(t *testing.T) {
	salt, _ := hex.DecodeString(avbcraft.Salt)
	for _, name := range []string{"footer-orig-4096", "footer-orig-minus-100", "footer-orig-unpadded"} {
		t.Run(name, func(t *testing.T) {
			path := crafted(t, name)
			before, _ := os.ReadFile(path)
			o := &avb.HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256", Salt: salt}
			if name == "footer-orig-unpadded" {
				o.PartitionSize = 2 << 20
			}
			_, err := avb.AddHashtreeFooter(context.Background(), path, o)
			after, _ := os.ReadFile(path)
			if name == "footer-orig-unpadded" {
				if err != nil || len(after) != len(before) {
					t.Fatalf("err = %v, %d bytes", err, len(after))
				}
				return
			}
			if !errors.Is(err, avb.ErrFooterMismatch) || !errors.Is(err, verity.ErrRefused) || !bytes.Equal(after, before) {
				t.Fatalf("err = %v (image changed: %v), want the refusal, image unchanged", err, !bytes.Equal(after, before))
			}
		})
	}
}

// CheckFooter names both numbers of a footer that disagrees with the
// partition's descriptor, and passes consistent ones.
func TestCheckFooter(t *testing.T) {
	for name, want := range map[string]string{
		"footer-orig-4096":      "original image size is 4096 bytes, but the hashtree descriptor of partition \"system\" covers 4194304 bytes",
		"footer-orig-minus-100": "original image size is 1048476 bytes, but the hashtree descriptor of partition \"system\" covers 1048576 bytes",
		"hash-orig-small":       "original image size is 4096 bytes, but the hash descriptor of partition \"boot\" covers 100000 bytes",
		"footer-orig-unpadded":  "",
		"signed":                "",
		"hash":                  "",
	} {
		t.Run(name, func(t *testing.T) {
			path := crafted(t, name)
			img, err := avb.ReadImage(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = img.CheckFooter(f)
			if want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, avb.ErrFooterMismatch) || !errors.Is(err, avb.ErrMalformed) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want %q", err, want)
			}
		})
	}
}

// Every descriptor of the partition is checked: a second hashtree
// descriptor with a wrong root, a hash descriptor's digest.
func TestCheckPartitionDescriptors(t *testing.T) {
	for _, c := range []struct {
		name    string
		matches bool
		want    string // in Problem or Note
	}{
		{"second-hashtree-wrong-root", false, "its root digest is "},
		{"second-hashtree-same", true, "the same as the first hashtree descriptor"},
		{"hash", true, ""},
		{"hash-wrong-digest", false, "the image's 100000 bytes give "},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := crafted(t, c.name)
			img, err := avb.ReadImage(path)
			if err != nil {
				t.Fatal(err)
			}
			checks, err := avb.CheckPartitionDescriptors(context.Background(), path, img, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) != 1 || checks[0].Matches != c.matches || !strings.Contains(checks[0].Problem+checks[0].Note, c.want) {
				t.Fatalf("%+v", checks)
			}
		})
	}
	// An image of one descriptor has nothing more to check.
	path := crafted(t, "signed")
	img, _ := avb.ReadImage(path)
	if checks, err := avb.CheckPartitionDescriptors(context.Background(), path, img, 1); err != nil || len(checks) != 0 {
		t.Fatalf("%v %+v", err, checks)
	}
}

// The descriptor's dm-verity version is the kernel table's format: 0 lays
// the tree out with the salt after the data, above 1 is no format.
func TestHashtreeCheckVersion(t *testing.T) {
	path := crafted(t, "signed")
	img, err := avb.ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	ht := *img.VBMeta.FirstHashtree()
	for v, legacy := range map[uint32]bool{0: true, 1: false} {
		ht.DMVerityVersion = v
		_, o, err := img.HashtreeCheck(&ht)
		if err != nil || o.LegacyFormat != legacy {
			t.Errorf("version %d: %v, legacy format %v", v, err, o != nil && o.LegacyFormat)
		}
	}
	ht.DMVerityVersion = 2
	if _, _, err := img.HashtreeCheck(&ht); !errors.Is(err, avb.ErrMalformed) {
		t.Errorf("version 2: %v, want ErrMalformed", err)
	}
}

// A vbmeta image (no footer) whose blob is larger than libavb loads is
// refused too: libavb reads at most 64 KiB of a vbmeta partition.
func TestVerifyVBMetaLargeVBMetaImage(t *testing.T) {
	key, err := avb.LoadPrivateKey(context.Background(), filepath.Join(craftKeys, avbcraft.Key))
	if err != nil {
		t.Fatal(err)
	}
	for size, ok := range map[int]bool{60 << 10: true, 70 << 10: false} {
		blob, err := avb.MakeVBMeta(&avb.VBMetaOptions{Algorithm: avbcraft.Algorithm, Key: key,
			Descriptors: []avb.Descriptor{&avb.PropertyDescriptor{Key: "pad", Value: make([]byte, size)}}})
		if err != nil {
			t.Fatal(err)
		}
		img, err := avb.ParseImage(bytes.NewReader(blob), int64(len(blob)))
		if err != nil {
			t.Fatal(err)
		}
		if err := img.VerifyVBMeta(nil); (err == nil) != ok || !ok && !errors.Is(err, avb.ErrMalformed) {
			t.Errorf("blob of %d bytes: %v", len(blob), err)
		}
	}
}
