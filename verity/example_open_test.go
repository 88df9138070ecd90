package verity_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "verity-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dataPath, hashPath, root := exampleTree(dir, 16)

	r, err := verity.Open(dataPath, hashPath, root, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	// Any io.ReaderAt use: each block read is checked first.
	buf := make([]byte, 23)
	if _, err := r.ReadAt(buf, 4080); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", buf)

	// Block 3 changes on the disk: reading it fails.
	f, err := os.OpenFile(dataPath, os.O_WRONLY, 0)
	if err != nil {
		log.Fatal(err)
	}
	f.WriteAt([]byte("!"), 3*4096+100)
	f.Close()
	_, err = io.ReadFull(io.NewSectionReader(r, 0, r.Size()), make([]byte, r.Size()))
	var ce *merkle.CorruptionError
	if errors.As(err, &ce) {
		fmt.Printf("%v block %d is corrupted: %v\n", ce.Level, ce.Index, errors.Is(err, verity.ErrCorrupt))
	}
	// Output:
	// "every block is checked."
	// data block 3 is corrupted: true
}
