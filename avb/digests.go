package avb

import (
	"bufio"
	"context"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/hashes"
)

// chainedImage reads the image of a chained partition as avbtool finds
// it: PARTITION + the extension of the image that chains to it, beside it.
func chainedImage(path string, d *ChainPartitionDescriptor) (*Image, error) {
	if d.PartitionName == "" || strings.ContainsAny(d.PartitionName, "/\x00") {
		return nil, inputErr("", "%s: chained partition name %q is not a file name", path, d.PartitionName)
	}
	return ReadImage(filepath.Join(filepath.Dir(path), d.PartitionName+filepath.Ext(path)))
}

// CalculateVBMetaDigest returns the digest `avbtool calculate_vbmeta_digest`
// prints (in hex): the hash (hashName, "" meaning sha256) of the image's
// vbmeta blob followed by the blobs of the images of the partitions it
// chains to (PARTITION + the image's extension, beside it), in the order of
// its descriptors: libavb's androidboot.vbmeta.digest when hashName is
// sha256. Each blob is read, hashed and dropped in turn.
func CalculateVBMetaDigest(ctx context.Context, path, hashName string) ([]byte, error) {
	if hashName == "" {
		hashName = "sha256"
	}
	alg, err := hashes.Lookup(hashName)
	if err != nil {
		return nil, paramErr("HashAlgorithm", "e.g. sha256, avbtool's default", "%v", err)
	}
	img, err := ReadImage(path)
	if err != nil {
		return nil, err
	}
	h := alg.New()
	h.Write(img.VBMeta.Raw)
	for d := range img.VBMeta.Descriptors() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c, ok := d.(*ChainPartitionDescriptor); ok {
			ch, err := chainedImage(path, c)
			if err != nil {
				return nil, err
			}
			h.Write(ch.VBMeta.Raw)
		}
	}
	return h.Sum(nil), nil
}

// ExtractVBMeta returns what `avbtool extract_vbmeta_image` writes
// before its padding: the footer's vbmeta_size bytes at its vbmeta_offset
// in the image at path (possibly Android sparse).
func ExtractVBMeta(path string) ([]byte, error) {
	src, err := openImageSource(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	img, err := ParseImage(src, src.Size())
	if err != nil {
		return nil, prefixErr(path, err)
	}
	if img.Footer == nil {
		return nil, inputErr("extract_vbmeta_image takes an image with a footer; a vbmeta image is its own vbmeta", "%s: %w", path, ErrNoFooter)
	}
	// Checked by ParseImage against the image; bounded here, as it is read
	// whole.
	n := img.Footer.VBMetaSize
	if n > MaxVBMetaSize {
		return nil, malformed("%s: the footer's vbmeta size %d is larger than %d", path, n, MaxVBMetaSize)
	}
	b := make([]byte, n)
	if _, err := src.ReadAt(b, int64(img.Footer.VBMetaOffset)); err != nil {
		return nil, ioErr("%s: reading the vbmeta at %d: %w", path, img.Footer.VBMetaOffset, err)
	}
	return b, nil
}

// ExtractVBMetaImage writes ExtractVBMeta's bytes, then zeros to a
// multiple of paddingSize (0: none; at most 1 GiB), to outputPath, under
// the rules of safefile.OpenOutputFile (an existing file is replaced only
// if it is empty or a vbmeta image), as `avbtool extract_vbmeta_image`
// does.
func ExtractVBMetaImage(ctx context.Context, imagePath, outputPath string, paddingSize uint64) error {
	if paddingSize > maxPaddingSize {
		return paramErr("PaddingSize", "e.g. 4096", "padding size %d is larger than %d", paddingSize, maxPaddingSize)
	}
	out, err := openOutputFile(outputPath, "output", "a vbmeta image", isVBMetaImage, false)
	if err != nil {
		return err
	}
	defer out.Abort()
	b, err := ExtractVBMeta(imagePath)
	if err != nil {
		return err
	}
	return writePadded(ctx, out, b, paddingSize)
}

// PartitionDigest is a partition's digest as print_partition_digests
// gives it: a hash descriptor's digest or a hashtree descriptor's root
// digest (empty with a persistent digest).
type PartitionDigest struct {
	Name   string
	Digest []byte
}

// maxChainDepth bounds the chains PartitionDigests follows: libavb
// follows one level, avbtool any (and loops on a cycle).
const maxChainDepth = 8

// PartitionDigests calls fn with the digest of each hash and hashtree
// descriptor of the image at path, and, in their place, those of the
// images of the partitions it chains to (PARTITION + the image's
// extension, beside it), as `avbtool print_partition_digests` lists them.
// The descriptors are walked one at a time.
func PartitionDigests(ctx context.Context, path string, fn func(PartitionDigest) error) error {
	return partitionDigests(ctx, path, filepath.Ext(path), 0, fn)
}

func partitionDigests(ctx context.Context, path, ext string, depth int, fn func(PartitionDigest) error) error {
	if depth > maxChainDepth {
		return inputErr("", "%s: chained more than %d deep (a cycle?)", path, maxChainDepth)
	}
	img, err := ReadImage(path)
	if err != nil {
		return err
	}
	for d := range img.VBMeta.Descriptors() {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch d := d.(type) {
		case *HashDescriptor:
			err = fn(PartitionDigest{d.PartitionName, d.Digest})
		case *HashtreeDescriptor:
			err = fn(PartitionDigest{d.PartitionName, d.RootDigest})
		case *ChainPartitionDescriptor:
			if d.PartitionName == "" || strings.ContainsAny(d.PartitionName, "/\x00") {
				return inputErr("", "%s: chained partition name %q is not a file name", path, d.PartitionName)
			}
			// avbtool keeps the first image's extension all the way down.
			err = partitionDigests(ctx, filepath.Join(filepath.Dir(path), d.PartitionName+ext), ext, depth+1, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// WritePartitionDigests writes what `avbtool print_partition_digests`
// prints: "NAME: HEXDIGEST" lines, or with asJSON its JSON (Python's
// json.dumps with indent 2, no newline at the end).
func WritePartitionDigests(ctx context.Context, w io.Writer, path string, asJSON bool) error {
	bw := bufio.NewWriter(w)
	n := 0
	err := PartitionDigests(ctx, path, func(p PartitionDigest) error {
		if !asJSON {
			bw.WriteString(p.Name + ": " + hex.EncodeToString(p.Digest) + "\n")
			return nil
		}
		if n == 0 {
			bw.WriteString("{\n  \"partitions\": [\n")
		} else {
			bw.WriteString(",\n")
		}
		n++
		bw.WriteString("    {\n      \"name\": " + pyJSONString(p.Name) + ",\n      \"digest\": \"" + hex.EncodeToString(p.Digest) + "\"\n    }")
		return nil
	})
	if err != nil {
		if !asJSON {
			bw.Flush() // the lines before the failure, as avbtool prints them
		}
		return err
	}
	if asJSON {
		if n == 0 {
			bw.WriteString("{\n  \"partitions\": []\n}")
		} else {
			bw.WriteString("\n  ]\n}")
		}
	}
	if err := bw.Flush(); err != nil {
		return ioErr("writing the partition digests: %w", err)
	}
	return nil
}

// pyJSONString quotes s as Python's json.dumps does (ensure_ascii): every
// character outside printable ASCII as \uXXXX (UTF-16), with \n, \r, \t,
// \b, \f, \" and \\ short.
func pyJSONString(s string) string {
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	b.WriteByte('"')
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hexDigits[(r>>shift)&0xf])
		}
	}
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			u(0xd800 + r>>10)
			u(0xdc00 + r&0x3ff)
		default:
			u(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
