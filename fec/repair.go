package fec

import (
	"fmt"
	"io"
)

// Round returns the round and the position in its codewords of message
// block b: b = j*rounds + round. A block shares its codewords with the
// other blocks of its round only.
func (p Params) Round(b uint64) (round uint64, j int) {
	r := p.Rounds()
	return b % r, int(b / r)
}

// readFull reads len(b) bytes at off; a short read is an error.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("at byte %d: %w", off+int64(n), err)
}
