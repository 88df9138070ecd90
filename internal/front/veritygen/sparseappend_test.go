package veritygen

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/front/veritycheck"
	"github.com/veritytree/veritytree/internal/testtool"
)

// TestAppendSparse: --append takes an Android sparse image as --append
// --avb does: the image stays sparse, expands to the file --append makes
// of the expanded image, byte for byte, and the report is that one's (but
// for the name and the sparse DATA's format); its check command verifies
// it. Run again on its output, or with a flag the sparse path does not
// take, it refuses and leaves DATA as it was. Before, --append refused any
// sparse image.
func TestAppendSparse(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	simg2img := testtool.Require(t, "simg2img")
	dir := t.TempDir()
	raw := filepath.Join(dir, "system.raw")
	if err := os.WriteFile(raw, andrRawImage(rand.New(rand.NewPCG(5, 6)), 300, 4096, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	simg := filepath.Join(dir, "system.simg")
	andrExec(t, img2simg, raw, simg)
	for _, flags := range [][]string{nil, {"--fec"}, {"--fec", "--fec-roots=5"}, {"--hash=sha512", "--data-block-size=1024", "--hash-block-size=1024"}} {
		name := strings.Join(flags, " ")
		a, b := filepath.Join(dir, "a.simg"), filepath.Join(dir, "b.raw")
		if err := os.WriteFile(a, fronttest.Read(t, simg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, fronttest.Read(t, raw), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--append", "--salt=" + cliSalt}, flags...)
		ra := cliOK(t, append(args, a)...)
		rb := cliOK(t, append(args, b)...)
		if !strings.Contains(ra.stderr, "is an Android sparse image of") {
			t.Errorf("%s: no word of the expansion:\n%s", name, ra.stderr)
		}
		expanded := filepath.Join(dir, "a.raw")
		andrExec(t, simg2img, a, expanded)
		x, y := fronttest.Read(t, expanded), fronttest.Read(t, b)
		// A sparse image is whole blocks of its own (4096 bytes here):
		// smaller tree blocks leave zeros after the raw file's end.
		padded := (len(y) + 4095) / 4096 * 4096
		if len(x) != padded || !bytes.Equal(x[:len(y)], y) || !bytes.Equal(x[len(y):], make([]byte, padded-len(y))) {
			t.Errorf("%s: the expansion (%d bytes) is not the raw --append's output (%d bytes) padded to a whole sparse block", name, len(x), len(y))
		}
		sizeLine := func(n int) string { return fmt.Sprintf("Image size:      \t%d [bytes]", n) }
		want := strings.Replace(strings.ReplaceAll(rb.stdout, b, "DATA"), sizeLine(len(y)), sizeLine(padded), 1)
		if got := strings.ReplaceAll(ra.stdout, a, "DATA"); got != want {
			t.Errorf("%s: the sparse report\n%s\nis not the raw one\n%s", name, got, want)
		}

		_, line, _ := strings.Cut(ra.stdout, "Check with:      \t")
		words := shellWords(t, strings.TrimSpace(line))
		var stdout, stderr bytes.Buffer
		if words[0] != "veritycheck" || veritycheck.Main(context.Background(), "veritycheck", words[1:], &stdout, &stderr) != 0 {
			t.Errorf("%s: the check command %q fails:\n%s%s", name, line, stdout.Bytes(), stderr.Bytes())
		}

		before := fronttest.Read(t, a)
		for _, refused := range [][]string{append(append([]string{"--append", "--salt=" + cliSalt}, flags...), a), {"--append", "--data-size=4096", a}, {"--append", "--force", a}} {
			r := cliRun(t, t.Context(), refused...)
			if r.code != 2 || !strings.Contains(r.stderr, "veritygen: error: ") {
				t.Errorf("%s: %v: want exit 2 and an error, got %d:\n%s", name, refused, r.code, r.stderr)
			}
			if string(fronttest.Read(t, a)) != string(before) {
				t.Fatalf("%s: %v changed DATA", name, refused)
			}
		}
	}
}
