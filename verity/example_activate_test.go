package verity_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/verity"
)

// Activate opens an image as a dm-verity device, as veritysetup open does
// (it needs Linux, device-mapper and root: the example is not run); the
// kernel then checks every block read from /dev/mapper/vroot.
func ExampleActivate() {
	ctx := context.Background()
	res, err := verity.Format(ctx, "system.img", "system.img.verity", nil)
	if err != nil {
		log.Fatal(err)
	}
	d, err := verity.Activate(ctx, "vroot", "system.img", "system.img.verity", res.RootHash, &verity.ActivateOptions{
		IgnoreZeroBlocks: true})
	if errors.Is(err, dm.ErrExist) {
		log.Fatal("vroot is open already: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	b := make([]byte, 4096)
	f, err := os.Open(d.Path)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.ReadAt(b, 0); err != nil {
		log.Fatal("the kernel found corruption: ", err) // an I/O error
	}
	f.Close()
	s, err := verity.Status(ctx, "vroot")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.UUID, s.Corrupted, s.Data.File)
	if err := d.Close(ctx); err != nil {
		log.Fatal(err)
	}
}
