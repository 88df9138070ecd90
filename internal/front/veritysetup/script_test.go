package veritysetup

import (
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestScripts runs the cases of testdata/front through the front alone:
// what the real veritysetup cannot run next to it on every machine (the
// scripts of testdata/script run through both, TestVeritysetupFront).
func TestScripts(t *testing.T) {
	s := fronttest.Scripts{Fronts: map[string]fronttest.Main{"veritysetup": Main}}
	// The cases came from TestDeviceActionErrors' table (14). None may get
	// lost.
	if n := s.Run(t, filepath.Join("testdata", "front", "*.txt")); n < 14 {
		t.Fatalf("want at least 14 cases in testdata/front, got %d", n)
	}
}
