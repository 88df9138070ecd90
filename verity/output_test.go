package verity

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConcurrentReplacement: a hash file that another run put in place
// while this one was writing is not silently replaced.
func TestConcurrentReplacement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.verity")
	o, err := openReplacement(path, "HASH", nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.f.Write([]byte("this run's tree")); err != nil {
		t.Fatal(err)
	}
	other := []byte("the other run's tree")
	if err := os.WriteFile(path, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.commit(); err == nil || !strings.Contains(err.Error(), "another process replaced it while this run was writing") {
		t.Errorf("commit: %v", err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, other) {
		t.Errorf("%s holds %q (%v), want %q", path, got, err, other)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("directory holds %v", names)
	}
}
