package avbtool

// The avbtool front's reading of its command line against avbtool 1.3.0's
// argparse (testdata/argparse.jsonl, recorded by
// testdata/record-argparse.py): --help of each subcommand, and the order in
// which the arguments are taken.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestAvbtoolFrontArgparse: each recorded command line gives avbtool's
// exit code, stdout and stderr byte for byte, with nothing written.
func TestAvbtoolFrontArgparse(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "argparse.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type argCase struct {
		Args           []string `json:"args"`
		Exit           int      `json:"exit"`
		Stdout, Stderr string
	}
	var cases []argCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c argCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	if len(cases) < 500 {
		t.Fatalf("%d cases in argparse.jsonl", len(cases))
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("present.img", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := fronttest.Listing(t, dir)
	helps := 0
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), "avbtool.py", c.Args, &stdout, &stderr)
		if code != c.Exit || stdout.String() != c.Stdout || stderr.String() != c.Stderr {
			t.Errorf("%s: exit %d, stdout:\n%s\nstderr:\n%s\navbtool: exit %d, stdout:\n%s\nstderr:\n%s",
				strings.Join(c.Args, " "), code, stdout.String(), stderr.String(), c.Exit, c.Stdout, c.Stderr)
		}
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
