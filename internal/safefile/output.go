package safefile

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
)

// Output is a file the verity package's Format (or another writer) writes: either a temporary file renamed over
// its path when complete, so an interrupted run leaves nothing half-written
// under that name, or, for DATA itself and for devices, the file in place.
// Every output is locked (flock) from its opening to its commit: a file
// written in place through f, a replaced file through the old file
// (locked), so that two runs never write the same file at once.
type Output struct {
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

// OpenInPlace opens an existing file (DATA, a device) for writing in place,
// locked exclusively.
func OpenInPlace(path, role string) (*Output, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, errorf(KindIO, "", "cannot open %s %s for writing: %w", role, path, unwrapPath(err))
	}
	return lockInPlace(f, role, path)
}

// lockInPlace makes f, just opened from path, an output written in place,
// locked exclusively; f is closed if the lock is refused.
func lockInPlace(f *os.File, role, path string) (*Output, error) {
	if err := LockExclusive(f, role, path); err != nil {
		f.Close()
		return nil, err
	}
	return &Output{path: path, f: f}, nil
}

// OpenReplacement starts a new version of path in a temporary file beside
// it. When keepFrom > 0 and path exists, its bytes are copied first, so that
// writing from keepFrom on leaves those before it as they were. Temporary
// files of earlier, killed runs for the same path are removed (and named
// through note, if not nil).
func OpenReplacement(path, role string, existing fs.FileInfo, keepFrom uint64, note func(string)) (*Output, error) {
	if existing != nil && !existing.Mode().IsRegular() {
		// A block device: the callers refused every other kind
		// (checkImageType) before anything was opened.
		return OpenInPlace(path, role)
	}
	target := resolveLink(path) // a link is written through
	if existing != nil && target == path {
		if l, err := os.Lstat(path); err == nil && l.Mode()&fs.ModeSymlink != 0 {
			// A link whose target has no usable name (e.g. a deleted file
			// through /proc): renaming would replace the link itself.
			return nil, errorf(KindInput, "name the file itself", "%s %s is a symbolic link to a file that cannot be replaced by name", role, path)
		}
	}
	o := &Output{path: path, target: target, mode: 0o666, oldInfo: existing} // filtered by the umask
	if existing != nil {
		o.mode, o.setMode = existing.Mode().Perm(), true
		old, err := os.Open(target)
		if err != nil {
			return nil, errorf(KindIO, "", "cannot open %s %s: %w", role, path, unwrapPath(err))
		}
		// The replaced file is the lock: a second run replacing the same
		// file finds it held.
		if err := LockExclusive(old, role, path); err != nil {
			old.Close()
			return nil, err
		}
		o.old = old
	}
	f, err := createTempBeside(target, o.mode)
	if err != nil {
		o.Abort()
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
		o.Abort()
		return nil, err
	}
	if o.old != nil && keepFrom > 0 {
		_, err := io.Copy(f, io.NewSectionReader(o.old, 0, 1<<62))
		if err != nil {
			o.Abort()
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
// existing target is locked instead (see OpenReplacement).
func checkNoOtherWriter(target, role, path string, existing fs.FileInfo, live string) error {
	if existing != nil {
		return nil
	}
	if live != "" {
		return &Error{Kind: KindRefused, Err: &LockedError{Role: role, Path: path, Via: live}}
	}
	if _, err := os.Stat(target); err == nil {
		return &Error{Kind: KindRefused, Hint: "run again to replace it, if it is to be replaced",
			Err: &LockedError{Role: role, Path: path, Appeared: true}}
	}
	return nil
}

// Size returns the current size of the file written (of a block device:
// its size).
func (o *Output) Size() (uint64, error) {
	n, err := FileSize(o.f)
	return uint64(n), err
}

// CheckDeviceRoom fails unless a block device written in place holds end
// bytes; files grow as needed.
func (o *Output) CheckDeviceRoom(role string, end uint64) error {
	info, err := o.f.Stat()
	if err != nil {
		return errorf(KindIO, "", "%s %s: %w", role, o.path, unwrapPath(err))
	}
	if !IsBlockDevice(info) {
		return nil
	}
	size, err := BlockDeviceSize(o.f)
	if err != nil {
		return errorf(KindIO, "", "%s %s: %w", role, o.path, err)
	}
	if size < end {
		return errorf(KindInput, "use a larger device, or a file",
			"%s %s is a block device of %d bytes, but what goes into it ends at byte %d", role, o.path, size, end)
	}
	return nil
}

// Zero writes zeros over bytes [from, to).
func (o *Output) Zero(from, to uint64) error {
	if to <= from {
		return nil
	}
	if _, err := o.f.WriteAt(make([]byte, to-from), int64(from)); err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// Truncate cuts a regular file written in place down to n bytes; devices
// keep their size.
func (o *Output) Truncate(n uint64) error {
	if !isRegular(o.f) {
		return nil
	}
	size, err := o.Size()
	if err == nil && size > n {
		err = o.f.Truncate(int64(n))
	}
	if err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// Extend grows the file to at least n bytes (with zeros): a tree or FEC
// area that ends in blocks never written still spans them.
func (o *Output) Extend(n uint64) error {
	size, err := o.Size()
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

// Commit makes the written file final: synced, and renamed over its path.
func (o *Output) Commit() error {
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
func (o *Output) checkUnchanged() error {
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

// Abort drops a temporary file; a file written in place keeps what was
// written.
func (o *Output) Abort() {
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

// maxZeroScan bounds how much of an existing output HoldsNothing reads:
// past it only a file of holes counts as holding nothing (see HoldsNothing).
const maxZeroScan = 64 << 20

// HoldsNothing reports whether the regular file f holds only zeros: it has
// no data at all (only holes), or its first size bytes, at most
// maxZeroScan, are all zero.
func HoldsNothing(f *os.File, size int64) bool {
	if _, err := SeekData(f, 0); errors.Is(err, ErrNoData) {
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

// OpenSmall opens a small output file (a root hash, a vbmeta blob,
// a key) for writing with the rules of --root-hash-file: a regular file
// (through symbolic links, which stay) is replaced through a temporary
// file, but only if foreign finds nothing in it that the caller could not
// have written, or with force; a character device, a FIFO with a reader
// and the process's own descriptors (/dev/stdout) are written through; a
// block device, a socket and a FIFO nobody reads are refused. what names
// the kind of file the caller writes, for the refusal.
func OpenSmall(path, role, what string, foreign func(string, fs.FileInfo) string, force bool, note func(string)) (*Output, error) {
	if fd, ok := OwnFD(path); ok {
		return openOwnFD(path, role, fd)
	}
	info, err := os.Stat(path) // through links
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return OpenReplacement(path, role, nil, 0, note)
	case err != nil:
		return nil, errorf(KindIO, "", "%s %s: %w", role, path, unwrapPath(err))
	case info.Mode().IsRegular():
		if err := CheckNotLocked(role, path); err != nil {
			return nil, err
		}
		if !force {
			if why := foreign(path, info); why != "" {
				// The callers that take a force option say it in a
				// hint of their own (verity's FormatOptions.Force).
				e := errorf(KindRefused, "name another file, or remove this one first",
					"%s %s is not %s (%s): replacing it would destroy it", role, path, what, why)
				e.Err = foreignError{e.Err}
				return nil, e
			}
		}
		return OpenReplacement(path, role, info, 0, note)
	case IsBlockDevice(info):
		return nil, errorf(KindInput, "name a regular file", "%s %s is a block device: writing would overwrite its first bytes", role, path)
	case info.Mode()&fs.ModeSocket != 0:
		return nil, errorf(KindInput, "name a regular file", "%s %s is a socket", role, path)
	case info.Mode()&fs.ModeNamedPipe != 0:
		return openFIFOWriter(path, role)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0) // a character device, written through
	if err != nil {
		return nil, errorf(KindIO, "", "cannot open %s %s for writing: %w", role, path, unwrapPath(err))
	}
	return &Output{path: path, f: f}, nil
}

// WriteAll writes data into an output from openSmallOutput (or
// openRootHashInPlace) and commits it.
func (o *Output) WriteAll(data []byte) error {
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
		o.Abort()
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return o.Commit()
}

// WriteStream writes p into an output from openSmallOutput: its temporary
// file, or through a character device or a FIFO, waiting for the room a
// FIFO's reader makes until ctx ends.
func (o *Output) WriteStream(ctx context.Context, p []byte) error {
	if o.done {
		return errorf(KindIO, "", "writing %s: %w", o.path, fs.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return &Error{Kind: KindIO, Err: &causedError{msg: fmt.Sprintf("interrupted while writing %s; nothing was put in its place", o.path), cause: err}}
	}
	if o.tmp == "" {
		stop := context.AfterFunc(ctx, func() { o.f.SetWriteDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	if _, err := o.f.Write(p); err != nil {
		if ctx.Err() != nil {
			return &Error{Kind: KindIO, Err: &causedError{msg: fmt.Sprintf("interrupted while writing %s; nothing was put in its place", o.path), cause: ctx.Err()}}
		}
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// OwnFD reports whether path names, directly or through symbolic links, one
// of this process's own file descriptors (/dev/stdout, /proc/self/fd/N,
// /dev/fd/N), and which.
func OwnFD(path string) (int, bool) {
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

// File is the open file written: the temporary file of a replacement, or
// the file itself.
func (o *Output) File() *os.File { return o.f }

// Path is the file's name as the user gave it, for messages.
func (o *Output) Path() string { return o.path }

// Temp is the temporary file's name, "" when the file is written in
// place.
func (o *Output) Temp() string { return o.tmp }

// RewriteOnWrite makes WriteAll of a regular file written in place
// truncate it first and write from its start (a root hash file written as
// veritysetup writes it).
func (o *Output) RewriteOnWrite() { o.rewrite = true }

// OpenCreatedInPlace creates path (mode 0600, as veritysetup creates its
// outputs) to be written in place, locked; it is added to created, so that
// a run that fails removes it again. A path another run created meanwhile
// is that run's: reported as locked, and left alone.
func OpenCreatedInPlace(path, role string, created *[]string) (*Output, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, &Error{Kind: KindRefused, Hint: "run again to replace it, if it is to be replaced",
			Err: &LockedError{Role: role, Path: path, Appeared: true}}
	}
	if err != nil {
		return nil, errorf(KindIO, "", "cannot create %s %s: %w", role, path, unwrapPath(err))
	}
	o, err := lockInPlace(f, role, path)
	if err != nil {
		// Another run has it already: its file now, not ours to remove.
		return nil, err
	}
	*created = append(*created, path)
	return o, nil
}
