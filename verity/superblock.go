package verity

import (
	"errors"
	"fmt"
	"io"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// ReadSuperblock reads the verity superblock at byte offset of hashPath (a
// regular file or a block device), as veritysetup dump does, and returns
// the tree it describes. offset is veritysetup's --hash-offset: a multiple
// of 512. A file another process writes (holding its exclusive lock) is a
// KindRefused error matching ErrLocked, not read.
func ReadSuperblock(hashPath string, offset uint64) (*merkle.Geometry, error) {
	if err := checkSuperblockOffset(offset); err != nil {
		return nil, err
	}
	f, _, err := openImage("HASH", hashPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := readSuperblock(f, hashPath, offset)
	if err != nil {
		return nil, err
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return nil, errorf(KindInput, "", "HASH %s: the superblock describes an impossible tree: %v", hashPath, err)
	}
	return g, nil
}

// checkSuperblockOffset checks a hash offset where a superblock is to be
// read, before its hash block size is known.
func checkSuperblockOffset(offset uint64) error {
	if offset%merkle.SuperblockSize != 0 {
		return paramErrorf("HashOffset", "", "TreeOptions.HashOffset %d is not a multiple of 512", offset)
	}
	return checkHashOffset(offset, merkle.MinBlockSize)
}

// readSuperblock reads and decodes the superblock at the hash offset.
func readSuperblock(hashFile io.ReaderAt, hashPath string, offset uint64) (merkle.Params, error) {
	b := make([]byte, merkle.SuperblockSize)
	if n, err := hashFile.ReadAt(b, int64(offset)); n < len(b) {
		if err == nil || err == io.EOF {
			return merkle.Params{}, errorf(KindInput, "if the tree has no superblock, add TreeOptions.NoSuperblock and its parameters",
				"HASH %s ends before a superblock at byte %d", hashPath, offset)
		}
		return merkle.Params{}, errorf(KindIO, "", "reading the superblock of %s at byte %d: %v", hashPath, offset, unwrapPath(err))
	}
	p, err := merkle.DecodeSuperblock(b)
	if err != nil {
		hint := "if the tree was made with TreeOptions.NoSuperblock, add TreeOptions.NoSuperblock and its parameters (TreeOptions.Hash, TreeOptions.Salt, ...)"
		if offset == 0 {
			hint += "\nif the tree is inside the image, give its place with TreeOptions.HashOffset"
		}
		if se := (*merkle.SuperblockError)(nil); errors.As(err, &se) && hashes.Unsupported(se.Name) != "" {
			// A superblock, of a tree made with an algorithm we lack
			// (veritysetup has whirlpool, sm3...): not another layout.
			hint = "the tree was made with an algorithm this program does not have: check it with the tool that made it (veritysetup verify)"
		}
		return merkle.Params{}, &Error{Kind: KindInput, Err: fmt.Errorf("HASH %s has no valid verity superblock at byte %d: %w", hashPath, offset, err), Hint: hint}
	}
	p.HashOffset = offset
	return p, nil
}
