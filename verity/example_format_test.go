package verity_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/verity"
)

// exampleImage writes an image of size bytes with made-up content.
func exampleImage(path string, size int) {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
}

// exampleOptions fixes the salt and the UUID, which are otherwise random,
// so that the root hash is the same on every run.
func exampleOptions() *verity.FormatOptions {
	uuid := [16]byte{0xa6, 0x0c, 0x98, 0xd2, 0xae, 0x9b, 0x48, 0x65, 0xbf, 0xcb, 0xb4, 0xe3, 0xac, 0xe1, 0x10, 0x33}
	return &verity.FormatOptions{TreeOptions: verity.TreeOptions{
		Salt: []byte("veritytree example salt"),
		UUID: &uuid,
	}}
}

// Format writes the tree of an image into a file of its own, as
// `veritysetup format system.img system.verity` does.
func ExampleFormat() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "system.img")
	exampleImage(data, 1<<20)

	res, err := verity.Format(context.Background(), data, filepath.Join(dir, "system.verity"), exampleOptions())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("data blocks: %d, tree: %d bytes\n", res.Layout.Geometry.DataBlocks, res.Layout.TreeSize())
	fmt.Printf("root hash: %x\n", res.RootHash)
	// Output:
	// data blocks: 256, tree: 16384 bytes
	// root hash: 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd
}

// Format with Append and AppendFEC lays out an image as avbtool does: the
// image padded to a whole block, then the tree (no superblock), then the
// error correction of both.
func ExampleFormat_appendFEC() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "system.img")
	exampleImage(data, 1<<20+1000)

	opts := exampleOptions()
	opts.Append, opts.AppendFEC = true, true
	res, err := verity.Format(context.Background(), data, "", opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("image %d bytes, tree at %d, parity at %d (%d roots, %d bytes), %d bytes in all\n",
		res.Layout.Append.OriginalSize, res.Layout.Geometry.HashOffset, res.FEC.Offset, res.FEC.Roots, res.FEC.Size, res.Layout.Append.ImageSize)
	fmt.Printf("root hash: %x\n", res.RootHash)
	// Output:
	// image 1049576 bytes, tree at 1052672, parity at 1069056 (2 roots, 16384 bytes), 1085440 bytes in all
	// root hash: 6da00e8410a2ee4c994e8d81ea203be8c81966316105442f6cb92a8fc567f41b
}

// PlanFormat lays out a tree without writing anything: here, how large an
// image grows once its tree and error correction are appended.
func ExamplePlanFormat() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "system.img")
	exampleImage(data, 1<<20+1000)

	l, err := verity.PlanFormat(data, "", &verity.FormatOptions{Append: true, AppendFEC: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes become %d\n", l.Append.OriginalSize, l.Append.ImageSize)
	// Output:
	// 1049576 bytes become 1085440
}

// OpenSource reads an Android sparse image (img2simg's format) as the image
// it expands to, and lists the blocks known without reading them (FILL and
// DONT_CARE chunks), which Format hashes once.
func ExampleOpenSource() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A sparse image of 4096-byte blocks: one RAW block, 3 blocks filled
	// with a 4-byte pattern, 4 blocks DONT_CARE (zeros).
	le := binary.LittleEndian
	var b []byte
	b = le.AppendUint32(b, 0xed26ff3a) // magic
	b = le.AppendUint16(b, 1)          // major version
	b = le.AppendUint16(b, 0)          // minor version
	b = le.AppendUint16(b, 28)         // file header size
	b = le.AppendUint16(b, 12)         // chunk header size
	b = le.AppendUint32(b, 4096)       // block size
	b = le.AppendUint32(b, 8)          // blocks
	b = le.AppendUint32(b, 3)          // chunks
	b = le.AppendUint32(b, 0)          // no checksum
	chunk := func(kind uint16, blocks, size uint32) {
		b = le.AppendUint16(b, kind)
		b = le.AppendUint16(b, 0)
		b = le.AppendUint32(b, blocks)
		b = le.AppendUint32(b, 12+size)
	}
	chunk(0xcac1, 1, 4096) // RAW
	for i := range 4096 {
		b = append(b, byte(i))
	}
	chunk(0xcac2, 3, 4) // FILL
	b = le.AppendUint32(b, 0xdeadbeef)
	chunk(0xcac3, 4, 0) // DONT_CARE
	path := filepath.Join(dir, "system.simg")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}

	src, err := verity.OpenSource(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	fmt.Printf("%s: %d bytes, expands to %d\n", src.Format(), src.FileSize(), src.Size())
	for _, r := range src.Runs(4096, 8) {
		content := "zeros"
		if r.Pattern != nil {
			content = fmt.Sprintf("the pattern %x", r.Pattern)
		}
		fmt.Printf("blocks %d to %d: %s\n", r.Start, r.Start+r.Count-1, content)
	}
	// Output:
	// android-sparse: 4164 bytes, expands to 32768
	// blocks 1 to 3: the pattern efbeadde
	// blocks 4 to 7: zeros
}
