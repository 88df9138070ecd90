package fec

import (
	"os"
	"runtime"
	"strings"
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
	// GOAMD64=v1: the binary must start on every model here.
	v1 := testtool.CrossBuild{GOARCH: "amd64", GOAMD64: "v1"}
	v1purego := testtool.CrossBuild{GOARCH: "amd64", GOAMD64: "v1", Tags: "purego"}
	run := func(b testtool.CrossBuild, cpu, want string) testtool.QEMURun {
		return testtool.QEMURun{Build: b, CPU: cpu, Env: []string{ImplEnv + "=", wantImplsEnv + "=" + want},
			// The encoder tests only, short: qemu is slow, and the decoder
			// has no assembly.
			Args: []string{"-test.run=ExpectedImplementations|ImplementationsMatchGeneric|TileEncoder|EncodeMatchesReference|KnownAnswers"}}
	}
	testtool.RunUnderQEMU(t, []testtool.QEMURun{
		run(v1, "Haswell", "avx2,generic"),
		run(v1, "SandyBridge", "generic"), // AVX but not AVX2
		run(v1purego, "Haswell", "generic"),
	}, "TestExpectedImplementations")
}
