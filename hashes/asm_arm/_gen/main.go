// Command _gen writes the ARM NEON assembly of package hashes (see package
// asmarm). Run it from hashes:
//
//	go run ./asm_arm/_gen [-dir .]
package main

import (
	"flag"
	"log"

	"github.com/veritytree/veritytree/hashes/asm_arm"
)

func main() {
	dir := flag.String("dir", ".", "directory of package hashes")
	flag.Parse()
	if err := asmarm.WriteFiles(*dir); err != nil {
		log.Fatal(err)
	}
}
