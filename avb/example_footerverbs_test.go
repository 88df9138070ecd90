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

// footedSystem writes a 256 KiB system image (block i filled with byte i)
// in dir and adds a hashtree footer in a 1 MiB partition, unsigned, with a
// fixed salt, as `avbtool add_hashtree_footer --partition_size 1048576
// --partition_name system --salt 5e... --do_not_generate_fec` does.
func footedSystem(dir string) string {
	image := filepath.Join(dir, "system.img")
	var data []byte
	for i := 0; i < 64; i++ {
		data = append(data, bytes.Repeat([]byte{byte(i)}, 4096)...)
	}
	if err := os.WriteFile(image, data, 0o644); err != nil {
		log.Fatal(err)
	}
	_, err := avb.AddHashtreeFooter(context.Background(), image, &avb.HashtreeFooterOptions{
		PartitionSize: 1 << 20,
		PartitionName: "system",
		HashAlgorithm: "sha256",
		Salt:          bytes.Repeat([]byte{0x5e}, 32),
	})
	if err != nil {
		log.Fatal(err)
	}
	return image
}

// Print the digest of each partition an image describes, as `avbtool
// print_partition_digests` does: for a hashtree, its root digest. (avbtool
// 1.3.0 gives the same digest, vbmeta sizes, info text and marker for the
// same input in each of these examples.)
func ExamplePartitionDigests() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := footedSystem(dir)
	err = avb.PartitionDigests(context.Background(), image, func(p avb.PartitionDigest) error {
		fmt.Printf("%s: %x\n", p.Name, p.Digest)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// system: ed44e81f9c5567006bd3920e21a1e70a670e0d0708468d5fa1f0171d2b8f0cb3
}

// Copy the vbmeta of an image with a footer to a file of its own, as
// `avbtool extract_vbmeta_image` does, then append it to another image,
// as `avbtool append_vbmeta_image` does (a bootloader's vbmeta read from
// the end of a partition).
func ExampleAppendVBMetaImage() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := footedSystem(dir)
	vbmeta := filepath.Join(dir, "vbmeta.img")
	if err := avb.ExtractVBMetaImage(ctx, image, vbmeta, 0); err != nil {
		log.Fatal(err)
	}
	fi, err := os.Stat(vbmeta)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("vbmeta", fi.Size(), "bytes")

	kernel := filepath.Join(dir, "kernel.img")
	if err := os.WriteFile(kernel, bytes.Repeat([]byte{0x4b}, 10000), 0o644); err != nil {
		log.Fatal(err)
	}
	footer, err := avb.AppendVBMetaImage(ctx, kernel, vbmeta, 65536)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("original size", footer.OriginalImageSize, "vbmeta at", footer.VBMetaOffset, "size", footer.VBMetaSize)
	// Output:
	// vbmeta 512 bytes
	// original size 10000 vbmeta at 12288 size 512
}

// Zero the tree of an image, as `avbtool zero_hashtree` does before an
// image is compressed: the tree's first block starts with avbtool's
// marker, and a check of the data then reports the tree as zeroed.
func ExampleZeroHashtree() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := footedSystem(dir)
	if err := avb.ZeroHashtree(ctx, image); err != nil {
		log.Fatal(err)
	}
	img, err := avb.ReadImage(image)
	if err != nil {
		log.Fatal(err)
	}
	ht := img.VBMeta.FirstHashtree()
	b, err := os.ReadFile(image)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tree at %d starts %q\n", ht.TreeOffset, b[ht.TreeOffset:ht.TreeOffset+8])
	// Output:
	// tree at 262144 starts "ZeRoHaSH"
}

// Remove the AVB metadata from an image, as `avbtool erase_footer` does:
// the file is cut back to the image data (with keepHashtree, just past the
// tree).
func ExampleEraseFooter() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := footedSystem(dir)
	if err := avb.EraseFooter(image, true); err != nil {
		log.Fatal(err)
	}
	fi, err := os.Stat(image)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("kept the tree:", fi.Size(), "bytes")
	// Nothing is left to erase: refused, as avbtool refuses it.
	if err := avb.EraseFooter(image, false); err == nil {
		fmt.Println("erased again?")
	}
	// Output:
	// kept the tree: 266240 bytes
}

// Print what `avbtool info_image` prints for an image, byte for byte (its
// text is what release tools parse).
func ExampleImage_WriteInfo() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	img, err := avb.ReadImage(footedSystem(dir))
	if err != nil {
		log.Fatal(err)
	}
	if err := img.WriteInfo(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// Footer version:           1.0
	// Image size:               1048576 bytes
	// Original image size:      262144 bytes
	// VBMeta offset:            266240
	// VBMeta size:              512 bytes
	// --
	// Minimum libavb version:   1.0
	// Header Block:             256 bytes
	// Authentication Block:     0 bytes
	// Auxiliary Block:          256 bytes
	// Algorithm:                NONE
	// Rollback Index:           0
	// Flags:                    0
	// Rollback Index Location:  0
	// Release String:           'avbtool 1.3.0'
	// Descriptors:
	//     Hashtree descriptor:
	//       Version of dm-verity:  1
	//       Image Size:            262144 bytes
	//       Tree Offset:           262144
	//       Tree Size:             4096 bytes
	//       Data Block Size:       4096 bytes
	//       Hash Block Size:       4096 bytes
	//       FEC num roots:         0
	//       FEC offset:            0
	//       FEC size:              0 bytes
	//       Hash Algorithm:        sha256
	//       Partition Name:        system
	//       Salt:                  5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e
	//       Root Digest:           ed44e81f9c5567006bd3920e21a1e70a670e0d0708468d5fa1f0171d2b8f0cb3
	//       Flags:                 0
}

// Extract the AVB public key blob of a key, as `avbtool extract_public_key`
// does (for a chain partition descriptor, or a device's trusted key):
// keys/rsa2048.avbpubkey was written by avbtool from the same PEM.
func ExampleExtractPublicKey() {
	blob, err := avb.ExtractPublicKey(context.Background(), "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		log.Fatal(err)
	}
	avbtools, err := os.ReadFile("testdata/vectors/keys/rsa2048.avbpubkey")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(blob), "bytes, the same as avbtool's:", bytes.Equal(blob, avbtools))
	// Output:
	// 520 bytes, the same as avbtool's: true
}

// Print the kernel command line an image's descriptors give, as `avbtool
// calculate_kernel_cmdline` does (the same line for the same input, with
// --do_not_generate_fec): here the dm-verity table
// --setup_as_rootfs_from_kernel stores, with the tokens a bootloader fills
// in ($(ANDROID_SYSTEM_PARTUUID), $(ANDROID_VERITY_MODE)).
func ExampleCalculateKernelCmdline() {
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "system.img")
	if err := os.WriteFile(image, bytes.Repeat([]byte{7}, 64<<10), 0o644); err != nil {
		log.Fatal(err)
	}
	_, err = avb.AddHashtreeFooter(context.Background(), image, &avb.HashtreeFooterOptions{
		PartitionSize:           1 << 20,
		PartitionName:           "system",
		HashAlgorithm:           "sha256",
		Salt:                    bytes.Repeat([]byte{0x5e}, 32),
		SetupAsRootfsFromKernel: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	line, err := avb.CalculateKernelCmdline(context.Background(), image, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(line)
	// Output:
	// dm="1 vroot none ro 1,0 128 verity 1 PARTUUID=$(ANDROID_SYSTEM_PARTUUID) PARTUUID=$(ANDROID_SYSTEM_PARTUUID) 4096 4096 16 16 sha256 c0a3961124b4cfe63c0e1cb2ca8e29b0fbfbc0ff835d80c6ab948f5fcfdcf136 5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e 2 $(ANDROID_VERITY_MODE) ignore_zero_blocks" root=/dev/dm-0
}
