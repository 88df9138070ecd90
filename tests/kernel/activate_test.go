package kernel

// The run-time side, in the kernel: the dm, loop and verity packages' own
// tests, compiled static, run in one boot of the guest, where they create
// loop and dm-verity devices through the kernel's ioctls, read them back,
// and open and close them against veritysetup.

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

//go:embed activate-init.sh
var activateInit []byte

// guestProgram is a package's test program and the tests it must pass in
// the guest; name is the program's name there (the package's last
// element).
type guestProgram struct {
	pkg, run string
	mustPass []string
}

func (p guestProgram) name() string { return filepath.Base(p.pkg) }

var guestPrograms = []guestProgram{
	{"loop", ".", []string{"TestAttachReadOnly", "TestAttachReadWriteBlockSize", "TestAttachFile", "TestAttachLegacy",
		"TestAttachNoAutoclear", "TestAttachRefused", "TestAttachConcurrent"}},
	{"dm", ".", []string{"TestKernelVersionAndTargets", "TestKernelLifecycle", "TestKernelDeferredRemove", "TestKernelErrors",
		"TestKernelBufferFull", "TestKernelUdevCookie", "TestNodes", "TestUdevCookie"}},
	{"verity", "^(TestKernel|TestActivate|TestDeactivate)", []string{"TestKernelActivateFile", "TestKernelActivateBlockDevice",
		"TestKernelWrongRoot", "TestKernelCorruption", "TestKernelFEC", "TestKernelHashOffsetNoSuperblock", "TestKernelActivateTwice",
		"TestKernelDeferred", "TestKernelUndo", "TestKernelSignatureKeyMissing", "TestKernelVeritysetup", "TestKernelLoopsAsVeritysetup", "TestKernelOpenTiming", "TestActivateFake",
		"TestActivateUndo", "TestActivateOneLoopPerFile", "TestDeactivateFake", "TestActivateSignatureKey", "TestActivateNoKeyring"}},
	// The veritysetup front (our binary, /opt/vt/veritysetup) side by side
	// with veritysetup 2.6.1.
	{"internal/front/veritysetup", "^TestKernelFront", []string{"TestKernelFrontOpenFile", "TestKernelFrontBlockDevice",
		"TestKernelFrontWrongRoot", "TestKernelFrontCorruption", "TestKernelFrontFEC", "TestKernelFrontHashOffset",
		"TestKernelFrontDeferred", "TestKernelFrontSignature", "TestKernelFrontOpenTiming", "TestKernelFrontOtherDevices",
		"TestKernelFrontCancelDeferred", "TestKernelFrontNotRoot", "TestKernelFrontFlags"}},
	// veritycheck --kernel.
	{"internal/front/veritycheck", "^TestKernelCheck$", []string{"TestKernelCheck"}},
}

// guestFront is where our veritysetup is in the guest.
const guestFront = "/opt/vt/veritysetup"

// TestActivate boots the kernel once and runs, in it, the tests of the dm,
// loop and verity packages that need the kernel (see guestPrograms): each
// must pass there. A partition pair of the virtio disk holds an image and
// its tree for the block device case; veritysetup (with the libraries ldd
// names) is in the initramfs for the cases run against it.
func TestActivate(t *testing.T) {
	testtool.Long(t, "the kernel boot")
	start := time.Now()
	tools := requireGuestTools(t)
	veritysetup := testtool.Require(t, "veritysetup")
	goTool := testtool.Require(t, "go")
	k := debianKernel(t)
	work := t.TempDir()

	programs := map[string]string{"bin/busybox": tools.busybox, "sbin/veritysetup": veritysetup}
	buildStart := time.Now()
	for _, p := range guestPrograms {
		bin := filepath.Join(work, p.name()+".test")
		cmd := exec.Command(goTool, "test", "-c", "-ldflags=-s -w", "-o", bin, "./"+p.pkg)
		cmd.Dir = testtool.ModuleRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the %s tests: %v\n%s", p.pkg, err, out)
		}
		programs["bin/"+p.name()+".test"] = bin
	}
	front := filepath.Join(work, "veritysetup")
	cmd := exec.Command(goTool, "build", "-ldflags=-s -w", "-o", front, "./cmd/veritysetup")
	cmd.Dir = testtool.ModuleRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/veritysetup: %v\n%s", err, out)
	}
	programs[strings.TrimPrefix(guestFront, "/")] = front
	t.Logf("test programs built in %v", time.Since(buildStart).Round(time.Millisecond))

	// The block device case: an image on vda1, its tree on vda2.
	data := make([]byte, 512*4096)
	rand.NewChaCha8(sha256.Sum256([]byte("activate block"))).Read(data)
	dataPath, hashPath := filepath.Join(work, "block.img"), filepath.Join(work, "block.img.verity")
	if err := os.WriteFile(dataPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := verity.Format(context.Background(), dataPath, hashPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	parts := []partition{{name: "block-data", path: dataPath}, {name: "block-hash", path: hashPath}}

	var tests strings.Builder
	for _, p := range guestPrograms {
		fmt.Fprintf(&tests, "%s -test.v -test.count=1 -test.run %s\n", p.name(), p.run)
	}
	env := fmt.Sprintf("VERITYTREE_KERNEL_TESTS=1\nVERITYTREE_GUEST_VERITYSETUP=1\nTMPDIR=/tmp\nHOME=/tmp\nVERITYTREE_GUEST_BLOCK=%s,%s,%x,%x\nVERITYTREE_GUEST_OURS=%s\n",
		vda(1), vda(2), res.RootHash, sum, guestFront)
	r := &initramfs{
		init: activateInit,
		files: map[string][]byte{
			"etc/vt/tests":      []byte(tests.String()),
			"etc/vt/env":        []byte(env),
			"etc/vt/partitions": []byte(strconv.Itoa(len(parts)) + "\n"),
		},
		programs: programs,
	}
	console, vmTime, err := runGuest(t, tools.qemu, k, work, parts, r)
	t.Logf("VM ran %v; whole test %v", vmTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	g := parseActivateConsole(console)
	if err != nil || g.done == "" {
		t.Fatalf("the guest did not finish (%v); console:\n%s", err, tail(console, 80))
	}
	for _, e := range g.errors {
		t.Errorf("guest: %s", e)
	}
	for _, p := range guestPrograms {
		t.Run(p.name(), func(t *testing.T) {
			out, ok := g.output[p.name()]
			if !ok {
				t.Fatalf("the guest did not run the %s tests", p.pkg)
			}
			text := strings.Join(out, "\n")
			for _, l := range out {
				// What the tests measured and logged of veritysetup.
				if strings.Contains(l, "TIMING") || strings.Contains(l, "veritysetup's") || strings.Contains(l, "veritysetup cannot") || strings.Contains(l, "the kernel's reason") || strings.Contains(l, "DM_COOKIE") {
					t.Log(strings.TrimSpace(l))
				}
			}
			if rc := g.rc[p.name()]; rc != "0" {
				t.Errorf("the %s tests exited %s in the guest:\n%s", p.pkg, rc, tailLines(out, 80))
			}
			for _, name := range p.mustPass {
				if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(text) {
					t.Errorf("%s did not pass in the guest", name)
				}
			}
			t.Logf("%d tests passed in the guest, %d skipped", strings.Count(text, "--- PASS"), strings.Count(text, "--- SKIP"))
		})
	}
	for _, l := range g.dmesg {
		t.Logf("dmesg: %s", l)
	}
	if t.Failed() {
		t.Logf("partitions: %s (%s), %s (%s); root %s", vda(1), dataPath, vda(2), hashPath, hex.EncodeToString(res.RootHash))
	}
}

// activateReport is what the guest said: each program's output and exit
// code.
type activateReport struct {
	output map[string][]string
	rc     map[string]string
	dmesg  []string
	errors []string
	done   string
}

func parseActivateConsole(console string) *activateReport {
	g := &activateReport{output: map[string][]string{}, rc: map[string]string{}}
	for _, line := range strings.Split(console, "\n") {
		i := strings.Index(line, "@@VT ")
		if i < 0 {
			continue
		}
		kind, rest, _ := strings.Cut(line[i+len("@@VT "):], " ")
		switch kind {
		case "OUT":
			name, text, _ := strings.Cut(rest, " ")
			g.output[name] = append(g.output[name], text)
		case "RC":
			name, code, _ := strings.Cut(rest, " ")
			g.rc[name] = code
		case "DMESG":
			g.dmesg = append(g.dmesg, rest)
		case "ERROR":
			g.errors = append(g.errors, rest)
		case "DONE":
			g.done = rest
		}
	}
	return g
}

func tailLines(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
