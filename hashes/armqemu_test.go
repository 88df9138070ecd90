package hashes

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
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

// armBuild is one cross-compiled test binary of this package.
type armBuild struct {
	goarch, goarm, tags string
}

func (b armBuild) String() string {
	s := b.goarch
	if b.goarm != "" {
		s += "v" + b.goarm
	}
	if b.tags != "" {
		s += "-" + b.tags
	}
	return s
}

// armRun runs a build's tests under qemu-user with a CPU model.
type armRun struct {
	build armBuild
	cpu   string
	env   []string
	want  string // wantImplsEnv
	full  bool   // run the tests without -test.short (the others are variations)
}

var (
	arm64Build       = armBuild{goarch: "arm64"}
	arm64PuregoBuild = armBuild{goarch: "arm64", tags: "purego"}
	armv7Build       = armBuild{goarch: "arm", goarm: "7"}
	armv6Build       = armBuild{goarch: "arm", goarm: "6"}
	armv7PuregoBuild = armBuild{goarch: "arm", goarm: "7", tags: "purego"}
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
	qemu := map[string]string{
		"arm64": testtool.Require(t, "qemu-aarch64"),
		"arm":   testtool.Require(t, "qemu-arm"),
	}
	goTool := testtool.Require(t, "go")
	dir := t.TempDir()

	var builds []armBuild
	for _, r := range armRuns {
		if !slices.Contains(builds, r.build) {
			builds = append(builds, r.build)
		}
	}
	bins := map[armBuild]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range builds {
		wg.Go(func() {
			bin := filepath.Join(dir, b.String()+".test")
			args := []string{"test", "-c", "-o", bin}
			if b.tags != "" {
				args = append(args, "-tags", b.tags)
			}
			cmd := exec.Command(goTool, append(args, ".")...)
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+b.goarch, "GOARM="+b.goarm, "CGO_ENABLED=0")
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

	// Run everything at once (qemu is CPU-bound and t.Parallel would cap
	// it at GOMAXPROCS), then report each run as a subtest.
	type result struct {
		out []byte
		err error
	}
	results := make([]result, len(armRuns))
	for i, r := range armRuns {
		wg.Go(func() {
			args := []string{"-cpu", r.cpu, bins[r.build], "-test.count=1", "-test.v"}
			if !r.full || testing.Short() {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(qemu[r.build.goarch], args...)
			cmd.Env = append(os.Environ(), ImplEnv+"=", wantImplsEnv+"="+r.want)
			cmd.Env = append(cmd.Env, r.env...)
			out, err := cmd.CombinedOutput()
			results[i] = result{out, err}
		})
	}
	wg.Wait()
	for i, r := range armRuns {
		name := r.build.String() + "/" + r.cpu
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

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
