package verity

import (
	"errors"
	"io/fs"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// What FormatOptions.InPlace changes in Format: how a missing output is
// created and a root hash file opened, and the bytes kept between the
// superblock and the tree. The rest is in formatOutputs.

// openRootHashInPlace prepares the root hash file as veritysetup writes it:
// a regular file is opened and locked now, and truncated and written once
// the root hash is known (truncating it now would lose the old one if the
// run fails); a new one is created now (see openCreatedInPlace), so that a
// second run finds it locked; anything else (a FIFO, a character device,
// the process's own stdout) is written through as openRootHashFile does,
// whatever it is.
func openRootHashInPlace(path string, created *[]string, note func(string)) (*output, error) {
	const role = "FormatOptions.RootHashFile"
	if _, own := safefile.OwnFD(path); !own {
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			o, err := openCreatedInPlace(path, role, created)
			if o != nil {
				o.s.RewriteOnWrite()
			}
			return o, err
		case err == nil && info.Mode().IsRegular():
			o, err := openInPlace(path, role)
			if o != nil {
				o.s.RewriteOnWrite()
			}
			return o, err
		}
	}
	return openRootHashFile(path, true, note)
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

// restoreSuperblockGap writes back what keepSuperblockGap kept, if anything.
func restoreSuperblockGap(o *output, g *merkle.Geometry, gap []byte) error {
	if len(gap) == 0 {
		return nil
	}
	if _, err := o.f.WriteAt(gap, int64(g.HashOffset+merkle.SuperblockSize)); err != nil {
		return errorf(KindIO, "", "writing %s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// superblockOnlyEnd sets the length of a HASH that holds only a
// superblock (a tree of one data block) as veritysetup leaves it: it
// writes the superblock in a block of the hash block size, at most its
// page size, so that HASH ends there, or where it ended before if
// further. The build wrote zeros up to the tree's offset; gap is what
// was there before it.
func superblockOnlyEnd(o *output, g *merkle.Geometry, gap []byte) error {
	b := min(uint64(g.HashBlockSize), veritysetupPageSize)
	end := g.HashOffset - g.HashOffset%b + b
	if len(gap) > 0 {
		end = max(end, g.HashOffset+merkle.SuperblockSize+uint64(len(gap)))
	}
	size, err := o.size()
	if err != nil {
		return errorf(KindIO, "", "%s: %w", o.path, unwrapPath(err))
	}
	if size == g.TreeOffset() && end < size {
		return o.truncate(end)
	}
	return o.extend(end)
}

// veritysetupPageSize is the block size veritysetup writes a regular
// file's superblock in (its page size, 4096 on the machines it runs on),
// when the hash block size is larger.
const veritysetupPageSize = 4096
