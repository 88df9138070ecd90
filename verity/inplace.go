package verity

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/veritytree/veritytree/merkle"
)

// FormatInPlace is Format writing its outputs the way veritysetup format
// does, for callers that must behave as it does (the veritysetup front of
// veritygen): an existing hash file, FEC file or root hash file is written
// in place, never replaced, whatever it held, so that it keeps its mode,
// its links and every byte outside what is written (before HashOffset,
// past the tree or the parity); a missing one is created with mode 0600,
// as veritysetup creates them. The root hash file is truncated and
// written once the tree is complete.
//
// What that gives up, and Format keeps: an interrupted run leaves a
// partial tree under HASH, and nothing is refused for not looking like a
// tree (opts.Force is implied). Everything else is Format's: the same
// checks before anything is written, the same tree, parity and errors.
// Append is not something veritysetup does and is refused.
func FormatInPlace(ctx context.Context, dataPath, hashPath string, opts *FormatOptions) (*FormatResult, error) {
	if opts == nil {
		opts = &FormatOptions{}
	}
	if opts.Append {
		return nil, paramErrorf("Append", "use Format", "FormatInPlace does not append")
	}
	if _, err := opts.params(); err != nil {
		return nil, err
	}
	src, err := OpenSource(dataPath, &SourceOptions{Raw: opts.Raw, Warn: opts.Warn})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := lockShared(src.file, "DATA", dataPath); err != nil {
		return nil, err
	}
	l, err := planFormat(src, hashPath, opts)
	if err != nil {
		return nil, err
	}
	g, fl := l.Geometry, l.FEC
	if l.TreeInData || fl != nil && fl.InData {
		if err := lockExclusive(src.file, "DATA", dataPath); err != nil {
			return nil, err
		}
	}
	// Every output is opened (and locked) before anything is hashed. The
	// files this run creates are removed again if it fails before the
	// tree and the parity are complete, as a replacement's temporary file
	// would be: only veritysetup leaves them behind.
	var created []string
	committed := false
	defer func() {
		if !committed {
			for _, p := range created {
				os.Remove(p)
			}
		}
	}()
	var hashOut *output
	if l.TreeInData {
		hashOut, err = openInPlace(dataPath, "DATA")
	} else {
		hashOut, err = openOrCreateInPlace(l.HashPath, "HASH", l.hashInfo, &created)
	}
	if err != nil {
		return nil, err
	}
	defer hashOut.abort()
	var fecOut *output
	if fl != nil && !fl.InHash {
		if fl.InData {
			fecOut, err = openInPlace(dataPath, "DATA")
		} else {
			fecOut, err = openOrCreateInPlace(fl.Path, "FEC device", fl.existing, &created)
		}
		if err != nil {
			return nil, err
		}
		defer fecOut.abort()
	}
	var root *deferredRootHash
	if p := opts.RootHashFile; p != "" {
		if root, err = openRootHashInPlace(p, opts.Note); err != nil {
			return nil, err
		}
		defer root.abort()
	}
	if err := ctx.Err(); err != nil {
		return nil, interrupted(err, "", "interrupted; nothing was written")
	}
	role := "HASH"
	if l.TreeInData {
		role = "DATA"
	}
	if err := hashOut.checkDeviceRoom(role, l.HashOutputEnd); err != nil {
		return nil, err
	}
	if opts.OnLayout != nil {
		opts.OnLayout(l)
	}
	gap, err := keepSuperblockGap(hashOut, g)
	if err != nil {
		return nil, err
	}
	rootHash, err := l.build(ctx, src, hashOut, opts)
	if err == nil && len(gap) > 0 {
		err = restoreSuperblockGap(hashOut, g, gap)
	}
	if err == nil && !l.TreeInData {
		// A tree whose last blocks were never written still spans them.
		err = hashOut.extend(g.HashEnd())
	}
	var fecInfo *FECInfo
	if err == nil && fl != nil {
		fecInfo, err = writeFEC(ctx, g, fl, src, hashOut, fecOut, opts)
	}
	if err == nil {
		err = hashOut.commit()
	}
	if err == nil && fecOut != nil {
		err = fecOut.commit()
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, interrupted(err, "run the same command again to write the whole tree",
				"interrupted; the tree in %s from byte %d is incomplete", l.HashPath, g.HashOffset)
		}
		return nil, asError(KindIO, err)
	}
	committed = true
	if root != nil {
		if err := root.write(hex.EncodeToString(rootHash)); err != nil {
			return nil, &Error{Kind: KindIO, Err: fmt.Errorf("the new tree is in %s, root hash %x; --root-hash-file: %w", l.HashPath, rootHash, err)}
		}
	}
	return &FormatResult{Layout: l, RootHash: rootHash, FEC: fecInfo}, nil
}

// openOrCreateInPlace opens path for writing in place, locked, creating it
// (mode 0600, as veritysetup) when existing is nil; a file created is
// added to created.
func openOrCreateInPlace(path, role string, existing fs.FileInfo, created *[]string) (*output, error) {
	if existing != nil {
		return openInPlace(path, role)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, errorf(KindIO, "", "cannot create %s %s: %w", role, path, unwrapPath(err))
	}
	*created = append(*created, path)
	if err := lockExclusive(f, role, path); err != nil {
		f.Close()
		return nil, err
	}
	return &output{path: path, f: f}, nil
}

// deferredRootHash is a root hash file as veritysetup writes it: a regular
// file (or a new one, mode 0600) truncated and written once the root hash
// is known, or anything else (a FIFO, a character device, the process's
// own stdout) written through as Format does.
type deferredRootHash struct {
	path    string
	through *output // nil for a regular file
}

func openRootHashInPlace(path string, note func(string)) (*deferredRootHash, error) {
	if _, own := ownFD(path); !own {
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && info.Mode().IsRegular() {
			// Opened when the root hash is known: truncating it now would
			// lose the old one if the run fails.
			return &deferredRootHash{path: path}, nil
		}
	}
	o, err := openRootHashFile(path, true, note)
	if err != nil {
		return nil, err
	}
	return &deferredRootHash{path: path, through: o}, nil
}

func (r *deferredRootHash) abort() {
	if r.through != nil {
		r.through.abort()
	}
}

func (r *deferredRootHash) write(rootHex string) error {
	if r.through != nil {
		return r.through.writeRootHash(rootHex)
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return errorf(KindIO, "", "cannot create root hash file %s for writing: %w", r.path, unwrapPath(err))
	}
	_, err = f.Write([]byte(rootHex))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errorf(KindIO, "", "writing %s: %w", r.path, unwrapPath(err))
	}
	return nil
}

// keepSuperblockGap returns the bytes an existing output holds between the
// superblock and the tree (at most a hash block): veritysetup writes the
// 512-byte superblock alone and leaves them as they were, where Format
// writes zeros. Nothing when there is no superblock or no such bytes.
func keepSuperblockGap(o *output, g *merkle.Geometry) ([]byte, error) {
	if !g.Superblock {
		return nil, nil
	}
	from, to := g.HashOffset+merkle.SuperblockSize, g.TreeOffset()
	size, err := o.size()
	if err != nil {
		return nil, errorf(KindIO, "", "%s: %w", o.path, unwrapPath(err))
	}
	to = min(to, size)
	if to <= from {
		return nil, nil
	}
	gap := make([]byte, to-from)
	if _, err := o.f.ReadAt(gap, int64(from)); err != nil {
		return nil, errorf(KindIO, "", "reading %s: %w", o.path, unwrapPath(err))
	}
	return gap, nil
}

// restoreSuperblockGap writes back what keepSuperblockGap kept.
func restoreSuperblockGap(o *output, g *merkle.Geometry, gap []byte) error {
	if _, err := o.f.WriteAt(gap, int64(g.HashOffset+merkle.SuperblockSize)); err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}
