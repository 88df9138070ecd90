//go:build !linux

package safefile

import (
	"errors"
	"fmt"
)

// unsupported is what this system cannot do (e.g. "reading the size of a
// block device"), in our words, matching errors.ErrUnsupported.
func unsupported(what string) error {
	return fmt.Errorf("%s: not supported on this system: %w", what, errors.ErrUnsupported)
}
