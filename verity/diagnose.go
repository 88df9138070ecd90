package verity

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// RootDiagnosis says what likely explains a top block that does not match
// the root hash (Report.RootMismatch): more often a parameter given wrong
// than corruption.
type RootDiagnosis struct {
	// Match, if not nil, holds the tree parameters (those given, with the
	// ones found changed) with which the top block matches the root hash:
	// the tree was made with them. DataBlockSize and DataBlocks are those
	// given: the top block does not tell them.
	Match *TreeOptions
	// Changed names the fields of Match that differ from those given,
	// with their values, as Go assignments to TreeOptions'
	// ("TreeOptions.Hash=blake2b-256", "TreeOptions.LegacyFormat=true",
	// "TreeOptions.Salt=4f2a" in hex, "TreeOptions.Salt=[]byte{}" for no
	// salt), in the order of the fields; a command line says them as its
	// flags.
	Changed []string
	// Hint says what to check or give, one suggestion per line, most
	// likely first.
	Hint string
}

// diagnoseRoot looks at the top block only (one block, cheap) for why it
// does not match root. For a tree without superblock it hashes the first
// block of the tree (the top level comes first) with every algorithm of
// root's digest size, both formats, the salt given or none, every hash
// block size and the tree at the offset given or at 0; with one data block
// and no hash block, the first data block with every data block size. A
// tree with a superblock has its parameters from there: then the root hash
// is another tree's, or HASH is. When the top block matches, the tree's
// shape may be what differs (a wrong DataBlocks or DataBlockSize,
// or DATA that grew): diagnoseShape walks it down. dataAvail is the bytes
// of DATA before the tree, hashSize the size of the hash device.
func diagnoseRoot(g *merkle.Geometry, given *TreeOptions, data, hash io.ReaderAt, dataAvail uint64, hashSize int64, root []byte) *RootDiagnosis {
	if g.Superblock {
		return &RootDiagnosis{Hint: "the top of the tree does not match the root hash, and its parameters come from HASH's superblock: " +
			"the root hash is likely another tree's, or HASH is another tree's file: check that it is this tree's root hash (printed when it was made)"}
	}
	d := &RootDiagnosis{}
	salts := [][]byte{g.Salt}
	if len(g.Salt) > 0 {
		salts = append(salts, []byte{})
	}
	offsets := []uint64{g.HashOffset}
	if g.HashOffset != 0 {
		offsets = append(offsets, 0)
	}
	src := hash
	if g.Levels == 0 {
		src, offsets = data, []uint64{0}
	}
	var block []byte
	note := "" // why the shape found differs, if it does
search:
	for bs := merkle.MinBlockSize; bs <= merkle.MaxBlockSize; bs *= 2 {
		for _, off := range offsets {
			if g.Levels > 0 && off%uint64(bs) != 0 {
				continue
			}
			if cap(block) < bs {
				block = make([]byte, merkle.MaxBlockSize)
			}
			b := block[:bs]
			if n, err := src.ReadAt(b, int64(off)); n < bs && err != nil {
				continue
			}
			for _, name := range hashes.Names() {
				alg, _ := hashes.Lookup(name)
				if alg.Size() != len(root) {
					continue
				}
				for _, format := range []int{g.Format(), 1 - g.Format()} {
					for _, salt := range salts {
						if !bytes.Equal(digest(alg, format, salt, b), root) {
							continue
						}
						m := *given
						m.Hash, m.LegacyFormat, m.Salt = name, format == 0, salt
						if g.Levels == 0 {
							m.DataBlockSize = bs
						} else {
							m.HashBlockSize, m.HashOffset = bs, off
						}
						d.Match = &m
						d.Changed = changedFlags(g, name, format, salt, bs, off)
						if g.Levels > 0 {
							note = diagnoseShape(g, d, b, data, hash, dataAvail, hashSize)
						}
						break search
					}
				}
			}
		}
	}
	if d.Match != nil && len(d.Changed) > 0 {
		d.Hint = fmt.Sprintf("the top block matches the root hash with %s: give %s%s", strings.Join(d.Changed, " "), strings.Join(d.Changed, " "), note)
		return d
	}
	d.Hint = "the top of the tree does not match the root hash: a tree without superblock must be given the parameters it was made with; " +
		"check TreeOptions.Hash, TreeOptions.Salt, TreeOptions.LegacyFormat, TreeOptions.HashBlockSize, TreeOptions.DataBlockSize, TreeOptions.DataBlocks and TreeOptions.HashOffset\n" +
		"no other algorithm, format, hash block size or salt-less hash makes the top block match: if the parameters are right, check that it is this tree's root hash (printed when it was made), else the top block is corrupted"
	return d
}

// digest is a block's digest with the salt where format puts it, through
// the same block hasher the tree is built with.
func digest(alg *hashes.Algorithm, format int, salt, block []byte) []byte {
	pos := hashes.SaltBefore
	if format == 0 {
		pos = hashes.SaltAfter
	}
	d := make([]byte, alg.Size())
	alg.NewBlockHasher(len(block), salt, pos).HashBlocks(d, len(d), block)
	return d
}

// changedFlags names the parameters that differ from g, as
// RootDiagnosis.Changed says them.
func changedFlags(g *merkle.Geometry, name string, format int, salt []byte, bs int, off uint64) []string {
	var out []string
	if name != g.Hash.Name() {
		out = append(out, "TreeOptions.Hash="+name)
	}
	if format != g.Format() {
		out = append(out, fmt.Sprintf("TreeOptions.LegacyFormat=%t", format == 0))
	}
	if !bytes.Equal(salt, g.Salt) {
		s := hex.EncodeToString(salt)
		if s == "" {
			s = "[]byte{}"
		}
		out = append(out, "TreeOptions.Salt="+s)
	}
	if g.Levels == 0 && bs != g.DataBlockSize {
		out = append(out, fmt.Sprintf("TreeOptions.DataBlockSize=%d", bs))
	}
	if g.Levels > 0 && bs != g.HashBlockSize {
		out = append(out, fmt.Sprintf("TreeOptions.HashBlockSize=%d", bs))
	}
	if off != g.HashOffset {
		out = append(out, fmt.Sprintf("TreeOptions.HashOffset=%d", off))
	}
	return out
}

// maxShapeLevels bounds the walk down the tree: no tree has more levels
// (2^64 data blocks at two digests a block).
const maxShapeLevels = 64

// diagnoseShape finds the number of data blocks, and their size, of the
// tree whose top block, top, matches the root hash with d.Match: a wrong
// DataBlocks or DataBlockSize, or DATA grown since the tree was
// made, gives a tree of another shape (HASH too short, or the top block's
// unused slots not zero) though its top block matches. A level's last
// block has digests up to its last child and zeros after: from the top
// down, each level's last block says how many blocks the level below has,
// one block read a level. Each level may be level 0; the count is taken
// if the last data block at some data block size hashes to the last
// digest (one more block read a size), and a tree that ends where HASH
// ends is preferred. If found and not what was given, d.Match and
// d.Changed get it; the note says why DATA's size misled, if it did.
func diagnoseShape(g *merkle.Geometry, d *RootDiagnosis, top []byte, data, hash io.ReaderAt, dataAvail uint64, hashSize int64) string {
	m := d.Match
	alg, _ := hashes.Lookup(m.Hash)
	format := 1
	if m.LegacyFormat {
		format = 0
	}
	shape, err := merkle.NewGeometry(merkle.Params{Hash: alg, LegacyFormat: format == 0, Salt: m.Salt, DataBlockSize: g.DataBlockSize,
		HashBlockSize: m.HashBlockSize, DataBlocks: 1, HashOffset: m.HashOffset})
	if err != nil {
		return ""
	}
	slot, per, hbs := shape.DigestSlot, uint64(shape.HashesPerBlock), uint64(m.HashBlockSize)
	// used is the number of slots of a hash block up to its last non-zero one.
	used := func(b []byte) uint64 {
		for s := len(b)/slot - 1; s >= 0; s-- {
			if slices.ContainsFunc(b[s*slot:(s+1)*slot], func(c byte) bool { return c != 0 }) {
				return uint64(s + 1)
			}
		}
		return 0
	}
	type candidate struct {
		blocks, end uint64
		last        []byte // the last data block's digest in level 0
	}
	var cands []candidate
	block := make([]byte, hbs)
	count, lastBlock, start := used(top), top, uint64(1)
	for levels := 1; count > 0 && levels <= maxShapeLevels; levels++ {
		// If this level is level 0, count is the number of data blocks.
		p := shape.Params
		p.DataBlocks = count
		if t, err := merkle.NewGeometry(p); err == nil && t.Levels == levels && t.HashEnd() <= uint64(hashSize) {
			i := (count - 1) % per * uint64(slot)
			cands = append(cands, candidate{count, t.HashEnd(), append([]byte{}, lastBlock[i:i+uint64(shape.DigestSize)]...)})
		}
		// Else the level below has count blocks, from block start: they
		// must fit in HASH.
		if count > uint64(hashSize)/hbs {
			break
		}
		off := m.HashOffset + (start+count-1)*hbs
		if off+hbs > uint64(hashSize) {
			break
		}
		if n, err := hash.ReadAt(block, int64(off)); n < len(block) && err != nil {
			break
		}
		n := used(block)
		if n == 0 {
			break
		}
		start += count
		count = (count-1)*per + n
		lastBlock = append(lastBlock[:0:0], block...)
	}
	// Exact ends first, stable otherwise: deeper trees come later.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Compare(b2i(a.end != uint64(hashSize)), b2i(b.end != uint64(hashSize)))
	})
	buf := make([]byte, merkle.MaxBlockSize)
	for _, c := range cands {
		for bs := merkle.MinBlockSize; bs <= merkle.MaxBlockSize; bs *= 2 {
			if c.blocks*uint64(bs) > dataAvail {
				break
			}
			b := buf[:bs]
			if n, err := data.ReadAt(b, int64((c.blocks-1)*uint64(bs))); n < bs && err != nil {
				continue
			}
			if !bytes.Equal(digest(alg, format, m.Salt, b), c.last) {
				continue
			}
			whole := dataAvail / uint64(bs)
			if bs == g.DataBlockSize && c.blocks == g.DataBlocks {
				return ""
			}
			var note string
			if bs != g.DataBlockSize {
				d.Changed = append(d.Changed, fmt.Sprintf("TreeOptions.DataBlockSize=%d", bs))
			}
			if m.DataBlocks != 0 || c.blocks != whole {
				d.Changed = append(d.Changed, fmt.Sprintf("TreeOptions.DataBlocks=%d", c.blocks))
				if m.DataBlocks == 0 && c.blocks < whole {
					note = fmt.Sprintf(" (DATA has %d whole blocks: did it grow since the tree was made?)", whole)
				}
			}
			m.DataBlockSize, m.DataBlocks = bs, c.blocks
			return note
		}
	}
	return ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
