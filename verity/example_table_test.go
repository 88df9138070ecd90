package verity_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/verity"
)

// Table gives the dm-verity target's parameters of a tree, the whole
// table line (`dmsetup create vroot --readonly --table "$DMTable"` maps it),
// and the dm-mod.create= and Android dm= boot arguments that load it, here
// for the devices the image and its tree will be on.
func ExampleTable() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "system.img")
	exampleImage(data, 1<<20)
	res, err := verity.Format(context.Background(), data, "", exampleOptions())
	if err != nil {
		log.Fatal(err)
	}

	boot, err := verity.Table(res.Layout.Geometry, res.RootHash, res.FEC, &verity.TableOptions{
		DataDevice:       "/dev/sda5",
		HashDevice:       "/dev/sda6",
		IgnoreZeroBlocks: true,
		OnCorruption:     verity.RestartOnCorruption,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(boot.Table)
	fmt.Println(boot.DMTable)
	fmt.Println(boot.DMModCreate)
	fmt.Println(boot.AndroidDM)
	// Output:
	// 1 /dev/sda5 /dev/sda6 4096 4096 256 1 sha256 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd 76657269747974726565206578616d706c652073616c74 2 restart_on_corruption ignore_zero_blocks
	// 0 2048 verity 1 /dev/sda5 /dev/sda6 4096 4096 256 1 sha256 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd 76657269747974726565206578616d706c652073616c74 2 restart_on_corruption ignore_zero_blocks
	// dm-mod.create="vroot,,,ro,0 2048 verity 1 /dev/sda5 /dev/sda6 4096 4096 256 1 sha256 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd 76657269747974726565206578616d706c652073616c74 2 restart_on_corruption ignore_zero_blocks"
	// dm="1 vroot none ro 1,0 2048 verity 1 /dev/sda5 /dev/sda6 4096 4096 256 1 sha256 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd 76657269747974726565206578616d706c652073616c74 2 restart_on_corruption ignore_zero_blocks"
}
