// Package asmarm generates the ARM NEON assembly of package hashes: the
// arm64 files in Go's arm64 assembler, the 32-bit arm files with every NEON
// instruction WORD-encoded (Go's arm assembler has no NEON) and its GNU
// mnemonic in a comment. Its command (in _gen, so that go install ./...
// leaves it out) writes them; run it from hashes:
//
//	go run ./asm_arm/_gen [-dir .]
//
// or GOARCH=arm64 (or arm) go generate ./hashes: the directive is in the
// ARM-only files, so a plain go generate on another architecture skips it.
//
// Its tests check the encoder against GNU as and that the committed files
// are what it generates.
package asmarm

import (
	"os"
	"path/filepath"
)

// files are the generated files, by name in package hashes.
var files = []struct {
	name string
	gen  func() []byte
}{
	{"blake2b_arm64.s", genBLAKE2bARM64},
	{"blake2b_arm.s", genBLAKE2bARM},
	{"sha256_arm64.s", genSHA256ARM64},
	{"sha256_arm.s", genSHA256ARM},
	{"sha1_arm64.s", genSHA1ARM64},
	{"sha1_arm.s", genSHA1ARM},
	{"sha256ce_arm.s", genSHA256CEARM},
	{"sha1ce_arm.s", genSHA1CEARM},
	{"sha512_arm64.s", genSHA512ARM64},
	{"sha512_arm.s", genSHA512ARM},
}

// WriteFiles writes the generated files into dir, package hashes'
// directory.
func WriteFiles(dir string) error {
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.gen(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
