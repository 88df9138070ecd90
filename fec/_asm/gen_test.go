package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// outputs are the files committed in package fec; the //go:generate line
// there runs the same command.
var outputs = [2]string{"rs_amd64.s", "rs_stubs_amd64.go"}

// TestGeneratedFilesUpToDate regenerates the files into a copy of this
// folder's parent (the command line, which the files record, is the same)
// and compares them with the committed ones.
func TestGeneratedFilesUpToDate(t *testing.T) {
	tmp := t.TempDir()
	work := filepath.Join(tmp, "_asm")
	if err := os.CopyFS(work, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".", "-out", "../"+outputs[0], "-stubs", "../"+outputs[1], "-pkg", "fec")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range outputs {
		got, err := os.ReadFile(filepath.Join(tmp, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("fec/%s is not what _asm generates: run go generate in fec", f)
		}
	}
}
