package verity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
)

// TestSecondWriterOfANewFile: with no file to lock yet, a run replacing a
// path that does not exist fails at once when another run's temporary file
// for it is live (locked), or when the path appeared since the caller
// looked; it leaves nothing behind. In place, a path created by another
// run since is that run's. Every such error matches ErrLocked.
func TestSecondWriterOfANewFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "new.bin")
	other, err := safefile.OpenReplacement(target, "HASH", nil, 0, nil) // another run's, live
	if err != nil {
		t.Fatal(err)
	}
	defer other.Abort()
	entries := func() int {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	for _, c := range []struct {
		name string
		open func() error
	}{
		{"openReplacement", func() error {
			_, err := openReplacement(target, "HASH", nil, 0, nil)
			return err
		}},
		{"OpenOutputFile", func() error {
			_, err := safefile.OpenOutputFile(target, "--output_vbmeta_image", "a vbmeta image", nil, false)
			return fileErr(err)
		}},
		{"root hash file", func() error {
			_, err := openRootHashFile(target, false, nil)
			return err
		}},
	} {
		err := c.open()
		want := " " + target + " is locked by another process, which is writing it (its temporary file " + filepath.Base(other.Temp()) + " is held)"
		if !errors.Is(err, ErrLocked) || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrLocked and %q", c.name, err, want)
		}
		if n := entries(); n != 1 {
			t.Errorf("%s: %d files in the directory, want only the other run's", c.name, n)
		}
	}
	other.Abort()
	// The path appeared after the caller found it missing.
	if err := os.WriteFile(target, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = openReplacement(target, "HASH", nil, 0, nil)
	if want := "HASH " + target + " was created by another process while this run was starting"; !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Errorf("a path that appeared: %v, want ErrLocked and %q", err, want)
	}
	var created []string
	_, err = openCreatedInPlace(target, "HASH", &created)
	if !errors.Is(err, ErrLocked) || len(created) != 0 {
		t.Errorf("in place, a path that appeared: %v (created %q), want ErrLocked and nothing to remove", err, created)
	}
	if b, _ := os.ReadFile(target); string(b) != "theirs" {
		t.Errorf("the other run's file was changed: %q", b)
	}
}
