package hashes

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// wantImplsEnv, when set, makes TestExpectedImplementations check which bulk
// implementations this machine offers: "alg=impl,impl;alg=..." (the default
// first), and that NewBlockHasher picks the first. The QEMU test sets it for
// each CPU model it runs the package's tests on.
const wantImplsEnv = "VERITYTREE_TEST_WANT_IMPLS"

func TestExpectedImplementations(t *testing.T) {
	spec := os.Getenv(wantImplsEnv)
	if spec == "" {
		t.Skip(wantImplsEnv + " not set")
	}
	for _, part := range strings.Split(spec, ";") {
		name, list, _ := strings.Cut(part, "=")
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(list, ",")
		if got := a.Implementations(); !slices.Equal(got, want) {
			t.Errorf("%s: implementations %v, want %v", name, got, want)
		}
		forced := os.Getenv(ImplEnv)
		pick := want[0]
		if slices.Contains(want, forced) {
			pick = forced
		}
		if got := a.NewBlockHasher(4096, nil, SaltBefore).Implementation(); got != pick {
			t.Errorf("%s: NewBlockHasher picked %s, want %s", name, got, pick)
		}
	}
}

// armRun runs a build's tests under qemu-user with a CPU model.
type armRun struct {
	build testtool.CrossBuild
	cpu   string
	env   []string
	want  string // wantImplsEnv
	full  bool   // run the tests without -test.short (the others are variations)
}

var (
	arm64Build       = testtool.CrossBuild{GOARCH: "arm64"}
	arm64PuregoBuild = testtool.CrossBuild{GOARCH: "arm64", Tags: "purego"}
	armv7Build       = testtool.CrossBuild{GOARCH: "arm", GOARM: "7"}
	armv6Build       = testtool.CrossBuild{GOARCH: "arm", GOARM: "6"}
	armv7PuregoBuild = testtool.CrossBuild{GOARCH: "arm", GOARM: "7", Tags: "purego"}
)

// The expected implementations per CPU. qemu's arm64 models all have the
// SHA-1 and SHA-256 instructions, and only max has SHA-512's: the NEON-only
// paths are forced with ImplEnv (and TestHashBlocks* run every available
// implementation anyway). On 32-bit arm only max (an ARMv8 core in AArch32
// state) has the SHA-1 and SHA-256 instructions; cortex-a15 and a7 are
// ARMv7 and keep neon4x.
const (
	wantGeneric  = "sha1=generic;sha256=generic;sha512=generic;blake2b-256=generic"
	wantARM64Max = "sha1=ce,neon4x,generic;sha256=ce,neon4x,generic;sha512=ce,neon2x,generic;blake2b-256=neon2x,neon,generic"
	wantARM64A57 = "sha1=ce,neon4x,generic;sha256=ce,neon4x,generic;sha512=neon2x,generic;blake2b-256=neon2x,neon,generic"
	wantARMNEON  = "sha1=neon4x,generic;sha256=neon4x,generic;sha512=neon2x,generic;blake2b-256=neon,generic"
	wantARMCE    = "sha1=ce,neon4x,generic;sha256=ce,neon4x,generic;sha512=neon2x,generic;blake2b-256=neon,generic"
)

var armRuns = []armRun{
	{build: arm64Build, cpu: "max", want: wantARM64Max, full: true},
	{build: arm64Build, cpu: "max", env: []string{ImplEnv + "=neon4x"}, want: wantARM64Max},
	{build: arm64Build, cpu: "cortex-a57", env: []string{ImplEnv + "=neon2x"}, want: wantARM64A57},
	{build: arm64Build, cpu: "cortex-a53", env: []string{ImplEnv + "=neon"}, want: wantARM64A57},
	{build: arm64PuregoBuild, cpu: "max", want: wantGeneric},
	{build: armv7Build, cpu: "cortex-a15", want: wantARMNEON, full: true},
	{build: armv7Build, cpu: "cortex-a7", want: wantARMNEON},
	{build: armv7Build, cpu: "cortex-a15", env: []string{ImplEnv + "=generic"}, want: wantARMNEON},
	{build: armv7Build, cpu: "max", want: wantARMCE, full: true},
	{build: armv7Build, cpu: "max", env: []string{ImplEnv + "=neon4x"}, want: wantARMCE},
	{build: armv6Build, cpu: "max", want: wantARMCE},
	{build: armv6Build, cpu: "arm1176", want: wantGeneric, full: true},
	{build: armv6Build, cpu: "cortex-a15", want: wantARMNEON},
	{build: armv7PuregoBuild, cpu: "cortex-a15", want: wantGeneric},
}

// TestARMUnderQEMU cross-compiles this package's tests for arm64 and 32-bit
// arm (GOARM=6 and 7, with and without purego) and runs them under
// qemu-user on CPU models with and without NEON, so every submission proves
// the ARM assembly and its dispatch on an amd64 host.
func TestARMUnderQEMU(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("cross-tests ARM from a linux/amd64 host")
	}
	var runs []testtool.QEMURun
	for _, r := range armRuns {
		runs = append(runs, qemuRun(r.build, r.cpu, r.want, r.full, r.env...))
	}
	testtool.RunUnderQEMU(t, runs, "TestExpectedImplementations")
}

// qemuRun is a run of build on cpu that expects the implementations want
// (see wantImplsEnv), with ImplEnv cleared unless env sets it.
func qemuRun(build testtool.CrossBuild, cpu, want string, full bool, env ...string) testtool.QEMURun {
	name := build.String() + "/" + cpu
	for _, e := range env {
		name += "/" + e
	}
	return testtool.QEMURun{Name: name, Build: build, CPU: cpu, Full: full,
		Env: append([]string{ImplEnv + "=", wantImplsEnv + "=" + want}, env...)}
}
