// Command mksample writes a sample image to try veritygen on:
//
//	go run ./testimages/_mksample [-size 64MiB] [-seed N] FILE
//
// Its directory starts with _ so that go install ./... leaves it out.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dustin/go-humanize"

	"github.com/veritytree/veritytree/testimages"
)

func main() {
	size := flag.String("size", "64MiB", "image size (e.g. 1GiB, 4096)")
	seed := flag.Uint64("seed", 1, "seed: the same seed gives the same image")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mksample [-size 64MiB] [-seed N] FILE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	n, err := humanize.ParseBytes(*size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mksample: error: -size %q: %v\n", *size, err)
		os.Exit(2)
	}
	err = testimages.WriteFile(flag.Arg(0), func(w io.Writer) error {
		return testimages.Sample(w, int64(n), *seed)
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mksample: error: %v\n", err)
		os.Exit(2)
	}
}
