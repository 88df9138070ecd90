package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// loopMajor is the loop driver's block major (LOOP_MAJOR).
const loopMajor = 7

// maxTries bounds the retries when another process takes the free device
// first (EBUSY), as cryptsetup retries.
const maxTries = 64

// legacyOnly makes Attach skip LOOP_CONFIGURE, for tests of the
// LOOP_SET_FD path of kernels before 5.8.
var legacyOnly = false

// Attach binds the regular file to a free loop device: as cryptsetup's
// crypt_loop_attach does, the file is opened O_EXCL, read-write unless
// opts.ReadOnly (falling back to read-only when the file or its file
// system allows no writing), then LOOP_CONFIGURE (or LOOP_SET_FD and
// LOOP_SET_STATUS64) binds it with the block size and autoclear, and
// autoclear is checked. The Device holds the loop device open; Close it.
func Attach(ctx context.Context, file string, opts *AttachOptions) (*Device, error) {
	o := AttachOptions{}
	if opts != nil {
		o = *opts
	}
	fail := func(err error) (*Device, error) { return nil, &Error{Op: "attach", Path: file, Err: err} }
	if err := checkBlockSize(o.BlockSize); err != nil {
		return fail(err)
	}
	fd, readOnly, err := openBacking(file, o.ReadOnly)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(fd) // the loop device holds the file
	d, err := bind(ctx, fd, file, readOnly, &o)
	if err != nil {
		return fail(err)
	}
	d.File = file
	return d, nil
}

// AttachFile binds the open regular file f to a free loop device, as
// Attach does, but without opening it again: the device reads exactly the
// file f is, and is read-only if f is open read-only (or opts.ReadOnly).
func AttachFile(ctx context.Context, f *os.File, opts *AttachOptions) (*Device, error) {
	o := AttachOptions{}
	if opts != nil {
		o = *opts
	}
	fail := func(err error) (*Device, error) { return nil, &Error{Op: "attach", Path: f.Name(), Err: err} }
	if err := checkBlockSize(o.BlockSize); err != nil {
		return fail(err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fail(err)
	}
	var d *Device
	var berr error
	if err := rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if berr = unix.Fstat(int(fd), &st); berr == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			berr = errors.New("not a regular file (a block device needs no loop device)")
		}
		var fl int
		if berr == nil {
			fl, berr = unix.FcntlInt(fd, unix.F_GETFL, 0)
		}
		if berr == nil {
			d, berr = bind(ctx, int(fd), f.Name(), o.ReadOnly || fl&unix.O_ACCMODE == unix.O_RDONLY, &o)
		}
	}); err != nil {
		return fail(err)
	}
	if berr != nil {
		return fail(berr)
	}
	d.File = f.Name()
	return d, nil
}

func checkBlockSize(n int) error {
	if n != 0 && (n < 512 || n > os.Getpagesize() || n&(n-1) != 0) {
		return fmt.Errorf("block size %d is not a power of two from 512 to %d", n, os.Getpagesize())
	}
	return nil
}

// openBacking opens the file to attach, which must be a regular file: a
// FIFO would block, a device needs no loop.
func openBacking(file string, readOnly bool) (fd int, ro bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return -1, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, false, errors.New("not a regular file (a block device needs no loop device)")
	}
	// O_NONBLOCK: should the file be swapped for a FIFO since the stat,
	// the open does not wait for a writer; fstat then refuses it.
	flags := unix.O_EXCL | unix.O_CLOEXEC | unix.O_NONBLOCK
	err = unix.EROFS
	if !readOnly {
		fd, err = unix.Open(file, flags|unix.O_RDWR, 0)
	}
	if err == unix.EROFS || err == unix.EACCES {
		readOnly = true
		fd, err = unix.Open(file, flags|unix.O_RDONLY, 0)
	}
	if err != nil {
		return -1, false, err
	}
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = errors.New("not a regular file")
		}
		return -1, false, err
	}
	return fd, readOnly, nil
}

// bind binds the open file to a free loop device, retrying when another
// process takes it first.
func bind(ctx context.Context, fileFD int, file string, readOnly bool, o *AttachOptions) (*Device, error) {
	info := unix.LoopInfo64{}
	copy(info.File_name[:len(info.File_name)-1], file)
	if !o.NoAutoclear {
		info.Flags |= unix.LO_FLAGS_AUTOCLEAR
	}
	legacy := legacyOnly
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if try >= maxTries {
			return nil, fmt.Errorf("%w: every free loop device was taken by another process first, %d times", ErrNoFreeDevice, maxTries)
		}
		n, err := freeDevice()
		if err != nil {
			return nil, err
		}
		path := "/dev/loop" + strconv.Itoa(n)
		mode := unix.O_RDWR
		if readOnly {
			mode = unix.O_RDONLY
		}
		dev, err := unix.Open(path, mode|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		if !legacy {
			err = configure(dev, fileFD, readOnly, info, o.BlockSize)
			if err == unix.EINVAL || err == unix.ENOTTY {
				legacy = true // before Linux 5.8: no LOOP_CONFIGURE
			}
		}
		if legacy {
			err = setFD(dev, fileFD, info, o.BlockSize)
		}
		if err == unix.EBUSY {
			unix.Close(dev)
			continue
		}
		if err == nil && !o.NoAutoclear {
			err = checkAutoclear(dev)
		}
		if err != nil {
			unix.Close(dev)
			return nil, fmt.Errorf("binding %s: %w", path, err)
		}
		return &Device{Path: path, Number: n, Major: loopMajor, Minor: uint32(n), ReadOnly: readOnly, dev: os.NewFile(uintptr(dev), path)}, nil
	}
}

// freeDevice asks loop-control for a free device (creating one if none
// is), or on kernels without it looks for one unbound, as cryptsetup does.
func freeDevice() (int, error) {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return scanFree()
	}
	if err != nil {
		return 0, fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer unix.Close(ctl)
	n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
	if err != nil {
		return 0, fmt.Errorf("%w: LOOP_CTL_GET_FREE: %v", ErrNoFreeDevice, err)
	}
	return n, nil
}

func scanFree() (int, error) {
	for n := range 256 {
		fd, err := unix.Open("/dev/loop"+strconv.Itoa(n), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if n == 0 {
				return 0, fmt.Errorf("%w: no /dev/loop-control and no /dev/loop0", ErrUnsupported)
			}
			break
		}
		_, err = unix.IoctlLoopGetStatus64(fd)
		unix.Close(fd)
		if err == unix.ENXIO {
			return n, nil
		}
	}
	return 0, ErrNoFreeDevice
}

func configure(dev, fileFD int, readOnly bool, info unix.LoopInfo64, blockSize int) error {
	cfg := unix.LoopConfig{Fd: uint32(fileFD), Info: info}
	if readOnly {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	if blockSize > 512 {
		cfg.Size = uint32(blockSize)
	}
	return unix.IoctlLoopConfigure(dev, &cfg)
}

// setFD is the binding of kernels before LOOP_CONFIGURE; the file's open
// mode makes the device read-only.
func setFD(dev, fileFD int, info unix.LoopInfo64, blockSize int) error {
	if err := unix.IoctlSetInt(dev, unix.LOOP_SET_FD, fileFD); err != nil {
		return err
	}
	if blockSize > 512 {
		if err := unix.IoctlSetInt(dev, unix.LOOP_SET_BLOCK_SIZE, blockSize); err != nil {
			unix.IoctlSetInt(dev, unix.LOOP_CLR_FD, 0)
			return fmt.Errorf("LOOP_SET_BLOCK_SIZE %d: %w", blockSize, err)
		}
	}
	if err := unix.IoctlLoopSetStatus64(dev, &info); err != nil {
		unix.IoctlSetInt(dev, unix.LOOP_CLR_FD, 0)
		return fmt.Errorf("LOOP_SET_STATUS64: %w", err)
	}
	return nil
}

// checkAutoclear makes sure the kernel kept the autoclear flag (else the
// device would stay attached forever) and detaches otherwise.
func checkAutoclear(dev int) error {
	st, err := unix.IoctlLoopGetStatus64(dev)
	if err == nil && st.Flags&unix.LO_FLAGS_AUTOCLEAR != 0 {
		return nil
	}
	unix.IoctlSetInt(dev, unix.LOOP_CLR_FD, 0)
	if err != nil {
		return fmt.Errorf("LOOP_GET_STATUS64: %w", err)
	}
	return errors.New("the kernel did not keep the autoclear flag")
}

// Detach detaches the device's file (LOOP_CLR_FD) and closes it. A device
// still held by others (a device-mapper table) is detached when they
// release it.
func (d *Device) Detach() error {
	if d == nil || d.dev == nil {
		return nil
	}
	err := clearFD(d.dev)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &Error{Op: "detach", Path: d.Path, Err: err}
	}
	return nil
}

func clearFD(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlSetInt(int(fd), unix.LOOP_CLR_FD, 0) }); err != nil {
		return err
	}
	return ierr
}

// Detach detaches the loop device at path (LOOP_CLR_FD); one held by
// others is detached when they release it.
func Detach(path string) error {
	if _, err := BackingFile(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return &Error{Op: "detach", Path: path, Err: err}
	}
	defer f.Close()
	if err := clearFD(f); err != nil {
		return &Error{Op: "detach", Path: path, Err: err}
	}
	return nil
}

// BackingFile returns the path of the file the loop device at path reads
// (/sys/block/loopN/loop/backing_file, else LOOP_GET_STATUS64's first 63
// bytes), or "" when the device has none attached. A path that is not a
// loop device is ErrNotLoop.
func BackingFile(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", &Error{Op: "query", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK || unix.Major(uint64(st.Rdev)) != loopMajor {
		return "", &Error{Op: "query", Path: path, Err: ErrNotLoop}
	}
	return backingFile(unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)), path)
}

func backingFile(major, minor uint32, path string) (string, error) {
	sys := fmt.Sprintf("/sys/dev/block/%d:%d/loop/backing_file", major, minor)
	if b, err := os.ReadFile(sys); err == nil {
		return strings.TrimSuffix(string(b), "\n"), nil
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &Error{Op: "query", Path: path, Err: err}
	}
	defer unix.Close(fd)
	info, err := unix.IoctlLoopGetStatus64(fd)
	if err == unix.ENXIO {
		return "", nil // unbound
	}
	if err != nil {
		return "", &Error{Op: "query", Path: path, Err: err}
	}
	return string(info.File_name[:clen(info.File_name[:])]), nil
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// Find returns the loop devices (/dev/loopN) the file is attached to, as
// /sys/block tells (by the file's absolute path, links resolved).
func Find(file string) ([]string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	entries, err := os.ReadDir("/sys/block")
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err == nil && strings.TrimSuffix(string(b), "\n") == abs {
			found = append(found, "/dev/"+e.Name())
		}
	}
	return found, nil
}
