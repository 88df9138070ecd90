// Command mkcrafted writes what package avbcraft makes, for the scripts
// that record the real avbtool's and libavb's answers on it:
//
//	mkcrafted KEYDIR OUTDIR         OUTDIR/CASE.img for every crafted image
//	mkcrafted -blobs KEYDIR OUTDIR  OUTDIR/N.bin for every vbmeta blob
//
// It prints one line per file: the case (or blob) name, the image's
// partition (or the file's name), and its SHA-256. Run it with go run
// ./internal/avbcraft/_mkcrafted: its directory starts with _ so that
// go install ./... leaves it out.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/internal/avbcraft"
)

func main() {
	args := os.Args[1:]
	blobs := len(args) > 0 && args[0] == "-blobs"
	if blobs {
		args = args[1:]
	}
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkcrafted [-blobs] KEYDIR OUTDIR")
		os.Exit(2)
	}
	var err error
	if blobs {
		err = writeBlobs(args[0], args[1])
	} else {
		err = writeImages(args[0], args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkcrafted:", err)
		os.Exit(1)
	}
}

func writeImages(keys, out string) error {
	for _, c := range avbcraft.Cases {
		path := filepath.Join(out, c.Name+".img")
		if err := c.Make(path, keys); err != nil {
			return err
		}
		sum, err := avbcraft.Sum(path)
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%s\n", c.Name, c.Partition, sum)
	}
	return nil
}

func writeBlobs(keys, out string) error {
	bs, err := avbcraft.Blobs(keys)
	if err != nil {
		return err
	}
	for i, b := range bs {
		name := fmt.Sprintf("%d.bin", i)
		if err := os.WriteFile(filepath.Join(out, name), b.Data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(b.Data)
		fmt.Printf("%s\t%s\t%s\n", b.Name, name, hex.EncodeToString(sum[:]))
	}
	return nil
}
