//go:build !linux

package loop

import (
	"context"
	"os"
)

var errNotLinux = &notLinux{}

type notLinux struct{}

func (*notLinux) Error() string        { return "loop devices need Linux" }
func (*notLinux) Is(target error) bool { return target == ErrUnsupported }

// Attach fails: loop devices need Linux.
func Attach(_ context.Context, file string, _ *AttachOptions) (*Device, error) {
	return nil, &Error{Op: "attach", Path: file, Err: errNotLinux}
}

// AttachFile fails: loop devices need Linux.
func AttachFile(_ context.Context, f *os.File, _ *AttachOptions) (*Device, error) {
	return nil, &Error{Op: "attach", Path: f.Name(), Err: errNotLinux}
}

// Detach fails: loop devices need Linux.
func (d *Device) Detach() error { return &Error{Op: "detach", Path: d.Path, Err: errNotLinux} }

// Detach fails: loop devices need Linux.
func Detach(path string) error { return &Error{Op: "detach", Path: path, Err: errNotLinux} }

// BackingFile fails: loop devices need Linux.
func BackingFile(path string) (string, error) {
	return "", &Error{Op: "query", Path: path, Err: errNotLinux}
}

// Find finds nothing: loop devices need Linux.
func Find(string) ([]string, error) { return nil, nil }
