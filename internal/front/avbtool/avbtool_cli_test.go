package avbtool

// The avbtool front as a binary: the name it answers to through a
// symbolic link, and cmd/avbtool. Its command-line cases are script files
// (testdata/script, TestScripts).

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

const avbSalt = "5eedf00d0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4"

// TestAvbtoolFrontSymlink: the binary run through a symbolic link named
// avbtool is the front; another subcommand exits 2 naming it.
func TestAvbtoolFrontSymlink(t *testing.T) {
	bin := testtool.BuildCommand(t, t.TempDir(), "./cmd/veritygen")
	ours := filepath.Join(filepath.Dir(bin), "avbtool")
	if err := os.Symlink(bin, ours); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(ours, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	if code, out, _ := run("version"); code != 0 || out != "avbtool 1.3.0\n" {
		t.Errorf("version: exit %d, %q", code, out)
	}
	code, _, errOut := run("set_ab_metadata", "--misc_image", "x")
	if code != 2 || !strings.Contains(errOut, "set_ab_metadata is not one of") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("set_ab_metadata: exit %d, %q; want 2 and one line naming it", code, errOut)
	}
	img := filepath.Join(t.TempDir(), "system.img")
	if err := os.WriteFile(img, fronttest.AVBImageBytes(t, "blockbyte:4096:64"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("add_hashtree_footer", "--image", img, "--hash_algorithm", "sha256", "--partition_name", "system")
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("add_hashtree_footer: exit %d, %q, %q", code, out, errOut)
	}
	// argparse's abbreviations: --ima is --image.
	if code, out, _ := run("verify_image", "--ima", img); code != 0 || !strings.Contains(out, "Successfully verified sha256 hashtree") {
		t.Errorf("verify_image: exit %d, %q", code, out)
	}
}

// TestAvbtoolCommand: cmd/avbtool, installed without a link, is the front.
func TestAvbtoolCommand(t *testing.T) {
	fronttest.SameAsCommand(t, "./cmd/avbtool", Main, []string{"version"}, nil, []string{"--help"},
		[]string{"set_ab_metadata", "--misc_image", "x"}, []string{"info_image", "--image", "/nonexistent"})
}
