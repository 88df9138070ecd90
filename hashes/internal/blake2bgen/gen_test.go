package blake2bgen

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedFileUpToDate checks that the committed portable BLAKE2b is
// what the generator writes: edit the generator and run go generate in
// hashes, never blake2b_generic.go.
func TestGeneratedFileUpToDate(t *testing.T) {
	have, err := os.ReadFile("../../blake2b_generic.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, Generate()) {
		t.Error("hashes/blake2b_generic.go differs from what internal/blake2bgen generates: run go generate in hashes")
	}
}
