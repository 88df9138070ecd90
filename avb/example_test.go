package avb_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/avb"
)

// Add a hashtree footer to an image, as `avbtool add_hashtree_footer`
// does, then read it back and check its vbmeta as a bootloader would.
func Example() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "system.img")
	var data []byte
	for i := 0; i < 64; i++ { // 256 KiB: block i filled with byte i
		data = append(data, bytes.Repeat([]byte{byte(i)}, 4096)...)
	}
	if err := os.WriteFile(image, data, 0o644); err != nil {
		log.Fatal(err)
	}
	key, err := avb.LoadPrivateKey(context.Background(), "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		log.Fatal(err)
	}
	salt := bytes.Repeat([]byte{0x5e}, 32)
	res, err := avb.AddHashtreeFooter(context.Background(), image, &avb.HashtreeFooterOptions{
		PartitionName: "system",
		HashAlgorithm: "sha256",
		Salt:          salt,
		Algorithm:     "SHA256_RSA2048",
		Key:           key,
		Properties:    []avb.Property{{Key: "com.example.build", Value: []byte("42")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("root digest %x\n", res.RootDigest)

	img, err := avb.ReadImage(image)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("original size", img.Footer.OriginalImageSize, "vbmeta at", img.Footer.VBMetaOffset)
	ht := img.VBMeta.FirstHashtree()
	fmt.Println("tree at", ht.TreeOffset, "size", ht.TreeSize, ht.HashAlgorithm)
	// As a bootloader: signed, and with the key it trusts.
	trusted, err := avb.EncodePublicKey(&key.PublicKey)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signature:", img.VerifyVBMeta(trusted))
	// Output:
	// root digest ed44e81f9c5567006bd3920e21a1e70a670e0d0708468d5fa1f0171d2b8f0cb3
	// original size 262144 vbmeta at 266240
	// tree at 262144 size 4096 sha256
	// signature: <nil>
}

// Lay a hashtree footer out before writing it: what was found, what is
// kept, where everything goes in a 1 MiB partition. The image is not
// touched until Apply.
func ExamplePlanHashtreeFooter() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "vendor.img")
	if err := os.WriteFile(image, bytes.Repeat([]byte{0xee}, 256<<10), 0o644); err != nil {
		log.Fatal(err)
	}
	o := &avb.HashtreeFooterOptions{
		PartitionSize: 1 << 20, PartitionName: "vendor", HashAlgorithm: "sha256",
		Salt: bytes.Repeat([]byte{0x5e}, 32), FEC: true, CheckAtMostOnce: true,
	}
	pl, err := avb.PlanHashtreeFooter(image, o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("found", pl.Found, "keeping", pl.OriginalSize, "bytes; at most", pl.MaxImageSize, "fit")
	ht := pl.Descriptor
	fmt.Println("tree at", ht.TreeOffset, "size", ht.TreeSize, "parity at", ht.FECOffset, "size", ht.FECSize)
	fmt.Println("vbmeta at", pl.VBMetaOffset, "size", pl.VBMetaSize, "footer block at", pl.FooterBlock, "image size", pl.Size)
	fmt.Printf("requires libavb 1.%d\n", pl.RequiredLibavbMinor)
	res, err := pl.Apply(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fi, err := os.Stat(image)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written", fi.Size(), "bytes, vbmeta of", len(res.VBMeta))

	// Planned again on its own output, the footer is found and the
	// original image kept.
	pl, err = avb.PlanHashtreeFooter(image, o)
	if err != nil {
		log.Fatal(err)
	}
	defer pl.Close()
	fmt.Println("found", pl.Found, "keeping", pl.OriginalSize, "of", pl.FoundSize, "bytes")
	// Output:
	// found plain image keeping 262144 bytes; at most 946176 fit
	// tree at 262144 size 4096 parity at 266240 size 8192
	// vbmeta at 274432 size 512 footer block at 1044480 image size 1048576
	// requires libavb 1.1
	// written 1048576 bytes, vbmeta of 512
	// found footer keeping 262144 of 1048576 bytes
}
