package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

func TestReadRootHashFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "root.hex")
	os.WriteFile(path, []byte("  00ff10\n"), 0o644)
	if root, err := ReadRootHashFile(context.Background(), path); err != nil || string(root) != "\x00\xff\x10" {
		t.Errorf("%x, %v", root, err)
	}
	for _, c := range []struct{ text, msg string }{
		{"0fx", `root hash in ` + path + ` "0fx" is not hexadecimal: bad character 'x'`},
		{"abc", "has an odd number of hex digits"},
		{"\n", "root hash in " + path + " is empty"},
		{strings.Repeat("a", 5000), "is larger than any root hash (more than 4096 bytes)"},
	} {
		os.WriteFile(path, []byte(c.text), 0o644)
		_, err := ReadRootHashFile(context.Background(), path)
		if !errors.Is(err, verity.ErrInput) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v", c.text, err)
		}
	}
	// A FIFO no one writes: the wait ends with the context.
	fifo := testtool.MkFIFO(t, dir, "root.fifo")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ReadRootHashFile(ctx, fifo)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting on the FIFO after the context ended")
	}
	// A FIFO with a writer (another one: the wait above is left behind
	// on the first) is read as a file.
	fifo = testtool.MkFIFO(t, dir, "root2.fifo")
	testtool.FeedFIFO(t, fifo, []byte("abcd\n"))
	if root, err := ReadRootHashFile(context.Background(), fifo); err != nil || string(root) != "\xab\xcd" {
		t.Errorf("from a FIFO: %x, %v", root, err)
	}
}
