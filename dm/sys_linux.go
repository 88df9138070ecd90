package dm

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const enokeyErrno = unix.ENOKEY

const controlPath = "/dev/mapper/control"

// mapperDir is where the nodes go; tests move it.
var mapperDir = "/dev/mapper"

var ioctlNumbers = [...]uintptr{
	cmdVersion:      unix.DM_VERSION,
	cmdListDevices:  unix.DM_LIST_DEVICES,
	cmdCreate:       unix.DM_DEV_CREATE,
	cmdRemove:       unix.DM_DEV_REMOVE,
	cmdSuspend:      unix.DM_DEV_SUSPEND,
	cmdDevStatus:    unix.DM_DEV_STATUS,
	cmdTableLoad:    unix.DM_TABLE_LOAD,
	cmdTableStatus:  unix.DM_TABLE_STATUS,
	cmdListVersions: unix.DM_LIST_VERSIONS,
	cmdTargetMsg:    unix.DM_TARGET_MSG,
}

// controlFile is the open control device.
type controlFile struct{ f *os.File }

// openControl opens /dev/mapper/control. A kernel with device-mapper
// lists it in /proc/misc; when /dev lacks the node (no devtmpfs or udev
// made it), it is made from there, as libdevmapper does.
func openControl() (*controlFile, error) {
	f, err := os.OpenFile(controlPath, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		minor, ok := miscMinor("device-mapper")
		if !ok {
			return nil, &Error{Op: opOpen, Err: &explained{"this kernel has no device-mapper (no " + controlPath +
				", none in /proc/misc): load the dm_mod module", ErrUnsupported}}
		}
		if err := os.MkdirAll("/dev/mapper", 0o755); err != nil {
			return nil, &Error{Op: opOpen, Err: err}
		}
		if err := unix.Mknod(controlPath, unix.S_IFCHR|0o600, int(unix.Mkdev(10, minor))); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &Error{Op: opOpen, Err: fmt.Errorf("making %s: %w", controlPath, err)}
		}
		f, err = os.OpenFile(controlPath, os.O_RDWR, 0)
	}
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == unix.ENODEV || errno == unix.ENXIO) {
			return nil, &Error{Op: opOpen, Err: &explained{controlPath + " is there but this kernel has no device-mapper: load the dm_mod module", ErrUnsupported}}
		}
		if errors.As(err, &errno) {
			err = errno
		}
		return nil, &Error{Op: opOpen, Err: err}
	}
	return &controlFile{f: f}, nil
}

// miscMinor finds a misc device's minor number in /proc/misc.
func miscMinor(name string) (uint32, bool) {
	f, err := os.Open("/proc/misc")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 2 && fields[1] == name {
			n, err := strconv.ParseUint(fields[0], 10, 32)
			return uint32(n), err == nil
		}
	}
	return 0, false
}

func (c *controlFile) close() error { return c.f.Close() }

// ioctl issues cmd on the buffer b, which the kernel reads and rewrites.
func (c *controlFile) ioctl(cmd command, b []byte) error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		for {
			_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, ioctlNumbers[cmd], uintptr(unsafe.Pointer(&b[0])))
			if errno != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	runtime.KeepAlive(b)
	if errno != 0 {
		return errno
	}
	return nil
}

// nodeMode and nodeGID are the mode and group of the nodes made without
// udev: Debian's libdevmapper's (DM_DEVICE_MODE, DM_DEVICE_GID: group
// disk), as veritysetup makes them there (seen in tests/kernel), which
// udev's rules give /dev/dm-N too. Owner root.
const (
	nodeMode = 0o660
	nodeGID  = 6
)

// makeNode makes /dev/mapper/NAME, a block device node of major:minor,
// unless it is there already (udev's link, or a node made before). A
// stale node of another device-mapper device, or a dangling link, is
// replaced, as libdevmapper does; anything else is left and refused.
func makeNode(name string, major, minor uint32) error {
	path := filepath.Join(mapperDir, name)
	dev := unix.Mkdev(major, minor)
	if err := os.MkdirAll(mapperDir, 0o755); err != nil {
		return err
	}
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && uint64(st.Rdev) == dev:
		return nil
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && unix.Major(uint64(st.Rdev)) == major:
		// A removed device's node (same driver, another minor).
		if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
			return err
		}
	case err == nil:
		return fmt.Errorf("%s exists and is not a device-mapper node: remove it if it is not needed", path)
	case err == unix.ENOENT:
		var lst unix.Stat_t
		if unix.Lstat(path, &lst) == nil && lst.Mode&unix.S_IFMT == unix.S_IFLNK {
			if err := unix.Unlink(path); err != nil && err != unix.ENOENT { // a dangling link
				return err
			}
		}
	default:
		return err
	}
	if err := unix.Mknod(path, unix.S_IFBLK|nodeMode, int(dev)); err != nil && err != unix.EEXIST {
		return fmt.Errorf("mknod %s: %w", path, err)
	}
	if err := unix.Chown(path, 0, nodeGID); err != nil {
		return err
	}
	return unix.Chmod(path, nodeMode) // whatever the umask
}

// removeNode removes /dev/mapper/NAME if it is major:minor's node, or a
// link to it or to nothing; anything else is not ours and stays.
func removeNode(name string, major, minor uint32) error {
	path := filepath.Join(mapperDir, name)
	dev := unix.Mkdev(major, minor)
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	switch lst.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		if uint64(lst.Rdev) != dev {
			return nil
		}
	case unix.S_IFLNK:
		var st unix.Stat_t
		err := unix.Stat(path, &st)
		if err == nil && (st.Mode&unix.S_IFMT != unix.S_IFBLK || uint64(st.Rdev) != dev) {
			return nil
		}
		if err != nil && err != unix.ENOENT {
			return nil
		}
	default:
		return nil
	}
	if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// udevRunning reports whether udev runs, as libudev tells it
// (udev_queue_get_udev_is_active): its control socket exists. Tests play
// udev's part.
var udevRunning = func() bool {
	_, err := os.Stat("/run/udev/control")
	return err == nil
}

// System V semaphore commands (linux/sem.h).
const (
	semGETVAL = 12
	semSETVAL = 16
)

// udevCookie is a udev cookie: a System V semaphore keyed
// DM_COOKIE_MAGIC<<16 | base, holding the events udev has yet to
// complete. The kernel passes event_nr (the flags and base) to udev as
// DM_COOKIE; udev's device-mapper rules run `dmsetup udevcomplete`, which
// decrements the semaphore of that key once the node is made or removed.
type udevCookie struct {
	semid int
	base  uint16
}

func newUdevCookie() (*udevCookie, error) {
	for range 16 {
		var r [2]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, err
		}
		base := binary.LittleEndian.Uint16(r[:])
		if base == 0 {
			continue
		}
		key := uintptr(cookieMagic<<16 | uint32(base))
		id, _, errno := unix.Syscall(unix.SYS_SEMGET, key, 1, 0o600|unix.IPC_CREAT|unix.IPC_EXCL)
		if errno == unix.EEXIST {
			continue
		}
		if errno != 0 {
			return nil, errno
		}
		k := &udevCookie{semid: int(id), base: base}
		// One event pending: the command's.
		if _, _, errno := unix.Syscall6(unix.SYS_SEMCTL, id, 0, semSETVAL, 1, 0, 0); errno != 0 {
			k.destroy()
			return nil, errno
		}
		return k, nil
	}
	return nil, errors.New("no free udev cookie")
}

// wait waits until udev has completed the event, for at most timeout and
// while ctx lasts; it reports whether udev did.
func (k *udevCookie) wait(ctx context.Context, timeout time.Duration) bool {
	if k == nil {
		return false
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		v, _, errno := unix.Syscall6(unix.SYS_SEMCTL, uintptr(k.semid), 0, semGETVAL, 0, 0, 0)
		if errno != 0 || v == 0 {
			return errno == 0
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-time.After(delay):
		}
	}
}

// destroy removes the semaphore.
func (k *udevCookie) destroy() {
	if k == nil {
		return
	}
	unix.Syscall6(unix.SYS_SEMCTL, uintptr(k.semid), 0, unix.IPC_RMID, 0, 0, 0)
}

// kernelLog reads what the kernel logs after it was marked.
type kernelLog struct{ fd int }

// markKernelLog opens the kernel log (/dev/kmsg) at its end, or returns
// nil when it cannot be read.
func markKernelLog() *kernelLog {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return nil
	}
	return &kernelLog{fd: fd}
}

// maxLogRecords bounds how much of the log reason reads.
const maxLogRecords = 512

// reason returns what device-mapper logged about the device dev
// ("MAJOR:MINOR") since the mark: the last few messages, "; "-joined.
func (k *kernelLog) reason(dev string) string {
	if k == nil {
		return ""
	}
	buf := make([]byte, 8192) // a record is at most about 1 KiB
	var msgs []string
	for range maxLogRecords {
		n, err := unix.Read(k.fd, buf)
		if err == unix.EPIPE { // records overwritten while reading
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		if m, ok := dmMessage(string(buf[:n]), dev); ok {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 3 {
		msgs = msgs[len(msgs)-3:]
	}
	return strings.Join(msgs, "; ")
}

func (k *kernelLog) close() {
	if k != nil {
		unix.Close(k.fd)
	}
}
