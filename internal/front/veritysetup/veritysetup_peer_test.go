package veritysetup

// The veritysetup front against the real veritysetup: each script in
// testdata/script runs its commands through both, each in a directory of
// its own holding the same files, and compares the exit codes, stdout,
// stderr and the files left (sha256 and mode). The script format is
// fronttest's (script.go).

import (
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

func TestVeritysetupFront(t *testing.T) {
	s := fronttest.Scripts{Fronts: map[string]fronttest.Main{"veritysetup": Main}, Peer: "veritysetup"}
	if n := s.Run(t, filepath.Join("testdata", "script", "*.txt")); n < 25 {
		t.Fatalf("want at least 25 scenarios in testdata/script, got %d", n)
	}
}
