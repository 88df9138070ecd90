package veritycheck

import (
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestScripts runs the command-line cases in testdata/script (the format is
// fronttest's, script.go), through veritycheck and the avbtool front (which
// makes AVB images to check); $AVB is the directory of avbtool's known
// answers. No front prints Go's own words (goInternals).
func TestScripts(t *testing.T) {
	s := fronttest.Scripts{
		Fronts: map[string]fronttest.Main{"veritycheck": Main, "avbtool": avbtool.Main},
		Never:  goInternals,
		Vars:   map[string]string{"AVB": fronttest.AVBVectors},
	}
	// The cases came from Go tests: TestCLIBadInput's table (45), the
	// tree flags agreeing with the superblock and the missing HASH's hint
	// (2 more), TestFECBadInput's table (14), TestMessagesInOurWords' (13),
	// TestAVBCrafted's (20). None may get lost.
	if want := 47 + 14 + 13 + 20; s.Run(t, filepath.Join("testdata", "script", "*.txt")) < want {
		t.Fatalf("want at least %d cases in testdata/script", want)
	}
}

// goInternals are texts of Go's packages and runtime that must never reach
// the user: each error gets a sentence of ours.
var goInternals = []string{"asn1:", "x509:", "pkcs1", "pkcs8", "encoding/hex", "strconv.", "readat", "unexpected EOF",
	"invalid byte: U+", "odd length hex", "*rsa.", "*ecdsa.", "panic", "goroutine"}
