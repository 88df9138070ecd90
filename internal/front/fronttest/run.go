package fronttest

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// Main is the entry point every front exports.
type Main func(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int

// Result is what one run of a front gave.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs main in-process under the name argv0 with args, and logs what
// it gave.
func Run(t testing.TB, main Main, argv0 string, args ...string) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := main(context.Background(), argv0, args, &stdout, &stderr)
	t.Logf("%s %q -> exit %d\nstdout:\n%s\nstderr:\n%s", argv0, args, code, stdout.String(), stderr.String())
	return Result{code, stdout.String(), stderr.String()}
}

// OK is Run, failing the test unless main exits 0.
func OK(t testing.TB, main Main, argv0 string, args ...string) Result {
	t.Helper()
	r := Run(t, main, argv0, args...)
	if r.Code != 0 {
		t.Fatalf("%s %q: exit %d, want 0\nstderr:\n%s", argv0, args, r.Code, r.Stderr)
	}
	return r
}

// SameAsCommand builds the command pkg (e.g. "./cmd/avbtool"), runs it with
// each of the argument lists, and fails the test unless it answers as main
// run in-process under the binary's path: exit code, stdout and stderr.
func SameAsCommand(t *testing.T, pkg string, main Main, argLists ...[]string) {
	t.Helper()
	bin := testtool.BuildCommand(t, t.TempDir(), pkg)
	for _, args := range argLists {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		want := Run(t, main, bin, args...)
		if code != want.Code || stdout.String() != want.Stdout || stderr.String() != want.Stderr {
			t.Errorf("%s %q: exit %d, stdout %q, stderr %q; in-process: exit %d, %q, %q",
				pkg, args, code, stdout.String(), stderr.String(), want.Code, want.Stdout, want.Stderr)
		}
	}
}
