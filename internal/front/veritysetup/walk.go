package veritysetup

import (
	"bytes"
	"fmt"
	"math/bits"
	"os"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// walkTree is a tree as veritysetup's verify walks it.
type walkTree struct {
	hash     *hashes.Algorithm
	format   int
	salt     []byte
	dbs, hbs int
	// dataBlocks is veritysetup's data_size: 0 takes DATA's whole blocks.
	dataBlocks uint64
	// hashStart is the tree's first hash block (VERITY_hash_offset_block).
	hashStart uint64
}

// short reports whether DATA or HASH ends before the tree they hold,
// where the library refuses to verify.
func (w walkTree) short(dataPath, hashPath string) bool {
	blocks := w.dataBlocks
	if blocks == 0 {
		blocks = deviceSize(dataPath) / uint64(w.dbs)
		if blocks == 0 {
			return true
		}
	}
	levelBlock, _, end, ok := hashLevels(w.hbs, w.hash.Size(), blocks, w.hashStart)
	if !ok {
		return true
	}
	over, dataEnd := bits.Mul64(blocks, uint64(w.dbs))
	if over != 0 || dataEnd > deviceSize(dataPath) {
		return true
	}
	over, hashEnd := bits.Mul64(end, uint64(w.hbs))
	return len(levelBlock) > 0 && (over != 0 || hashEnd > deviceSize(hashPath))
}

// geometry is the tree w describes, as the library lays it out; nil if
// the library cannot (veritysetup's walk may still go on).
func (w walkTree) geometry(dataPath string) *merkle.Geometry {
	p := merkle.Params{Hash: w.hash, LegacyFormat: w.format == 0, Salt: w.salt, DataBlockSize: w.dbs, HashBlockSize: w.hbs,
		DataBlocks: w.dataBlocks, HashOffset: w.hashStart * uint64(w.hbs)}
	if p.DataBlocks == 0 {
		p.DataBlocks = deviceSize(dataPath) / uint64(w.dbs)
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return nil
	}
	return g
}

func walkTreeOf(g *merkle.Geometry) walkTree {
	w := walkTree{hash: g.Hash, format: g.Format(), salt: g.Salt, dbs: g.DataBlockSize, hbs: g.HashBlockSize, dataBlocks: g.DataBlocks}
	w.hashStart = g.HashOffset / uint64(g.HashBlockSize)
	if g.Superblock {
		w.hashStart = (g.HashOffset + merkle.SuperblockSize + uint64(g.HashBlockSize) - 1) / uint64(g.HashBlockSize)
	}
	return w
}

// walkErr stands for the errno veritysetup's walk fails with.
type walkErr int

const (
	walkOK walkErr = iota
	walkEIO
	walkEPERM
	walkEINVAL
)

// walk verifies the tree as veritysetup's VERITY_verify does, one block
// at a time from the data up, each level's blocks against the digests and
// spare areas of the next, then the top block against root; it stops at
// the first problem. It is the front's answer where the library refuses
// to start (a DATA or HASH shorter than the tree: veritysetup verifies up
// to the cut) and returns veritysetup's messages and exit code.
func (w walkTree) walk(dataPath, hashPath string, root []byte) ([]string, int) {
	var lines []string
	failed := func(e walkErr) ([]string, int) {
		lines = append(lines, "Verification of data area failed.")
		if e == walkEPERM {
			return lines, exitEPERM
		}
		return lines, exitEINVAL
	}
	ds := w.hash.Size()
	blocks := w.dataBlocks
	if blocks == 0 {
		blocks = deviceSize(dataPath) / uint64(w.dbs)
	}
	if over, _ := bits.Mul64(w.dataBlocks, uint64(w.dbs)); over != 0 {
		return []string{"Device offset overflow."}, exitEINVAL
	}
	levelBlock, levelSize, end, ok := hashLevels(w.hbs, ds, blocks, w.hashStart)
	if !ok {
		return []string{"Hash area overflow."}, exitEINVAL
	}
	if over, _ := bits.Mul64(end, uint64(w.hbs)); over != 0 {
		return []string{"Device offset overflow."}, exitEINVAL
	}
	data, err := os.Open(dataPath)
	if err != nil {
		return []string{fmt.Sprintf("Cannot open device %s.", dataPath)}, exitEINVAL
	}
	defer data.Close()
	hash, err := os.Open(hashPath)
	if err != nil {
		return []string{fmt.Sprintf("Cannot open device %s.", hashPath)}, exitEINVAL
	}
	defer hash.Close()
	var digest []byte
	step := func(rd *os.File, rdBlock uint64, rdSize int, wr *os.File, wrBlock uint64, n uint64) walkErr {
		var e walkErr
		var msg string
		digest, msg, e = w.level(rd, rdBlock, rdSize, wr, wrBlock, n)
		if msg != "" {
			lines = append(lines, msg)
		}
		return e
	}
	levels := len(levelBlock)
	for i := 0; i < levels; i++ {
		var e walkErr
		if i == 0 {
			e = step(data, 0, w.dbs, hash, levelBlock[0], blocks)
		} else {
			e = step(hash, levelBlock[i-1], w.hbs, hash, levelBlock[i], levelSize[i-1])
		}
		if e != walkOK {
			return failed(e)
		}
	}
	var e walkErr
	if levels > 0 {
		e = step(hash, levelBlock[levels-1], w.hbs, nil, 0, 1)
	} else {
		e = step(data, 0, w.dbs, nil, 0, blocks)
	}
	if e != walkOK {
		return failed(e)
	}
	if !bytes.Equal(digest, root) {
		return []string{msgRootFailed}, exitEINVAL
	}
	return nil, exitOK
}

// level is veritysetup's create_or_verify in verify mode: the n blocks
// of rdSize bytes from block rdBlock of rd against the digests from hash
// block wrBlock of wr (nil for the top: only the digest of the first block
// is computed). It returns the last digest computed and the message of
// the first problem.
func (w walkTree) level(rd *os.File, rdBlock uint64, rdSize int, wr *os.File, wrBlock uint64, n uint64) ([]byte, string, walkErr) {
	ds := w.hash.Size()
	perBlock := uint64(1) << bitsDown(uint64(w.hbs/ds))
	full := 1 << bitsUp(uint64(ds))
	over1, rdPos := bits.Mul64(rdBlock, uint64(rdSize))
	over2, wrPos := bits.Mul64(wrBlock, uint64(w.hbs))
	if over1 != 0 || over2 != 0 {
		return nil, "Device offset overflow.", walkEINVAL
	}
	// rdPos and wrPos are where veritysetup's two streams stand.
	if rdPos > 1<<63-1 || wrPos > 1<<63-1 {
		return nil, "", walkEIO // fseeko fails
	}
	h := w.hash.NewBlockHasher(rdSize, w.salt, saltPosition(w.format))
	block := make([]byte, rdSize)
	digest := make([]byte, ds)
	read := make([]byte, ds)
	readFull := func(f *os.File, b []byte, pos *uint64) bool {
		if *pos > 1<<63-1 {
			return false
		}
		n, _ := f.ReadAt(b, int64(*pos))
		*pos += uint64(n)
		return n == len(b)
	}
	zero := func(size int) (string, walkErr) {
		spare := make([]byte, size)
		start := wrPos
		if !readFull(wr, spare, &wrPos) {
			return "", walkEIO
		}
		if !allZero(spare) {
			return fmt.Sprintf("Spare area is not zeroed at position %d.", start), walkEPERM
		}
		return "", walkOK
	}
	toWrite := (n + perBlock - 1) / perBlock
	for ; toWrite > 0; toWrite-- {
		left := w.hbs
		for i := uint64(0); i < perBlock && n > 0; i++ {
			n--
			at := rdPos
			if !readFull(rd, block, &rdPos) {
				return digest, "", walkEIO
			}
			h.HashBlocks(digest, ds, block)
			if wr == nil {
				break
			}
			if !readFull(wr, read, &wrPos) {
				return digest, "", walkEIO
			}
			if !bytes.Equal(read, digest) {
				return digest, fmt.Sprintf("Verification failed at position %d.", at), walkEPERM
			}
			if w.format == 0 {
				left -= ds
				continue
			}
			if full > ds {
				if msg, e := zero(full - ds); e != walkOK {
					return digest, msg, e
				}
			}
			left -= full
		}
		if wr != nil && left > 0 {
			if msg, e := zero(left); e != walkOK {
				return digest, msg, e
			}
		}
	}
	return digest, "", walkOK
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func saltPosition(format int) hashes.SaltPosition {
	if format == 0 {
		return hashes.SaltAfter
	}
	return hashes.SaltBefore
}

// bitsDown and bitsUp are veritysetup's get_bits_down and get_bits_up.
func bitsDown(u uint64) int {
	i := 0
	for u>>i > 1 {
		i++
	}
	return i
}

func bitsUp(u uint64) int {
	i := 0
	for uint64(1)<<i < u {
		i++
	}
	return i
}

// hashLevels is veritysetup's hash_levels: each level's first hash block
// (from pos, the tree's first block) and size in blocks, level 0 (over the
// data) first, and the block past the tree; ok false where veritysetup
// says "Hash area overflow.".
func hashLevels(hbs, ds int, blocks, pos uint64) (levelBlock, levelSize []uint64, end uint64, ok bool) {
	b := bitsDown(uint64(hbs / ds))
	if b == 0 {
		return nil, nil, 0, false
	}
	levels := 0
	for b*levels < 64 && (blocks-1)>>(b*levels) != 0 {
		levels++
	}
	if levels > 63 {
		return nil, nil, 0, false
	}
	levelBlock, levelSize = make([]uint64, levels), make([]uint64, levels)
	for i := levels - 1; i >= 0; i-- {
		levelBlock[i] = pos
		shift := (i + 1) * b
		if shift > 63 {
			return nil, nil, 0, false
		}
		s := (blocks + 1<<shift - 1) >> shift
		levelSize[i] = s
		if pos+s < pos {
			return nil, nil, 0, false
		}
		pos += s
	}
	return levelBlock, levelSize, pos, true
}
