//go:build !unix

package safefile

import "io"

// writeThrough writes b at the current offset of a file written in place.
func (o *Output) writeThrough(b []byte) error {
	n, err := o.f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// openFIFOWriter refuses: FIFOs are Unix's.
func openFIFOWriter(path, role string) (*Output, error) {
	return nil, errorf(KindInput, "name a regular file", "%s %s is a FIFO: %w", role, path, unsupported("writing through a FIFO"))
}

// openOwnFD refuses: /dev/fd names are Unix's, and OwnFD finds none here.
func openOwnFD(path, role string, fd int) (*Output, error) {
	return nil, errorf(KindInput, "", "%s %s is file descriptor %d: %w", role, path, fd, unsupported("writing through a file descriptor"))
}
