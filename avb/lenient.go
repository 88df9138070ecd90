package avb

import (
	"errors"
	"io"
)

// ParseImageLenient reads the AVB metadata of an image of size bytes as
// avbtool's _parse_image and _load_vbmeta_blob read it, for the commands
// that only print or move bytes (`avbtool info_image`, `resize_image`):
// where ParseImage refuses a footer or a vbmeta header with damaged fields
// (none of the footer's is signed), avbtool reads what they point to. Of
// the footer only the magic counts; the vbmeta blob is its header's
// blocks, cut where the image ends; its hash, signature and keys are
// taken as Python slices them (cut at the blob's end, empty past it); the
// descriptors are read where the header places them, in the image, cut
// where it ends. What avbtool dies of (a header past the image's end,
// descriptors that do not parse) is ParseImage's error. Nothing decided
// from an image read this way is a verification: VerifyVBMeta, VerifySlot
// and veritycheck keep libavb's checks (ParseImage).
//
// Memory stays bounded whatever the fields say: at most the bytes the
// image holds are read, the blob and the descriptors MaxVBMetaSize each.
func ParseImageLenient(r io.ReaderAt, size int64) (*Image, error) {
	img, strictErr := ParseImage(r, size)
	if strictErr == nil || !errors.Is(strictErr, ErrMalformed) || size < HeaderSize {
		return img, strictErr
	}
	img = &Image{Size: uint64(size)}
	var off uint64
	if size >= FooterSize {
		b := make([]byte, FooterSize)
		if _, err := r.ReadAt(b, size-FooterSize); err != nil {
			return nil, strictErr
		}
		if f, err := ParseFooter(b); err == nil {
			img.Footer, off = f, f.VBMetaOffset
		}
	}
	if off > uint64(size)-HeaderSize {
		return nil, strictErr // avbtool: a traceback (a short header)
	}
	hb := make([]byte, HeaderSize)
	if _, err := r.ReadAt(hb, int64(off)); err != nil {
		return nil, strictErr
	}
	h, err := ParseHeader(hb)
	if err != nil {
		return nil, inputErr("", "%w", ErrNotAVB) // avbtool's words
	}
	alg, err := AlgorithmByType(h.AlgorithmType)
	if err != nil {
		return nil, strictErr
	}
	avail := uint64(size) - off
	authEnd := satAdd(HeaderSize, h.AuthenticationBlockSize)
	raw, err := readCut(r, off, min(satAdd(authEnd, h.AuxiliaryBlockSize), avail))
	if err != nil {
		return nil, strictErr
	}
	descOff := satAdd(authEnd, h.DescriptorsOffset)
	var descs []byte
	if descOff < avail {
		if descs, err = readCut(r, off+descOff, min(h.DescriptorsSize, avail-descOff)); err != nil {
			return nil, strictErr
		}
	}
	auth := pySlice(raw, HeaderSize, h.AuthenticationBlockSize)
	v := &VBMeta{Header: h, Algorithm: alg, Raw: raw,
		Hash:      pySlice(auth, h.HashOffset, h.HashSize),
		Signature: pySlice(auth, h.SignatureOffset, h.SignatureSize),
		PublicKey: pySlice(raw, satAdd(authEnd, h.PublicKeyOffset), h.PublicKeySize),
		descs:     descs,
	}
	if h.PublicKeyMetadataSize > 0 {
		v.PublicKeyMetadata = pySlice(raw, satAdd(authEnd, h.PublicKeyMetadataOffset), h.PublicKeyMetadataSize)
	}
	if err := walkDescriptors(v.descs, v.checkDescriptor); err != nil {
		return nil, strictErr // avbtool: a traceback, or a LookupError's
	}
	img.VBMeta = v
	return img, nil
}

// ReadImageLenient is ReadImage with ParseImageLenient.
func ReadImageLenient(path string) (*Image, error) {
	src, err := openImageSource(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	img, err := ParseImageLenient(src, src.Size())
	if err != nil {
		return nil, prefixErr(path, err)
	}
	img.Sparse = src.Format() == "android-sparse"
	return img, nil
}

// readCut reads n bytes at off (n no more than the image holds), refusing
// more than MaxVBMetaSize.
func readCut(r io.ReaderAt, off, n uint64) ([]byte, error) {
	if n > MaxVBMetaSize {
		return nil, malformed("%d bytes of vbmeta at %d, more than %d", n, off, MaxVBMetaSize)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, int64(off)); err != nil {
		return nil, ioErr("reading the vbmeta at %d: %w", off, err)
	}
	return b, nil
}

// pySlice is Python's b[off:off+n]: cut at b's end, empty past it.
func pySlice(b []byte, off, n uint64) []byte {
	l := uint64(len(b))
	from := min(off, l)
	return b[from:min(satAdd(off, n), l):min(satAdd(off, n), l)]
}
