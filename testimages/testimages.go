// Package testimages makes the images that tests, examples and the README's
// sample run use, so that no image blob is committed.
package testimages

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// Random writes size deterministic pseudo-random bytes, the same for the
// same seed, to w.
func Random(w io.Writer, size int64, seed uint64) error {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	_, err := io.CopyN(w, rand.NewChaCha8(key), size)
	return err
}

// Sample writes an image that looks like a small file system: runs of
// random data with zero-filled stretches between them, size bytes in all.
func Sample(w io.Writer, size int64, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var key [32]byte
	key[0] = byte(seed)
	src := rand.NewChaCha8(key)
	zeros := make([]byte, 64<<10)
	for size > 0 {
		n := min(size, int64(1+rng.IntN(256))*4096)
		if rng.IntN(4) == 0 {
			for left := n; left > 0; {
				k := min(left, int64(len(zeros)))
				if _, err := bw.Write(zeros[:k]); err != nil {
					return err
				}
				left -= k
			}
		} else if _, err := io.CopyN(bw, src, n); err != nil {
			return err
		}
		size -= n
	}
	return bw.Flush()
}

// FromSpec writes the image a known-answer vector describes:
// "zero:N" (N zero bytes), "fill:XX:N" (N bytes of hex XX) or
// "blockbyte:B:N" (N blocks of B bytes, block i filled with byte i mod 256).
func FromSpec(w io.Writer, spec string) error {
	f := strings.Split(spec, ":")
	num := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	bw := bufio.NewWriterSize(w, 1<<20)
	fill := func(b byte, n int64) error {
		buf := make([]byte, min(n, 1<<20))
		for i := range buf {
			buf[i] = b
		}
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := bw.Write(buf[:k]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
	var err error
	switch {
	case len(f) == 2 && f[0] == "zero":
		var n int64
		if n, err = num(f[1]); err == nil {
			err = fill(0, n)
		}
	case len(f) == 3 && f[0] == "fill":
		var b uint64
		var n int64
		if b, err = strconv.ParseUint(f[1], 16, 8); err == nil {
			if n, err = num(f[2]); err == nil {
				err = fill(byte(b), n)
			}
		}
	case len(f) == 3 && f[0] == "blockbyte":
		var bs, n int64
		if bs, err = num(f[1]); err == nil {
			if n, err = num(f[2]); err == nil {
				for i := int64(0); i < n && err == nil; i++ {
					err = fill(byte(i), bs)
				}
			}
		}
	default:
		return fmt.Errorf("testimages: unknown image spec %q", spec)
	}
	if err != nil {
		return fmt.Errorf("testimages: spec %q: %w", spec, err)
	}
	return bw.Flush()
}

// WriteFile creates path with the bytes write produces.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
