package hashes

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

// x86Run runs this package's tests under qemu-x86_64 with a CPU model.
type x86Run struct {
	purego bool
	cpu    string
	env    []string
	want   string // wantImplsEnv
	full   bool   // run the tests without -test.short (the others are variations)
}

// The expected implementations per CPU model. The host (Zen 4) has AVX-512
// and SHA-NI, so without this test the AVX2 paths would only run when forced
// with ImplEnv, and their dispatch never.
//
// No model here has SHA-NI: qemu 7.2's TCG does not emulate the SHA
// extensions (it drops them from every model, warning "TCG doesn't support
// requested feature: CPUID.07H:EBX.sha-ni"), so EPYC would look like
// Haswell and "shani4" can only be checked on the host. TCG has no AVX-512
// either.
const (
	wantX86AVX2    = "sha1=avx2,generic;sha256=avx2,generic;sha512=avx2,generic;blake2b-256=avx2,generic"
	wantX86Generic = "sha1=generic;sha256=generic;sha512=generic;blake2b-256=generic"
)

var x86Runs = []x86Run{
	{cpu: "Haswell", want: wantX86AVX2, full: true}, // AVX2, no AVX-512, no SHA-NI
	{cpu: "Haswell", env: []string{ImplEnv + "=generic"}, want: wantX86AVX2},
	{cpu: "SandyBridge", want: wantX86Generic}, // AVX but not AVX2
	{purego: true, cpu: "Haswell", want: wantX86Generic},
}

// TestAMD64UnderQEMU runs this package's tests under qemu-x86_64 on CPU
// models without AVX-512 (and without AVX2), checking that NewBlockHasher
// picks the AVX2 kernels there, or the generic code, and that they pass the
// tests. (Not "TestX86...": benchmarks are run with -run X.)
func TestAMD64UnderQEMU(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs amd64 binaries under qemu-user on a linux/amd64 host")
	}
	qemu := testtool.Require(t, "qemu-x86_64")
	goTool := testtool.Require(t, "go")
	dir := t.TempDir()

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

	// All runs at once (qemu is CPU-bound), reported as subtests.
	type result struct {
		out []byte
		err error
	}
	results := make([]result, len(x86Runs))
	for i, r := range x86Runs {
		wg.Go(func() {
			// The QEMU tests themselves are not run again inside qemu.
			args := []string{"-cpu", r.cpu, bins[r.purego], "-test.count=1", "-test.v", "-test.skip=UnderQEMU"}
			if !r.full || testing.Short() {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(qemu, args...)
			cmd.Env = append(os.Environ(), ImplEnv+"=", wantImplsEnv+"="+r.want)
			cmd.Env = append(cmd.Env, r.env...)
			out, err := cmd.CombinedOutput()
			results[i] = result{out, err}
		})
	}
	wg.Wait()
	for i, r := range x86Runs {
		name := r.cpu
		if r.purego {
			name = "purego/" + name
		}
		for _, e := range r.env {
			name += "/" + e
		}
		t.Run(name, func(t *testing.T) {
			out, err := results[i].out, results[i].err
			if err != nil {
				t.Fatalf("%v\n%s", err, tail(out, 60))
			}
			if !strings.Contains(string(out), "--- PASS: TestExpectedImplementations") {
				t.Fatalf("TestExpectedImplementations did not run:\n%s", tail(out, 60))
			}
			t.Logf("%d tests passed", strings.Count(string(out), "--- PASS"))
		})
	}
}
