package avb

import (
	"context"
	"errors"
	"github.com/veritytree/veritytree/internal/safefile"
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
		if size == 0 {
			return nil, inputErr("", "the file is empty: no AVB footer, no vbmeta blob")
		}
		if img.VBMeta, err = ReadVBMeta(r, 0, uint64(size)); err != nil {
			if errors.Is(err, ErrMalformed) && !hasVBMetaMagic(r) {
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
// vbmeta image) and parses its AVB metadata; see ParseImage. The file is
// locked shared while it is read: an image another process is writing is
// a KindRefused error matching verity.ErrLocked.
func ReadImage(path string) (*Image, error) {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
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

// maxKernelCmdline bounds the command line CalculateKernelCmdline puts
// together (a kernel takes a few KiB; chained images could repeat theirs
// without end).
const maxKernelCmdline = MaxVBMetaSize

// CalculateKernelCmdline returns the kernel command line the image's
// descriptors give, as `avbtool calculate_kernel_cmdline` prints it: the
// image's snippets and those of the images of the partitions it chains to
// (PARTITION + the image's extension, beside it). The descriptors are
// walked one at a time; the line is refused past 16 MiB, and the walk ends
// with ctx.
func CalculateKernelCmdline(ctx context.Context, path string, hashtreeDisabled bool) (string, error) {
	img, err := ReadImage(path)
	if err != nil {
		return "", err
	}
	line := &cmdlineBuilder{disabled: hashtreeDisabled}
	dir, ext := filepath.Dir(path), filepath.Ext(path)
	for d := range img.VBMeta.Descriptors() {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		switch d := d.(type) {
		case *ChainPartitionDescriptor:
			if strings.ContainsAny(d.PartitionName, "/\x00") {
				return "", inputErr("", "%s: chained partition name %q is not a file name", path, d.PartitionName)
			}
			ch, err := ReadImage(filepath.Join(dir, d.PartitionName+ext))
			if err != nil {
				return "", err
			}
			for cd := range ch.VBMeta.Descriptors() {
				line.add(cd)
			}
		default:
			line.add(d)
		}
		if line.b.Len() > maxKernelCmdline {
			return "", inputErr("", "%s: the kernel command line its descriptors give is longer than %d bytes", path, maxKernelCmdline)
		}
	}
	return line.b.String(), nil
}

// cmdlineBuilder joins the kernel command-line snippets that apply, as
// avbtool's calculate_kernel_cmdline does.
type cmdlineBuilder struct {
	b        strings.Builder
	disabled bool
	any      bool
}

func (c *cmdlineBuilder) add(d Descriptor) {
	k, ok := d.(*KernelCmdlineDescriptor)
	if !ok || !k.applies(c.disabled) {
		return
	}
	if c.any {
		c.b.WriteByte(' ')
	}
	c.any = true
	c.b.WriteString(k.Cmdline)
}

// EraseFooter removes the AVB metadata from a partition image, as `avbtool
// erase_footer` does: the file is cut to the original image size, or,
// with keepHashtree, just past the tree and its parity. Unlike avbtool, it
// refuses (KindRefused, ErrFooterMismatch, nothing cut) to cut bytes that
// the descriptors of the image's partition say are image data: the
// footer's original size is not signed, and may be wrong.
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
	if err := lockImage(f, path); err != nil {
		return err
	}
	var out sink = &rawSink{f: f}
	var sw *sparseWriter
	rec := safefile.ReadResumeRecord(f, fi.Size())
	var img *Image
	var data io.ReaderAt = f
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
		src, err := verity.OpenSource(path, nil)
		if err != nil {
			return err
		}
		defer src.Close()
		data = src
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
		ht := img.VBMeta.FirstHashtree()
		if ht == nil {
			return inputErr("", "%s: asked to keep the hashtree but there is no hashtree descriptor", path)
		}
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
	what := "erasing the footer (to the original image size it gives)"
	if keepHashtree {
		what = "erasing the footer but the hashtree (past the tree and parity)"
	}
	if err := img.VBMeta.Partition().checkCut(data, size, what); err != nil {
		return prefixErr(path, err)
	}
	if sw != nil && !keepHashtree {
		// The header's counts go first, the chunks after them next: a
		// record past them makes what is left in between, if the run is
		// killed there, an interrupted run's, which the next one drops.
		if _, err := writeResumeRecord(f, uint64(sw.fileSize), size, true); err != nil {
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
