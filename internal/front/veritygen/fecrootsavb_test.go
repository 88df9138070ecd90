package veritygen

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/front/veritycheck"
)

// TestCheckCommandAVBNoRootsWarning: the check command of a small
// unsigned AVB image with parity, whose vbmeta and footer after the parity
// end the file where a parity of more roots would, verifies without a
// word of another --fec-roots: the file ends in an AVB footer, not at the
// parity's end.
func TestCheckCommandAVBNoRootsWarning(t *testing.T) {
	data := filepath.Join(t.TempDir(), "small.img")
	fronttest.Image(t, data, 40*4096, 8)
	text := cliOK(t, "--append", "--fec", "--avb", data).stdout
	_, line, _ := strings.Cut(text, "Check with:      \t")
	words := shellWords(t, strings.TrimSpace(line))
	var stdout, stderr bytes.Buffer
	if words[0] != "veritycheck" || veritycheck.Main(context.Background(), "veritycheck", words[1:], &stdout, &stderr) != 0 {
		t.Fatalf("%s:\n%s%s", line, stdout.Bytes(), stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "--fec-roots") {
		t.Errorf("a word of another --fec-roots:\n%s", stderr.Bytes())
	}
}
