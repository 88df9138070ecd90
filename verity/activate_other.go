//go:build !linux

package verity

import (
	"context"
	"errors"
)

var errNeedsLinux = &Error{Kind: KindSystem, Err: errors.New("dm-verity devices need Linux's device-mapper")}

// Activate fails: dm-verity devices need Linux.
func Activate(context.Context, string, string, string, []byte, *ActivateOptions) (*Device, error) {
	return nil, errNeedsLinux
}

// Deactivate fails: dm-verity devices need Linux.
func Deactivate(context.Context, string, *DeactivateOptions) (*DeactivateResult, error) {
	return nil, errNeedsLinux
}

// Status fails: dm-verity devices need Linux.
func Status(context.Context, string) (*DeviceStatus, error) { return nil, errNeedsLinux }
