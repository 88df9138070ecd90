package avb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/internal/safefile"

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
				if size < FooterSize {
					// (avbtool dies of a seek before its footer's start.)
					return nil, inputErr("", "%s", ErrNotAVB.Error())
				}
				return nil, inputErr("", "%w", ErrNotAVB)
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
	src, err := openImageSource(path)
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

// openImageSource opens an image to read its AVB metadata. A sparse image
// with bytes after its last chunk is refused, as avbtool refuses it (its
// footer is at the end of the expansion, which those bytes are not part
// of), unless they end in the record of an interrupted run of ours, which
// the verbs that write report themselves.
func openImageSource(path string) (*verity.Source, error) {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return nil, err
	}
	if n := src.Trailing(); n > 0 && !endsInResumeRecord(path) {
		src.Close()
		return nil, inputErr(fmt.Sprintf("cut them (truncate -s %d %s) if the image is otherwise sound, or make it again with img2simg", src.FileSize()-n, path),
			"%s is an Android sparse image with %d bytes after its last chunk", path, n)
	}
	return src, nil
}

// endsInResumeRecord reports whether the file at path ends in the record
// an interrupted run of ours leaves.
func endsInResumeRecord(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && safefile.ReadResumeRecord(f, fi.Size()) != nil
}

// prefixErr names the file in a *verity.Error's message, and in its Path.
func prefixErr(path string, err error) error {
	var ve *verity.Error
	if errors.As(err, &ve) {
		c := *ve
		c.Err, c.Path = wrapPath{path, ve.Err}, path
		return &c
	}
	return err
}

// prefixName names a file in a *verity.Error's message as what (e.g. "key
// PATH"), leaving its Path as it is.
func prefixName(what string, err error) error {
	var ve *verity.Error
	if errors.As(err, &ve) {
		c := *ve
		c.Err = wrapPath{what, ve.Err}
		return &c
	}
	return err
}

// keepPath gives e (a *verity.Error quoting cause) the Path of the
// *verity.Error in cause's chain, if any: it still names that file.
func keepPath(e, cause error) error {
	var ve, out *verity.Error
	if errors.As(cause, &ve) && ve.Path != "" && errors.As(e, &out) {
		out.Path = ve.Path
	}
	return e
}

// namesFile says whether err is about path and names it already: a
// *verity.Error whose Path it is, or the standard library's error about it.
func namesFile(err error, path string) bool {
	var ve *verity.Error
	if errors.As(err, &ve) && ve.Path == path {
		return true
	}
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == path
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
	f, fileSize, err := openLockedImage(path)
	if err != nil {
		return err
	}
	defer f.Close()
	e := &erasing{path: path, f: f, out: &rawSink{f: f}, data: f}
	defer e.close()
	rec, err := e.read(fileSize, keepHashtree)
	if err != nil {
		return err
	}
	if rec != nil {
		// An interrupted run (AddHashtreeFooter on a sparse image, or
		// veritygen --append): back to the image it started from.
		return cutAndSync(f, e.out, rec.OriginalSize)
	}
	size, err := erasedSize(e.img, path, keepHashtree)
	if err != nil {
		return err
	}
	what := "erasing the footer (to the original image size it gives)"
	if keepHashtree {
		what = "erasing the footer but the hashtree (past the tree and parity)"
	}
	if err := e.img.VBMeta.Partition().checkCut(e.data, size, what); err != nil {
		return prefixErr(path, err)
	}
	if e.sw != nil {
		// A cut the sparse image cannot take is refused before the record
		// below is written past its chunks (a refusal changes nothing).
		if _, err := e.sw.planCut(size); err != nil {
			return prefixErr(path, err)
		}
	}
	if e.sw != nil && !keepHashtree {
		// The header's counts go first, the chunks after them next: a
		// record past them makes what is left in between, if the run is
		// killed there, an interrupted run's, which the next one drops.
		if _, err := writeResumeRecord(f, uint64(e.sw.fileSize), size, "erase_footer"); err != nil {
			return err
		}
	}
	return cutAndSync(f, e.out, size)
}

// openLockedImage opens the regular file at path for writing, locks it and
// returns its size.
func openLockedImage(path string) (*os.File, int64, error) {
	// Checked before the open too: opening a device or a FIFO is not
	// harmless.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, 0, inputErr("", "%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, inputErr("", "%s: %v", path, unwrapPathErr(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, ioErr("%s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, inputErr("", "%s is not a regular file", path)
	}
	if err := lockImage(f, path); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// erasing is the image EraseFooter cuts, as it found it.
type erasing struct {
	path string
	f    *os.File
	// out cuts the image: the raw file, or sw.
	out sink
	sw  *sparseWriter // nil for a raw image
	img *Image
	// data is the image as expanded; src, if not nil, its expansion.
	data io.ReaderAt
	src  *verity.Source
}

func (e *erasing) close() {
	if e.src != nil {
		e.src.Close()
	}
}

// read reads the image's footer and vbmeta or, unless keepHashtree, the
// record of an interrupted run, which it returns.
func (e *erasing) read(fileSize int64, keepHashtree bool) (*safefile.ResumeRecord, error) {
	rec := safefile.ReadResumeRecord(e.f, fileSize)
	if !isSparse(e.f) {
		if rec != nil && !rec.Sparse && !keepHashtree {
			return rec, nil
		}
		img, err := ParseImage(e.f, fileSize)
		if err != nil {
			return nil, prefixErr(e.path, err)
		}
		e.img = img
		return nil, nil
	}
	sw, err := openSparseWriter(e.f)
	if err != nil {
		return nil, prefixErr(e.path, err)
	}
	e.sw, e.out = sw, sw
	if rec != nil && !keepHashtree {
		return rec, nil
	}
	if e.img, err = ReadImage(e.path); err != nil {
		return nil, err
	}
	if e.src, err = verity.OpenSource(e.path, nil); err != nil {
		return nil, err
	}
	e.data = e.src
	return nil, nil
}

// erasedSize is the size EraseFooter cuts img to: its original size or,
// with keepHashtree, past its tree and parity, which must lie below the
// vbmeta.
func erasedSize(img *Image, path string, keepHashtree bool) (uint64, error) {
	if img.Footer == nil {
		return 0, inputErr("", "%s: %w", path, ErrNoFooter)
	}
	if !keepHashtree {
		return img.Footer.OriginalImageSize, nil
	}
	ht := img.VBMeta.FirstHashtree()
	if ht == nil {
		return 0, inputErr("", "%s: asked to keep the hashtree but there is %w", path, ErrNoHashtree)
	}
	vbOff := img.Footer.VBMetaOffset
	if ht.TreeOffset > vbOff || ht.TreeSize > vbOff-ht.TreeOffset {
		return 0, malformed("%s: the tree at %d, %d bytes, overlaps the vbmeta at %d", path, ht.TreeOffset, ht.TreeSize, vbOff)
	}
	size := ht.TreeOffset + ht.TreeSize
	if ht.FECOffset > 0 {
		if ht.FECOffset > vbOff || ht.FECSize > vbOff-ht.FECOffset {
			return 0, malformed("%s: the parity at %d, %d bytes, overlaps the vbmeta at %d", path, ht.FECOffset, ht.FECSize, vbOff)
		}
		size = max(size, ht.FECOffset+ht.FECSize)
	}
	if size == 0 {
		return 0, inputErr("", "%s: asked to keep the hashtree, but its descriptor says there is none", path)
	}
	return size, nil
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
