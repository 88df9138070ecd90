package verity

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
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
	// Changed names the flags of Match that differ from those given,
	// with their values, as veritygen spells them ("--hash=blake2b-256").
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
// is another tree's, or HASH is.
func diagnoseRoot(g *merkle.Geometry, given *TreeOptions, data, hash io.ReaderAt, root []byte) *RootDiagnosis {
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
				for _, format := range []int{g.Format, 1 - g.Format} {
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
						break search
					}
				}
			}
		}
	}
	if d.Match != nil && len(d.Changed) > 0 {
		d.Hint = fmt.Sprintf("the top block matches the root hash with %s: give %s", strings.Join(d.Changed, " "), strings.Join(d.Changed, " "))
		return d
	}
	d.Hint = "the top of the tree does not match the root hash: a tree without superblock must be given the parameters it was made with; " +
		"check --hash, --salt, --format, --hash-block-size, --data-block-size, --data-blocks and --hash-offset\n" +
		"no other algorithm, format, hash block size or salt-less hash makes the top block match: if the parameters are right, check that it is this tree's root hash (printed when it was made), else the top block is corrupted"
	return d
}

// digest is a block's digest with the salt where format puts it.
func digest(alg *hashes.Algorithm, format int, salt, block []byte) []byte {
	h := alg.New()
	if format == 0 {
		h.Write(block)
		h.Write(salt)
	} else {
		h.Write(salt)
		h.Write(block)
	}
	return h.Sum(nil)
}

// changedFlags names the flags that differ from g, as veritygen spells them.
func changedFlags(g *merkle.Geometry, name string, format int, salt []byte, bs int, off uint64) []string {
	var out []string
	if name != g.Hash.Name() {
		out = append(out, "--hash="+name)
	}
	if format != g.Format {
		out = append(out, fmt.Sprintf("--format=%d", format))
	}
	if !bytes.Equal(salt, g.Salt) {
		s := hex.EncodeToString(salt)
		if s == "" {
			s = "-"
		}
		out = append(out, "--salt="+s)
	}
	if g.Levels == 0 && bs != g.DataBlockSize {
		out = append(out, fmt.Sprintf("--data-block-size=%d", bs))
	}
	if g.Levels > 0 && bs != g.HashBlockSize {
		out = append(out, fmt.Sprintf("--hash-block-size=%d", bs))
	}
	if off != g.HashOffset {
		out = append(out, fmt.Sprintf("--hash-offset=%d", off))
	}
	return out
}
