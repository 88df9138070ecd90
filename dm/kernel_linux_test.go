package dm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/loop"
)

// The TestKernel tests create and remove devices in this machine's
// device-mapper: they run where VERITYTREE_KERNEL_TESTS is set, which
// tests/kernel does in the Linux guest it boots (see its README).

func requireKernel(t *testing.T) *Control {
	t.Helper()
	if os.Getenv("VERITYTREE_KERNEL_TESTS") == "" {
		t.Skip("creates devices in this machine's device-mapper: set VERITYTREE_KERNEL_TESTS=1 to run it (tests/kernel runs it in a guest)")
	}
	c, err := Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// removeAtEnd removes the test's devices, whatever happened.
func removeAtEnd(t *testing.T, c *Control, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			c.Remove(context.Background(), n, nil)
		}
	})
}

// backing attaches a file of n random bytes to a loop device.
func backing(t *testing.T, n int) (*loop.Device, []byte) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(t.TempDir(), "backing.img")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := loop.Attach(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, b
}

// nodeOf checks /dev/mapper/NAME is the block device major:minor.
func nodeOf(t *testing.T, name string, info *Info) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(NodePath(name), &st); err != nil {
		t.Fatalf("node: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK || unix.Major(uint64(st.Rdev)) != info.Major || unix.Minor(uint64(st.Rdev)) != info.Minor {
		t.Fatalf("%s is %o %d:%d, want the block device %d:%d", NodePath(name), st.Mode, unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)), info.Major, info.Minor)
	}
}

func TestKernelVersionAndTargets(t *testing.T) {
	c := requireKernel(t)
	if v := c.Version(); v[0] != 4 || !v.AtLeast(4, 27) {
		t.Errorf("dm-ioctl %v, want 4.27 or later (deferred removal)", v)
	}
	t.Logf("dm-ioctl %v", c.Version())
	ts, err := c.Targets()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]Version{}
	for _, tv := range ts {
		have[tv.Name] = tv.Version
	}
	for _, name := range []string{"linear", "error", "verity"} {
		if _, ok := have[name]; !ok {
			t.Errorf("no %s target among %v", name, ts)
		}
	}
	t.Logf("verity target %v", have["verity"])
}

// TestKernelLifecycle: create, load two targets, resume; info, table,
// status, list; suspend and resume; remove.
func TestKernelLifecycle(t *testing.T) {
	c := requireKernel(t)
	ctx := context.Background()
	name, uuid := "vt-dm-life", "VT-TEST-vt-dm-life"
	removeAtEnd(t, c, name)
	l, data := backing(t, 64<<10)
	targets := []Target{{0, 128, "linear", fmt.Sprintf("%d:%d 0", l.Major, l.Minor)}, {128, 8, "error", ""}}
	info := lifecycleCreate(t, c, name, uuid, targets)
	nodeOf(t, name, info)
	lifecycleRead(t, c, name, data)
	lifecycleQuery(t, c, name, uuid, info, targets)

	if err := c.Suspend(name, &SuspendOptions{NoFlush: true}); err != nil {
		t.Fatal(err)
	}
	if i, _ := c.Info(name); !i.Suspended() {
		t.Error("not suspended")
	}
	if i, err := c.Resume(ctx, name); err != nil || i.Suspended() {
		t.Errorf("resumed again: %+v, %v", i, err)
	}
	lifecycleRemove(t, c, name)
}

// lifecycleCreate creates the device, loads targets read-only and resumes
// it, checking its info at each step.
func lifecycleCreate(t *testing.T, c *Control, name, uuid string, targets []Target) *Info {
	t.Helper()
	info, err := c.Create(name, uuid)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != name || info.UUID != uuid || info.Active() || info.TargetCount != 0 {
		t.Errorf("created: %+v", info)
	}
	if _, err := os.Stat(NodePath(name)); err == nil {
		t.Error("a node before the table is live")
	}
	if err := c.Load(name, targets, &LoadOptions{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Info(name); info.Flags&FlagInactivePresent == 0 || info.Active() {
		t.Errorf("loaded, not resumed: flags %#x", info.Flags)
	}
	info, err = c.Resume(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Active() || !info.ReadOnly() || info.Suspended() || info.TargetCount != 2 || info.OpenCount != 0 {
		t.Errorf("resumed: %+v", info)
	}
	return info
}

// lifecycleRead reads the device's linear part (data) and its error
// target, and checks the open count while its node is open.
func lifecycleRead(t *testing.T, c *Control, name string, data []byte) {
	t.Helper()
	got := make([]byte, 128*512)
	f, err := os.Open(NodePath(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Errorf("reading the linear part: %v, equal %v", err, bytes.Equal(got, data))
	}
	if _, err := f.ReadAt(got[:512], 128*512); err == nil {
		t.Error("reading the error target succeeded")
	}
	if i, _ := c.Info(name); i.OpenCount != 1 {
		t.Errorf("open count %d with the node open", i.OpenCount)
	}
}

// lifecycleQuery checks the device's table, status and place in the list.
func lifecycleQuery(t *testing.T, c *Control, name, uuid string, info *Info, targets []Target) {
	t.Helper()
	_, table, err := c.Table(name)
	if err != nil || !slices.Equal(table, targets) {
		t.Errorf("table %+v, %v; want %+v", table, err, targets)
	}
	_, status, err := c.Status(name)
	if err != nil || len(status) != 2 || status[0].Type != "linear" || status[0].Params != "" || status[1].Type != "error" {
		t.Errorf("status %+v, %v", status, err)
	}
	devs, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(devs, func(d Device) bool { return d.Name == name })
	if i < 0 || devs[i].UUID != uuid || devs[i].Major != info.Major || devs[i].Minor != info.Minor {
		t.Errorf("list %+v: want %s with its UUID", devs, name)
	}
}

// lifecycleRemove removes the device and checks that it and its node are
// gone.
func lifecycleRemove(t *testing.T, c *Control, name string) {
	t.Helper()
	ctx := context.Background()
	if deferred, err := c.Remove(ctx, name, nil); err != nil || deferred {
		t.Fatalf("remove: %v %v", deferred, err)
	}
	if _, err := os.Lstat(NodePath(name)); err == nil {
		t.Error("the node stayed")
	}
	if _, err := c.Info(name); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "no such device") {
		t.Errorf("info after remove: %v", err)
	}
	if _, err := c.Remove(ctx, name, nil); !errors.Is(err, ErrNoDevice) {
		t.Errorf("a second remove: %v", err)
	}
}

// TestKernelDeferredRemove: a device held open is busy; deferred, it
// stays until its last close; the deferral can be cancelled.
func TestKernelDeferredRemove(t *testing.T) {
	c := requireKernel(t)
	ctx := context.Background()
	name := "vt-dm-deferred"
	removeAtEnd(t, c, name)
	l, _ := backing(t, 8<<10)
	if _, err := c.Create(name, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Load(name, []Target{{0, 16, "linear", fmt.Sprintf("%d:%d 0", l.Major, l.Minor)}}, nil); err != nil {
		t.Fatal(err)
	}
	info, err := c.Resume(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.ReadOnly() {
		t.Error("read-only without LoadOptions.ReadOnly")
	}
	held, err := os.Open(NodePath(name))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := c.Remove(ctx, name, nil); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("removing a held device: %v, want ErrBusy", err)
	}
	deferred, err := c.Remove(ctx, name, &RemoveOptions{Deferred: true})
	if err != nil || !deferred {
		t.Fatalf("deferred remove: %v %v", deferred, err)
	}
	if i, err := c.Info(name); err != nil || !i.DeferredRemove() {
		t.Fatalf("info of a device to remove: %+v, %v", i, err)
	}
	if err := c.CancelDeferredRemove(name); err != nil {
		t.Fatal(err)
	}
	if i, _ := c.Info(name); i.DeferredRemove() {
		t.Error("still to remove after the cancel")
	}
	nodeOf(t, name, info)
	if deferred, err := c.Remove(ctx, name, &RemoveOptions{Deferred: true}); err != nil || !deferred {
		t.Fatalf("deferred remove again: %v %v", deferred, err)
	}
	// Without udev the node goes at once: a removal at the last close
	// would leave it naming whatever device gets the minor next.
	if _, err := os.Lstat(NodePath(name)); err == nil {
		t.Error("the node stayed after the deferred remove")
	}
	held.Close()
	// The kernel removes it from a work queue after the last close.
	for i := 0; ; i++ {
		_, err := c.Info(name)
		if errors.Is(err, ErrNoDevice) {
			break
		}
		if i == 500 {
			t.Fatalf("still there after its last close: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKernelErrors: names and UUIDs taken, tables the kernel refuses
// (with its reason), messages a target does not take.
func TestKernelErrors(t *testing.T) {
	c := requireKernel(t)
	ctx := context.Background()
	removeAtEnd(t, c, "vt-dm-err", "vt-dm-err2")
	if _, err := c.Create("vt-dm-err", "VT-TEST-ERR"); err != nil {
		t.Fatal(err)
	}
	for _, try := range [][2]string{{"vt-dm-err", ""}, {"vt-dm-err2", "VT-TEST-ERR"}} {
		_, err := c.Create(try[0], try[1])
		if !errors.Is(err, ErrExist) || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("create %q %q again: %v, want ErrExist", try[0], try[1], err)
		}
	}
	err := c.Load("vt-dm-err", []Target{{0, 8, "verity", "1 7:250 7:251 4096 4096 1 1 sha256 00 -"}}, nil)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, unix.EINVAL) || e.Kernel == "" {
		t.Errorf("an invalid verity table: %v, want EINVAL with the kernel's reason", err)
	}
	t.Logf("the kernel's reason: %s", e.Kernel)
	err = c.Load("vt-dm-err", []Target{{0, 8, "no-such-target", ""}}, nil)
	if !errors.As(err, &e) || e.Kernel == "" {
		t.Errorf("an unknown target: %v, want the kernel's reason", err)
	}
	t.Logf("%v", err)
	if err := c.Load("vt-dm-err", []Target{{0, 8, "error", ""}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(ctx, "vt-dm-err"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Message("vt-dm-err", 0, "hello"); err == nil {
		t.Error("the error target took a message")
	}
	if _, err := c.Info("vt-dm-none"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("info of no device: %v", err)
	}
	if err := c.CancelDeferredRemove("vt-dm-none"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("cancel of no device: %v", err)
	}
	if _, err := c.Create("a/b", ""); err == nil || !strings.Contains(err.Error(), "holds '/'") {
		t.Errorf("a name with a slash: %v", err)
	}
}

// TestKernelBufferFull: answers larger than the buffer (a table longer
// than it, a list of long names) come whole, the buffer doubling.
func TestKernelBufferFull(t *testing.T) {
	c := requireKernel(t)
	ctx := context.Background()
	old := startBuffer
	startBuffer = 512
	defer func() { startBuffer = old }()
	var names []string
	for i := range 3 {
		names = append(names, fmt.Sprintf("vt-dm-full-%d-%s", i, strings.Repeat("x", 100)))
	}
	removeAtEnd(t, c, names...)
	var table []Target
	for i := range 40 {
		table = append(table, Target{Start: uint64(i) * 8, Length: 8, Type: "error"})
	}
	for _, n := range names {
		if _, err := c.Create(n, "VT-TEST-"+n); err != nil {
			t.Fatal(err)
		}
		if err := c.Load(n, table, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Resume(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	devs, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !slices.ContainsFunc(devs, func(d Device) bool { return d.Name == n && d.UUID == "VT-TEST-"+n }) {
			t.Errorf("%s not listed with its UUID", n)
		}
	}
	if _, got, err := c.Table(names[0]); err != nil || !slices.Equal(got, table) {
		t.Errorf("a 40-target table through a 512-byte buffer: %d targets, %v", len(got), err)
	}
}

// uevent is a kernel uevent's variables.
type uevent map[string]string

// listenUevents reads the kernel's uevents (NETLINK_KOBJECT_UEVENT) and
// sends those of device-mapper's devices on the channel, until the test
// ends.
func listenUevents(t *testing.T) <-chan uevent {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "uevents")
	t.Cleanup(func() { f.Close() })
	ch := make(chan uevent, 64)
	go func() {
		buf := make([]byte, 16<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ev := uevent{}
			for _, kv := range strings.Split(string(buf[:n]), "\x00") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					ev[k] = v
				}
			}
			if strings.HasPrefix(ev["DEVNAME"], "dm-") {
				ch <- ev
			}
		}
	}()
	return ch
}

// completeCookie does what udev's rules do with an event's DM_COOKIE
// (`dmsetup udevcomplete`): take the event from the semaphore keyed by
// the cookie's base and DM_COOKIE_MAGIC.
func completeCookie(t *testing.T, cookie uint32) {
	key := uintptr(cookieMagic<<16 | cookie&0xffff)
	id, _, errno := unix.Syscall(unix.SYS_SEMGET, key, 1, 0)
	if errno != 0 {
		t.Errorf("no semaphore for cookie %#x: %v", cookie, errno)
		return
	}
	unix.Syscall6(unix.SYS_SEMCTL, id, 0, semSETVAL, 0, 0, 0)
}

// TestKernelUdevCookie plays udev: the resume's and the remove's uevents
// must carry the cookie (its base, and the flags: primary source, library
// fallback off), whose semaphore udev's completion releases; Resume and
// Remove wait for it, then make and remove the node, which this udev
// did not. Without udev, the events carry the flags that keep udev's
// device-mapper rules off the node.
func TestKernelUdevCookie(t *testing.T) {
	requireKernel(t)
	events := listenUevents(t)
	old := udevRunning
	udevRunning = func() bool { return true }
	c, err := Open(&Options{UdevTimeout: 20 * time.Second})
	udevRunning = old
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.udev {
		t.Fatal("the control does not synchronize with udev")
	}
	plain := requireKernel(t) // UdevAuto, and no udev runs here
	ctx := context.Background()
	name := "vt-dm-cookie"
	removeAtEnd(t, c, name)
	var mu sync.Mutex
	var seen []string
	udev := func(action string, flags uint32, done chan<- uint32) {
		for ev := range events {
			var cookie uint32
			fmt.Sscan(ev["DM_COOKIE"], &cookie)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s DM_COOKIE=%#x", ev["ACTION"], ev["DEVNAME"], cookie))
			mu.Unlock()
			if ev["ACTION"] != action || cookie == 0 {
				continue
			}
			if cookie>>16 != flags {
				t.Errorf("%s event: DM_COOKIE %#x, want flags %#x", action, cookie, flags)
			}
			if flags&udevDisableLibraryFallback != 0 {
				completeCookie(t, cookie)
			}
			done <- cookie
			return
		}
	}
	for _, step := range []struct {
		c      *Control
		flags  uint32
		action string
		run    func(*Control) error
	}{
		{c, udevPrimarySource | udevDisableLibraryFallback, "change", func(c *Control) error {
			if _, err := c.Create(name, ""); err != nil {
				return err
			}
			if err := c.Load(name, []Target{{0, 8, "error", ""}}, nil); err != nil {
				return err
			}
			_, err := c.Resume(ctx, name)
			return err
		}},
		{c, udevPrimarySource | udevDisableLibraryFallback, "remove", func(c *Control) error { _, err := c.Remove(ctx, name, nil); return err }},
		{plain, udevPrimarySource | udevDisableDMRules | udevDisableSubsystemRules, "change", func(c *Control) error {
			if _, err := c.Create(name, ""); err != nil {
				return err
			}
			if err := c.Load(name, []Target{{0, 8, "error", ""}}, nil); err != nil {
				return err
			}
			_, err := c.Resume(ctx, name)
			return err
		}},
		{plain, udevPrimarySource | udevDisableDMRules | udevDisableSubsystemRules, "remove", func(c *Control) error { _, err := c.Remove(ctx, name, nil); return err }},
	} {
		done := make(chan uint32, 1)
		go udev(step.action, step.flags, done)
		start := time.Now()
		if err := step.run(step.c); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		select {
		case cookie := <-done:
			t.Logf("%s: DM_COOKIE=%#x; the call returned after %v", step.action, cookie, took.Round(time.Millisecond))
		case <-time.After(20 * time.Second):
			mu.Lock()
			t.Fatalf("no %s event with a cookie; events seen: %v", step.action, seen)
		}
		if _, err := os.Stat(NodePath(name)); (err == nil) != (step.action == "change") {
			t.Errorf("after the %s: node %v", step.action, err)
		}
	}
	// No semaphore of ours is left.
	out, _ := os.ReadFile("/proc/sysvipc/sem")
	for _, line := range strings.Split(string(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(fmt.Sprintf("%08x", atoi(f[0])), "0d4d") {
			t.Errorf("a cookie's semaphore is left: %s", line)
		}
	}
}

func atoi(s string) uint32 {
	var n int64
	fmt.Sscan(s, &n)
	return uint32(n)
}
