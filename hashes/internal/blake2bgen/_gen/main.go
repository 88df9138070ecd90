// Command _gen writes hashes/blake2b_generic.go (see package blake2bgen).
// Run it from hashes (go generate does):
//
//	go run ./internal/blake2bgen/_gen -out blake2b_generic.go
package main

import (
	"flag"
	"log"
	"os"

	"github.com/veritytree/veritytree/hashes/internal/blake2bgen"
)

func main() {
	out := flag.String("out", "blake2b_generic.go", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, blake2bgen.Generate(), 0o666); err != nil {
		log.Fatal(err)
	}
}
