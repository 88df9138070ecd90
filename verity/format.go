package verity

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"os"
	"runtime"

	"github.com/veritytree/veritytree/merkle"
)

// FormatOptions tune Format and PlanFormat: veritysetup format's options
// and veritygen's. The zero value (or nil) formats as `veritysetup format
// DATA HASH` does: sha256, 4096-byte blocks, random salt and UUID, a
// superblock, every whole block of DATA covered, no error correction.
type FormatOptions struct {
	TreeOptions
	// HashOffsetSet says HashOffset was chosen, 0 included. When the hash
	// file is the data file and HashOffset is 0, Format refuses either way
	// (the tree would overwrite the data); it only words the error
	// differently: without HashOffsetSet it asks where the tree goes.
	HashOffsetSet bool

	// Append pads the data file with zeros to a whole block and appends
	// the tree (no superblock) to it, as avbtool lays out Android images:
	// hashPath must be "" or the data path. The image's own bytes are not
	// changed.
	Append bool
	// OriginalSize, with Append, is the image's size before an earlier,
	// interrupted Append: what it wrote past that size is replaced (only
	// zero padding, then at most a tree and its parity, unless Force).
	// nil means where the file's ResumeRecord says (a killed Append's), or
	// where an earlier Append's tree starts, or the file's current size; a
	// block device needs it.
	OriginalSize *uint64
	// AppendFEC, with Append, also appends error correction of the image
	// and the tree after the tree.
	AppendFEC bool

	// FECDevice, if not "", is the file the error-correction parity is
	// written to, at FECOffset (a multiple of the block size); it may be
	// the hash file (the parity then goes past the tree and covers that
	// file up to itself) or the data file (past the data).
	FECDevice string
	FECOffset uint64
	// FECRoots is the number of parity bytes per 255-byte codeword, from
	// 2 to 24; 0 means 2.
	FECRoots int

	// RootHashFile, if not "", is where the root hash is written (lower
	// case hex, no newline) once the tree is complete. An existing regular
	// file is replaced only if it holds a root hash or nothing (or with
	// Force); a character device or FIFO (with a reader) is written
	// through; /dev/stdout and /proc/self/fd/N write to that descriptor.
	RootHashFile string
	// Sign, if set, signs the root hash once the tree and the root hash
	// file are written, and writes the signature to its files, which
	// follow RootHashFile's rules (opened before anything is hashed; an
	// existing regular file replaced only if it holds such a signature, or
	// nothing, or with Force).
	Sign *RootHashSigning
	// Force replaces a hash file, FEC file, root hash file or signature
	// file even if it does not look like something Format wrote, writes
	// the tree or parity into the data file over any bytes (see Format),
	// and lets OriginalSize cut off any bytes.
	Force bool
	// InPlace writes the outputs in place, as veritysetup format does, for
	// callers that must behave as it does (veritygen's veritysetup front):
	// without DataBlocks the data is the whole device, so that a tree
	// inside it overlaps it (KindParam about HashOffset, nothing written);
	// an existing HASH, FEC file or root hash file is written into, never
	// replaced, whatever it held but a file system or image known by its
	// magic (refused unless Force: veritysetup would write over it), so
	// that it keeps its
	// mode, its links and every byte outside what is written (before
	// HashOffset, between the superblock and the tree, past the tree or the
	// parity); a missing one is created with mode 0600, as veritysetup
	// creates them, and removed again if the run fails before the tree and
	// the parity are complete. A regular root hash file is truncated and
	// written only once the tree is complete. What that gives up: an
	// interrupted run leaves a partial tree in an existing HASH. Append,
	// which veritysetup does not do, is refused.
	InPlace bool
	// Raw reads a data file that starts with the Android sparse magic as
	// it is, not as the image it expands to.
	Raw bool
	// Jobs is the number of goroutines that hash; 0 means one per CPU.
	// The tree is the same for every value.
	Jobs int
	// Progress, if set, is told how the hashing (StageHashing) and the
	// error correction (StageFEC) go, in bytes.
	Progress Progress
	// Warn, if set, is given warnings that do not stop the operation: data
	// past the last whole block, an ignored UUID, a block size Linux may
	// refuse, bytes after a sparse image's last chunk.
	Warn func(msg string)
	// Note, if set, is told of things done on the way that are not
	// problems: temporary files of a killed run removed.
	Note func(msg string)
	// OnLayout, if set, is called with the layout once every output is
	// open and locked, just before hashing starts: nothing has been written
	// yet but, with Append, the ResumeRecord and the zero padding.
	OnLayout func(*Layout)
}

func (o *FormatOptions) warn(msg string) {
	if o.Warn != nil {
		o.Warn(msg)
	}
}

// params checks the options that need no file; see TreeOptions.Params.
func (o *FormatOptions) params() (merkle.Params, error) {
	p, err := o.TreeOptions.Params()
	if err != nil {
		return p, err
	}
	if o.Append {
		if o.InPlace {
			return p, paramErrorf("Append", "leave FormatOptions.InPlace out", "FormatOptions.Append cannot be used with FormatOptions.InPlace: an Append is not veritysetup's layout")
		}
		for _, c := range []struct {
			field, name, hint string
			set               bool
		}{
			{"HashOffset", "TreeOptions.HashOffset", "the tree goes right after the image, padded to a whole block", o.HashOffset != 0 || o.HashOffsetSet},
			{"DataBlocks", "TreeOptions.DataBlocks", "FormatOptions.Append covers the whole image, padded to a whole block", o.DataBlocks != 0},
			{"FECDevice", "FormatOptions.FECDevice", "FormatOptions.AppendFEC appends the error correction after the tree", o.FECDevice != ""},
			{"FECOffset", "FormatOptions.FECOffset", "FormatOptions.AppendFEC appends the error correction after the tree", o.FECOffset != 0},
		} {
			if c.set {
				return p, paramErrorf(c.field, "leave "+c.name+" out: "+c.hint, "%s cannot be used with FormatOptions.Append", c.name)
			}
		}
		if o.OriginalSize != nil && *o.OriginalSize == 0 {
			return p, paramErrorf("OriginalSize", "give the image's size before the interrupted FormatOptions.Append, e.g. FormatOptions.OriginalSize=1073741824", "FormatOptions.OriginalSize must be at least 1")
		}
	} else {
		for _, c := range []struct {
			field string
			set   bool
		}{{"AppendFEC", o.AppendFEC}, {"OriginalSize", o.OriginalSize != nil}} {
			if c.set {
				e := paramErrorf(c.field, "", "FormatOptions.%s needs FormatOptions.Append", c.field)
				e.Requires = "Append"
				return p, e
			}
		}
	}
	if err := o.Sign.check(o.RootHashFile); err != nil {
		return p, err
	}
	if o.FECDevice == "" && !o.AppendFEC && o.FECOffset != 0 {
		e := paramErrorf("FECOffset", "e.g. FormatOptions.FECDevice=HASH.fec (or FormatOptions.Append FormatOptions.AppendFEC to append it to DATA)",
			"FormatOptions.FECOffset needs FormatOptions.FECDevice")
		e.Requires = "FECDevice"
		return p, e
	}
	return p, nil
}

// FormatResult is what Format wrote.
type FormatResult struct {
	// Layout is where everything went.
	Layout *Layout
	// RootHash is the root hash of the tree.
	RootHash []byte
	// FEC describes the parity written, as Table takes it (Layout.FEC is
	// the plan); nil without error correction.
	FEC *FECInfo
	// RootHashSignature is the signature of the root hash (DER PKCS#7)
	// when FormatOptions.Sign asked for one.
	RootHashSignature []byte
}

// Table returns the kernel table and boot arguments of the tree written;
// see the package function Table. opts names the devices.
func (r *FormatResult) Table(opts *TableOptions) (*BootParams, error) {
	return Table(r.Layout.Geometry, r.RootHash, r.FEC, opts)
}

// buildTree builds the tree; tests look at what it is given through it.
var buildTree = merkle.Build

// Format builds the dm-verity hash tree of the data at dataPath (a file, a
// block device, or an Android sparse image read as the image it expands
// to) and writes it to hashPath, byte for byte as `veritysetup format
// DATA HASH` does, then the error correction and the root hash file the
// options ask for. hashPath "" means dataPath+".verity" (and the data file
// itself with Append); hashPath may be dataPath (the same file or device:
// a link, another node of it), with a HashOffset past the data. Without
// DataBlocks the data is then all of DATA: the tree is written only over
// bytes from HashOffset on that are zeros, holes, or an earlier tree of
// ours there (its superblock; without one, a tree that verifies with the
// parameters given) and its parity, and covers the blocks before the
// offset; anything else is KindRefused unless opts.Force (InPlace takes
// the whole device as the data, as veritysetup does, and refuses the
// overlap as KindParam about HashOffset).
//
// Nothing the caller did not name is destroyed, and nothing is left
// half-written: every output is opened and locked (flock) before anything
// is hashed, so that one that cannot be written fails the run while
// nothing has changed; a new hash or FEC file is written under a temporary
// name and renamed when complete (devices and the data file are written in
// place); an existing one that does not look like a tree or parity is
// refused (KindRefused) unless opts.Force. opts.InPlace writes them in place
// instead, as veritysetup does. The outputs are committed in the order
// tree, parity, root hash file, root hash signatures: an error after the
// tree is committed says where the new tree is and its root hash.
//
// Errors are *Error: KindParam for bad options (Field names the option),
// KindInput for unusable files, KindRefused, KindIO. A canceled ctx stops
// the run with an error that matches context.Canceled.
func Format(ctx context.Context, dataPath, hashPath string, opts *FormatOptions) (*FormatResult, error) {
	if opts == nil {
		opts = &FormatOptions{}
	}
	if _, err := opts.params(); err != nil {
		return nil, err
	}
	src, err := OpenSource(dataPath, &SourceOptions{Raw: opts.Raw, Warn: opts.Warn})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	l, err := planLocked(ctx, src, hashPath, opts)
	if err != nil {
		return nil, err
	}
	// Every output is opened (and locked) before anything is hashed.
	out, err := openFormatOutputs(l, opts)
	if err != nil {
		return nil, err
	}
	defer out.abort()
	gap, err := l.prepare(ctx, out.hash, opts)
	if err != nil {
		return nil, err
	}
	root, fecInfo, err := l.write(ctx, src, out, gap, opts)
	if err != nil {
		return nil, l.writeFailed(err, out.hash, opts)
	}
	return l.commit(out, root, fecInfo, opts)
}

// planLocked locks DATA and plans Format (planFormat, checkOverwrites).
func planLocked(ctx context.Context, src *Source, hashPath string, opts *FormatOptions) (*Layout, error) {
	dataPath := src.path
	var err error
	// Shared while DATA is only read; exclusive (below) when it is written.
	if opts.Append {
		err = lockExclusive(src.file, "DATA", dataPath)
	} else {
		err = lockShared(src.file, "DATA", dataPath)
	}
	if err != nil {
		return nil, err
	}
	l, err := planFormat(src, hashPath, opts)
	if err != nil {
		return nil, err
	}
	fl := l.FEC
	if l.TreeInData || fl != nil && fl.InData {
		if err := lockExclusive(src.file, "DATA", dataPath); err != nil {
			return nil, err
		}
	}
	if err := l.checkOverwrites(ctx, opts, src); err != nil {
		return nil, err
	}
	return l, nil
}

// prepare readies the open hash output for the tree: it stops an already
// canceled run, checks a device's room, writes an Append's record and
// padding, tells opts.OnLayout, and with InPlace returns the bytes between
// the superblock and the tree, which the build overwrites (see
// keepSuperblockGap).
func (l *Layout) prepare(ctx context.Context, hashOut *output, opts *FormatOptions) (gap []byte, err error) {
	// merkle.Build writes the superblock before it first looks at ctx, and
	// with several jobs may not notice a cancellation at all: an already
	// canceled run must stop here, before anything is written.
	if err := ctx.Err(); err != nil {
		if l.Append != nil || opts.InPlace {
			return nil, interrupted(err, "", "interrupted; nothing was written")
		}
		return nil, interrupted(err, "", "interrupted; nothing was written under HASH")
	}
	role := "HASH"
	if l.TreeInData {
		role = "DATA"
	}
	if err := hashOut.checkDeviceRoom(role, l.HashOutputEnd); err != nil {
		return nil, err
	}
	if ap := l.Append; ap != nil {
		if ap.regular {
			// The record first (see ResumeRecord): from here on, until the
			// file is cut where the finished image ends, it ends in the
			// record, and a run killed at any moment is finished by the
			// same command. Anything failing cuts DATA back to the image.
			if err := ap.writeRecord(hashOut.f, l.HashOutputEnd); err != nil {
				return nil, l.abortAppend(hashOut.f, err)
			}
		}
		// The padding: zeros from the original end to the tree, written
		// (not only left as a hole) since a previous, interrupted run may
		// have left other bytes there.
		if err := hashOut.zero(ap.OriginalSize, l.Geometry.HashOffset); err != nil {
			return nil, l.abortAppend(hashOut.f, err)
		}
	}
	if opts.OnLayout != nil {
		opts.OnLayout(l)
	}
	if opts.InPlace {
		return keepSuperblockGap(hashOut, l.Geometry)
	}
	return nil, nil
}

// write builds the tree, writes the parity and commits the tree: what
// fails is for writeFailed to report.
func (l *Layout) write(ctx context.Context, src *Source, out *formatOutputs, gap []byte, opts *FormatOptions) ([]byte, *FECInfo, error) {
	g, fl, hashOut := l.Geometry, l.FEC, out.hash
	root, err := l.build(ctx, src, hashOut, opts)
	if err == nil {
		err = restoreSuperblockGap(hashOut, g, gap)
	}
	if err == nil && opts.InPlace && !l.TreeInData && (g.HashBlocks > 0 || !opts.NoSuperblock) {
		// A tree whose last blocks were never written still spans them.
		// veritysetup's HASH ends where the last block it writes ends: an
		// empty tree (one data block) without superblock writes nothing,
		// and HASH keeps its size whatever the hash offset.
		end := g.HashEnd()
		if g.HashBlocks == 0 {
			err = superblockOnlyEnd(hashOut, g, gap)
		} else {
			err = hashOut.extend(end)
		}
	}
	var fecInfo *FECInfo
	if err == nil && fl != nil {
		fecInfo, err = writeFEC(ctx, g, fl, src, hashOut, out.fec, opts)
	}
	if err == nil && l.Append != nil {
		// The tree and the parity reach the disk before the record goes:
		// then drop it with what a previous, interrupted or longer, run
		// left past the end: the file ends with the tree or its parity.
		if err = hashOut.f.Sync(); err != nil {
			err = errorf(KindIO, "", "writing DATA %s: %w", l.DataPath, unwrapPath(err))
		} else {
			err = hashOut.truncate(l.HashOutputEnd)
		}
	}
	if err == nil {
		err = out.commitTree()
	}
	return root, fecInfo, err
}

// writeFailed is the error of a Format whose write failed with err: an
// Append's DATA is cut back, an interruption says what it left.
func (l *Layout) writeFailed(err error, hashOut *output, opts *FormatOptions) error {
	if l.Append != nil && l.Append.regular {
		return l.abortAppend(hashOut.f, err)
	}
	if !errors.Is(err, context.Canceled) {
		return asError(KindIO, err)
	}
	switch {
	case hashOut.tmp != "":
		return interrupted(err, "", "interrupted; nothing was written under HASH")
	case l.Append != nil:
		// Written in place, not through a temporary file.
		e := interrupted(err, fmt.Sprintf("call Format again with FormatOptions.OriginalSize=%d to finish it", l.Append.OriginalSize),
			"interrupted; DATA %s is longer than its original %d bytes, which are unchanged, and its tree is incomplete", l.DataPath, l.Append.OriginalSize)
		e.Advice, e.Field, e.Value = AdviceAgain, "OriginalSize", l.Append.OriginalSize
		return e
	}
	e := interrupted(err, "call Format again to write the whole tree", "interrupted; the tree in %s from byte %d is incomplete", l.HashPath, l.Geometry.HashOffset)
	e.Advice = AdviceAgain
	return e
}

// commit commits what follows the committed tree: the parity in a file of
// its own, the root hash file, the signatures.
func (l *Layout) commit(out *formatOutputs, root []byte, fecInfo *FECInfo, opts *FormatOptions) (*FormatResult, error) {
	rootHex := hex.EncodeToString(root)
	// The tree is committed: a later failure must not lose its root hash.
	afterCommit := func(what string, err error) error {
		where := "in " + l.HashPath
		if l.TreeInData {
			where = "in DATA " + l.DataPath
		}
		return &Error{Kind: KindIO, Err: fmt.Errorf("the new tree is %s, root hash %s; %s: %w", where, rootHex, what, err)}
	}
	if out.fec != nil {
		if err := out.fec.commit(); err != nil {
			return nil, afterCommit("the error correction", err)
		}
	}
	sig, what, err := out.writeRootOutputs(root, opts.Sign)
	if err != nil {
		return nil, afterCommit(what, err)
	}
	return &FormatResult{Layout: l, RootHash: root, FEC: fecInfo, RootHashSignature: sig}, nil
}

// writeRecord writes the ResumeRecord of an Append of a regular file: past
// everything the file holds (the record an interrupted run left is
// rewritten in place, the same bytes) and past end, where the finished
// image ends.
func (ap *AppendLayout) writeRecord(f *os.File, end uint64) error {
	tail := ap.fileSize
	if ap.record != nil {
		tail = ap.record.End - safefile.ResumeRecordSize
	}
	_, err := writeResumeRecord(f, max(end, tail), ap.OriginalSize, false)
	return err
}

// abortAppend cuts a regular DATA back to its original size after err
// stopped an Append, and returns the error to report: DATA is then as it
// was. If it cannot be cut, it still ends in the record: the same command
// finishes it.
func (l *Layout) abortAppend(f *os.File, err error) error {
	orig := l.Append.OriginalSize
	if terr := f.Truncate(int64(orig)); terr != nil {
		return withHint(KindIO, fmt.Errorf("%w; DATA %s could not be cut back to its original %d bytes either: %v", err, l.DataPath, orig, unwrapPath(terr)),
			"run the same command again to finish it")
	}
	if errors.Is(err, context.Canceled) {
		return interrupted(err, "", "interrupted; DATA %s is as it was: cut back to its original %d bytes", l.DataPath, orig)
	}
	return asError(KindIO, fmt.Errorf("%w; DATA %s was cut back to its original %d bytes", err, l.DataPath, orig))
}

// build hashes the data into hashOut, reporting progress.
func (l *Layout) build(ctx context.Context, src *Source, hashOut *output, opts *FormatOptions) ([]byte, error) {
	g, total := l.Geometry, l.CoveredBytes
	bo := &merkle.BuildOptions{Jobs: jobs(opts.Jobs), Runs: l.KnownRuns}
	if p := opts.Progress; p != nil {
		p(StageHashing, 0, total)
		bo.Progress = func(done uint64) { p(StageHashing, done, total) }
	}
	role := "HASH"
	if l.TreeInData {
		role = "DATA"
	}
	root, err := buildTree(ctx, g, src, hashOut.io(role), bo)
	if err != nil {
		return nil, asError(KindIO, err)
	}
	return root, nil
}

func jobs(n int) int {
	if n <= 0 {
		return runtime.NumCPU()
	}
	return n
}

// interrupted is the error of a run stopped by its context: a message
// saying what was left, which matches the context's error (errors.Is).
func interrupted(cause error, hint, format string, args ...any) *Error {
	return &Error{Kind: KindCanceled, Err: &causedError{msg: fmt.Sprintf(format, args...), cause: cause}, Hint: hint}
}

// causedError is a message that matches its cause without quoting it.
type causedError struct {
	msg   string
	cause error
}

func (e *causedError) Error() string { return e.msg }
func (e *causedError) Unwrap() error { return e.cause }

// asError returns err as an *Error: itself if it is one, else of the kind
// of an *Error it wraps, else of kind k.
func asError(k Kind, err error) error {
	var e *Error
	switch {
	case errors.As(err, &e) && e == err:
		return err
	case e != nil:
		k = e.Kind
	}
	return &Error{Kind: k, Err: err}
}
