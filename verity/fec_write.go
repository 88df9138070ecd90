package verity

import (
	"context"
	"fmt"
	"io"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// writeFEC computes the parity of the data and the tree just written to
// hashOut and writes it where the plan pl says (its Path, Roots, Offset,
// InHash and InData): into hashOut, or into out (formatOutputs.fec), which
// the caller commits. It returns the parity written: what it covers is
// counted from hashOut as it is now.
func writeFEC(ctx context.Context, g *merkle.Geometry, pl *FECInfo, data *Source, hashOut, out *output, opts *FormatOptions) (*FECInfo, error) {
	hashEnd := pl.Offset
	if pl.InHash {
		// The parity covers the hash device up to itself; bytes between the
		// tree and the parity read as zeros (the kernel sees the same).
		if err := hashOut.extend(pl.Offset); err != nil {
			return nil, err
		}
	} else {
		var err error
		if hashEnd, err = hashOut.size(); err != nil {
			return nil, errorf(KindIO, "", "%s: %w", hashOut.path, unwrapPath(err))
		}
	}
	fp, err := FECParams(g, pl.Roots, hashEnd)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = hashOut
	} else if err := out.checkDeviceRoom("FEC device", pl.Offset+fp.ParitySize()); err != nil {
		return nil, err
	}
	size := fp.ParitySize()
	hashRole, fecRole := "HASH", "FEC device"
	if hashOut.tmp == "" && hashOut.path == data.path {
		hashRole = "DATA"
	}
	if out == hashOut {
		fecRole = hashRole
	}
	msg := FECMessage(g, fp, data, hashOut.io(hashRole))
	w, done := FECProgress(fp, out.io(fecRole), opts.Progress)
	if err := fec.Encode(ctx, fp, msg, w, int64(pl.Offset), jobs(opts.Jobs)); err != nil {
		return nil, asError(KindIO, fmt.Errorf("writing error correction to %s: %w", pl.Path, err))
	}
	if err := out.extend(pl.Offset + size); err != nil {
		return nil, err
	}
	done()
	return newFECInfo(pl.Path, pl.Offset, fp, pl.InHash, pl.InData), nil
}

// FECProgress reports the StageFEC progress of fec.Encode with fp writing
// to w, through progress (nil: none): it returns the writer to give
// Encode, having reported the start, and done, to call once the parity is
// complete. The work is reading the message (the data and the tree), so
// that is what is counted, not the parity, a tenth of it or less: each
// unit of parity written stands for the message it was computed from.
func FECProgress(fp fec.Params, w io.WriterAt, progress Progress) (io.WriterAt, func()) {
	if progress == nil {
		return w, func() {}
	}
	total := fp.Blocks * uint64(fp.BlockSize)
	progress(StageFEC, 0, total)
	pw := &progressWriter{w: w, parity: fp.ParitySize(), total: total, progress: progress}
	return pw, func() { progress(StageFEC, total, total) }
}

// progressWriter reports StageFEC progress as the parity is written: each
// unit fec.Encode writes is that much more of the message done. Encode
// serializes its writes, so progress is called from one goroutine at a
// time, as Progress promises.
type progressWriter struct {
	w        io.WriterAt
	written  uint64 // bytes of parity
	parity   uint64
	total    uint64 // bytes of message
	progress Progress
}

func (p *progressWriter) WriteAt(b []byte, off int64) (int, error) {
	n, err := p.w.WriteAt(b, off)
	p.written += uint64(n)
	// Parity is in proportion to the message it is computed from.
	done := uint64(float64(p.written) / float64(p.parity) * float64(p.total))
	if done < p.total { // the end is reported once the parity is complete
		p.progress(StageFEC, done, p.total)
	}
	return n, err
}
