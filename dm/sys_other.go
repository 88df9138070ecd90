//go:build !linux

package dm

import (
	"context"
	"syscall"
	"time"
)

// enokeyErrno stands for ENOKEY, which the kernel returns only on Linux.
const enokeyErrno = syscall.Errno(126)

type controlFile struct{}

func openControl() (*controlFile, error) {
	return nil, &Error{Op: opOpen, Err: &explained{"device-mapper needs Linux", ErrUnsupported}}
}

func (*controlFile) ioctl(command, []byte) error { return ErrUnsupported }
func (*controlFile) close() error                { return nil }

func makeNode(string, uint32, uint32) error   { return ErrUnsupported }
func removeNode(string, uint32, uint32) error { return ErrUnsupported }
func udevRunning() bool                       { return false }

type udevCookie struct{ base uint16 }

func newUdevCookie() (*udevCookie, error)                    { return nil, ErrUnsupported }
func (*udevCookie) wait(context.Context, time.Duration) bool { return false }
func (*udevCookie) destroy()                                 {}

type kernelLog struct{}

func markKernelLog() *kernelLog         { return nil }
func (*kernelLog) reason(string) string { return "" }
func (*kernelLog) close()               {}
