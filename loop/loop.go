// Package loop attaches regular files to Linux loop devices, as
// cryptsetup does for veritysetup open, in Go: no losetup, no cgo.
//
// Attach takes a free loop device (LOOP_CTL_GET_FREE) and binds the file
// to it with LOOP_CONFIGURE, or on kernels before 5.8 with LOOP_SET_FD and
// LOOP_SET_STATUS64, retrying boundedly when another process takes the
// same device first. The device is set to clear itself when its last user
// closes it (LO_FLAGS_AUTOCLEAR), so that a device-mapper table that holds
// it releases it when removed; the returned Device holds it open until
// Close. BackingFile and Find tell which file a loop device reads.
//
// On other systems than Linux, Attach fails with ErrUnsupported.
package loop

import (
	"errors"
	"fmt"
	"os"
)

// AttachOptions are Attach's options; the zero value attaches read-write
// with the kernel's default 512-byte blocks, cleared on last close.
type AttachOptions struct {
	// ReadOnly attaches the file read-only: the loop device cannot be
	// written through.
	ReadOnly bool
	// BlockSize is the device's logical block size, a power of two from
	// 512 to the page size; 0 means 512.
	BlockSize int
	// NoAutoclear keeps the device attached after its last close, until
	// Detach.
	NoAutoclear bool
}

// Device is an attached loop device, held open until Close.
type Device struct {
	// Path is the device's node, /dev/loopN.
	Path string
	// Number is N.
	Number int
	// Major and Minor are its device number.
	Major, Minor uint32
	// File is the file attached, as given.
	File string
	// ReadOnly: the device is read-only (asked for, or the file could be
	// opened only so).
	ReadOnly bool
	dev      *os.File
}

// Close releases the device: with autoclear, the kernel detaches the file
// when nothing else (a device-mapper table) holds the device.
func (d *Device) Close() error {
	if d == nil || d.dev == nil {
		return nil
	}
	err := d.dev.Close()
	d.dev = nil
	return err
}

// Sentinels for errors.Is.
var (
	// ErrUnsupported: no loop devices here (not Linux, or no loop
	// driver).
	ErrUnsupported = errors.New("loop devices not available")
	// ErrNotLoop: the path is not a loop device.
	ErrNotLoop = errors.New("not a loop device")
	// ErrNoFreeDevice: every loop device is taken.
	ErrNoFreeDevice = errors.New("no free loop device")
)

// Error is the error of this package's functions.
type Error struct {
	// Op is what failed: "attach", "detach", ...
	Op string
	// Path is the file or device concerned.
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("loop: %s %s: %v", e.Op, e.Path, e.Err) }
func (e *Error) Unwrap() error { return e.Err }
