package avb

import (
	"context"
	"encoding/binary"
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

	// The hints that advise what to run name this package's verbs, not
	// the commands (which word them from the sentinel and Value).
	namesCommand := func(name string, err error) {
		t.Helper()
		var e *verity.Error
		for hint := ""; errors.As(err, &e); err = e.Err {
			hint += e.Hint
			for _, bad := range []string{"veritygen", "veritycheck"} {
				if strings.Contains(hint, bad) {
					t.Errorf("%s: hint %q names %s", name, hint, bad)
				}
			}
		}
	}
	vb, err := MakeVBMeta(&VBMetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(vb[8:], 99) // the required libavb minor version, past what libavb takes
	_, err = VerifyVBMetaBlob(vb)
	speaksGo("newer libavb", err, "or with this package (MakeVBMeta, AddHashtreeFooter)")
	namesCommand("newer libavb", err)
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("newer libavb: %v", err)
	}

	// A footer whose original image size is short of the hash
	// descriptor's image: CheckFooter finds it, EraseFooter refuses to cut
	// there, naming (in Value) the size to put back.
	boot := image("boot2.img")
	if _, err := AddHashFooter(ctx, boot, &HashFooterOptions{HashAlgorithm: "sha256", PartitionSize: 2 << 20}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(boot)
	ft, err := ParseFooter(b[len(b)-FooterSize:])
	if err != nil {
		t.Fatal(err)
	}
	want := ft.OriginalImageSize
	ft.OriginalImageSize -= 4096
	copy(b[len(b)-FooterSize:], ft.Encode())
	if err := os.WriteFile(boot, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := ReadImage(boot)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(boot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = bad.CheckFooter(f)
	speaksGo("footer mismatch", err, "EraseFooter and AddHashtreeFooter refuse to")
	namesCommand("footer mismatch", err)
	err = EraseFooter(boot, false)
	speaksGo("cut short of the image", err, "Image.CheckFooter names both numbers")
	namesCommand("cut short of the image", err)
	var e *verity.Error
	if !errors.Is(err, ErrFooterMismatch) || !errors.As(err, &e) || e.Kind != verity.KindRefused {
		t.Fatalf("cut short of the image: %v", err)
	}
	for inner := err; errors.As(inner, &e); inner = e.Err {
	}
	if e.Value != want {
		t.Errorf("cut short of the image: Value %d, want %d", e.Value, want)
	}
}
