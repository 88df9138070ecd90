package dm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// Target is one line of a device-mapper table: the sectors Start to
// Start+Length (512-byte sectors) of the device are mapped by the target
// Type with Params. From Status, Params is the target's status text.
type Target struct {
	Start, Length uint64
	Type          string
	Params        string
}

// Flags are dm-ioctl's device flags, as Info reports them.
type Flags uint32

// The flags Info reports (linux/dm-ioctl.h).
const (
	FlagReadOnly        Flags = 1 << 0  // DM_READONLY_FLAG: the live table is read-only
	FlagSuspended       Flags = 1 << 1  // DM_SUSPEND_FLAG
	FlagActivePresent   Flags = 1 << 5  // DM_ACTIVE_PRESENT_FLAG: a live table is loaded
	FlagInactivePresent Flags = 1 << 6  // DM_INACTIVE_PRESENT_FLAG: a table waits for Resume
	FlagDeferredRemove  Flags = 1 << 17 // DM_DEFERRED_REMOVE: removed at its last close
	FlagInternalSuspend Flags = 1 << 18 // DM_INTERNAL_SUSPEND_FLAG
)

// Info is what the kernel says of a device (DM_DEV_STATUS).
type Info struct {
	Name, UUID string
	// Major and Minor are the device's number: /dev/dm-Minor.
	Major, Minor uint32
	// OpenCount is how many times the device is open.
	OpenCount int
	// EventNr counts the device's events.
	EventNr uint32
	// TargetCount is the number of targets of the live table.
	TargetCount int
	Flags       Flags
}

// ReadOnly, Suspended, Active (a live table) and DeferredRemove read Flags.
func (i *Info) ReadOnly() bool       { return i.Flags&FlagReadOnly != 0 }
func (i *Info) Suspended() bool      { return i.Flags&FlagSuspended != 0 }
func (i *Info) Active() bool         { return i.Flags&FlagActivePresent != 0 }
func (i *Info) DeferredRemove() bool { return i.Flags&FlagDeferredRemove != 0 }

// Device is one device of List.
type Device struct {
	Name string
	// UUID is "" when the device has none or the kernel (before 5.13)
	// does not list them.
	UUID         string
	Major, Minor uint32
	EventNr      uint32
}

// Version is a dm-ioctl or target version: major, minor, patch level.
type Version [3]uint32

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor uint32) bool {
	return v[0] > major || v[0] == major && v[1] >= minor
}

// TargetVersion is a target type the kernel has (loaded modules only).
type TargetVersion struct {
	Name    string
	Version Version
}

// UdevMode says whether Resume and Remove wait for udev.
type UdevMode uint8

const (
	// UdevAuto waits for udev when it runs (/run/udev/control exists),
	// and makes the nodes itself when it does not.
	UdevAuto UdevMode = iota
	// UdevOff never waits for udev and makes the nodes itself, as
	// libdevmapper does with DM_DISABLE_UDEV.
	UdevOff
)

// Options configure a Control; the zero value is the default.
type Options struct {
	Udev UdevMode
	// UdevTimeout bounds each wait for udev; 0 means 10 seconds. When it
	// passes, the node is made (or removed) as without udev.
	UdevTimeout time.Duration
}

// LoadOptions are Load's options.
type LoadOptions struct {
	// ReadOnly opens the table's devices read-only and makes the device
	// read-only.
	ReadOnly bool
}

// SuspendOptions are Suspend's options.
type SuspendOptions struct {
	// NoFlush leaves queued I/O queued (DM_NOFLUSH_FLAG).
	NoFlush bool
	// SkipLockFS does not freeze a file system on the device
	// (DM_SKIP_LOCKFS_FLAG).
	SkipLockFS bool
}

// RemoveOptions are Remove's options.
type RemoveOptions struct {
	// Deferred removes a device that is open at its last close instead
	// of failing with ErrBusy (DM_DEFERRED_REMOVE).
	Deferred bool
}

// MaxNameLen and MaxUUIDLen are the longest device name and UUID the
// kernel keeps (DM_NAME_LEN and DM_UUID_LEN, less the terminating NUL).
const (
	MaxNameLen = 127
	MaxUUIDLen = 128
)

// NodePath is the path of a device's node: /dev/mapper/NAME.
func NodePath(name string) string { return "/dev/mapper/" + name }

// Sentinels for errors.Is; every *Error matches the one its errno means.
var (
	// ErrNoDevice: no device of that name (ENXIO, ENODEV).
	ErrNoDevice = errors.New("no such device")
	// ErrBusy: the device is open, mounted or held by another device
	// (EBUSY, but from Create).
	ErrBusy = errors.New("device in use")
	// ErrExist: a device of that name or UUID exists (EEXIST, and EBUSY
	// from Create).
	ErrExist = errors.New("device already exists")
	// ErrNoKey: a key the table names is not in the kernel's keyring
	// (ENOKEY), e.g. a root hash signature of dm-verity.
	ErrNoKey = errors.New("key not available")
	// ErrUnsupported: no device-mapper here (not Linux, or a kernel
	// without it).
	ErrUnsupported = errors.New("device-mapper not available")
)

// Error is the error of every Control method.
type Error struct {
	// Op is the command, as a phrase the device name follows: "create",
	// "load the table of", "remove", ...
	Op string
	// Name is the device's name, "" when the command names none.
	Name string
	// Err is the cause: the ioctl's syscall.Errno, or another error.
	Err error
	// Kernel is what the kernel logged about the failure (the reason
	// for an invalid table), "" when it logged nothing or its log could
	// not be read.
	Kernel string
	// Major and Minor are the device's number where the command named a
	// device that has one (a table the kernel refused), else 0.
	Major, Minor uint32
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("device-mapper: ")
	b.WriteString(e.Op)
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	b.WriteString(": ")
	b.WriteString(e.reason())
	if e.Kernel != "" {
		b.WriteString("; the kernel says: " + e.Kernel)
	} else if e.errno() == syscall.EINVAL {
		b.WriteString(" (the kernel log, dmesg, says why)")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) errno() syscall.Errno {
	var n syscall.Errno
	errors.As(e.Err, &n)
	return n
}

// Is matches the sentinels to the errno.
func (e *Error) Is(target error) bool {
	n := e.errno()
	switch target {
	case ErrNoDevice:
		return n == syscall.ENXIO || n == syscall.ENODEV
	case ErrBusy:
		return n == syscall.EBUSY && e.Op != opCreate
	case ErrExist:
		return n == syscall.EEXIST || n == syscall.EBUSY && e.Op == opCreate
	case ErrNoKey:
		return n == enokeyErrno
	}
	return false
}

// reason words the cause.
func (e *Error) reason() string {
	n := e.errno()
	switch {
	case e.Err == nil:
		return "failed"
	case n == 0:
		return e.Err.Error()
	case n == syscall.ENXIO, n == syscall.ENODEV:
		return "no such device"
	case n == syscall.EBUSY && e.Op == opCreate, n == syscall.EEXIST:
		return "a device of that name or UUID already exists"
	case n == syscall.EBUSY:
		return "the device is in use (open, mounted, or held by another device)"
	case n == syscall.EPERM, n == syscall.EACCES:
		return "permission denied: device-mapper needs root (CAP_SYS_ADMIN)"
	case n == enokeyErrno:
		return "a key it names is not in the kernel's keyring"
	case n == syscall.EINVAL:
		return "the kernel refused it as invalid"
	case n == syscall.ENOMEM:
		return "the kernel is out of memory"
	case n == syscall.ENOTTY:
		return "not device-mapper's control device"
	}
	return n.Error()
}

// The commands' phrases in errors.
const (
	opCreate  = "create"
	opLoad    = "load the table of"
	opResume  = "resume"
	opSuspend = "suspend"
	opRemove  = "remove"
	opInfo    = "query"
	opStatus  = "query the status of"
	opTable   = "query the table of"
	opList    = "list the devices"
	opTargets = "list the targets"
	opMessage = "send a message to"
	opVersion = "query the version"
	opOpen    = "open the control device"
	opNode    = "make the node of"
)

// CheckName returns an error if the kernel, or /dev/mapper, cannot take
// name as a device name: empty, longer than MaxNameLen bytes, holding '/'
// or a NUL byte, ".", ".." or "control" (the control device's own node).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("the device name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("the device name is %d bytes; the kernel keeps %d", len(name), MaxNameLen)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("the device name %q holds '/' or a NUL byte", name)
	case name == "." || name == "..":
		return fmt.Errorf("the device name %q is not a file name in /dev/mapper", name)
	case name == "control":
		return errors.New(`the device name "control" is /dev/mapper/control, device-mapper's own node`)
	}
	return nil
}

// checkUUID checks a UUID for Create.
func checkUUID(uuid string) error {
	switch {
	case len(uuid) > MaxUUIDLen:
		return fmt.Errorf("the UUID is %d bytes; the kernel keeps %d", len(uuid), MaxUUIDLen)
	case strings.IndexByte(uuid, 0) >= 0:
		return errors.New("the UUID holds a NUL byte")
	}
	return nil
}

// explained is an error worded msg that wraps err for errors.Is.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }
