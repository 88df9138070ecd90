package veritygen

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestScripts runs the command-line cases in testdata/script (the format is
// fronttest's, script.go), through veritygen and the avbtool front it
// answers as. Neither prints Go's own words (goInternals), nor the numbers
// a size's checks once got wrong.
func TestScripts(t *testing.T) {
	s := fronttest.Scripts{
		Fronts: map[string]fronttest.Main{"veritygen": Main, "avbtool": avbtool.Main},
		Never:  slices.Concat(goInternals, []string{"9223372036854775808", "round it up: 0"}),
		Vars:   map[string]string{"KEYS": filepath.Join(fronttest.AVBVectors, "keys")},
	}
	// The cases came from Go tables: TestCLIBadInput's 47,
	// TestMessagesInOurWords' 23, TestAvbNativeErrors' 15 and
	// TestAppendBadInput's 13. None may get lost.
	if n := s.Run(t, filepath.Join("testdata", "script", "*.txt")); n < 47+23+15+13 {
		t.Fatalf("want at least %d cases in testdata/script, got %d", 47+23+15+13, n)
	}
}
