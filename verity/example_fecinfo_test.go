package verity_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/verity"
)

// DescribeFEC gives the table's FEC arguments of a tree made earlier (here
// by veritysetup format --fec-device system.fec --fec-roots 4, say): the
// tree from its superblock, the parity's place from what it was made with.
func ExampleDescribeFEC() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dataPath, hashPath, fecPath := filepath.Join(dir, "system.img"), filepath.Join(dir, "system.verity"), filepath.Join(dir, "system.fec")
	exampleImage(dataPath, 1<<20)
	opts := exampleOptions()
	opts.FECDevice, opts.FECRoots = fecPath, 4
	made, err := verity.Format(context.Background(), dataPath, hashPath, opts)
	if err != nil {
		log.Fatal(err)
	}

	g, err := verity.ReadSuperblock(hashPath, 0)
	if err != nil {
		log.Fatal(err)
	}
	f, err := verity.DescribeFEC(g, dataPath, hashPath, fecPath, 0, 4)
	if err != nil {
		log.Fatal(err)
	}
	boot, err := verity.Table(g, made.RootHash, f, &verity.TableOptions{DataDevice: "/dev/sda5", HashDevice: "/dev/sda6", FECDevice: "/dev/sda7"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d message blocks, %d parity blocks (%d bytes)\n", f.Blocks, f.ParityBlocks, f.Size)
	fmt.Println(boot.DMTable)
	// Output:
	// 259 message blocks, 8 parity blocks (32768 bytes)
	// 0 2048 verity 1 /dev/sda5 /dev/sda6 4096 4096 256 1 sha256 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd 76657269747974726565206578616d706c652073616c74 8 use_fec_from_device /dev/sda7 fec_start 0 fec_blocks 259 fec_roots 4
}
