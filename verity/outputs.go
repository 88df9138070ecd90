package verity

import (
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// formatOutputs are the files Format writes: all opened and locked before
// anything is hashed, so that one that cannot be written fails the run
// while nothing has changed.
type formatOutputs struct {
	hash *output // the tree, and the parity when it goes there too
	fec  *output // the parity when it goes elsewhere; nil otherwise
	root *output // the root hash file; nil without one
	// The root hash signature files (FormatOptions.Sign); nil without.
	sig, sigJSON *output

	inPlace bool     // FormatOptions.InPlace
	created []string // files created in place, removed unless the run completes
}

// openFormatOutputs opens the outputs of the layout l. DATA and devices are
// written in place; HASH and the FEC file are replaced through temporary
// files, or with opts.InPlace written in place too.
func openFormatOutputs(l *Layout, opts *FormatOptions) (*formatOutputs, error) {
	w := &formatOutputs{inPlace: opts.InPlace}
	if err := w.open(l, opts); err != nil {
		w.abort()
		return nil, err
	}
	return w, nil
}

func (w *formatOutputs) open(l *Layout, opts *FormatOptions) error {
	fl := l.FEC
	var err error
	if l.TreeInData {
		w.hash, err = openInPlace(l.DataPath, "DATA")
	} else {
		// Bytes of an existing HASH outside the tree are kept, as
		// veritysetup, which writes in place, keeps them: those before an
		// offset, and all of them when the parity goes into HASH too.
		keepFrom := l.Geometry.HashOffset
		if fl != nil && fl.InHash {
			keepFrom = 1
		}
		w.hash, err = w.openFile(l.HashPath, "HASH", l.hashInfo, keepFrom, opts.Note)
	}
	if err != nil {
		return err
	}
	switch {
	case fl == nil || fl.InHash:
	case fl.InData:
		w.fec, err = openInPlace(l.DataPath, "DATA")
	default:
		w.fec, err = w.openFile(fl.Path, "FEC device", l.fecFile, fl.Offset, opts.Note)
	}
	if err != nil {
		return err
	}
	switch {
	case opts.RootHashFile == "":
	case w.inPlace:
		w.root, err = openRootHashInPlace(opts.RootHashFile, &w.created, opts.Note)
	default:
		w.root, err = openRootHashFile(opts.RootHashFile, opts.Force, opts.Note)
	}
	if err == nil {
		w.sig, w.sigJSON, err = opts.Sign.openOutputs(opts.Force, opts.Note)
	}
	return err
}

// openFile opens HASH or the FEC file at path (existing says how it is, nil
// if missing): replaced through a temporary file that starts with its bytes
// when keepFrom > 0 (see openReplacement), or in place (see
// openCreatedInPlace).
func (w *formatOutputs) openFile(path, role string, existing fs.FileInfo, keepFrom uint64, note func(string)) (*output, error) {
	switch {
	case !w.inPlace:
		return openReplacement(path, role, existing, keepFrom, note)
	case existing != nil:
		return openInPlace(path, role)
	}
	return openCreatedInPlace(path, role, &w.created)
}

// commitTree makes the tree final: renamed over HASH, or synced where it
// was written in place. In place the parity is synced with it, and only
// then are the files the run created kept: until the tree and the parity
// are complete they are removed on failure, as temporary files would be.
func (w *formatOutputs) commitTree() error {
	err := w.hash.commit()
	if err == nil && w.inPlace && w.fec != nil {
		err = w.fec.commit()
	}
	if err == nil {
		w.created = nil
	}
	return err
}

// abort drops what was not committed: temporary files, and files created
// in place.
func (w *formatOutputs) abort() {
	for _, o := range []*output{w.hash, w.fec, w.root, w.sig, w.sigJSON} {
		if o != nil {
			o.abort()
		}
	}
	for _, p := range w.created {
		os.Remove(p)
	}
}

// foreignOutput says why an existing output (a HASH, or a FEC file when sbAt
// < 0) is not something veritygen could have written, or returns "" if it
// could be. A file is ours if it is empty, or has a valid verity superblock
// at sbAt (an earlier tree, with or without needSB); otherwise a known image
// format is not, nor a regular file without superblock where needSB says
// one belongs, nor one longer than maxSize (the bytes veritygen writes
// there). A device without a known format is written in place, as always.
// magicOnly (an output written in place, whose other bytes stay) counts
// only a known image format.
func foreignOutput(path string, info fs.FileInfo, sbAt int64, needSB bool, maxSize uint64, magicOnly bool) (string, error) {
	if info.Mode().IsRegular() && info.Size() == 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	size, err := fileSize(f)
	if err != nil {
		return "", err
	}
	if sbAt >= 0 {
		b := make([]byte, merkle.SuperblockSize)
		if _, err := f.ReadAt(b, sbAt); err == nil {
			if _, err := merkle.DecodeSuperblock(b); err == nil {
				return "", nil
			}
		}
	}
	if kind := safefile.DetectFormat(f, size); kind != "" {
		return kind, nil
	}
	switch {
	case magicOnly, !info.Mode().IsRegular():
		return "", nil
	case safefile.HoldsNothing(f, size):
		// Zeros or holes (a file made with truncate or fallocate for the
		// tree, as for veritysetup): nothing to lose.
		return "", nil
	case needSB:
		return fmt.Sprintf("%d bytes without a verity superblock at byte %d", size, sbAt), nil
	case uint64(size) > maxSize:
		return fmt.Sprintf("%d bytes, more than the %d written there", size, maxSize), nil
	}
	return "", nil
}

// maxReplacedRootHashFile is the largest existing --root-hash-file replaced without
// --force: a root hash is at most 128 hex digits, with a newline or so.
const maxReplacedRootHashFile = 1024

// openRootHashFile prepares --root-hash-file before anything is hashed, so
// that a path that cannot be written fails the run before the tree is
// replaced. A regular file (or none) is replaced by rename when the root
// hash is known, but only if it is empty or already a root hash (hex
// digits), unless force. A character device or a FIFO (e.g. /dev/stdout, a
// pipe) is written through, never replaced: a FIFO must already have a
// reader. Block devices and sockets are refused.
func openRootHashFile(path string, force bool, note func(string)) (*output, error) {
	return openSmallOutput(path, "FormatOptions.RootHashFile", "a root hash file", foreignRootHash, force, note)
}

// foreignRootHash says why an existing regular file is not a root hash file
// veritygen (or anyone) wrote, or returns "".
func foreignRootHash(path string, info fs.FileInfo) string {
	if info.Size() > maxReplacedRootHashFile {
		return fmt.Sprintf("%d bytes", info.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "it cannot be read: " + unwrapPath(err).Error()
	}
	for _, c := range strings.TrimSpace(string(b)) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "not hexadecimal"
		}
	}
	return ""
}

// writeRootHash writes the root hash into an output from openRootHashFile
// or openRootHashInPlace and commits it.
func (o *output) writeRootHash(rootHex string) error { return o.writeAll([]byte(rootHex)) }
