package cli

import (
	"errors"
	"strings"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// Spelling turns the library's words for its options into a front's: the
// verity and avb packages name an option by its Go field, qualified by
// its struct ("FormatOptions.FECRoots 30 is not from 2 to 24"), and each
// front says it as its own flag ("--fec-roots 30 ..."). The names are Go
// identifiers joined by a dot, which no message has otherwise.
type Spelling struct{ r *strings.Replacer }

// NewSpelling returns the Spelling of pairs: Go name, flag, Go name, flag...
// A name that another starts with must come after it (Append after
// AppendFEC): at each place the first that matches is taken.
func NewSpelling(pairs ...string) Spelling { return Spelling{strings.NewReplacer(pairs...)} }

// Say returns s with each option's Go name as the front's flag.
func (sp Spelling) Say(s string) string {
	if sp.r == nil {
		return s
	}
	return sp.r.Replace(s)
}

// Message returns err's message as the fronts say it: the facts of the
// errors in its chain that the commands word themselves (a lock another
// process holds, safefile.LockedError: likely another of our commands; an
// output Format refuses to replace, verity.ForeignOutputError: one that
// veritygen could not have written) in the commands' words, in place of that error's own message within
// what wraps it; then each option's Go name as the front's flag.
func (sp Spelling) Message(err error) string {
	msg := err.Error()
	var le *safefile.LockedError
	if errors.As(err, &le) && le.Via == "" && !le.Appeared {
		msg = strings.Replace(msg, le.Error(), le.Role+" "+le.Path+" is locked by another process (another veritygen or veritycheck?); wait for it to finish", 1)
	}
	var fe *verity.ForeignOutputError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), foreignOutput(fe), 1)
	}
	return sp.Say(msg)
}

// foreignOutput says Format's refusal to replace an output that is not
// its own as the commands do: the command that makes trees is veritygen,
// whichever front refuses.
func foreignOutput(fe *verity.ForeignOutputError) string {
	if fe.Role == verity.RoleFEC {
		return "FormatOptions.FECDevice " + fe.Path + " is not error correction veritygen could have written (" + fe.Reason + "): replacing it would destroy it"
	}
	return string(fe.Role) + " " + fe.Path + " is not a tree veritygen could have written (" + fe.Reason + "): replacing it would destroy it"
}

// SharedFlags are the Go names of the options that veritygen, veritycheck
// and veritysetup all take, with the flag all three spell them as
// (veritysetup's): pairs for NewSpelling.
var SharedFlags = []string{
	"TreeOptions.DataBlockSize", "--data-block-size",
	"TreeOptions.HashBlockSize", "--hash-block-size",
	"TreeOptions.HashOffset", "--hash-offset",
	"TreeOptions.Hash", "--hash",
	"TreeOptions.DataBlocks", "--data-blocks",
	"TreeOptions.LegacyFormat=true", "--format=0",
	"TreeOptions.LegacyFormat=false", "--format=1",
	"TreeOptions.LegacyFormat", "--format",
	"TreeOptions.NoSuperblock", "--no-superblock",
	"TreeOptions.UUID", "--uuid",
	"TreeOptions.Salt=[]byte{}", "--salt=-",
	"TreeOptions.Salt", "--salt",
	"FormatOptions.FECRoots", "--fec-roots",
	"VerifyOptions.FECRoots", "--fec-roots",
	"FormatOptions.FECOffset", "--fec-offset",
	"VerifyOptions.FECOffset", "--fec-offset",
	"FormatOptions.FECDevice", "--fec-device",
	"VerifyOptions.FECDevice", "--fec-device",
	"FormatOptions.RootHashFile", "--root-hash-file",
}

// Flags is how veritygen and veritycheck spell the library's options (and
// what Report and ReportJSON print): SharedFlags, their own flags, and the
// words they say where a Go caller would call a verb (the avbtool front,
// which reports through Report too, keeps the avb package's references
// to avbtool's options).
var Flags = NewSpelling(append([]string{
	"VerifyOptions.Repair", "--repair",
	"VerifyOptions.MaxProblems", "--max-problems",
	"RepairOptions.Roots", "--fec-roots",
	"FormatOptions.AppendFEC", "--fec",
	"FormatOptions.Append", "--append",
	"FormatOptions.OriginalSize", "--data-size",
	"FormatOptions.Force", "--force",
	"SourceOptions.Raw", "--raw",
	"Format with FormatOptions.Sign", "veritygen --root-hash-signature",
	"Format with RootHashSigning.JSONFile", "veritygen --root-hash-signature-json",
	"RootHashSigning.SignatureFile", "--root-hash-signature",
	"RootHashSigning.JSONFile", "--root-hash-signature-json",
	"RootHashSigning.Signer", "--sign-key",
	"RootHashSigning.Certificate", "--sign-cert",
	"VerifyRootHashSignature.trusted", "--sign-cert",
	"TableOptions.DataDevice", "--data-device",
	"TableOptions.HashDevice", "--hash-device",
	"TableOptions.FECDevice", "--fec-device-name",
	"TableOptions.DMName", "--dm-name",
	"DeactivateOptions.Deferred", "--deferred",
	"HashtreeFooterOptions.SetupAsRootfsFromKernel", "the as-rootfs option (avbtool's --setup_as_rootfs_from_kernel)",
	"HashFooterOptions.DynamicPartitionSize", "a dynamic partition size (avbtool's --dynamic_partition_size)",
	"HashtreeFooterOptions.NoHashtree", "avbtool --no_hashtree",
}, SharedFlags...)...)
