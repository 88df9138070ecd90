//go:build linux && amd64

package safety_test

// Kill points that do not depend on timing: a command runs under ptrace and
// is killed (SIGKILL) as it enters its n-th system call that changes a
// file, before the call runs; or, torn, after a pwrite64 across pages has
// written only its first pages, as a SIGKILL arriving during a large write
// leaves it (the kernel copies a write page by page and stops between
// pages for a fatal signal). The same n gives the same state, whatever the
// machine's speed.

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// changesFiles are the system calls counted as kill points.
var changesFiles = map[uint64]bool{
	unix.SYS_WRITE: true, unix.SYS_PWRITE64: true, unix.SYS_WRITEV: true, unix.SYS_PWRITEV: true, unix.SYS_PWRITEV2: true,
	unix.SYS_FTRUNCATE: true, unix.SYS_TRUNCATE: true, unix.SYS_FALLOCATE: true,
	unix.SYS_RENAME: true, unix.SYS_RENAMEAT: true, unix.SYS_RENAMEAT2: true, unix.SYS_UNLINK: true, unix.SYS_UNLINKAT: true,
	unix.SYS_COPY_FILE_RANGE: true, unix.SYS_SENDFILE: true,
}

const pageSize = 4096

// killPoint says where a traced run is killed: as it enters its n-th call
// of changesFiles but writes to stdout and stderr (0: never), and, when tear is not nil and that call is a
// pwrite64 across pages, once a random number of its first pages are
// written.
type killPoint struct {
	n    int
	tear *rand.Rand
}

// tracedRun is what a traced command did.
type tracedRun struct {
	calls  int  // calls of changesFiles entered
	killed bool // killed at the kill point
	torn   bool // the last call was a torn pwrite64
	exit   int  // the exit code, -1 if killed
}

// runTraced runs bin with args in dir under ptrace, killing it at kp.
func runTraced(t *testing.T, dir, bin string, args []string, kp killPoint) tracedRun {
	t.Helper()
	done := make(chan tracedRun, 1)
	errc := make(chan error, 1)
	// ptrace requests come from the thread that started the tracee.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := trace(dir, bin, args, kp)
		if err != nil {
			errc <- err
			return
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r
	case err := <-errc:
		t.Fatalf("tracing %s: %v", bin, err)
	}
	return tracedRun{}
}

func trace(dir, bin string, args []string, kp killPoint) (tracedRun, error) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return tracedRun{}, err
	}
	defer null.Close()
	proc, err := os.StartProcess(bin, append([]string{bin}, args...), &os.ProcAttr{Dir: dir, Files: []*os.File{null, null, null},
		Env: append(os.Environ(), "LC_ALL=C"), Sys: &syscall.SysProcAttr{Ptrace: true}})
	if err != nil {
		return tracedRun{}, err
	}
	defer proc.Release()
	pid := proc.Pid
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil { // stopped at its exec
		return tracedRun{}, err
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_TRACECLONE|unix.PTRACE_O_EXITKILL); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		return tracedRun{}, err
	}
	tr := &tracer{pid: pid, kp: kp, inCall: map[int]bool{}, r: tracedRun{exit: -1}}
	if err := unix.PtraceSyscall(pid, 0); err != nil {
		return tracedRun{}, err
	}
	for {
		tid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return tr.r, nil
		case err != nil:
			unix.Kill(pid, unix.SIGKILL)
			return tracedRun{}, err
		}
		tr.event(tid, ws)
	}
}

type tracer struct {
	pid    int
	kp     killPoint
	inCall map[int]bool // threads stopped inside a system call
	tornAt int          // the thread whose torn write is killed at its exit
	r      tracedRun
}

// event handles one stop or exit of thread tid.
func (tr *tracer) event(tid int, ws unix.WaitStatus) {
	switch {
	case ws.Exited() || ws.Signaled():
		if tid == tr.pid && ws.Exited() {
			tr.r.exit = ws.ExitStatus()
		}
		delete(tr.inCall, tid)
		return
	case !ws.Stopped():
		return
	}
	sig := ws.StopSignal()
	switch {
	case sig == unix.SIGTRAP|0x80: // a system call's entry or exit
		entering := !tr.inCall[tid]
		tr.inCall[tid] = entering
		if entering {
			tr.enter(tid)
		} else if tid == tr.tornAt {
			tr.kill()
		}
		sig = 0
	case sig == unix.SIGTRAP, sig == unix.SIGSTOP:
		sig = 0 // a clone event, or a new thread's first stop
	}
	unix.PtraceSyscall(tid, int(sig)) // fails once the process is killed
}

func (tr *tracer) enter(tid int) {
	var regs unix.PtraceRegs
	if tr.r.killed || unix.PtraceGetRegs(tid, &regs) != nil || !changesFiles[regs.Orig_rax] {
		return
	}
	switch regs.Orig_rax {
	case unix.SYS_WRITE, unix.SYS_WRITEV, unix.SYS_PWRITE64, unix.SYS_PWRITEV, unix.SYS_PWRITEV2:
		if regs.Rdi <= 2 {
			return // the report and the messages, not a file the command changes
		}
	}
	tr.r.calls++
	if tr.tornAt != 0 {
		// Another thread's change while the torn write runs: the kill
		// comes first.
		tr.kill()
		return
	}
	if tr.r.calls != tr.kp.n {
		return
	}
	// pwrite64(fd, buf, count, offset): count in rdx, offset in r10.
	off, n := regs.R10, regs.Rdx
	first := (off/pageSize + 1) * pageSize // the first page boundary inside
	if tr.kp.tear != nil && regs.Orig_rax == unix.SYS_PWRITE64 && off+n > first {
		pages := (off + n - first - 1) / pageSize // boundaries after the first one, before the end
		regs.Rdx = first + pageSize*tr.kp.tear.Uint64N(pages+1) - off
		if unix.PtraceSetRegs(tid, &regs) == nil {
			tr.tornAt, tr.r.torn = tid, true
			return
		}
	}
	tr.kill()
}

func (tr *tracer) kill() {
	tr.r.killed = true
	unix.Kill(tr.pid, unix.SIGKILL)
}
