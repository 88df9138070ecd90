package cli

import (
	"bytes"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

// The library's Go names of options come out as the flags, the longer
// name first where one starts another (AppendFEC, Append), in the error
// line and in the hint.
func TestFlagsSpelling(t *testing.T) {
	err := &verity.Error{Kind: verity.KindParam, Field: "AppendFEC",
		Err:  errorString("FormatOptions.AppendFEC needs FormatOptions.Append; FormatOptions.FECRoots 30"),
		Hint: "round it up: FormatOptions.FECOffset=4096\nsee VerifyOptions.Repair"}
	var b bytes.Buffer
	Report(&b, "veritygen", err)
	want := "veritygen: error: --fec needs --append; --fec-roots 30\n" +
		"veritygen: hint: round it up: --fec-offset=4096\nveritygen: hint: see --repair\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
