package fec

import (
	"fmt"
	"io"
)

// Part is Size bytes of R from offset Off.
type Part struct {
	R         io.ReaderAt
	Off, Size int64
}

// concat is the io.ReaderAt of Concat.
type concat struct {
	parts []Part
	size  int64
}

// Concat returns an io.ReaderAt over the parts one after the other. In
// dm-verity the message is
//
//	Concat(Part{data, 0, dataBlocks*bs}, Part{hash, hashStartBlock*bs, (fecBlocks-dataBlocks)*bs})
//
// (one part when data and hash share a device, see MessageBlocks). Reads
// past the end return io.EOF; a part that ends early is io.ErrUnexpectedEOF.
// It is safe for concurrent use when the parts' readers are.
func Concat(parts ...Part) io.ReaderAt {
	c := &concat{}
	for _, p := range parts {
		if p.Size > 0 {
			c.parts = append(c.parts, p)
			c.size += p.Size
		}
	}
	return c
}

func (c *concat) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("fec: negative offset %d", off)
	}
	done := 0
	pos := int64(0) // start of the current part in the concatenation
	for _, p := range c.parts {
		if done == len(b) {
			break
		}
		end := pos + p.Size
		at := off + int64(done)
		if at >= end {
			pos = end
			continue
		}
		want := min(int64(len(b)-done), end-at)
		n, err := p.R.ReadAt(b[done:done+int(want)], p.Off+at-pos)
		done += n
		if int64(n) < want {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
		pos = end
	}
	if done < len(b) {
		return done, io.EOF
	}
	return done, nil
}
