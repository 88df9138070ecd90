package fec

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// wantImplsEnv, when set, is what TestExpectedImplementations expects
// Implementations to return, comma-separated: the QEMU runs below set it.
const wantImplsEnv = "VERITYTREE_FEC_WANT_IMPLS"

func TestExpectedImplementations(t *testing.T) {
	want, ok := os.LookupEnv(wantImplsEnv)
	if !ok {
		t.Skipf("%s not set", wantImplsEnv)
	}
	if got := strings.Join(Implementations(), ","); got != want {
		t.Fatalf("Implementations() = %s, want %s", got, want)
	}
}

// TestAMD64UnderQEMU runs this package's tests under qemu-x86_64 on CPU
// models without GFNI and AVX-512 (qemu 7.2's TCG has neither), checking
// that the avx2 kernels are picked on Haswell and the Go LFSR where there
// is no AVX2 or with the purego tag, and that the tests pass there. The
// host (Zen 4) would otherwise run the avx2 kernels only when forced and
// their dispatch never. (Not "TestX86...": benchmarks are run with -run X.)
func TestAMD64UnderQEMU(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs amd64 binaries under qemu-user on a linux/amd64 host")
	}
	qemu := testtool.Require(t, "qemu-x86_64")
	goTool := testtool.Require(t, "go")
	dir := t.TempDir()
	runs := []struct {
		purego bool
		cpu    string
		want   string
	}{
		{false, "Haswell", "avx2,generic"},
		{false, "SandyBridge", "generic"}, // AVX but not AVX2
		{true, "Haswell", "generic"},
	}

	bins := map[bool]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, purego := range []bool{false, true} {
		wg.Go(func() {
			bin := filepath.Join(dir, "amd64.test")
			args := []string{"test", "-c", "-o"}
			if purego {
				bin = filepath.Join(dir, "amd64-purego.test")
				args = append(args, bin, "-tags", "purego", ".")
			} else {
				args = append(args, bin, ".")
			}
			cmd := exec.Command(goTool, args...)
			// GOAMD64=v1: the binary must start on every model here.
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "GOAMD64=v1", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("building (purego %v): %v\n%s", purego, err, out)
				return
			}
			mu.Lock()
			bins[purego] = bin
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, r := range runs {
		name := r.cpu
		if r.purego {
			name = "purego/" + name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The encoder tests only, short: qemu is slow, and the decoder
			// has no assembly.
			cmd := exec.Command(qemu, "-cpu", r.cpu, bins[r.purego], "-test.count=1", "-test.v", "-test.short",
				"-test.run=ExpectedImplementations|ImplementationsMatchGeneric|TileEncoder|EncodeMatchesReference|KnownAnswers")
			cmd.Env = append(os.Environ(), ImplEnv+"=", wantImplsEnv+"="+r.want)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, qemuTail(out, 60))
			}
			if !strings.Contains(string(out), "--- PASS: TestExpectedImplementations") {
				t.Fatalf("TestExpectedImplementations did not run:\n%s", qemuTail(out, 60))
			}
			t.Logf("%d tests passed", strings.Count(string(out), "--- PASS"))
		})
	}
}

func qemuTail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
