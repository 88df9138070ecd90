package cli

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestProgressLabel: the progress bar of a sparse DATA says how much of
// the expansion the run covers; that of a raw DATA is the bare verb.
func TestProgressLabel(t *testing.T) {
	dir := t.TempDir()
	simg, raw := filepath.Join(dir, "x.simg"), filepath.Join(dir, "x.img")
	writeChunks(t, simg, 4096, 4, 0, true)
	if err := os.WriteFile(raw, make([]byte, 4096), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{simg, "hashing 16 KiB expanded"},
		{raw, "hashing"},
	} {
		src, err := OpenData("veritygen", tc.path, false, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := src.ProgressLabel("hashing", uint64(src.Size)); got != tc.want {
			t.Errorf("%s: label %q, want %q", tc.path, got, tc.want)
		}
		src.Close()
	}
}
