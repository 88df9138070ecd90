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

// size returns the current size of the file written.
func (o *output) size() (uint64, error) {
	off, err := o.f.Seek(0, io.SeekEnd)
	return uint64(off), err
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
