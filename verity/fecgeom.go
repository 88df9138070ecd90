package verity

import (
	"io"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// fecParams returns the error-correction parameters for the tree g with
// roots parity bytes per codeword, when the hash device's protected part
// ends at hashEnd: the end of the hash device for FEC kept elsewhere, the
// FEC offset for FEC inside the hash device (as veritysetup computes it).
func FECParams(g *merkle.Geometry, roots int, hashEnd uint64) (fec.Params, error) {
	if g.DataBlockSize != g.HashBlockSize {
		return fec.Params{}, paramErrorf("FECRoots", "use the same TreeOptions.DataBlockSize and TreeOptions.HashBlockSize",
			"error correction needs equal data and hash block sizes, not %d and %d", g.DataBlockSize, g.HashBlockSize)
	}
	p := fec.Params{Roots: roots, BlockSize: g.DataBlockSize,
		Blocks: fec.MessageBlocks(g.DataBlocks, g.HashStartBlock, hashEnd, g.DataBlockSize)}
	if err := p.Validate(); err != nil {
		return fec.Params{}, &Error{Kind: KindParam, Err: err}
	}
	return p, nil
}

// fecMessage returns the message that error correction covers: the data
// blocks, then the hash device's blocks from the tree's start on.
func FECMessage(g *merkle.Geometry, p fec.Params, data, hash io.ReaderAt) io.ReaderAt {
	hashBlocks := p.Blocks - g.DataBlocks
	return fec.Concat(
		fec.Part{R: data, Off: 0, Size: int64(g.DataSize())},
		fec.Part{R: hash, Off: int64(g.TreeOffset()), Size: int64(hashBlocks) * int64(g.HashBlockSize)},
	)
}
