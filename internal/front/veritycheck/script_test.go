package veritycheck

import (
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestScripts runs the command-line cases in testdata/script (the format is
// fronttest's, script.go).
func TestScripts(t *testing.T) {
	s := fronttest.Scripts{Fronts: map[string]fronttest.Main{"veritycheck": Main}}
	// The cases came from Go tests: TestCLIBadInput's table (45), the
	// tree flags agreeing with the superblock and the missing HASH's hint
	// (2 more), TestFECBadInput's table (14). None may get lost.
	if n := s.Run(t, filepath.Join("testdata", "script", "*.txt")); n < 47+14 {
		t.Fatalf("want at least %d cases in testdata/script, got %d", 47+14, n)
	}
}
