package hashes

import (
	"runtime"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

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

// TestAMD64UnderQEMU runs this package's tests under qemu-x86_64 on CPU
// models without AVX-512 (and without AVX2), checking that NewBlockHasher
// picks the AVX2 kernels there, or the generic code, and that they pass the
// tests. (Not "TestX86...": benchmarks are run with -run X.)
func TestAMD64UnderQEMU(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs amd64 binaries under qemu-user on a linux/amd64 host")
	}
	// GOAMD64=v1: the binary must start on every model here. The QEMU
	// tests themselves are not run again inside qemu.
	v1 := testtool.CrossBuild{GOARCH: "amd64", GOAMD64: "v1"}
	v1purego := testtool.CrossBuild{GOARCH: "amd64", GOAMD64: "v1", Tags: "purego"}
	runs := []testtool.QEMURun{
		qemuRun(v1, "Haswell", wantX86AVX2, true), // AVX2, no AVX-512, no SHA-NI
		qemuRun(v1, "Haswell", wantX86AVX2, false, ImplEnv+"=generic"),
		qemuRun(v1, "SandyBridge", wantX86Generic, false), // AVX but not AVX2
		qemuRun(v1purego, "Haswell", wantX86Generic, false),
	}
	for i := range runs {
		runs[i].Args = []string{"-test.skip=UnderQEMU"}
	}
	testtool.RunUnderQEMU(t, runs, "TestExpectedImplementations")
}
