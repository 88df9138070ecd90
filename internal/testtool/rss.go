package testtool

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildCommand builds the module's package pkg (e.g. "./cmd/veritygen")
// into dir, under its last element's name, and returns the binary's path.
// Its sources become inputs of the test (TrackSources), so a change to the
// command is never answered with a cached result.
func BuildCommand(t testing.TB, dir, pkg string) string {
	t.Helper()
	if err := TrackSources(pkg); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command(Require(t, "go"), "build", "-o", out, pkg)
	cmd.Dir = ModuleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// BuildLauncher builds the launcher (internal/testtool/_launcher) into dir
// and returns its path. Tests measure the peak RSS of a command through
// it: see the launcher's documentation for why they cannot themselves.
func BuildLauncher(t testing.TB, dir string) string {
	t.Helper()
	return BuildCommand(t, dir, "./internal/testtool/_launcher")
}

// RunMeasured runs bin with args through launcher, with the command's
// output going to stdout and stderr, and returns its exit code and its
// peak RSS in bytes. GOMEMLIMIT and GOGC are left out of its environment:
// the runtime's settings must not be what bounds the memory measured.
func RunMeasured(t testing.TB, launcher string, stdout, stderr io.Writer, bin string, args ...string) (code int, rss int64) {
	t.Helper()
	cmd := exec.Command(launcher, append([]string{bin}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "GOGC=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	reportR, reportW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer reportR.Close()
	cmd.ExtraFiles = []*os.File{reportW} // fd 3
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reportW.Close()
	code = -2
	sc := bufio.NewScanner(reportR)
	for sc.Scan() {
		var kib int64
		if n, _ := fmt.Sscanf(sc.Text(), "exit %d %d", &code, &kib); n == 2 {
			rss = kib << 10
		}
	}
	if err := cmd.Wait(); err != nil || code == -2 {
		t.Fatalf("launcher %s %s: %v (no report)", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return code, rss
}
