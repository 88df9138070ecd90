package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// TrackSources makes the Go files of pkgs (patterns as go build takes
// them, e.g. "./cmd/veritygen") and of the module's packages they import
// inputs of the calling test. A test that runs a command it builds itself
// does not import the command's package, so go test would otherwise keep
// its cached result when only the command changed; it keys the cache on
// the files a test opens, so this opens each of them.
func TrackSources(pkgs ...string) error {
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{range .SFiles}}|{{.}}{{end}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	if root, err := moduleRoot(); err == nil {
		cmd.Dir = root
	}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list %s: %v", strings.Join(pkgs, " "), err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSpace(line), "|")
		for _, name := range fields[1:] {
			f, err := os.Open(filepath.Join(fields[0], name))
			if err != nil {
				return err
			}
			f.Close()
		}
	}
	return nil
}
