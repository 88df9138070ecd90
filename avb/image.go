package avb

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/verity"
)

// Image is what the AVB metadata of an image says: a partition image with
// a footer, or a vbmeta image (Footer nil).
type Image struct {
	// Footer is nil for a vbmeta image (a blob at offset 0).
	Footer *Footer
	VBMeta *VBMeta
	// Size is the image's size (expanded, for an Android sparse image).
	Size uint64
	// Sparse: the file is an Android sparse image.
	Sparse bool
}

// ParseImage reads the AVB metadata of an image of size bytes: the footer
// at its end if there is one, and the vbmeta blob it points to (or, without
// a footer, the vbmeta blob at offset 0). Everything is checked against the
// size before it is read.
func ParseImage(r io.ReaderAt, size int64) (*Image, error) {
	img := &Image{Size: uint64(size)}
	f, err := ReadFooter(r, size)
	switch {
	case err == nil:
		img.Footer = f
		if img.VBMeta, err = ReadVBMeta(r, int64(f.VBMetaOffset), f.VBMetaSize); err != nil {
			return nil, err
		}
		return img, nil
	case errors.Is(err, ErrNoFooter):
		if img.VBMeta, err = ReadVBMeta(r, 0, uint64(size)); err != nil {
			if errors.Is(err, ErrMalformed) && size >= 4 && !hasVBMetaMagic(r) {
				return nil, inputErr("", "no AVB footer and no vbmeta blob at the start")
			}
			return nil, err
		}
		return img, nil
	}
	return nil, err
}

func hasVBMetaMagic(r io.ReaderAt) bool {
	b := make([]byte, 4)
	_, err := r.ReadAt(b, 0)
	return err == nil && string(b) == string(vbmetaMagic)
}

// ReadImage opens path (a partition image, possibly Android sparse, or a
// vbmeta image) and parses its AVB metadata; see ParseImage.
func ReadImage(path string) (*Image, error) {
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	img, err := ParseImage(src, src.Size())
	if err != nil {
		return nil, prefixErr(path, err)
	}
	img.Sparse = src.Format() == "android-sparse"
	return img, nil
}

// prefixErr names the file in a *verity.Error's message.
func prefixErr(path string, err error) error {
	var ve *verity.Error
	if errors.As(err, &ve) {
		c := *ve
		c.Err = wrapPath{path, ve.Err}
		return &c
	}
	return err
}

type wrapPath struct {
	path string
	err  error
}

func (w wrapPath) Error() string { return w.path + ": " + w.err.Error() }
func (w wrapPath) Unwrap() error { return w.err }

// CalculateKernelCmdline returns the kernel command line the image's
// descriptors give, as `avbtool calculate_kernel_cmdline` prints it: the
// image's snippets and those of the images of the partitions it chains to
// (PARTITION + the image's extension, beside it).
func CalculateKernelCmdline(path string, hashtreeDisabled bool) (string, error) {
	img, err := ReadImage(path)
	if err != nil {
		return "", err
	}
	var ds []Descriptor
	dir, ext := filepath.Dir(path), filepath.Ext(path)
	for _, d := range img.VBMeta.Descriptors {
		switch d := d.(type) {
		case *ChainPartitionDescriptor:
			if strings.ContainsAny(d.PartitionName, "/\x00") {
				return "", inputErr("", "%s: chained partition name %q is not a file name", path, d.PartitionName)
			}
			ch, err := ReadImage(filepath.Join(dir, d.PartitionName+ext))
			if err != nil {
				return "", err
			}
			for _, cd := range ch.VBMeta.Descriptors {
				if _, ok := cd.(*KernelCmdlineDescriptor); ok {
					ds = append(ds, cd)
				}
			}
		case *KernelCmdlineDescriptor:
			ds = append(ds, d)
		}
	}
	return KernelCmdline(ds, hashtreeDisabled), nil
}

// EraseFooter removes the AVB metadata from a partition image, as `avbtool
// erase_footer` does: the file is cut to the original image size, or,
// with keepHashtree, just past the tree and its parity.
func EraseFooter(path string, keepHashtree bool) error {
	// Checked before the open too: opening a device or a FIFO is not
	// harmless.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return inputErr("", "%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return inputErr("", "%s: %v", path, unwrapPathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ioErr("%s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return inputErr("", "%s is not a regular file", path)
	}
	if err := verity.LockImage(f, path); err != nil {
		return err
	}
	var out sink = &rawSink{f: f}
	var sw *sparseWriter
	rec := verity.ReadResumeRecord(f, fi.Size())
	var img *Image
	if isSparse(f) {
		if sw, err = openSparseWriter(f); err != nil {
			return prefixErr(path, err)
		}
		out = sw
		if rec != nil && !keepHashtree {
			// An interrupted AddHashtreeFooter: back to the image it started
			// from.
			return cutAndSync(f, sw, rec.OriginalSize)
		}
		if img, err = ReadImage(path); err != nil {
			return err
		}
	} else if rec != nil && !rec.Sparse && !keepHashtree {
		// An interrupted veritygen --append: back to the image.
		return cutAndSync(f, out, rec.OriginalSize)
	} else if img, err = ParseImage(f, fi.Size()); err != nil {
		return prefixErr(path, err)
	}
	if img.Footer == nil {
		return inputErr("", "%s: %w", path, ErrNoFooter)
	}
	size := img.Footer.OriginalImageSize
	if keepHashtree {
		hts := img.VBMeta.HashtreeDescriptors()
		if len(hts) == 0 {
			return inputErr("", "%s: asked to keep the hashtree but there is no hashtree descriptor", path)
		}
		ht := hts[0]
		size = ht.TreeOffset + ht.TreeSize
		if ht.TreeOffset > img.Footer.VBMetaOffset || ht.TreeSize > img.Footer.VBMetaOffset-ht.TreeOffset {
			return malformed("%s: the tree at %d, %d bytes, overlaps the vbmeta at %d", path, ht.TreeOffset, ht.TreeSize, img.Footer.VBMetaOffset)
		}
		if ht.FECOffset > 0 {
			if ht.FECOffset > img.Footer.VBMetaOffset || ht.FECSize > img.Footer.VBMetaOffset-ht.FECOffset {
				return malformed("%s: the parity at %d, %d bytes, overlaps the vbmeta at %d", path, ht.FECOffset, ht.FECSize, img.Footer.VBMetaOffset)
			}
			size = max(size, ht.FECOffset+ht.FECSize)
		}
	}
	if keepHashtree && size == 0 {
		return inputErr("", "%s: asked to keep the hashtree, but its descriptor says there is none", path)
	}
	if sw != nil && !keepHashtree {
		// The header's counts go first, the chunks after them next: a
		// record past them makes what is left in between, if the run is
		// killed there, an interrupted run's, which the next one drops.
		if _, err := verity.WriteResumeRecord(f, uint64(sw.fileSize), size, true); err != nil {
			return err
		}
	}
	return cutAndSync(f, out, size)
}

// cutAndSync cuts the image to size and syncs it.
func cutAndSync(f *os.File, out sink, size uint64) error {
	if err := out.truncate(size); err != nil {
		return prefixErr(f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return ioErr("%s: %v", f.Name(), err)
	}
	return nil
}

var sparseMagic = []byte{0x3a, 0xff, 0x26, 0xed}

func isSparse(r io.ReaderAt) bool {
	b := make([]byte, 4)
	_, err := r.ReadAt(b, 0)
	return err == nil && string(b) == string(sparseMagic)
}
