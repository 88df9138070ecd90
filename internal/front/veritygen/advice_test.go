package veritygen

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/verity"
)

// TestAdviceWords: veritygen words the library's advice (verity.Advice,
// a fact) as its command lines, whatever the library's Go hint says: the
// hint is not read, and a Go hint left unsaid would show.
func TestAdviceWords(t *testing.T) {
	goHint := "call Format.Go(hint) again"
	for _, c := range []struct {
		err  *verity.Error
		want string
	}{
		{&verity.Error{Kind: verity.KindCanceled, Advice: verity.AdviceAgain, Field: "OriginalSize", Value: 4096},
			"run the same command again with --data-size=4096 to finish it"},
		{&verity.Error{Kind: verity.KindCanceled, Advice: verity.AdviceAgain},
			"run veritygen again to write the whole tree"},
		{&verity.Error{Kind: verity.KindRefused, Advice: verity.AdviceSwapped, Role: verity.RoleHash, Path: "a.img", DataPath: "a.verity"},
			"DATA comes first: did you mean veritygen a.img a.verity?\nveritygen: hint: to replace it anyway, add --force"},
		{&verity.Error{Kind: verity.KindRefused, Advice: verity.AdviceAVBInterrupted, Role: verity.RoleData, Path: "a.img"},
			"finish that run: run the same command again (veritygen --append --avb, or avbtool add_hashtree_footer); or cut DATA back to its image first: avbtool erase_footer --image a.img"},
		{&verity.Error{Kind: verity.KindRefused, Advice: verity.AdviceAVB, Role: verity.RoleData, Path: "a.img"},
			"to build its tree and footer again, add --avb (veritygen --append --avb ...); for a tree without AVB, remove the footer first: avbtool erase_footer --image a.img"},
	} {
		c.err.Err, c.err.Hint = errors.New("the message"), goHint
		// As Format's callers get it: wrapped, under an *Error without advice.
		err := fmt.Errorf("wrapped: %w", &verity.Error{Kind: c.err.Kind, Err: c.err})
		var b bytes.Buffer
		cli.Report(&b, prog, formatHint(err))
		want := "veritygen: error: wrapped: the message\nveritygen: hint: " + c.want + "\n"
		if b.String() != want {
			t.Errorf("advice %v:\ngot  %q\nwant %q", c.err.Advice, b.String(), want)
		}
	}
	// No advice: the library's hint, spelled.
	var b bytes.Buffer
	cli.Report(&b, prog, formatHint(&verity.Error{Kind: verity.KindRefused, Err: errors.New("m"), Hint: "add FormatOptions.Force"}))
	if want := "veritygen: error: m\nveritygen: hint: add --force\n"; b.String() != want {
		t.Errorf("no advice: got %q, want %q", b.String(), want)
	}
}
