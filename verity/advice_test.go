package verity

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestAdviceFacts: where a hint advises calling Format again or swapping
// DATA and HASH, the error says so as a fact (Advice, with the paths and
// the option to set), for a front to word as its own command line; the
// message and hint speak Go, as every error does (TestErrorsSpeakGo).
func TestAdviceFacts(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	writeBytes(t, data, randomBytes(16*4096, 21))
	tree := filepath.Join(dir, "tree.verity")
	if _, err := Format(context.Background(), data, tree, nil); err != nil {
		t.Fatal(err)
	}
	image := filepath.Join(dir, "image.img")
	writeBytes(t, image, randomBytes(16*4096, 22))

	_, err := Format(context.Background(), tree, image, nil)
	speaksGo(t, "swapped", err, "did you mean Format of DATA "+image+" then HASH "+tree)
	var e *Error
	if !errors.As(err, &e) || e.Advice != AdviceSwapped || e.Path != image || e.Role != RoleHash || e.DataPath != tree {
		t.Errorf("swapped: %#v, want AdviceSwapped with HASH %s and DATA %s", e, image, tree)
	}

	// Canceled while the tree is written in place into HASH.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = Format(ctx, data, tree, &FormatOptions{InPlace: true, OnLayout: func(*Layout) { cancel() }})
	speaksGo(t, "interrupted in place", err, "call Format again to write the whole tree")
	if !errors.As(err, &e) || e.Advice != AdviceAgain || e.Field != "" || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted in place: %v (%#v), want AdviceAgain without an option", err, e)
	}

	_, err = Format(context.Background(), tree, image, &FormatOptions{Force: true})
	if errors.As(err, &e) && e.Advice != AdviceNone {
		t.Errorf("forced: advice %v", e.Advice)
	}
}
