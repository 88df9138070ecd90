package dm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUdevCookie checks the cookie's semaphore as udev's rules use it:
// keyed DM_COOKIE_MAGIC<<16 | base, holding one event that `dmsetup
// udevcomplete` takes (here set to 0, as its semop does), which ends the
// wait; without it the wait ends with ctx or the timeout.
func TestUdevCookie(t *testing.T) {
	ck, err := newUdevCookie()
	if err != nil {
		t.Skipf("no System V semaphores here: %v", err)
	}
	defer ck.destroy()
	key := uintptr(cookieMagic<<16 | uint32(ck.base))
	id, _, errno := unix.Syscall(unix.SYS_SEMGET, key, 1, 0)
	if errno != 0 || int(id) != ck.semid {
		t.Fatalf("semget(%#x) = %d, %v; the cookie's semaphore is %d", key, id, errno, ck.semid)
	}
	if v, _, _ := unix.Syscall6(unix.SYS_SEMCTL, id, 0, semGETVAL, 0, 0, 0); v != 1 {
		t.Fatalf("a new cookie holds %d events, want 1", v)
	}
	if ev := udevEventNr(ck.base); ev&0xffff != uint32(ck.base) || ev>>16 != udevPrimarySource|udevDisableLibraryFallback {
		t.Errorf("event_nr %#x for cookie base %#x", ev, ck.base)
	}
	if noUdevEventNr != 0x00430000 {
		t.Errorf("event_nr without udev %#x, want primary source and the dm and subsystem rules disabled (0x00430000)", noUdevEventNr)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if ck.wait(cancelled, time.Hour) {
		t.Error("wait reported udev done with the event pending and ctx ended")
	}
	if ck.wait(context.Background(), time.Millisecond) {
		t.Error("wait reported udev done with the event pending")
	}
	go unix.Syscall6(unix.SYS_SEMCTL, id, 0, semSETVAL, 0, 0, 0) // udev completes
	if !ck.wait(context.Background(), time.Hour) {
		t.Error("wait did not see udev complete the event")
	}
	ck.destroy()
	if _, _, errno := unix.Syscall(unix.SYS_SEMGET, key, 1, 0); errno != unix.ENOENT {
		t.Errorf("the semaphore is still there after destroy: %v", errno)
	}
	var nilCookie *udevCookie
	nilCookie.destroy()
	if nilCookie.wait(context.Background(), time.Hour) {
		t.Error("no cookie waited")
	}
}

// TestNodes makes and removes /dev/mapper nodes in a directory of its
// own: made once, kept when right, a stale device-mapper node or a
// dangling link replaced, anything else left alone.
func TestNodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dir := t.TempDir()
	old := mapperDir
	mapperDir = filepath.Join(dir, "mapper")
	defer func() { mapperDir = old }()
	node := func(name string) (uint32, uint32, bool) {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(mapperDir, name), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
			return 0, 0, false
		}
		if st.Mode&0o7777 != nodeMode || st.Uid != 0 || st.Gid != nodeGID {
			t.Errorf("node %s has mode %o, owner %d:%d; want %o, 0:%d", name, st.Mode&0o7777, st.Uid, st.Gid, nodeMode, nodeGID)
		}
		return unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)), true
	}
	if err := makeNode("a", 253, 7); err != nil {
		t.Fatalf("mknod here: %v", err)
	}
	if ma, mi, ok := node("a"); !ok || ma != 253 || mi != 7 {
		t.Fatalf("node a: %d:%d %v", ma, mi, ok)
	}
	if err := makeNode("a", 253, 7); err != nil {
		t.Errorf("the right node again: %v", err)
	}
	if err := makeNode("a", 253, 9); err != nil { // a stale node of another dm device
		t.Errorf("replacing a stale node: %v", err)
	}
	if ma, mi, ok := node("a"); !ok || ma != 253 || mi != 9 {
		t.Errorf("node a after replacing: %d:%d %v", ma, mi, ok)
	}
	// Not a device-mapper node: a regular file, another driver's node.
	os.WriteFile(filepath.Join(mapperDir, "file"), []byte("keep"), 0o644)
	if err := makeNode("file", 253, 1); err == nil {
		t.Error("a regular file was taken for a node")
	}
	unix.Mknod(filepath.Join(mapperDir, "sda"), unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0)))
	if err := makeNode("sda", 253, 1); err == nil {
		t.Error("another driver's node was replaced")
	}
	os.Symlink("../dm-99", filepath.Join(mapperDir, "dangling"))
	if err := makeNode("dangling", 253, 3); err != nil {
		t.Errorf("replacing a dangling link: %v", err)
	}
	if _, mi, ok := node("dangling"); !ok || mi != 3 {
		t.Error("the dangling link was not replaced by the node")
	}

	if err := removeNode("a", 253, 7); err != nil { // not a's device any more
		t.Error(err)
	}
	if _, _, ok := node("a"); !ok {
		t.Error("a node of another device was removed")
	}
	if err := removeNode("a", 253, 9); err != nil {
		t.Error(err)
	}
	if _, _, ok := node("a"); ok {
		t.Error("the node was not removed")
	}
	for _, keep := range []string{"file", "sda"} {
		if err := removeNode(keep, 253, 1); err != nil {
			t.Error(err)
		}
		if _, err := os.Lstat(filepath.Join(mapperDir, keep)); err != nil {
			t.Errorf("%s was removed", keep)
		}
	}
	if err := removeNode("missing", 253, 1); err != nil {
		t.Errorf("removing a node that is not there: %v", err)
	}
}

// TestOpenWithoutDeviceMapper: where the kernel has no device-mapper (as
// on the machine the tests usually run on), Open says so, and makes
// nothing in /dev.
func TestOpenWithoutDeviceMapper(t *testing.T) {
	if _, ok := miscMinor("device-mapper"); ok {
		t.Skip("this kernel has device-mapper")
	}
	if _, err := os.Stat(controlPath); err == nil {
		t.Skip(controlPath + " exists")
	}
	_, statErr := os.Stat(mapperDir)
	_, err := Open(nil)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Open: %v, want ErrUnsupported", err)
	}
	if want := "device-mapper: open the control device: this kernel has no device-mapper (no /dev/mapper/control, none in /proc/misc): load the dm_mod module"; err.Error() != want {
		t.Errorf("error %q\nwant %q", err, want)
	}
	if _, err := os.Stat(mapperDir); statErr != nil && err == nil {
		t.Errorf("Open made %s", mapperDir)
	}
}
