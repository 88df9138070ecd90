package asmarm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesUpToDate checks that the committed assembly is what the
// generator writes: edit the generator and run go generate, never the .s.
func TestGeneratedFilesUpToDate(t *testing.T) {
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join("..", f.name))
		if err != nil {
			t.Fatal(err)
		}
		if want := f.gen(); !bytes.Equal(have, want) {
			t.Errorf("%s differs from what asm_arm generates: run go run ./asm_arm/_gen in hashes (or GOARCH=arm64 go generate ./hashes)", f.name)
		}
	}
}

// TestGeneratorDeterministic guards the regeneration test against map order
// or other nondeterminism in the generator.
func TestGeneratorDeterministic(t *testing.T) {
	for _, f := range files {
		if !bytes.Equal(f.gen(), f.gen()) {
			t.Errorf("%s: two runs differ", f.name)
		}
	}
}

// TestARMReservedRegisters guards the 32-bit code: R10 is the goroutine
// pointer and R11 the assembler's temporary, so no instruction names them
// (nor the NEON encodings' r10, r11 as base registers).
func TestARMReservedRegisters(t *testing.T) {
	for _, f := range files {
		if !strings.HasSuffix(f.name, "_arm.s") {
			continue
		}
		for i, line := range strings.Split(string(f.gen()), "\n") {
			code, comment, _ := strings.Cut(line, "//")
			if strings.HasPrefix(strings.TrimSpace(code), "WORD") {
				code = comment // the mnemonic
			}
			for _, r := range []string{"R10", "R11", "r10", "r11", "g)", "fp"} {
				if strings.Contains(code, r) {
					t.Errorf("%s:%d uses %s: %s", f.name, i+1, r, line)
				}
			}
		}
	}
}
