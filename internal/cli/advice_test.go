package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

// The library's advice to Deactivate a device (Activate's, for
// veritycheck --kernel) is worded from the fact as veritysetup close,
// whatever the library's own hint says; an outer hint without advice
// stays the hint.
func TestDeviceAdviceWords(t *testing.T) {
	exists := &verity.Error{Kind: verity.KindRefused, Err: errors.New("device vroot already exists"),
		Hint: "library words", Advice: verity.AdviceDeactivate, Device: "vroot"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{exists, "close it first (veritysetup close vroot), or choose another name"},
		{fmt.Errorf("activating: %w", exists), "close it first (veritysetup close vroot), or choose another name"},
		{&verity.Error{Kind: verity.KindRefused, Err: errors.New("exists"), Hint: "x", Advice: verity.AdviceDeactivate},
			"close it first (veritysetup close NAME), or choose another name"},
		{&verity.Error{Kind: verity.KindIO, Err: errors.New("failed; undoing it failed: busy"), Hint: "x",
			Advice: verity.AdviceDeactivateLeft, Device: "v2"}, "remove what is left with veritysetup close v2"},
		{&verity.Error{Kind: verity.KindIO, Err: exists, Hint: "outer"}, "outer"},
	} {
		var b bytes.Buffer
		Report(&b, "veritycheck", c.err)
		want := "veritycheck: error: " + c.err.Error() + "\nveritycheck: hint: " + c.want + "\n"
		if b.String() != want {
			t.Errorf("got\n%s\nwant\n%s", b.String(), want)
		}
	}
}
