package merkle

import (
	"io"

	"github.com/veritytree/veritytree/fec"
)

// FECParams returns the error-correction parameters for this tree with
// roots parity bytes per codeword, when the hash device's protected part
// ends at hashEnd: the end of the hash device for FEC kept elsewhere, the
// FEC offset for FEC inside the hash device (as veritysetup computes it).
func (g *Geometry) FECParams(roots int, hashEnd uint64) (fec.Params, error) {
	if g.DataBlockSize != g.HashBlockSize {
		return fec.Params{}, invalid("error correction needs equal data and hash block sizes, not %d and %d",
			g.DataBlockSize, g.HashBlockSize)
	}
	p := fec.Params{Roots: roots, BlockSize: g.DataBlockSize,
		Blocks: fec.MessageBlocks(g.DataBlocks, g.HashStartBlock, hashEnd, g.DataBlockSize)}
	if err := p.Validate(); err != nil {
		return fec.Params{}, invalid("%v", err)
	}
	return p, nil
}

// FECMessage returns the message that error correction covers: the data
// blocks, then the hash device's blocks from the tree's start on.
func (g *Geometry) FECMessage(p fec.Params, data, hash io.ReaderAt) io.ReaderAt {
	hashBlocks := p.Blocks - g.DataBlocks
	return fec.Concat(
		fec.Part{R: data, Off: 0, Size: int64(g.DataSize())},
		fec.Part{R: hash, Off: int64(g.TreeOffset()), Size: int64(hashBlocks) * int64(g.HashBlockSize)},
	)
}
