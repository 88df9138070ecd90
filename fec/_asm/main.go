// Command _asm generates the amd64 assembly of package fec with avo:
//
//	go run . -out ../rs_amd64.s -stubs ../rs_stubs_amd64.go -pkg fec
//
// The //go:generate line in fec/encode_amd64.go runs this command; check.sh
// (go test here) regenerates into a temporary copy and fails if the
// committed files differ. See README.md.
package main

import (
	"flag"

	. "github.com/mmcloughlin/avo/build"
)

func main() {
	flag.Parse()
	ConstraintExpr("!purego")
	genRS()
	Generate()
}
