package safety_test

// The harness: the commands are built once, and each attack runs one of
// them in its own directory under a time limit, a size limit on the files
// it writes and an address-space limit (prlimit), with a snapshot of every
// file in the directory before and after.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/testtool"
)

// Limits every attacked command runs under.
const (
	maxRSSKiB = 64 << 10 // the bound on peak RSS
	// Go reserves address space far beyond what it uses; the limit only
	// proves that no input makes the reservation explode.
	addressSpaceLimit = 1 << 30
	// Bounds what a runaway write (a 16 TiB sparse image's 128 GiB tree)
	// can put on the disk before the fixes; no legitimate row needs more.
	fileSizeLimit  = 512 << 20
	defaultTimeout = 60 * time.Second
)

// bins holds the paths of the commands built by TestMain.
var bins = map[string]string{}

// mainDir is TestMain's directory, removed when the tests end: the
// commands, and inputs made once for several rows.
var mainDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "veritytree-safety-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	mainDir = dir
	code := func() int {
		defer os.RemoveAll(dir)
		for name, pkg := range map[string]string{"veritygen": "cmd/veritygen", "veritycheck": "cmd/veritycheck",
			"launcher": "internal/testtool/_launcher"} {
			out := filepath.Join(dir, name)
			cmd := exec.Command("go", "build", "-o", out, "github.com/veritytree/veritytree/"+pkg)
			// Static, as the README says the commands are built.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n", name, err)
				return 2
			}
			bins[name] = out
		}
		// The fronts are veritygen under another name, as installed.
		for _, front := range []string{"veritysetup", "avbtool"} {
			link := filepath.Join(dir, front)
			if err := os.Symlink(bins["veritygen"], link); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			bins[front] = link
		}
		return m.Run()
	}()
	os.Exit(code)
}

// TestSources makes the sources of the commands TestMain builds inputs of
// this package's tests (see testtool.TrackSources), so that a change to a
// command is never answered with a cached result. Go records the files a
// test opens only while the tests run, not in TestMain.
func TestSources(t *testing.T) {
	if err := testtool.TrackSources("./cmd/veritygen", "./cmd/veritycheck", "./internal/testtool/_launcher"); err != nil {
		t.Fatal(err)
	}
}

// trigger sends a signal to the running command once it is waiting where
// the attack wants it: when its stderr matches onStderr, or when one of its
// threads sleeps in the kernel function onWchan (e.g. wait_for_partner: a
// FIFO's open waiting for a writer). Either may be left empty.
type trigger struct {
	sig      syscall.Signal
	onStderr *regexp.Regexp
	onWchan  []string
}

// outcome is what a command did.
type outcome struct {
	code           int // -1 if killed by a signal
	stdout, stderr string
	maxRSSKiB      int64
	elapsed        time.Duration
	timedOut       bool
	signalSent     bool
}

// runLimited runs bin with args in dir under the limits, sending tr's
// signal when it fires, and kills it at the timeout.
func runLimited(t *testing.T, dir string, timeout time.Duration, tr *trigger, bin string, args ...string) *outcome {
	t.Helper()
	prlimit := testtool.Require(t, "prlimit")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append([]string{prlimit, fmt.Sprintf("--as=%d", addressSpaceLimit), fmt.Sprintf("--fsize=%d", fileSizeLimit), "--", bin}, args...)
	// Through the launcher, for the command's own peak RSS.
	cmd := exec.CommandContext(ctx, bins["launcher"], argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// In a process group of its own, so that the timeout kills the
	// command with its launcher.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	reportR, reportW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer reportR.Close()
	cmd.ExtraFiles = []*os.File{reportW}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reportW.Close()
	o := &outcome{code: -1}
	pids := make(chan int, 1)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		sc := bufio.NewScanner(reportR)
		for sc.Scan() {
			var pid int
			if _, err := fmt.Sscanf(sc.Text(), "pid %d", &pid); err == nil {
				pids <- pid
			}
			fmt.Sscanf(sc.Text(), "exit %d %d", &o.code, &o.maxRSSKiB)
		}
	}()
	fire := make(chan struct{}, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			stderr.Write(sc.Bytes())
			stderr.WriteByte('\n')
			if tr != nil && tr.onStderr != nil && tr.onStderr.Match(sc.Bytes()) {
				select {
				case fire <- struct{}{}:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var poll <-chan time.Time
	if tr != nil && len(tr.onWchan) > 0 {
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		poll = tk.C
	}
	pid := 0
	send := func() {
		if pid != 0 && !o.signalSent {
			o.signalSent = true
			syscall.Kill(pid, tr.sig)
		}
	}
wait:
	for {
		select {
		case err = <-done:
			break wait
		case pid = <-pids:
		case <-fire:
			if pid == 0 {
				pid = <-pids
			}
			send()
		case <-poll:
			if pid != 0 && sleepsIn(pid, tr.onWchan) {
				send()
			}
		}
	}
	pw.Close()
	<-scanned
	<-reported
	o.elapsed = time.Since(start)
	o.timedOut = ctx.Err() != nil
	o.stdout, o.stderr = stdout.String(), stderr.String()
	if err != nil && !o.timedOut {
		t.Fatalf("the launcher of %s failed: %v", filepath.Base(bin), err)
	}
	return o
}

// sleepsIn reports whether a thread of pid sleeps in one of the kernel
// functions.
func sleepsIn(pid int, funcs []string) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, w := range tasks {
		if b, err := os.ReadFile(w); err == nil && slices.Contains(funcs, strings.TrimSpace(string(b))) {
			return true
		}
	}
	return false
}

// fileState is what a snapshot keeps of one directory entry: its type and
// the sha256 of a regular file's content, a link's target, a device's
// numbers.
type fileState string

// snapshot records every entry under dir, by slash path relative to dir.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	s := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		switch m := info.Mode(); {
		case m.IsDir():
			s[filepath.ToSlash(rel)] = "dir"
		case m.IsRegular():
			s[filepath.ToSlash(rel)] = fileState("file " + sha256File(t, p))
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s[filepath.ToSlash(rel)] = fileState("symlink " + target)
		case m&fs.ModeDevice != 0:
			s[filepath.ToSlash(rel)] = fileState(fmt.Sprintf("device %v %d", m.Type(), st.Rdev))
		default:
			s[filepath.ToSlash(rel)] = fileState(m.Type().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// matchesAny reports whether the slash path p matches one of the globs.
func matchesAny(p string, globs []string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

// compareSnapshots fails for every entry that changed, appeared or
// vanished and is not allowed to by a glob of mayChange.
func compareSnapshots(t *testing.T, before, after map[string]fileState, mayChange []string) {
	t.Helper()
	var names []string
	for p := range before {
		names = append(names, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	for _, p := range names {
		b, inBefore := before[p]
		a, inAfter := after[p]
		if b == a || matchesAny(p, mayChange) {
			continue
		}
		switch {
		case !inBefore:
			t.Errorf("%s was created (%s)", p, a)
		case !inAfter:
			t.Errorf("%s was removed (was %s)", p, b)
		default:
			t.Errorf("%s changed: %s -> %s", p, b, a)
		}
	}
}
