package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/verity"
)

// TestAVBHintWords: the avb package's hints that advise what to run,
// which name its Go verbs, come out in the commands' words, chosen by the
// sentinel and (for the size to put back) Value, wrapped or not; the Go
// hint is not read.
func TestAVBHintWords(t *testing.T) {
	// And Verify's advice to call it again, by the fact.
	for advice, want := range map[verity.Advice]string{
		verity.AdviceVerifyAgain:   "veritycheck: hint: the repair was written; run veritycheck again\n",
		verity.AdviceVerifyPartial: "veritycheck: hint: the blocks written so far are correct (each was checked against the tree); run veritycheck again to see what is left\n",
	} {
		var b bytes.Buffer
		Report(&b, "veritycheck", &verity.Error{Kind: verity.KindIO, Err: &verity.Error{Kind: verity.KindIO, Advice: advice, Hint: "call Go(hint)", Err: fmt.Errorf("x")}})
		if !strings.HasSuffix(b.String(), want) {
			t.Errorf("advice %v: got %q, want it to end in %q", advice, b.String(), want)
		}
	}
	for _, c := range []struct {
		err  *verity.Error
		want string
	}{
		{&verity.Error{Kind: verity.KindInput, Err: fmt.Errorf("%w: x", avb.ErrUnsupportedVersion)},
			"make the image with avbtool 1.3 or older (or veritygen)"},
		{&verity.Error{Kind: verity.KindRefused, Value: 12288, Err: fmt.Errorf("%w: x", avb.ErrFooterMismatch)},
			"put 12288 back as the footer's original image size (veritycheck IMAGE names both numbers)"},
		{&verity.Error{Kind: verity.KindInput, Err: fmt.Errorf("%w: %w: x", avb.ErrMalformed, avb.ErrFooterMismatch)},
			"(avbtool erase_footer, a rerun of add_hashtree_footer); veritygen's avbtool front refuses to"},
	} {
		c.err.Hint = "call Go(hint)"
		for _, err := range []error{c.err, &verity.Error{Kind: c.err.Kind, Err: fmt.Errorf("img: %w", c.err)}} {
			var b bytes.Buffer
			Report(&b, "veritycheck", err)
			if !strings.Contains(b.String(), "veritycheck: hint: ") || !strings.Contains(b.String(), c.want) || strings.Contains(b.String(), "Go(hint)") {
				t.Errorf("%v: got\n%s\nwant a hint with %q", err, b.String(), c.want)
			}
		}
	}
}
