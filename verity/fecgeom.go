package verity

import (
	"io"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/fecmsg"
	"github.com/veritytree/veritytree/merkle"
)

// fecParams returns the error-correction parameters for the tree g with
// roots parity bytes per codeword, when the hash device's protected part
// ends at hashEnd (see fecmsg.Params), as KindParam errors.
func fecParams(g *merkle.Geometry, roots int, hashEnd uint64) (fec.Params, error) {
	if g.DataBlockSize != g.HashBlockSize {
		return fec.Params{}, paramErrorf("FECRoots", "use the same TreeOptions.DataBlockSize and TreeOptions.HashBlockSize",
			"error correction needs equal data and hash block sizes, not %d and %d", g.DataBlockSize, g.HashBlockSize)
	}
	p, err := fecmsg.Params(g, roots, hashEnd)
	if err != nil {
		return fec.Params{}, &Error{Kind: KindParam, Err: err}
	}
	return p, nil
}

// fecProgress reports the StageFEC progress of fec.Encode with fp writing
// to w through progress (nil: none); see fecmsg.Progress.
func fecProgress(fp fec.Params, w io.WriterAt, progress Progress) (io.WriterAt, func()) {
	if progress == nil {
		return w, func() {}
	}
	return fecmsg.Progress(fp, w, func(done, total uint64) { progress(StageFEC, done, total) })
}

// fecMessage is the message the parity p of the tree g covers; see
// fecmsg.Message.
func fecMessage(g *merkle.Geometry, p fec.Params, data, hash io.ReaderAt) io.ReaderAt {
	return fecmsg.Message(g, p, data, hash)
}
