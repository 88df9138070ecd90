package avbtool

// The avbtool front's text outputs: info_image streamed into --output (or
// stdout), replacing its own earlier output but nothing else; an
// interrupted run exits as avbtool killed by the signal shows in a shell.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

func TestAvbtoolFrontTextOutputs(t *testing.T) {
	image := filepath.Join(fronttest.AVBVectors, "full", "one-block.img")
	want, err := os.ReadFile(filepath.Join(fronttest.AVBVectors, "info", "one-block.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "info.txt")
	for range 2 { // the second replaces the first (it was refused as foreign)
		if r := run(t, "info_image", "--image", image, "--output", out); r.code != 0 || r.stdout != "" {
			t.Fatalf("info_image --output: exit %d, %q", r.code, r.stderr)
		}
		if b, _ := os.ReadFile(out); !bytes.Equal(b, want) {
			t.Fatalf("--output holds\n%s\nwant avbtool's\n%s", b, want)
		}
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("keep me\n"), 0o644)
	if r := run(t, "info_image", "--image", image, "--output", notes); r.code != 1 || !strings.Contains(r.stderr, "is not an info_image text") {
		t.Errorf("over a text file: exit %d, %q; want 1, refused", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(notes); string(b) != "keep me\n" {
		t.Error("the text file changed")
	}
	cmdline := filepath.Join(dir, "cmdline")
	for range 2 {
		if r := run(t, "calculate_kernel_cmdline", "--image", image, "--output", cmdline); r.code != 0 {
			t.Fatalf("calculate_kernel_cmdline --output: exit %d, %q", r.code, r.stderr)
		}
	}
}

// Ended by SIGINT or SIGTERM: "interrupted by SIGINT", exit 130 (143),
// the status a shell shows for avbtool killed by the signal; nothing is
// written.
func TestAvbtoolFrontInterrupted(t *testing.T) {
	image := filepath.Join(fronttest.AVBVectors, "vbmeta", "rootfs.bin")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&cli.Interrupted{Signal: sig})
		out := filepath.Join(t.TempDir(), "info.txt")
		var stdout, stderr bytes.Buffer
		code := Main(ctx, "avbtool", []string{"info_image", "--image", image, "--output", out}, &stdout, &stderr)
		name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]
		if code != 128+int(sig) || stderr.String() != "avbtool: interrupted by "+name+"\n" {
			t.Errorf("%v: exit %d, stderr %q", sig, code, stderr.String())
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("%v: %s was written", sig, out)
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
			t.Errorf("%v: left %v", sig, entries)
		}
	}
}
