package avbtool

// The avbtool front's reading of its command line against avbtool 1.3.0's
// argparse (testdata/argparse.jsonl, recorded by
// testdata/record-argparse.py): --help of each subcommand, and the order in
// which the arguments are taken.

import (
	"os"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestAvbtoolFrontArgparse: each recorded command line gives avbtool's
// exit code, stdout and stderr byte for byte, with nothing written.
func TestAvbtoolFrontArgparse(t *testing.T) {
	cases := readRecordedLines(t, "argparse.jsonl", 500)
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("present.img", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := fronttest.Listing(t, dir)
	replayRecordedLines(t, cases)
	helps := 0
	for _, c := range cases {
		if c.Exit == 0 && strings.HasPrefix(c.Stdout, "usage: ") && strings.Contains(c.Stdout, "\noptions:\n") {
			helps++
		}
	}
	if helps < len(avbtoolFrontSubs()) {
		t.Errorf("%d help texts recorded, fewer than the front's subcommands", helps)
	}
	fronttest.SameListing(t, before, fronttest.Listing(t, dir))
}

// avbtoolFrontSubs are the subcommands the front takes but version.
func avbtoolFrontSubs() []string {
	var subs []string
	for _, c := range commands {
		if c != "version" {
			subs = append(subs, c)
		}
	}
	return subs
}
