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
	}
	// 47 cases came from the TestCLIBadInput table, 23 from
	// TestMessagesInOurWords': none may get lost.
	if n := s.Run(t, filepath.Join("testdata", "script", "*.txt")); n < 47+23 {
		t.Fatalf("want at least %d cases in testdata/script, got %d", 47+23, n)
	}
}
