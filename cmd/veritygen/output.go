package main

import (
	"io"
	"io/fs"
	"os"

	"github.com/veritytree/veritytree/internal/cli"
)

// output is a file veritygen writes: either a temporary file renamed over
// its path when complete, so an interrupted run leaves nothing half-written
// under that name, or, for DATA itself and for devices, the file in place.
type output struct {
	path    string // as the user named it, for messages
	f       *os.File
	tmp     string // temporary name, "" when written in place
	mode    fs.FileMode
	setMode bool // restore the replaced file's mode, whatever the umask
	done    bool
}

// openInPlace opens an existing file (DATA, a device) for writing in place.
func openInPlace(path, role string) (*output, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, cli.Errorf("", "cannot open %s %s for writing: %v", role, path, cli.UnwrapPath(err))
	}
	return &output{path: path, f: f}, nil
}

// openReplacement starts a new version of path in a temporary file beside
// it. When keepFrom > 0 and path exists, its bytes are copied first, so that
// writing from keepFrom on leaves those before it as they were.
func openReplacement(path, role string, existing fs.FileInfo, keepFrom uint64) (*output, error) {
	if existing != nil && !existing.Mode().IsRegular() {
		return openInPlace(path, role)
	}
	target := cli.ResolveLink(path)       // a link is written through
	o := &output{path: path, mode: 0o666} // filtered by the umask
	if existing != nil {
		o.mode, o.setMode = existing.Mode().Perm(), true
	}
	f, err := cli.CreateTempBeside(target, o.mode)
	if err != nil {
		return nil, cli.Errorf("", "cannot create %s %s: %v", role, path, cli.UnwrapPath(err))
	}
	o.f, o.tmp = f, f.Name()
	if existing != nil && keepFrom > 0 {
		src, err := os.Open(target)
		if err == nil {
			_, err = io.Copy(f, src)
			src.Close()
		}
		if err != nil {
			o.abort()
			return nil, cli.Errorf("", "copying %s %s: %v", role, path, cli.UnwrapPath(err))
		}
	}
	return o, nil
}

// size returns the current size of the file written (of a block device:
// its size).
func (o *output) size() (uint64, error) {
	n, err := cli.Size(o.f)
	return uint64(n), err
}

// checkDeviceRoom fails unless a block device written in place holds end
// bytes; files grow as needed.
func (o *output) checkDeviceRoom(role string, end uint64) error {
	info, err := o.f.Stat()
	if err != nil || !cli.IsBlockDevice(info) {
		return err
	}
	size, err := cli.BlockDeviceSize(o.f)
	if err != nil {
		return cli.Errorf("", "%s %s: %v", role, o.path, err)
	}
	if size < end {
		return cli.Errorf("use a larger device, or a file",
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
		return cli.Errorf("", "writing %s: %v", o.path, cli.UnwrapPath(err))
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
		return cli.Errorf("", "writing %s: %v", o.path, cli.UnwrapPath(err))
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
	return o.f.Truncate(int64(n))
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
	err := o.f.Sync()
	if err == nil && o.setMode {
		err = o.f.Chmod(o.mode)
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && o.tmp != "" {
		err = os.Rename(o.tmp, cli.ResolveLink(o.path))
	}
	if err != nil {
		if o.tmp != "" {
			os.Remove(o.tmp)
		}
		return cli.Errorf("", "writing %s: %v", o.path, cli.UnwrapPath(err))
	}
	return nil
}

// abort drops a temporary file; a file written in place keeps what was
// written.
func (o *output) abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
}
