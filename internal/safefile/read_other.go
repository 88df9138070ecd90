//go:build !linux

package safefile

import (
	"context"
	"io"
	"io/fs"
	"os"
)

// readSmall opens and reads path on a goroutine, left behind if ctx ends
// first: without Linux's poll(2) semantics for a FIFO nobody has written
// to, the open (or a read) may wait for a writer, and only giving up on
// the goroutine keeps the wait interruptible.
func readSmall(ctx context.Context, path string, limit int) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := openAndRead(path, limit)
		done <- result{b, err}
	}()
	select {
	case <-ctx.Done():
		return nil, &fs.PathError{Op: "read", Path: path, Err: ctx.Err()}
	case r := <-done:
		return r.b, r.err
	}
}

func openAndRead(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkType(path, info.Mode()); err != nil {
		return nil, err // it changed since the Stat
	}
	if info.Mode().IsRegular() && info.Size() > int64(limit) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge{limit}}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge{limit}}
	}
	return b, nil
}
