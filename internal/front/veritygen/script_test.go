package veritygen

import (
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestScripts runs the command-line cases in testdata/script (the format is
// fronttest's, script.go).
func TestScripts(t *testing.T) {
	s := fronttest.Scripts{Fronts: map[string]fronttest.Main{"veritygen": Main}}
	n := s.Run(t, filepath.Join("testdata", "script", "*.txt"))
	t.Logf("%d cases", n)
}
