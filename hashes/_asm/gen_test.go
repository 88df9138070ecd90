package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// outputs lists, per -alg, the files committed in package hashes; the
// //go:generate lines there run the same commands.
var outputs = map[string][2]string{
	"sha256ni": {"sha256ni_amd64.s", "sha256ni_stubs_amd64.go"},
	"blake2b":  {"blake2b_amd64.s", "blake2b_stubs_amd64.go"},
	"shavec":   {"shavec_amd64.s", "shavec_stubs_amd64.go"},
	"shaavx2":  {"shaavx2_amd64.s", "shaavx2_stubs_amd64.go"},
	"sha1ni":   {"sha1ni_amd64.s", "sha1ni_stubs_amd64.go"},
}

// TestGeneratedFilesUpToDate regenerates every file into a copy of this
// folder's parent (the command lines, which the files record, are the same)
// and compares them with the committed ones.
func TestGeneratedFilesUpToDate(t *testing.T) {
	if len(outputs) != len(generators) {
		t.Fatalf("outputs lists %d generators, main.go has %d", len(outputs), len(generators))
	}
	tmp := t.TempDir()
	work := filepath.Join(tmp, "_asm")
	if err := os.CopyFS(work, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	// The copy still reads the shared tables (hashes/internal/consts) from
	// this repository: point its replace directive here.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	edit := exec.Command("go", "mod", "edit", "-replace", "github.com/veritytree/veritytree="+root)
	edit.Dir = work
	if out, err := edit.CombinedOutput(); err != nil {
		t.Fatalf("go mod edit: %v\n%s", err, out)
	}
	for alg, files := range outputs {
		cmd := exec.Command("go", "run", ".", "-alg", alg, "-out", "../"+files[0], "-stubs", "../"+files[1], "-pkg", "hashes")
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", alg, err, out)
		}
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(tmp, f))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("..", f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("hashes/%s is not what _asm generates: run go generate in hashes", f)
			}
		}
	}
}
