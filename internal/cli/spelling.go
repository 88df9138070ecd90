package cli

import "strings"

// Spelling turns the library's words for its options into a front's: the
// verity and avb packages name an option by its Go field, qualified by
// its struct ("FormatOptions.FECRoots 30 is not from 2 to 24"), and each
// front says it as its own flag ("--fec-roots 30 ..."). The names are Go
// identifiers joined by a dot, which no message has otherwise.
type Spelling struct{ r *strings.Replacer }

// NewSpelling returns the Spelling of pairs: Go name, flag, Go name, flag...
func NewSpelling(pairs ...string) Spelling { return Spelling{strings.NewReplacer(pairs...)} }

// Say returns s with each option's Go name as the front's flag.
func (sp Spelling) Say(s string) string {
	if sp.r == nil {
		return s
	}
	return sp.r.Replace(s)
}

// Flags is how veritygen and veritycheck spell the library's options (and
// what Report and ReportJSON print). A name that another starts with
// comes after it (Append after AppendFEC): the first that matches is taken.
var Flags = NewSpelling(
	"TreeOptions.DataBlockSize", "--data-block-size",
	"TreeOptions.HashBlockSize", "--hash-block-size",
	"VerifyOptions.Repair", "--repair",
	"FormatOptions.FECRoots", "--fec-roots",
	"VerifyOptions.FECRoots", "--fec-roots",
	"RepairOptions.Roots", "--fec-roots",
	"FormatOptions.FECOffset", "--fec-offset",
	"VerifyOptions.FECOffset", "--fec-offset",
	"FormatOptions.FECDevice", "--fec-device",
	"VerifyOptions.FECDevice", "--fec-device",
	"FormatOptions.AppendFEC", "--fec",
	"FormatOptions.Append", "--append",
	"FormatOptions.OriginalSize", "--data-size",
)
