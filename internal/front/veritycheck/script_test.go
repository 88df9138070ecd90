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
	// 47 cases came from the TestCLIBadInput table (45), the tree flags
	// agreeing with the superblock and the missing HASH's hint: none may
	// get lost.
	if n := s.Run(t, filepath.Join("testdata", "script", "*.txt")); n < 47 {
		t.Fatalf("want at least 47 cases in testdata/script, got %d", n)
	}
}
