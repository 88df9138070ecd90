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
	cases := readRecordedLines(t, "usage.jsonl", 100)
	dir := t.TempDir()
	t.Chdir(dir)
	replayRecordedLines(t, cases)
	fronttest.SameListing(t, map[string]string{}, fronttest.Listing(t, dir))
}

// recordedLine is a command line and avbtool 1.3.0's answer to it.
type recordedLine struct {
	Args           []string `json:"args"`
	Exit           int      `json:"exit"`
	Stdout, Stderr string
}

// readRecordedLines reads testdata/NAME (one recordedLine a line), at
// least min of them.
func readRecordedLines(t *testing.T, name string, min int) []recordedLine {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []recordedLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c recordedLine
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) < min {
		t.Fatalf("%d cases in %s", len(cases), name)
	}
	return cases
}

// replayRecordedLines runs each line through the front in the current
// directory and wants avbtool's exit code, stdout and stderr byte for byte.
func replayRecordedLines(t *testing.T, cases []recordedLine) {
	t.Helper()
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), "avbtool.py", c.Args, &stdout, &stderr)
		if code != c.Exit || stdout.String() != c.Stdout || stderr.String() != c.Stderr {
			t.Errorf("%s: exit %d, stdout:\n%s\nstderr:\n%s\navbtool: exit %d, stdout:\n%s\nstderr:\n%s",
				strings.Join(c.Args, " "), code, stdout.String(), stderr.String(), c.Exit, c.Stdout, c.Stderr)
		}
	}
}
