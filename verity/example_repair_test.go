package verity_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// memFile is an in-memory file for the example.
type memFile struct{ b []byte }

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.b) {
		f.b = append(f.b, make([]byte, end-len(f.b))...)
	}
	return copy(f.b[off:], p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(f.b).ReadAt(p, off)
}

func ExamplePlanRepair() {
	ctx := context.Background()
	g, err := merkle.NewGeometry(merkle.Params{Hash: hashes.SHA256, Salt: []byte("salt"), UUID: [16]byte{1},
		DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 100, Superblock: true})
	if err != nil {
		log.Fatal(err)
	}
	image := &memFile{bytes.Repeat([]byte("repairable "), 100*4096/11+1)[:g.DataSize()]}
	tree := &memFile{}
	root, err := merkle.Build(ctx, g, image, tree, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Parity of 8 roots over the data and the tree, as veritysetup format
	// --fec-device --fec-roots=8 writes it (Format does it too): the
	// message is the data blocks, then the tree.
	p := fec.Params{Roots: 8, BlockSize: 4096, Blocks: fec.MessageBlocks(g.DataBlocks, g.HashStartBlock, g.HashEnd(), 4096)}
	msg := fec.Concat(fec.Part{R: image, Size: int64(g.DataSize())},
		fec.Part{R: tree, Off: int64(g.TreeOffset()), Size: int64(g.HashEnd() - g.TreeOffset())})
	parity := &memFile{}
	if err := fec.Encode(ctx, p, msg, parity, 0, 1); err != nil {
		log.Fatal(err)
	}

	// Damage: three data blocks and the tree's top block.
	for _, off := range []int{7*4096 + 1, 8*4096 + 2, 60 * 4096} {
		image.b[off] ^= 0xff
	}
	tree.b[g.BlockOffset(g.TopLevel(), 0)] ^= 0xff

	plan, rep, err := verity.PlanRepair(ctx, g, image, tree, root, &verity.FECInfo{Roots: 8, Blocks: p.Blocks}, parity, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer plan.Close()
	fmt.Printf("%d corrupted data and %d hash blocks; whole: %v\n", rep.CorruptDataBlocks, rep.CorruptHashBlocks, plan.Whole())
	plan.EachRebuilt(func(b verity.BlockRef) bool {
		fmt.Printf("rebuilt %v block %d\n", b.Level, b.Index)
		return true
	})
	if err := plan.Apply(image, tree); err != nil {
		log.Fatal(err)
	}
	rep, err = merkle.Verify(ctx, g, image, tree, root, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verified after Apply:", rep.OK())
	// Output:
	// 3 corrupted data and 1 hash blocks; whole: true
	// rebuilt data block 7
	// rebuilt data block 8
	// rebuilt data block 60
	// rebuilt level 0 block 0
	// verified after Apply: true
}
