package dm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// command is a dm-ioctl command; sys_*.go has its ioctl number.
type command uint8

const (
	cmdVersion command = iota
	cmdListDevices
	cmdCreate
	cmdRemove
	cmdSuspend // and resume, without DM_SUSPEND_FLAG
	cmdDevStatus
	cmdTableLoad
	cmdTableStatus // status, and table with DM_STATUS_TABLE_FLAG
	cmdListVersions
	cmdTargetMsg
)

// Buffer sizes: the kernel says when its answer does not fit
// (DM_BUFFER_FULL_FLAG) and the buffer doubles, up to maxBuffer, which
// bounds the memory a call takes whatever the kernel holds.
const (
	initialBuffer = 16 << 10 // libdevmapper's minimum for answers
	maxBuffer     = 8 << 20
)

// startBuffer is the first buffer's size; tests shrink it to make the
// kernel's answers overflow.
var startBuffer = initialBuffer

// udev cookie flags, in the upper 16 bits of a request's event_nr
// (libdevmapper.h).
const (
	udevFlagsShift             = 16
	udevDisableDMRules         = 0x0001
	udevDisableSubsystemRules  = 0x0002
	udevDisableLibraryFallback = 0x0020
	udevPrimarySource          = 0x0040
	cookieMagic                = 0x0D4D
)

// noUdevEventNr is the event_nr of a resume or remove whose node this
// package makes itself: udev's device-mapper and subsystem rules, should
// udev see the event, leave /dev/mapper alone (libdevmapper does the
// same when it makes nodes with udev running).
const noUdevEventNr = (udevPrimarySource | udevDisableDMRules | udevDisableSubsystemRules) << udevFlagsShift

// udevEventNr is the event_nr of a resume or remove with a cookie: udev
// makes or removes the node and releases the cookie.
func udevEventNr(base uint16) uint32 {
	return uint32(udevPrimarySource|udevDisableLibraryFallback)<<udevFlagsShift | uint32(base)
}

// removeRetries and removeRetryDelay bound the retries of a remove that
// finds the device open while udev runs (its workers open new devices
// briefly to probe them), as libdevmapper's retry_remove does.
const (
	removeRetries    = 5
	removeRetryDelay = 200 * time.Millisecond
)

// Control is /dev/mapper/control, open. Its methods are safe for
// concurrent use.
type Control struct {
	f       *controlFile
	version Version
	opts    Options
	// udev: udev runs and events are synchronized with it by cookies.
	udev bool
}

// Open opens /dev/mapper/control (making the node from /proc/misc when
// the kernel has device-mapper but /dev lacks it, as libdevmapper does)
// and asks the kernel its dm-ioctl version. It fails with ErrUnsupported
// where there is no device-mapper, and with fs.ErrPermission without
// root.
func Open(opts *Options) (*Control, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.UdevTimeout <= 0 {
		o.UdevTimeout = 10 * time.Second
	}
	f, err := openControl()
	if err != nil {
		return nil, err
	}
	c := &Control{f: f, opts: o}
	r, err := c.do(cmdVersion, opVersion, "", &request{})
	if err != nil {
		f.close()
		return nil, err
	}
	c.version = r.version
	if c.version[0] != 4 {
		f.close()
		return nil, &Error{Op: opVersion, Err: fmt.Errorf("%w: the kernel's dm-ioctl is version %v, not 4", ErrUnsupported, c.version)}
	}
	c.udev = o.Udev == UdevAuto && udevRunning()
	return c, nil
}

// Close closes the control device.
func (c *Control) Close() error { return c.f.close() }

// Version is the kernel's dm-ioctl version.
func (c *Control) Version() Version { return c.version }

// do runs a command, growing the buffer while the kernel says its answer
// did not fit.
func (c *Control) do(cmd command, op, name string, req *request) (*reply, error) {
	for size := startBuffer; ; size *= 2 {
		b, err := req.encode(size)
		if err != nil {
			return nil, &Error{Op: op, Name: name, Err: err}
		}
		if err := c.f.ioctl(cmd, b); err != nil {
			return nil, &Error{Op: op, Name: name, Err: err}
		}
		r, err := decodeReply(b)
		if err != nil {
			return nil, &Error{Op: op, Name: name, Err: err}
		}
		if r.flags&flagBufferFull == 0 {
			return r, nil
		}
		if size >= maxBuffer {
			return nil, &Error{Op: op, Name: name, Err: fmt.Errorf("the kernel's answer does not fit in %d MiB", maxBuffer>>20)}
		}
	}
}

// named checks a device name for a command.
func named(op, name string) error {
	if err := CheckName(name); err != nil {
		return &Error{Op: op, Name: name, Err: err}
	}
	return nil
}

// Create creates a device with no table (DM_DEV_CREATE); uuid may be "".
// An existing name or UUID is ErrExist.
func (c *Control) Create(name, uuid string) (*Info, error) {
	if err := named(opCreate, name); err != nil {
		return nil, err
	}
	if err := checkUUID(uuid); err != nil {
		return nil, &Error{Op: opCreate, Name: name, Err: err}
	}
	r, err := c.do(cmdCreate, opCreate, name, &request{name: name, uuid: uuid})
	if err != nil {
		return nil, err
	}
	return r.info(), nil
}

// Load loads a table into the device's inactive slot (DM_TABLE_LOAD);
// Resume makes it live. The kernel's reason for refusing a table is in the
// *Error's Kernel when its log can be read.
func (c *Control) Load(name string, targets []Target, opts *LoadOptions) error {
	if err := named(opLoad, name); err != nil {
		return err
	}
	data, err := encodeTargets(targets)
	if err != nil {
		return &Error{Op: opLoad, Name: name, Err: err}
	}
	// The root hash is not secret, but the kernel wipes the buffer it
	// copies with DM_SECURE_DATA_FLAG, as cryptsetup asks for every table.
	req := &request{name: name, flags: flagSecureData, targetCount: uint32(len(targets)), data: data}
	if opts != nil && opts.ReadOnly {
		req.flags |= flagReadOnly
	}
	log := markKernelLog()
	defer log.close()
	_, err = c.do(cmdTableLoad, opLoad, name, req)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			if info, ierr := c.Info(name); ierr == nil {
				e.Kernel = log.reason(fmt.Sprintf("%d:%d", info.Major, info.Minor))
				e.Major, e.Minor = info.Major, info.Minor
			}
		}
		return err
	}
	return nil
}

// Suspend suspends the device (DM_DEV_SUSPEND): I/O to it waits until
// Resume.
func (c *Control) Suspend(name string, opts *SuspendOptions) error {
	if err := named(opSuspend, name); err != nil {
		return err
	}
	req := &request{name: name, flags: flagSuspend}
	if opts != nil && opts.NoFlush {
		req.flags |= flagNoFlush
	}
	if opts != nil && opts.SkipLockFS {
		req.flags |= flagSkipLockFS
	}
	_, err := c.do(cmdSuspend, opSuspend, name, req)
	return err
}

// Resume makes the loaded table live (or resumes a suspended device), and
// makes /dev/mapper/NAME: through udev when it runs (waiting for it, for
// at most Options.UdevTimeout and while ctx lasts), else itself.
func (c *Control) Resume(ctx context.Context, name string) (*Info, error) {
	if err := named(opResume, name); err != nil {
		return nil, err
	}
	ck := c.cookie()
	req := &request{name: name, eventNr: noUdevEventNr}
	if ck != nil {
		req.eventNr = udevEventNr(ck.base)
	}
	r, err := c.do(cmdSuspend, opResume, name, req)
	if err != nil {
		ck.destroy()
		return nil, err
	}
	info := r.info()
	if r.flags&flagUeventGenerated != 0 {
		ck.wait(ctx, c.opts.UdevTimeout)
	}
	ck.destroy()
	if err := makeNode(name, info.Major, info.Minor); err != nil {
		return info, &Error{Op: opNode, Name: name, Err: err}
	}
	return info, nil
}

// cookie returns a new udev cookie when events are synchronized with
// udev, or nil: then, or when System V semaphores are not available,
// nodes are made without udev.
func (c *Control) cookie() *udevCookie {
	if !c.udev {
		return nil
	}
	ck, err := newUdevCookie()
	if err != nil {
		return nil
	}
	return ck
}

// Remove removes the device (DM_DEV_REMOVE) and its /dev/mapper node. An
// open device is ErrBusy, unless opts.Deferred: it is then removed at its
// last close, and Remove returns deferred true. A device that is not there
// is ErrNoDevice.
func (c *Control) Remove(ctx context.Context, name string, opts *RemoveOptions) (deferred bool, err error) {
	if err := named(opRemove, name); err != nil {
		return false, err
	}
	info, err := c.Info(name)
	if err != nil {
		return false, &Error{Op: opRemove, Name: name, Err: errors.Unwrap(err)}
	}
	req := &request{name: name, eventNr: noUdevEventNr}
	if opts != nil && opts.Deferred {
		req.flags |= flagDeferredRemove
	}
	if err := c.removeRetrying(ctx, name, req); err != nil {
		return false, err
	}
	if opts != nil && opts.Deferred {
		now, err := c.Info(name)
		deferred = err == nil && now.DeferredRemove()
	}
	// A deferred removal happens at a last close, when no one is there to
	// remove a node made without udev: it goes now, lest it later name
	// another device given the same minor. udev removes its own.
	if deferred && c.udev {
		return true, nil
	}
	if err := removeNode(name, info.Major, info.Minor); err != nil && !deferred {
		return false, &Error{Op: opRemove, Name: name, Err: fmt.Errorf("removed, but not its node %s: %w", NodePath(name), err)}
	}
	return deferred, nil
}

// removeRetrying runs the remove with a udev cookie, retrying boundedly
// when udev runs and the device is briefly open.
func (c *Control) removeRetrying(ctx context.Context, name string, req *request) error {
	for try := 0; ; try++ {
		ck := c.cookie()
		if ck != nil {
			req.eventNr = udevEventNr(ck.base)
		}
		r, err := c.do(cmdRemove, opRemove, name, req)
		if err == nil {
			if r.flags&flagUeventGenerated != 0 {
				ck.wait(ctx, c.opts.UdevTimeout)
			}
			ck.destroy()
			return nil
		}
		ck.destroy()
		if !c.udev || req.flags&flagDeferredRemove != 0 || !errors.Is(err, ErrBusy) || try >= removeRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(removeRetryDelay):
		}
	}
}

// CancelDeferredRemove cancels a deferred removal (the
// @cancel_deferred_remove message), and makes the device's node again if
// Remove removed it.
func (c *Control) CancelDeferredRemove(name string) error {
	if _, err := c.Message(name, 0, "@cancel_deferred_remove"); err != nil {
		return err
	}
	info, err := c.Info(name)
	if err != nil {
		return err
	}
	if !c.udev {
		if err := makeNode(name, info.Major, info.Minor); err != nil {
			return &Error{Op: opNode, Name: name, Err: err}
		}
	}
	return nil
}

// Info returns what the kernel says of the device (DM_DEV_STATUS).
func (c *Control) Info(name string) (*Info, error) {
	if err := named(opInfo, name); err != nil {
		return nil, err
	}
	r, err := c.do(cmdDevStatus, opInfo, name, &request{name: name})
	if err != nil {
		return nil, err
	}
	return r.info(), nil
}

// Status returns the device's information and each target of its live
// table with its status text (DM_TABLE_STATUS): for dm-verity "V" or "C".
func (c *Control) Status(name string) (*Info, []Target, error) {
	return c.tableStatus(opStatus, name, 0)
}

// Table returns the device's information and its live table, as the
// kernel gives it back (devices as MAJOR:MINOR).
func (c *Control) Table(name string) (*Info, []Target, error) {
	return c.tableStatus(opTable, name, flagStatusTable)
}

func (c *Control) tableStatus(op, name string, flags uint32) (*Info, []Target, error) {
	if err := named(op, name); err != nil {
		return nil, nil, err
	}
	r, err := c.do(cmdTableStatus, op, name, &request{name: name, flags: flags})
	if err != nil {
		return nil, nil, err
	}
	ts, err := decodeTargets(r.data, r.targetCount)
	if err != nil {
		return nil, nil, &Error{Op: op, Name: name, Err: err}
	}
	return r.info(), ts, nil
}

// List lists the devices (DM_LIST_DEVICES), with their UUIDs on kernels
// that give them (5.13 on).
func (c *Control) List() ([]Device, error) {
	r, err := c.do(cmdListDevices, opList, "", &request{flags: flagUUID})
	if err != nil {
		return nil, err
	}
	ds, err := decodeNames(r.data, c.version.AtLeast(4, 38))
	if err != nil {
		return nil, &Error{Op: opList, Err: err}
	}
	return ds, nil
}

// Targets lists the target types the kernel has loaded, with their
// versions (DM_LIST_VERSIONS).
func (c *Control) Targets() ([]TargetVersion, error) {
	r, err := c.do(cmdListVersions, opTargets, "", &request{})
	if err != nil {
		return nil, err
	}
	vs, err := decodeVersions(r.data)
	if err != nil {
		return nil, &Error{Op: opTargets, Err: err}
	}
	return vs, nil
}

// Message sends msg to the target at sector of the device's live table
// (DM_TARGET_MSG) and returns its answer, if any. Messages starting with
// '@' are device-mapper's own (@cancel_deferred_remove).
func (c *Control) Message(name string, sector uint64, msg string) (string, error) {
	if err := named(opMessage, name); err != nil {
		return "", err
	}
	if msg == "" || strings.IndexByte(msg, 0) >= 0 {
		return "", &Error{Op: opMessage, Name: name, Err: errors.New("the message is empty or holds a NUL byte")}
	}
	r, err := c.do(cmdTargetMsg, opMessage, name, &request{name: name, data: encodeMessage(sector, msg)})
	if err != nil {
		return "", err
	}
	if r.flags&flagDataOut == 0 {
		return "", nil
	}
	return cString(r.data), nil
}
