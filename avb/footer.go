package avb

import (
	"bytes"
	"encoding/binary"
	"io"
)

// FooterSize is the size of the AVB footer, the last bytes of a partition.
const FooterSize = 64

var footerMagic = []byte("AVBf")

// Footer is AvbFooter: where the vbmeta blob of a partition image is, and
// how large the image was before the tree, the parity and the vbmeta were
// appended.
type Footer struct {
	VersionMajor, VersionMinor uint32
	OriginalImageSize          uint64
	VBMetaOffset, VBMetaSize   uint64
}

// NewFooter returns a footer of the version avbtool writes (1.0).
func NewFooter(originalSize, vbmetaOffset, vbmetaSize uint64) *Footer {
	return &Footer{VersionMajor: 1, VersionMinor: 0, OriginalImageSize: originalSize, VBMetaOffset: vbmetaOffset, VBMetaSize: vbmetaSize}
}

// Encode returns the 64 bytes of the footer.
func (f *Footer) Encode() []byte {
	b := make([]byte, FooterSize)
	copy(b, footerMagic)
	binary.BigEndian.PutUint32(b[4:], f.VersionMajor)
	binary.BigEndian.PutUint32(b[8:], f.VersionMinor)
	binary.BigEndian.PutUint64(b[12:], f.OriginalImageSize)
	binary.BigEndian.PutUint64(b[20:], f.VBMetaOffset)
	binary.BigEndian.PutUint64(b[28:], f.VBMetaSize)
	return b
}

// ParseFooter decodes a footer: b must be the last 64 bytes of the image.
// Without the magic the error matches ErrNoFooter. The offsets are not
// checked against anything: see Footer.Check.
func ParseFooter(b []byte) (*Footer, error) {
	if len(b) != FooterSize || !bytes.Equal(b[:4], footerMagic) {
		return nil, inputErr("", "%w", ErrNoFooter)
	}
	return &Footer{
		VersionMajor:      binary.BigEndian.Uint32(b[4:]),
		VersionMinor:      binary.BigEndian.Uint32(b[8:]),
		OriginalImageSize: binary.BigEndian.Uint64(b[12:]),
		VBMetaOffset:      binary.BigEndian.Uint64(b[20:]),
		VBMetaSize:        binary.BigEndian.Uint64(b[28:]),
	}, nil
}

// Check says whether the footer fits an image of imageSize bytes: the
// vbmeta blob inside the image and before the footer, the original image
// no larger than where the vbmeta starts, and a major version this package
// reads. What the original size must be is CheckFooter's: only the
// vbmeta's descriptors say where the image data ends.
func (f *Footer) Check(imageSize uint64) error {
	if f.VersionMajor > 1 { // libavb's rule: 0.x and 1.x are read
		return malformed("AVB footer version %d.%d, only 1.x and older are known", f.VersionMajor, f.VersionMinor)
	}
	if imageSize < FooterSize {
		return malformed("image of %d bytes is too short for a footer", imageSize)
	}
	end := imageSize - FooterSize
	if f.VBMetaSize < HeaderSize || f.VBMetaSize > MaxVBMetaSize {
		return malformed("AVB footer: vbmeta size %d is not from %d to %d", f.VBMetaSize, HeaderSize, MaxVBMetaSize)
	}
	if f.VBMetaOffset > end || f.VBMetaSize > end-f.VBMetaOffset {
		return malformed("AVB footer: vbmeta at %d, %d bytes, goes past the footer at %d", f.VBMetaOffset, f.VBMetaSize, end)
	}
	if f.OriginalImageSize > f.VBMetaOffset {
		return malformed("AVB footer: original image size %d overlaps the vbmeta at %d", f.OriginalImageSize, f.VBMetaOffset)
	}
	return nil
}

// ReadFooter reads and checks the footer at the end of an image of size
// bytes.
func ReadFooter(r io.ReaderAt, size int64) (*Footer, error) {
	if size < FooterSize {
		return nil, inputErr("", "%w (image of %d bytes)", ErrNoFooter, size)
	}
	b := make([]byte, FooterSize)
	if _, err := r.ReadAt(b, size-FooterSize); err != nil {
		return nil, ioErr("reading the AVB footer: %w", err)
	}
	f, err := ParseFooter(b)
	if err != nil {
		return nil, err
	}
	if err := f.Check(uint64(size)); err != nil {
		return nil, err
	}
	return f, nil
}
