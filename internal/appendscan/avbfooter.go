package appendscan

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/veritytree/veritytree/internal/safefile"
)

// AVBFooter describes the AVB footer at the end of an image, as far as
// Format needs to know one: only to refuse appending a tree after it.
type AVBFooter struct {
	OriginalSize uint64
	// Provisional: the footer and vbmeta an interrupted add_hashtree_footer
	// leaves, not a finished image's.
	Provisional bool
}

// FindAVBFooter returns the AVB footer at the end of r (size bytes), or nil
// if there is none: the footer magic, version 1, a vbmeta blob (its magic)
// where the footer says, inside the image and past the original image.
func FindAVBFooter(r io.ReaderAt, size uint64) *AVBFooter {
	const footerSize, headerSize = 64, 256
	if size < footerSize+headerSize {
		return nil
	}
	b := make([]byte, footerSize)
	if _, err := r.ReadAt(b, int64(size-footerSize)); err != nil || string(b[:4]) != "AVBf" {
		return nil
	}
	be := binary.BigEndian
	orig, off, n := be.Uint64(b[12:]), be.Uint64(b[20:]), be.Uint64(b[28:])
	end := size - footerSize
	if be.Uint32(b[4:]) != 1 || n < headerSize || off > end || n > end-off || orig > off {
		return nil
	}
	vb := make([]byte, min(n, 4096))
	if _, err := r.ReadAt(vb, int64(off)); err != nil || string(vb[:4]) != "AVB0" {
		return nil
	}
	return &AVBFooter{OriginalSize: orig, Provisional: bytes.Contains(vb, []byte(safefile.ProvisionalAVBMarker))}
}
