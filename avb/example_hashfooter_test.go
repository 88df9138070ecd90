package avb_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/avb"
)

// Add a signed hash footer to a boot image as `avbtool add_hash_footer
// --dynamic_partition_size` does: the partition is the image plus 68 KiB,
// rounded up to a block. (avbtool makes the same file from the same
// options; running it again on its output, too.)
func ExampleAddHashFooter() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "boot.img")
	if err := os.WriteFile(image, []byte(strings.Repeat("a boot image\n", 10000)), 0o644); err != nil {
		log.Fatal(err)
	}
	key, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa4096.pem")
	if err != nil {
		log.Fatal(err)
	}
	o := &avb.HashFooterOptions{
		DynamicPartitionSize: true,
		PartitionName:        "boot",
		Salt:                 []byte("example salt"),
		VBMetaCommonOptions: avb.VBMetaCommonOptions{
			Algorithm:  "SHA256_RSA4096",
			Key:        key,
			Properties: []avb.Property{{Key: "com.android.build.boot.os_version", Value: []byte("14")}},
		},
	}
	for range 2 { // the second run finds the footer and makes the same file
		res, err := avb.AddHashFooter(ctx, image, o)
		if err != nil {
			log.Fatal(err)
		}
		b, err := os.ReadFile(image)
		if err != nil {
			log.Fatal(err)
		}
		sum := sha256.Sum256(b)
		fmt.Printf("%d bytes of image in a %d-byte partition, digest %x..., file sha256 %x...\n",
			res.OriginalSize, res.Size, res.Digest[:4], sum[:6])
	}
	img, err := avb.ReadImage(image)
	if err != nil {
		log.Fatal(err)
	}
	for d := range img.VBMeta.Descriptors() {
		if h, ok := d.(*avb.HashDescriptor); ok {
			fmt.Println("hash descriptor:", h.PartitionName, h.ImageSize, "bytes,", h.HashAlgorithm)
		}
	}
	fmt.Println("signature:", img.VBMeta.Verify() == nil)
	// Output:
	// 130000 bytes of image in a 200704-byte partition, digest 3ba38595..., file sha256 c092440d844e...
	// 130000 bytes of image in a 200704-byte partition, digest 3ba38595..., file sha256 c092440d844e...
	// hash descriptor: boot 130000 bytes, sha256
	// signature: true
}

// Check the partition before the image is touched: PlanHashFooter says
// whether the image fits and where the vbmeta and the footer go; Close
// lets it go unwritten (Apply would write it).
func ExamplePlanHashFooter() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "dtbo.img")
	if err := os.WriteFile(image, make([]byte, 100000), 0o644); err != nil {
		log.Fatal(err)
	}
	pl, err := avb.PlanHashFooter(image, &avb.HashFooterOptions{PartitionSize: 256 << 10, PartitionName: "dtbo"})
	if err != nil {
		log.Fatal(err)
	}
	defer pl.Close()
	fmt.Println("largest image:", pl.MaxImageSize)
	fmt.Println("vbmeta at", pl.VBMetaOffset, "footer block at", pl.FooterBlock, "of", pl.Size)
	_, err = avb.PlanHashFooter(image, &avb.HashFooterOptions{PartitionSize: 160 << 10})
	fmt.Println(err)
	// Output:
	// largest image: 192512
	// vbmeta at 102400 footer block at 258048 of 262144
	// image size of 100000 exceeds maximum image size of 94208 in order to fit in a partition size of 163840
}
