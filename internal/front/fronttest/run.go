package fronttest

import (
	"bytes"
	"context"
	"io"
	"testing"
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
