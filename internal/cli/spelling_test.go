package cli

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
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

// The tree parameters' Go names come out as the flags that share a
// prefix, the longest first, and a diagnosis's Go assignments as the
// flags' values (LegacyFormat=true is --format=0, an empty salt -).
func TestSharedFlagsSpelling(t *testing.T) {
	for _, sp := range []Spelling{Flags, NewSpelling(SharedFlags...)} {
		got := sp.Say("TreeOptions.Hash=sha1 TreeOptions.HashOffset=4096 TreeOptions.HashBlockSize=1024 TreeOptions.LegacyFormat=true " +
			"TreeOptions.LegacyFormat=false TreeOptions.Salt=[]byte{} TreeOptions.Salt=4f2a; TreeOptions.NoSuperblock needs TreeOptions.Salt")
		want := "--hash=sha1 --hash-offset=4096 --hash-block-size=1024 --format=0 --format=1 --salt=- --salt=4f2a; --no-superblock needs --salt"
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	if got := Flags.Say("add FormatOptions.Force (or Format with FormatOptions.Sign); RootHashSigning.JSONFile"); got != "add --force (or veritygen --root-hash-signature); --root-hash-signature-json" {
		t.Errorf("got %s", got)
	}
}

// Say rewrites Go names, not phrases: what the fronts word differently
// (advice to call Format or Verify again, a lock, a foreign output) are
// facts they word themselves, so the library's text of them passes
// through Say with only its Go names spelled as flags.
func TestVerbPhrasesSpelling(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Not said from text: a lock is a fact (see TestLockedMessage).
		{"DATA d is locked by another process; wait for it to finish", "DATA d is locked by another process; wait for it to finish"},
		// Not said from text: a foreign output is a fact (see TestForeignOutputMessage).
		{"HASH h is not a tree Format could have written (x); TreeOptions.UUID is ignored", "HASH h is not a tree Format could have written (x); --uuid is ignored"},
		// Not a verb: parity made before DATA and HASH changed keeps its words.
		{"parity made before DATA and HASH changed", "parity made before DATA and HASH changed"},
	} {
		if got := Flags.Say(c.in); got != c.want {
			t.Errorf("%q\ngot  %q\nwant %q", c.in, got, c.want)
		}
	}
}

// A lock another process holds is worded from its facts (who likely holds
// it, as the commands guess), where it stands in what wraps it; a lock of
// a run writing through its temporary file keeps the library's words.
func TestLockedMessage(t *testing.T) {
	plain := &verity.Error{Kind: verity.KindRefused, Err: &safefile.LockedError{Role: "DATA", Path: "d.img"}}
	via := &verity.Error{Kind: verity.KindRefused, Err: &safefile.LockedError{Role: "HASH", Path: "h", Via: ".h.tmp1"}}
	const said = "DATA d.img is locked by another process (another veritygen or veritycheck?); wait for it to finish"
	for _, c := range []struct {
		err  error
		want string
	}{
		{plain, said},
		{fmt.Errorf("%w; nothing was written", plain), said + "; nothing was written"},
		{via, via.Error()},
	} {
		for _, sp := range []Spelling{Flags, NewSpelling(SharedFlags...)} {
			if got := sp.Message(c.err); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		}
	}
}

// Format's refusal to replace an output not its own names veritygen as
// what could have written it, in every front, for HASH and for the FEC
// device (as its flag), where it stands in what wraps it.
func TestForeignOutputMessage(t *testing.T) {
	hash := &verity.Error{Kind: verity.KindRefused, Err: &verity.ForeignOutputError{Role: verity.RoleHash, Path: "h.img", Reason: "an ext2/3/4 filesystem"}}
	fecDev := &verity.Error{Kind: verity.KindRefused, Err: &verity.ForeignOutputError{Role: verity.RoleFEC, Path: "f.img", Reason: "a FAT filesystem"}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{hash, "HASH h.img is not a tree veritygen could have written (an ext2/3/4 filesystem): replacing it would destroy it"},
		{fmt.Errorf("format: %w", hash), "format: HASH h.img is not a tree veritygen could have written (an ext2/3/4 filesystem): replacing it would destroy it"},
		{fecDev, "--fec-device f.img is not error correction veritygen could have written (a FAT filesystem): replacing it would destroy it"},
	} {
		for _, sp := range []Spelling{Flags, NewSpelling(SharedFlags...)} {
			if got := sp.Message(c.err); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		}
	}
}
