package verity_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/verity"
)

// exampleTree writes an image of blocks 4 KiB blocks and, with Format, its
// tree (fixed salt and UUID, so the output is always the same) into dir,
// and returns their paths and the root hash.
func exampleTree(dir string, blocks int) (dataPath, hashPath string, root []byte) {
	image := bytes.Repeat([]byte("every block is checked. "), blocks*4096/24+1)[:blocks*4096]
	dataPath, hashPath = filepath.Join(dir, "system.img"), filepath.Join(dir, "system.img.verity")
	if err := os.WriteFile(dataPath, image, 0o644); err != nil {
		log.Fatal(err)
	}
	res, err := verity.Format(context.Background(), dataPath, hashPath, &verity.FormatOptions{
		TreeOptions: verity.TreeOptions{Salt: []byte("salt"), UUID: &[16]byte{1}}})
	if err != nil {
		log.Fatal(err)
	}
	return dataPath, hashPath, res.RootHash
}

func ExampleVerify() {
	dir, err := os.MkdirTemp("", "verity-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dataPath, hashPath, root := exampleTree(dir, 64)

	// Two data blocks change.
	f, err := os.OpenFile(dataPath, os.O_WRONLY, 0)
	if err != nil {
		log.Fatal(err)
	}
	f.WriteAt([]byte("X"), 5*4096+10)
	f.WriteAt([]byte("Y"), 40*4096)
	f.Close()

	res, err := verity.Verify(context.Background(), dataPath, hashPath, root, &verity.VerifyOptions{MaxProblems: -1})
	if err != nil {
		log.Fatal(err) // bad options or input, or I/O: not corruption
	}
	defer res.Close()
	fmt.Printf("verified: %v; %d corrupted data blocks of %d\n", res.Verified, res.Report.CorruptDataBlocks, res.Geometry.DataBlocks)
	for p, err := range res.Problems() {
		if err != nil {
			log.Fatal(err) // the list could not be read back from its temporary file
		}
		fmt.Printf("%v block %d (byte %d): %s\n", p.Level, p.Index, p.Offset, p.Reason)
	}
	// Output:
	// verified: false; 2 corrupted data blocks of 64
	// data block 5 (byte 20480): digest mismatch
	// data block 40 (byte 163840): digest mismatch
}

func ExampleReadSuperblock() {
	dir, err := os.MkdirTemp("", "verity-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_, hashPath, _ := exampleTree(dir, 300)

	g, err := verity.ReadSuperblock(hashPath, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, format %d, salt %q: %d data blocks of %d bytes, %d hash blocks\n",
		g.Hash.Name(), g.Format(), g.Salt, g.DataBlocks, g.DataBlockSize, g.HashBlocks)
	// Output:
	// sha256, format 1, salt "salt": 300 data blocks of 4096 bytes, 4 hash blocks
}
