package verity

import (
	"context"
	"fmt"

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
	fp, err := fecParams(g, pl.Roots, hashEnd)
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
	msg := fecMessage(g, fp, data, hashOut.io(hashRole))
	w, done := fecProgress(fp, out.io(fecRole), opts.Progress)
	if err := fec.Encode(ctx, fp, msg, w, int64(pl.Offset), jobs(opts.Jobs)); err != nil {
		return nil, asError(KindIO, fmt.Errorf("writing error correction to %s: %w", pl.Path, err))
	}
	if err := out.extend(pl.Offset + size); err != nil {
		return nil, err
	}
	done()
	return newFECInfo(pl.Path, pl.Offset, fp, pl.InHash, pl.InData), nil
}
