package verity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
)

// output is a file Format writes: either a temporary file renamed over
// its path when complete, so an interrupted run leaves nothing half-written
// under that name, or, for DATA itself and for devices, the file in place.
// Every output is locked (flock) from its opening to its commit: a file
// written in place through f, a replaced file through the old file
// (locked), so that two runs never write the same file at once.
type output struct {
	path    string // as the user named it, for messages
	f       *os.File
	tmp     string // temporary name, "" when written in place
	target  string // what tmp is renamed over
	old     *os.File
	oldInfo fs.FileInfo // the file replaced, nil if there was none
	mode    fs.FileMode
	setMode bool // restore the replaced file's mode, whatever the umask
	noSync  bool // someone else's file descriptor: the caller's to sync
	rewrite bool // a regular file written in place by writeAll: truncated, then written from its start
	done    bool
}

// openInPlace opens an existing file (DATA, a device) for writing in place,
// locked exclusively.
func openInPlace(path, role string) (*output, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, errorf(KindIO, "", "cannot open %s %s for writing: %w", role, path, unwrapPath(err))
	}
	return lockInPlace(f, role, path)
}

// lockInPlace makes f, just opened from path, an output written in place,
// locked exclusively; f is closed if the lock is refused.
func lockInPlace(f *os.File, role, path string) (*output, error) {
	if err := lockExclusive(f, role, path); err != nil {
		f.Close()
		return nil, err
	}
	return &output{path: path, f: f}, nil
}

// openReplacement starts a new version of path in a temporary file beside
// it. When keepFrom > 0 and path exists, its bytes are copied first, so that
// writing from keepFrom on leaves those before it as they were. Temporary
// files of earlier, killed runs for the same path are removed (and named
// through note, if not nil).
func openReplacement(path, role string, existing fs.FileInfo, keepFrom uint64, note func(string)) (*output, error) {
	if existing != nil && !existing.Mode().IsRegular() {
		// A block device: the callers refused every other kind
		// (checkImageType) before anything was opened.
		return openInPlace(path, role)
	}
	target := resolveLink(path) // a link is written through
	if existing != nil && target == path {
		if l, err := os.Lstat(path); err == nil && l.Mode()&fs.ModeSymlink != 0 {
			// A link whose target has no usable name (e.g. a deleted file
			// through /proc): renaming would replace the link itself.
			return nil, errorf(KindInput, "name the file itself", "%s %s is a symbolic link to a file that cannot be replaced by name", role, path)
		}
	}
	o := &output{path: path, target: target, mode: 0o666, oldInfo: existing} // filtered by the umask
	if existing != nil {
		o.mode, o.setMode = existing.Mode().Perm(), true
		old, err := os.Open(target)
		if err != nil {
			return nil, errorf(KindIO, "", "cannot open %s %s: %w", role, path, unwrapPath(err))
		}
		// The replaced file is the lock: a second run replacing the same
		// file finds it held.
		if err := lockExclusive(old, role, path); err != nil {
			old.Close()
			return nil, err
		}
		o.old = old
	}
	f, err := createTempBeside(target, o.mode)
	if err != nil {
		o.abort()
		return nil, errorf(KindIO, "", "cannot create %s %s: %w", role, path, unwrapPath(err))
	}
	o.f, o.tmp = f, f.Name()
	stale, live := sweepTemps(target, o.tmp)
	if len(stale) > 0 && note != nil {
		s := "s"
		if len(stale) == 1 {
			s = ""
		}
		note(fmt.Sprintf("removed %d stale temporary file%s left by an interrupted run: %s", len(stale), s, strings.Join(stale, ", ")))
	}
	if err := checkNoOtherWriter(target, role, path, existing, live); err != nil {
		o.abort()
		return nil, err
	}
	if o.old != nil && keepFrom > 0 {
		_, err := io.Copy(f, io.NewSectionReader(o.old, 0, 1<<62))
		if err != nil {
			o.abort()
			return nil, errorf(KindIO, "", "copying %s %s: %w", role, path, unwrapPath(err))
		}
	}
	return o, nil
}

// checkNoOtherWriter fails when another run is writing a new file at target
// (path as the user named it): with no file to lock yet, it is known by its
// temporary file, live (locked) beside target; or it has just put its file
// in place. Each run creates its own temporary file before it looks for
// others', so of two runs starting together at most one goes on. An
// existing target is locked instead (see openReplacement).
func checkNoOtherWriter(target, role, path string, existing fs.FileInfo, live string) error {
	if existing != nil {
		return nil
	}
	if live != "" {
		return &Error{Kind: KindRefused, Err: &lockedError{role: role, path: path, via: live}}
	}
	if _, err := os.Stat(target); err == nil {
		return &Error{Kind: KindRefused, Hint: "run again to replace it, if it is to be replaced",
			Err: &lockedError{role: role, path: path, appeared: true}}
	}
	return nil
}

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
		w.fec, err = w.openFile(fl.Path, "FEC device", fl.existing, fl.Offset, opts.Note)
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

// size returns the current size of the file written (of a block device:
// its size).
func (o *output) size() (uint64, error) {
	n, err := fileSize(o.f)
	return uint64(n), err
}

// checkDeviceRoom fails unless a block device written in place holds end
// bytes; files grow as needed.
func (o *output) checkDeviceRoom(role string, end uint64) error {
	info, err := o.f.Stat()
	if err != nil {
		return errorf(KindIO, "", "%s %s: %w", role, o.path, unwrapPath(err))
	}
	if !isBlockDevice(info) {
		return nil
	}
	size, err := blockDeviceSize(o.f)
	if err != nil {
		return errorf(KindIO, "", "%s %s: %w", role, o.path, err)
	}
	if size < end {
		return errorf(KindInput, "use a larger device, or a file",
			"%s %s is a block device of %d bytes, but what goes into it ends at byte %d", role, o.path, size, end)
	}
	return nil
}

// zero writes zeros over bytes [from, to).
func (o *output) zero(from, to uint64) error {
	if to <= from {
		return nil
	}
	if _, err := o.f.WriteAt(make([]byte, to-from), int64(from)); err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// truncate cuts a regular file written in place down to n bytes; devices
// keep their size.
func (o *output) truncate(n uint64) error {
	if !isRegular(o.f) {
		return nil
	}
	size, err := o.size()
	if err == nil && size > n {
		err = o.f.Truncate(int64(n))
	}
	if err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// extend grows the file to at least n bytes (with zeros): a tree or FEC
// area that ends in blocks never written still spans them.
func (o *output) extend(n uint64) error {
	size, err := o.size()
	if err != nil || size >= n || o.tmp == "" && !isRegular(o.f) {
		return err
	}
	if err := o.f.Truncate(int64(n)); err != nil {
		return errorf(KindIO, "", "writing %s up to byte %d: %w", o.path, n, unwrapPath(err))
	}
	return nil
}

func isRegular(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode().IsRegular()
}

// commit makes the written file final: synced, and renamed over its path.
func (o *output) commit() error {
	if o.done {
		return nil
	}
	o.done = true
	var err error
	if info, serr := o.f.Stat(); !o.noSync && (serr != nil || info.Mode()&(fs.ModeCharDevice|fs.ModeNamedPipe) == 0) {
		err = o.f.Sync() // a character device or a pipe has nothing to sync
	}
	if err == nil && o.setMode {
		err = o.f.Chmod(o.mode)
	}
	if err == nil && o.tmp != "" {
		err = o.checkUnchanged()
	}
	// Renamed (or removed) while still open, so still locked: another
	// run's RemoveStaleTemps never takes it for a dead run's.
	if err == nil && o.tmp != "" {
		err = os.Rename(o.tmp, o.target)
	}
	if err != nil && o.tmp != "" {
		os.Remove(o.tmp)
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if o.old != nil {
		o.old.Close()
	}
	if err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// checkUnchanged fails if the file to be replaced is no longer the one this
// run locked, or has appeared meanwhile: another run replaced it, and
// renaming now would silently drop that run's output.
func (o *output) checkUnchanged() error {
	now, err := os.Stat(o.target)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case err != nil && o.oldInfo == nil:
		return nil
	case err == nil && o.oldInfo != nil && os.SameFile(now, o.oldInfo):
		return nil
	}
	return errors.New("another process replaced it while this run was writing; nothing was replaced, run again")
}

// abort drops a temporary file; a file written in place keeps what was
// written.
func (o *output) abort() {
	if o.done {
		return
	}
	o.done = true
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
	if o.f != nil {
		o.f.Close()
	}
	if o.old != nil {
		o.old.Close()
	}
}

// writeThrough writes b at the current offset of a file written in place
// (a character device, a FIFO) in one write(2), never waiting for a FIFO's
// reader to make room: an error instead of a run that never ends.
func (o *output) writeThrough(b []byte) error {
	rc, err := o.f.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for {
			n, werr = unix.Write(int(fd), b)
			if werr != unix.EINTR {
				return true
			}
		}
	}); err != nil {
		return err
	}
	if werr == nil && n < len(b) {
		werr = io.ErrShortWrite
	}
	return werr
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
	if kind := detectFormat(f, size); kind != "" {
		return kind, nil
	}
	switch {
	case magicOnly, !info.Mode().IsRegular():
		return "", nil
	case holdsNothing(f, size):
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

// maxZeroScan bounds how much of an existing output holdsNothing reads:
// past it only a file of holes counts as holding nothing.
const maxZeroScan = 64 << 20

// holdsNothing reports whether the regular file f holds only zeros: it has
// no data at all (only holes), or its first size bytes, at most
// maxZeroScan, are all zero.
func holdsNothing(f *os.File, size int64) bool {
	if _, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA); errors.Is(err, unix.ENXIO) {
		return true // holes only
	}
	if size > maxZeroScan {
		return false
	}
	buf := make([]byte, min(size, 1<<20))
	for off := int64(0); off < size; off += int64(len(buf)) {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, b := range buf[:n] {
			if b != 0 {
				return false
			}
		}
		if err != nil && !(err == io.EOF && off+int64(n) >= size) {
			return false
		}
	}
	return true
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
	return openSmallOutput(path, "--root-hash-file", "a root hash file", foreignRootHash, force, note)
}

// openSmallOutput opens a small output file (a root hash, a vbmeta blob,
// a key) for writing with the rules of --root-hash-file: a regular file
// (through symbolic links, which stay) is replaced through a temporary
// file, but only if foreign finds nothing in it that the caller could not
// have written, or with force; a character device, a FIFO with a reader
// and the process's own descriptors (/dev/stdout) are written through; a
// block device, a socket and a FIFO nobody reads are refused. what names
// the kind of file the caller writes, for the refusal.
func openSmallOutput(path, role, what string, foreign func(string, fs.FileInfo) string, force bool, note func(string)) (*output, error) {
	if fd, ok := ownFD(path); ok {
		return openOwnFD(path, fd)
	}
	info, err := os.Stat(path) // through links
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return openReplacement(path, role, nil, 0, note)
	case err != nil:
		return nil, errorf(KindIO, "", "%s %s: %w", role, path, unwrapPath(err))
	case info.Mode().IsRegular():
		if err := checkNotLocked(role, path); err != nil {
			return nil, err
		}
		if !force {
			if why := foreign(path, info); why != "" {
				return nil, errorf(KindRefused, "name another file, or add --force to replace it",
					"%s %s is not %s (%s): replacing it would destroy it", role, path, what, why)
			}
		}
		return openReplacement(path, role, info, 0, note)
	case isBlockDevice(info):
		return nil, errorf(KindInput, "name a regular file", "%s %s is a block device: writing would overwrite its first bytes", role, path)
	case info.Mode()&fs.ModeSocket != 0:
		return nil, errorf(KindInput, "name a regular file", "%s %s is a socket", role, path)
	case info.Mode()&fs.ModeNamedPipe != 0:
		// Non-blocking: with no reader the open fails (ENXIO) at once
		// instead of waiting for one, maybe forever.
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENXIO) {
			return nil, errorf(KindInput, "start the reader first (e.g. cat "+path+" &), or name a regular file",
				"%s %s is a FIFO that no process is reading", role, path)
		}
		if err != nil {
			return nil, errorf(KindIO, "", "cannot open %s %s for writing: %w", role, path, err)
		}
		return &output{path: path, f: os.NewFile(uintptr(fd), path)}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0) // a character device, written through
	if err != nil {
		return nil, errorf(KindIO, "", "cannot open %s %s for writing: %w", role, path, unwrapPath(err))
	}
	return &output{path: path, f: f}, nil
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

// writeAll writes data into an output from openSmallOutput (or
// openRootHashInPlace) and commits it.
func (o *output) writeAll(data []byte) error {
	var err error
	switch {
	case o.rewrite:
		if err = o.f.Truncate(0); err == nil {
			_, err = o.f.WriteAt(data, 0)
		}
	case o.tmp == "": // a character device or a FIFO
		err = o.writeThrough(data)
	default:
		_, err = o.f.Write(data)
	}
	if err != nil {
		o.abort()
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return o.commit()
}

// writeStream writes p into an output from openSmallOutput: its temporary
// file, or through a character device or a FIFO, waiting for the room a
// FIFO's reader makes until ctx ends.
func (o *output) writeStream(ctx context.Context, p []byte) error {
	if o.done {
		return errorf(KindIO, "", "writing %s: %w", o.path, fs.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return interrupted(err, "", "interrupted while writing %s; nothing was put in its place", o.path)
	}
	if o.tmp == "" {
		stop := context.AfterFunc(ctx, func() { o.f.SetWriteDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	if _, err := o.f.Write(p); err != nil {
		if ctx.Err() != nil {
			return interrupted(ctx.Err(), "", "interrupted while writing %s; nothing was put in its place", o.path)
		}
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// ownFD reports whether path names, directly or through symbolic links, one
// of this process's own file descriptors (/dev/stdout, /proc/self/fd/N,
// /dev/fd/N), and which.
func ownFD(path string) (int, bool) {
	self := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	p := path
	for range 40 { // as the kernel's limit on nested links
		clean := filepath.Clean(p)
		for _, prefix := range []string{"/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/", self} {
			if rest, ok := strings.CutPrefix(clean, prefix); ok {
				if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
					return n, true
				}
			}
		}
		target, err := os.Readlink(p)
		if err != nil {
			return 0, false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return 0, false
}

// openOwnFD writes the root hash through a copy of the process's own file
// descriptor fd (e.g. stdout), at its current offset: replacing the file it
// stands for by rename would leave fd writing into the old, unlinked one,
// and opening it anew would write from its start.
func openOwnFD(path string, fd int) (*output, error) {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil && flags&unix.O_ACCMODE == unix.O_RDONLY {
		err = errors.New("open for reading only")
	}
	if err != nil {
		return nil, errorf(KindInput, "", "--root-hash-file %s is file descriptor %d of veritygen, which cannot be written: %w", path, fd, err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, errorf(KindIO, "", "--root-hash-file %s (file descriptor %d): %w", path, fd, err)
	}
	return &output{path: path, f: os.NewFile(uintptr(dup), path), noSync: true}, nil
}
