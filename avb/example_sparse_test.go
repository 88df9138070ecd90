package avb_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/avb"
)

// Give an Android sparse image a hashtree footer, move the footer to a
// larger partition and zero the tree, as avbtool's add_hashtree_footer,
// resize_image and zero_hashtree do: the image stays sparse, its chunks
// the ones avbtool writes (printed after each step: type and blocks).
func ExampleResizeImage() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "system.simg")
	// A sparse image of 16 blocks of data in one RAW chunk.
	data := bytes.Repeat([]byte("system data\n"), 16*4096/12+1)[:16*4096]
	if err := os.WriteFile(image, sparseFile(4096, 16, data), 0o644); err != nil {
		log.Fatal(err)
	}
	_, err = avb.AddHashtreeFooter(ctx, image, &avb.HashtreeFooterOptions{PartitionSize: 256 << 10, PartitionName: "system",
		HashAlgorithm: "sha256", Salt: []byte("example salt")})
	if err != nil {
		log.Fatal(err)
	}
	printChunks(image)
	if err := avb.ResizeImage(ctx, image, 512<<10); err != nil {
		log.Fatal(err)
	}
	printChunks(image)
	if err := avb.ZeroHashtree(ctx, image); err != nil {
		log.Fatal(err)
	}
	printChunks(image)
	// Output:
	// RAW 16, RAW 1, RAW 1, DONT_CARE 45, RAW 1
	// RAW 16, RAW 1, RAW 1, DONT_CARE 109, RAW 1
	// RAW 16, RAW 1, FILL 0, RAW 111
}

// sparseFile is a sparse image of one RAW chunk.
func sparseFile(blockSize, blocks uint32, data []byte) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xed26ff3a)
	b = le.AppendUint16(le.AppendUint16(b, 1), 0)
	b = le.AppendUint16(le.AppendUint16(b, 28), 12)
	b = le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(b, blockSize), blocks), 1), 0)
	b = le.AppendUint32(le.AppendUint32(le.AppendUint32(b, 0xcac1), blocks), 12+uint32(len(data)))
	return append(b, data...)
}

// printChunks prints the chunks of the sparse image at path.
func printChunks(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	le := binary.LittleEndian
	names := map[uint16]string{0xcac1: "RAW", 0xcac2: "FILL", 0xcac3: "DONT_CARE"}
	off := 28
	for i := range le.Uint32(b[20:]) {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("%s %d", names[le.Uint16(b[off:])], le.Uint32(b[off+4:]))
		off += int(le.Uint32(b[off+8:]))
	}
	fmt.Println()
}
