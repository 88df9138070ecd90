package avbtool

// The avbtool front's answers to command lines avbtool's argparse refuses,
// against avbtool 1.3.0's (testdata/usage.jsonl, recorded by
// testdata/record-usage.py).

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

// TestAvbtoolFrontUsageErrors: each command line gives avbtool's exit
// code (2), stdout and stderr, byte for byte (argparse's usage of the
// subcommand, wrapped as argparse wraps it, and its message), with
// nothing written.
func TestAvbtoolFrontUsageErrors(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "usage.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type usageCase struct {
		Args           []string `json:"args"`
		Exit           int      `json:"exit"`
		Stdout, Stderr string
	}
	var cases []usageCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c usageCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	if len(cases) < 100 {
		t.Fatalf("%d cases in usage.jsonl", len(cases))
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), "avbtool.py", c.Args, &stdout, &stderr)
		if code != c.Exit || stdout.String() != c.Stdout || stderr.String() != c.Stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\navbtool: exit %d, stdout %q, stderr:\n%s",
				strings.Join(c.Args, " "), code, stdout.String(), stderr.String(), c.Exit, c.Stdout, c.Stderr)
		}
	}
	fronttest.SameListing(t, map[string]string{}, fronttest.Listing(t, dir))
}
