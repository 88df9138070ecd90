package testtool

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// CrossBuild is one test binary of the package under test, cross-compiled
// for another architecture (or CPU level) with go test -c.
type CrossBuild struct {
	GOARCH, GOARM, GOAMD64, Tags string
}

func (b CrossBuild) String() string {
	s := b.GOARCH
	if b.GOARM != "" {
		s += "v" + b.GOARM
	}
	if b.GOAMD64 != "" {
		s += "-" + b.GOAMD64
	}
	if b.Tags != "" {
		s += "-" + b.Tags
	}
	return s
}

// QEMURun is one run of a CrossBuild under qemu-user on a CPU model.
type QEMURun struct {
	Name  string // of its subtest; default: build/cpu
	Build CrossBuild
	CPU   string
	Env   []string // added to the environment (after os.Environ)
	Args  []string // more test flags, e.g. -test.skip=...
	// Full runs the tests without -test.short; the other runs of the same
	// build are variations.
	Full bool
}

func (r QEMURun) String() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Build.String() + "/" + r.CPU
}

// qemuFor names the qemu-user program of each GOARCH.
var qemuFor = map[string]string{"arm64": "qemu-aarch64", "arm": "qemu-arm", "amd64": "qemu-x86_64"}

// RunUnderQEMU builds each distinct build of runs from the package in the
// current directory, runs them all at once (qemu is CPU-bound, and
// t.Parallel would cap it at GOMAXPROCS), and reports each run as a subtest
// that fails unless the binary passed and its -test.v output shows the
// test mustPass passing: a run that skipped everything does not count.
// qemu-user and go are required (see Require). Under -short nothing runs
// (see Long): the cross builds and the emulated CPUs take most of the
// quick command's time otherwise.
func RunUnderQEMU(t *testing.T, runs []QEMURun, mustPass string) {
	t.Helper()
	Long(t, "the qemu-user runs")
	goTool := Require(t, "go")
	qemu := map[string]string{}
	var builds []CrossBuild
	for _, r := range runs {
		if qemu[r.Build.GOARCH] == "" {
			qemu[r.Build.GOARCH] = Require(t, qemuFor[r.Build.GOARCH])
		}
		if !slices.Contains(builds, r.Build) {
			builds = append(builds, r.Build)
		}
	}
	dir := t.TempDir()
	bins := map[CrossBuild]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range builds {
		wg.Go(func() {
			bin := filepath.Join(dir, b.String()+".test")
			args := []string{"test", "-c", "-o", bin}
			if b.Tags != "" {
				args = append(args, "-tags", b.Tags)
			}
			cmd := exec.Command(goTool, append(args, ".")...)
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+b.GOARCH, "GOARM="+b.GOARM, "GOAMD64="+b.GOAMD64, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("building %v: %v\n%s", b, err, out)
				return
			}
			mu.Lock()
			bins[b] = bin
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	type result struct {
		out []byte
		err error
	}
	results := make([]result, len(runs))
	for i, r := range runs {
		wg.Go(func() {
			args := append([]string{"-cpu", r.CPU, bins[r.Build], "-test.count=1", "-test.v"}, r.Args...)
			if !r.Full {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(qemu[r.Build.GOARCH], args...)
			cmd.Env = append(os.Environ(), r.Env...)
			out, err := cmd.CombinedOutput()
			results[i] = result{out, err}
		})
	}
	wg.Wait()
	for i, r := range runs {
		t.Run(r.String(), func(t *testing.T) {
			out, err := results[i].out, results[i].err
			if err != nil {
				t.Fatalf("%v\n%s", err, tail(out, 60))
			}
			if !strings.Contains(string(out), "--- PASS: "+mustPass) {
				t.Fatalf("%s did not run:\n%s", mustPass, tail(out, 60))
			}
			t.Logf("%d tests passed", strings.Count(string(out), "--- PASS"))
		})
	}
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
