package avbtool

// calculate_vbmeta_digest, print_partition_digests and
// extract_vbmeta_image: what a build asks of a finished set of images.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/safefile"
)

func (t *tool) calculateVBMetaDigest(args []string) int {
	const cmd = "calculate_vbmeta_digest"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to calculate digest for")
	fileType(fs, "image", "r", "image")
	hashName := fs.String("hash_algorithm", "sha256", "Hash algorithm to use (default: sha256)")
	output := fs.String("output", "", "Write hex digest to file (default: stdout)")
	fileType(fs, "output", "w", "output")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	if err := checkReleaseString(*image); err != nil {
		return t.fail(err, false)
	}
	d, err := avb.CalculateVBMetaDigest(t.ctx, *image, *hashName)
	if err != nil {
		return t.fail(err, false)
	}
	if err := t.writeOutput(*output, "a vbmeta digest", isHexLine, []byte(hex.EncodeToString(d)+"\n")); err != nil {
		return t.fail(err, false)
	}
	return exitOK
}

// isHexLine says whether an existing --output holds a digest in hex.
func isHexLine(head []byte) bool {
	line, ok := bytes.CutSuffix(head, []byte("\n"))
	_, err := hex.DecodeString(string(line))
	return ok && err == nil
}

func (t *tool) printPartitionDigests(args []string) int {
	const cmd = "print_partition_digests"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image to print partition digests from")
	fileType(fs, "image", "r", "image")
	output := fs.String("output", "", "Write info to file")
	fileType(fs, "output", "w", "output")
	asJSON := fs.Bool("json", false, "Print output as JSON")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	if err := checkReleaseString(*image); err != nil {
		return t.fail(err, false)
	}
	if *output == "" || *output == "-" {
		// The lines before a failure are printed, as avbtool prints them.
		if err := avb.WritePartitionDigests(t.ctx, safefile.ContextWriter(t.ctx, t.stdout), *image, *asJSON); err != nil {
			return t.fail(err, false)
		}
		return exitOK
	}
	out, err := t.openOutput(*output, "print_partition_digests' text", isDigestsText)
	if err != nil {
		return t.fail(err, false)
	}
	defer out.Abort()
	if err := avb.WritePartitionDigests(t.ctx, out.Writer(t.ctx), *image, *asJSON); err != nil {
		return t.fail(err, false)
	}
	if err := out.Commit(nil); err != nil {
		return t.fail(err, false)
	}
	return exitOK
}

// isDigestsText says whether an existing --output holds what
// print_partition_digests writes: its JSON, or "NAME: HEX" lines.
func isDigestsText(head []byte) bool {
	if bytes.HasPrefix(head, []byte("{\n  \"partitions\": [")) {
		return true
	}
	if !utf8.Valid(head) || bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	lines := bytes.Split(head, []byte("\n"))
	for i, l := range lines {
		if i == len(lines)-1 {
			break // the last, unfinished (or empty) line
		}
		j := bytes.LastIndex(l, []byte(": "))
		if j < 0 {
			return false
		}
		if _, err := hex.DecodeString(string(l[j+2:])); err != nil {
			return false
		}
	}
	return true
}

func (t *tool) extractVBMetaImage(args []string) int {
	const cmd = "extract_vbmeta_image"
	fs := t.flagSet(cmd)
	image := fs.String("image", "", "Image with footer")
	fileType(fs, "image", "r", "image")
	output := fs.String("output", "", "Output file name")
	fileType(fs, "output", "w", "output")
	var padding number
	fs.Var(&padding, "padding_size", "If non-zero, pads output with NUL bytes so its size is a multiple of NUMBER (default: 0)")
	metavar(fs, "padding_size", "NUMBER")
	if code, done := t.parse(cmd, fs, args, "image"); done {
		return code
	}
	if *output == "" {
		return t.tooFewArguments() // avbtool writes to None
	}
	if err := checkReleaseString(*image); err != nil {
		return t.fail(err, false)
	}
	var err error
	if *output == "-" {
		var b []byte
		if b, err = avb.ExtractVBMeta(*image); err == nil {
			err = t.writePadded(b, padding.v)
		}
	} else {
		err = avb.ExtractVBMetaImage(t.ctx, *image, *output, padding.v)
	}
	if errors.Is(err, avb.ErrNoFooter) {
		err = avbErr("Given image does not have a footer.")
	}
	if err != nil {
		return t.fail(err, false)
	}
	return exitOK
}

// releaseNotUTF8 refuses a vbmeta whose release string avbtool cannot
// decode: its header parser decodes the field (trailing NULs cut) as UTF-8
// and dies of a UnicodeDecodeError, whatever the subcommand. libavb never
// reads the field, so the library does not refuse it; the front does, where
// avbtool dies.
func releaseNotUTF8(path string, img *avb.Image) error {
	if img == nil || img.VBMeta == nil || len(img.VBMeta.Raw) < avb.HeaderSize {
		return nil
	}
	field := bytes.TrimRight(img.VBMeta.Raw[128:128+47], "\x00")
	if utf8.Valid(field) {
		return nil
	}
	return fmt.Errorf("the release string of %s's vbmeta is not UTF-8 text, which avbtool cannot read (its header field, bytes 128 to 175, is damaged or not avbtool's)", path)
}

// checkReleaseString reads the image at path as avbtool would before a
// subcommand that reads its vbmeta through the library, and refuses it if
// avbtool could not decode its release string.
func checkReleaseString(path string) error {
	img, err := avb.ReadImageLenient(path)
	if err != nil {
		return nil // the subcommand reports it in its own words
	}
	return releaseNotUTF8(path, img)
}
