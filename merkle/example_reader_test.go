package merkle_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// rdExampleFile is an in-memory hash device for the example.
type rdExampleFile struct{ b []byte }

func (f *rdExampleFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.b) {
		f.b = append(f.b, make([]byte, end-len(f.b))...)
	}
	return copy(f.b[off:], p), nil
}

func (f *rdExampleFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(f.b).ReadAt(p, off)
}

func ExampleNewReader() {
	g, err := merkle.NewGeometry(merkle.Params{Hash: hashes.SHA256, Salt: []byte("salt"),
		DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 4})
	if err != nil {
		log.Fatal(err)
	}
	image := bytes.Repeat([]byte("every block is checked. "), 1000)[:g.DataSize()]
	tree := &rdExampleFile{}
	root, err := merkle.Build(context.Background(), g, bytes.NewReader(image), tree, nil)
	if err != nil {
		log.Fatal(err)
	}

	r, err := merkle.NewReader(g, bytes.NewReader(image), tree, root, nil)
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 23)
	if _, err := r.ReadAt(buf, 4080); err != nil { // across blocks 0 and 1
		log.Fatal(err)
	}
	fmt.Printf("%q\n", buf)

	image[3*4096+100] ^= 1 // one bit of data block 3 changes
	n, err := r.ReadAt(make([]byte, 8192), 2*4096)
	var ce *merkle.CorruptionError
	if errors.As(err, &ce) {
		fmt.Printf("read %d bytes; block %d (level %d, byte %d) is corrupt: %v\n",
			n, ce.Index, ce.Level, ce.Offset, errors.Is(err, merkle.ErrCorrupt))
	}
	// Output:
	// "every block is checked."
	// read 4096 bytes; block 3 (level -1, byte 12288) is corrupt: true
}
