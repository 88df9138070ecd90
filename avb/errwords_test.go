package avb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

// The package's errors name options by their Go fields and avbtool's
// behaviour by the options that ask for it here, not by a command line's
// flags (--x): the fronts spell them (internal/cli.Flags). Driven through
// the API.
func TestErrorsSpeakGo(t *testing.T) {
	flag := regexp.MustCompile(`(^|[^-\w])--[a-z]`)
	ctx := context.Background()
	dir := t.TempDir()
	image := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, makeImage(t, "blockbyte:4096:300"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	speaksGo := func(name string, err error, want string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		msg, hint := err.Error(), ""
		var e *verity.Error
		for hint == "" && errors.As(err, &e) {
			hint, err = e.Hint, e.Err
		}
		if !strings.Contains(msg+"\n"+hint, want) {
			t.Errorf("%s: %q (hint %q) does not say %q", name, msg, hint, want)
		}
		for _, s := range []string{msg, hint} {
			if flag.MatchString(s) {
				t.Errorf("%s: %q names a flag", name, s)
			}
		}
	}

	self := image("self.img")
	_, err := AddHashtreeFooter(ctx, self, &HashtreeFooterOptions{HashAlgorithm: "sha256", SetupRootfsFromKernel: self})
	speaksGo("set up from itself", err, "HashtreeFooterOptions.SetupAsRootfsFromKernel")

	_, err = AddHashFooter(ctx, image("boot.img"), &HashFooterOptions{HashAlgorithm: "sha256"})
	speaksGo("no partition size", err, "HashFooterOptions.DynamicPartitionSize")

	noTree := image("notree.img")
	r, err := AddHashtreeFooter(ctx, noTree, &HashtreeFooterOptions{HashAlgorithm: "sha256", NoHashtree: true})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ReadImage(noTree)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = img.HashtreeCheck(r.Descriptor)
	speaksGo("no tree stored", err, "HashtreeFooterOptions.NoHashtree")
}
