package avbtool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/front/veritygen"
)

// TestScripts runs the command-line cases in testdata/script (the format is
// fronttest's, script.go), through the avbtool front and veritygen (whose
// --avb mode writes the same files). $AVB is the directory of avbtool's
// known answers (keys/, full/, info/, sparse/...), $EXE this test binary,
// which TestMain makes the signing helper (package signhelper).
func TestScripts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := fronttest.Scripts{
		Fronts: map[string]fronttest.Main{"avbtool": Main, "veritygen": veritygen.Main},
		Never:  []string{"panic", "goroutine"},
		Vars:   map[string]string{"AVB": fronttest.AVBVectors, "EXE": exe, "SALT": avbSalt},
	}
	// The cases came from Go tables and tests: TestAvbtoolFrontUsage's 12,
	// ...FECByDefault and ...SparseFECByDefault (1 each), ...VerifyDamage's
	// 4, ...Outputs (4), ...TextOutputs (3), ...Interrupted's 2,
	// ...HashtreeSigningHelper (4) and ...VBMetaOutputs (5). None may get
	// lost.
	want := 12 + 1 + 1 + 4 + 4 + 3 + 2 + 4 + 5
	if n := s.Run(t, filepath.Join("testdata", "script", "*.txt")); n < want {
		t.Fatalf("want at least %d cases in testdata/script, got %d", want, n)
	}
}
