// Package dm drives Linux's device-mapper through the ioctls of
// /dev/mapper/control, as libdevmapper does, in Go: no dmsetup, no cgo.
//
// A Control is the open control device. Its methods are dm-ioctl's
// commands: Create a device (name, UUID), Load a table into it (targets:
// start, length, type and parameters; read-only or not), Resume it to make
// the table live (and its /dev/mapper/NAME node appear), Suspend it,
// query its Info, its Status and its Table (the text the kernel gives, per
// target), Remove it (at once, or deferred until its last close, and
// CancelDeferredRemove), List the devices and the Targets the kernel has,
// and send a target a Message. Each call is one ioctl (a few when the
// kernel's answer needs a larger buffer, which grows boundedly).
//
// Nodes: with udev running (/run/udev/control), Resume and Remove wait
// for it, boundedly, through a udev cookie (a System V semaphore that
// udev's device-mapper rules release, as with libdevmapper), then make or
// remove /dev/mapper/NAME themselves if udev did not; without udev they
// make and remove the node themselves, and flag the event so that udev's
// rules would leave the node alone.
//
// Errors are *Error values naming the command and the device, in words
// ("already exists", "in use", "needs root"), with the kernel's own reason
// when it logged one (an invalid table); they wrap the errno for
// errors.Is, and match ErrNoDevice, ErrBusy, ErrExist, ErrNoKey and
// ErrUnsupported.
//
// On other systems than Linux, Open fails with ErrUnsupported.
package dm
