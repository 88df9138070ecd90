package verity

import (
	"io"
	"os"

	"github.com/veritytree/veritytree/merkle"
)

// OpenOptions tune Open. The zero value (or nil) reads a tree whose
// superblock is at the start of the hash file and verifies every block on
// every read.
type OpenOptions struct {
	// TreeOptions: as in VerifyOptions, HashOffset always, the rest only
	// with NoSuperblock (Salt then required).
	TreeOptions
	// Raw reads the data as it is, even if it starts with the Android
	// sparse magic (as VerifyOptions.Raw).
	Raw bool
	// Reader tunes the verifying reader (the kernel's ignore_zero_blocks
	// and check_at_most_once, the hash block cache); nil means defaults.
	Reader *merkle.ReaderOptions
}

// Reader reads the data through the hash tree, as dm-verity does in the
// kernel (veritysetup open, in user space): every block a read touches is
// checked against the tree, up to the root hash, before any of its bytes
// are returned. A read of a corrupted block fails with a
// *merkle.CorruptionError (errors.Is ErrCorrupt). Safe for concurrent use.
type Reader struct {
	r        *merkle.Reader
	geometry *merkle.Geometry
	src      *Source
	hash     *os.File
}

// ReadAt reads len(p) bytes of the data at off (io.ReaderAt), each block
// checked against the tree before any of its bytes are returned; past Size
// it returns io.EOF. On failure n counts the verified bytes before the
// first block that failed, and err is that block's failure (see
// merkle.Reader.ReadAt).
func (r *Reader) ReadAt(p []byte, off int64) (int, error) { return r.r.ReadAt(p, off) }

// Size is the size of the data the tree covers, in bytes.
func (r *Reader) Size() int64 { return r.r.Size() }

// Geometry is the tree the Reader checks against.
func (r *Reader) Geometry() *merkle.Geometry { return r.geometry }

// DataFormat is "raw", or "android-sparse" when the data is read as the
// image an Android sparse file expands to (as VerifyResult.DataFormat).
func (r *Reader) DataFormat() string { return r.src.Format() }

// Close closes the files.
func (r *Reader) Close() error {
	err := r.src.Close()
	if r.hash != nil {
		if herr := r.hash.Close(); err == nil {
			err = herr
		}
	}
	return err
}

// Open opens the data at dataPath for reading through its tree in the hash
// file hashPath (it may be the same file, with the tree at HashOffset),
// checked against root. The tree's parameters come from its superblock (or
// from opts with NoSuperblock). The data is read as Verify and Format read
// it: an Android sparse image as the image it expands to (read through its
// index, never expanded on disk; its checksums, if any, checked first),
// unless Raw; when HASH is that same sparse file, the tree is read from
// the expansion too, at HashOffset in it. Nothing is hashed until the
// first read. Both files are locked shared until the Reader is closed: a
// file another process writes is a KindRefused error matching ErrLocked,
// and a writer of either fails until the Reader is closed. The caller
// closes it.
func Open(dataPath, hashPath string, root []byte, opts *OpenOptions) (*Reader, error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	vo := VerifyOptions{TreeOptions: opts.TreeOptions}
	p, err := vo.Check()
	if err != nil {
		return nil, err
	}
	src, err := OpenSource(dataPath, &SourceOptions{Raw: opts.Raw})
	if err != nil {
		return nil, err
	}
	r := &Reader{src: src}
	fail := func(err error) (*Reader, error) {
		r.Close()
		return nil, err
	}
	hash, hashSize, err := openImage("HASH", hashPath)
	if err != nil {
		return fail(err)
	}
	r.hash = hash
	dataInfo, err := src.file.Stat()
	if err != nil {
		return fail(errorf(KindIO, "", "DATA %s: %v", dataPath, unwrapPath(err)))
	}
	hashInfo, err := hash.Stat()
	if err != nil {
		return fail(errorf(KindIO, "", "HASH %s: %v", hashPath, unwrapPath(err)))
	}
	inPlace := sameDevice(dataInfo, hashInfo)
	if inPlace && p.HashOffset == 0 {
		return fail(paramErrorf("HashOffset", "give the tree's place in DATA with TreeOptions.HashOffset", "HASH is DATA (%s) and no TreeOptions.HashOffset says where the tree is", hashPath))
	}
	// As Verify: with HASH the same sparse file as DATA, the tree is in
	// the expansion.
	var hashR io.ReaderAt = guardShrink(hash, "HASH", hashPath, hashSize)
	if inPlace && src.sparse != nil {
		hashR, hashSize = src, src.Size()
	}
	g, err := geometryFor(p, src, hashR, hashPath, hashSize, inPlace, root)
	if err != nil {
		return fail(err)
	}
	mr, err := merkle.NewReader(g, src, hashR, root, opts.Reader)
	if err != nil {
		return fail(errorf(KindParam, "", "%v", err))
	}
	r.r, r.geometry = mr, g
	return r, nil
}

var _ io.ReaderAt = (*Reader)(nil)
