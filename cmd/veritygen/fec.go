package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
)

// fecPlan is where the error-correction parity goes.
type fecPlan struct {
	path   string
	roots  int
	offset uint64
	// inHash: the parity goes into the hash device (or into DATA when the
	// tree is there), past the tree; it then covers the hash device up to
	// offset. inData: into DATA while the tree is elsewhere.
	inHash, inData bool
	existing       fs.FileInfo
}

// fecResult is what the report says of the parity.
type fecResult struct {
	Device       string `json:"fec_device"`
	Roots        int    `json:"fec_roots"`
	Blocks       uint64 `json:"fec_blocks"`        // message blocks: the kernel table's fec_blocks
	ParityBlocks uint64 `json:"fec_parity_blocks"` // what veritysetup prints as "FEC blocks"
	Offset       uint64 `json:"fec_offset"`
	Start        uint64 `json:"fec_start"` // offset in blocks: the kernel table's fec_start
	Size         uint64 `json:"fec_size"`
	inHash       bool
	inData       bool
}

// planFEC checks the --fec-* flags against the tree; nil without FEC.
func planFEC(o *options, g *merkle.Geometry, dataPath string, dataInfo fs.FileInfo, hashPath string, hashInfo fs.FileInfo, inPlace bool) (*fecPlan, error) {
	if o.appendTree && !o.fecAppend && o.changed("fec-roots") {
		return nil, cli.Errorf("add --fec to append error correction after the tree", "--fec-roots needs --fec with --append")
	}
	if o.fecDevice == "" && !o.fecAppend {
		for _, name := range []string{"fec-roots", "fec-offset"} {
			if o.changed(name) {
				return nil, cli.Errorf("e.g. --fec-device="+hashPath+".fec (or --append --fec to append it to DATA)", "--%s needs --fec-device", name)
			}
		}
		return nil, nil
	}
	if o.fecRoots < fec.MinRoots || o.fecRoots > fec.MaxRoots {
		return nil, cli.Errorf("2 (the default) corrects one lost byte in 253, 24 one in ten",
			"--fec-roots %d is not from %d to %d", o.fecRoots, fec.MinRoots, fec.MaxRoots)
	}
	bs := uint64(g.DataBlockSize)
	if g.DataBlockSize != g.HashBlockSize {
		return nil, cli.Errorf("use the same --data-block-size and --hash-block-size",
			"error correction needs equal data and hash block sizes, not %d and %d", g.DataBlockSize, g.HashBlockSize)
	}
	// Checked first: rounding a huge offset up would wrap.
	if o.fecOffset > cli.MaxFileOffset-bs+1 {
		return nil, cli.FECOffsetTooLarge(o.fecOffset)
	}
	if o.fecOffset%bs != 0 {
		return nil, cli.Errorf(fmt.Sprintf("round it up: --fec-offset=%d", roundUp(o.fecOffset, bs)),
			"--fec-offset %d is not a multiple of the block size %d", o.fecOffset, bs)
	}
	if o.appendTree {
		// avbtool's layout: the parity right after the tree, covering the
		// image and the tree.
		return &fecPlan{path: dataPath, roots: o.fecRoots, offset: g.HashEnd(), inHash: true}, nil
	}
	pl := &fecPlan{path: o.fecDevice, roots: o.fecRoots, offset: o.fecOffset}
	info, err := os.Stat(o.fecDevice)
	if err == nil {
		if info.IsDir() {
			return nil, cli.Errorf("", "--fec-device %s is a directory", o.fecDevice)
		}
		// The parity is written at an offset: a FIFO cannot take it.
		if err := cli.CheckImageType("FEC device", o.fecDevice, info.Mode(), "written"); err != nil {
			return nil, err
		}
		pl.existing = info
	}
	sameAsHash := err == nil && hashInfo != nil && os.SameFile(info, hashInfo) ||
		filepath.Clean(o.fecDevice) == filepath.Clean(hashPath)
	switch {
	case sameAsHash:
		pl.inHash = true
		if pl.offset < g.HashEnd() {
			return nil, cli.Errorf(fmt.Sprintf("put it past the tree: --fec-offset=%d", g.HashEnd()),
				"--fec-offset %d would overwrite the tree, which ends at byte %d of HASH", pl.offset, g.HashEnd())
		}
	case err == nil && os.SameFile(info, dataInfo):
		pl.inData = true
		if pl.offset < g.DataSize() {
			return nil, cli.Errorf(fmt.Sprintf("put it past the data: --fec-offset=%d", roundUp(g.DataSize(), bs)),
				"--fec-offset %d would overwrite the data, which ends at byte %d of DATA", pl.offset, g.DataSize())
		}
	}
	if filepath.Clean(o.fecDevice) == filepath.Clean(o.rootHashFile) {
		return nil, cli.Errorf("", "--fec-device and --root-hash-file are the same file")
	}
	// The parity must end before 2^63, checked now, before anything is
	// written. In HASH it covers HASH up to itself; elsewhere at least the
	// tree.
	hashEnd := g.HashEnd()
	if pl.inHash {
		hashEnd = pl.offset
	}
	if fp, err := g.FECParams(pl.roots, hashEnd); err != nil || pl.offset+fp.ParitySize() > cli.MaxFileOffset {
		return nil, cli.FECOffsetTooLarge(pl.offset)
	}
	return pl, nil
}

// openFECOutput opens where a plan's parity goes when it is not HASH's own
// output: DATA in place, or the FEC file (replaced, or a device in place).
func openFECOutput(pl *fecPlan, dataPath string, stderr io.Writer) (*output, error) {
	switch {
	case pl.inHash:
		return nil, nil
	case pl.inData:
		return openInPlace(dataPath, "DATA")
	}
	return openReplacement(pl.path, "FEC device", pl.existing, pl.offset, stderr)
}

// writeFEC computes the parity of the data and the tree just written to
// hashOut and writes it where the plan says: into hashOut, or into out
// (from openFECOutput), which the caller commits.
func writeFEC(ctx context.Context, g *merkle.Geometry, pl *fecPlan, dataPath string, data io.ReaderAt, hashOut, out *output, jobs int) (*fecResult, error) {
	hashEnd := pl.offset
	if pl.inHash {
		// The parity covers the hash device up to itself; bytes between the
		// tree and the parity read as zeros (the kernel sees the same).
		if err := hashOut.extend(pl.offset); err != nil {
			return nil, err
		}
	} else {
		var err error
		if hashEnd, err = hashOut.size(); err != nil {
			return nil, err
		}
	}
	fp, err := g.FECParams(pl.roots, hashEnd)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = hashOut
	} else if err := out.checkDeviceRoom("FEC device", pl.offset+fp.ParitySize()); err != nil {
		return nil, err
	}
	msg := g.FECMessage(fp, data, hashOut.f)
	if err := fec.Encode(ctx, fp, msg, out.f, int64(pl.offset), jobs); err != nil {
		return nil, fmt.Errorf("writing error correction to %s: %w", pl.path, err)
	}
	if err := out.extend(pl.offset + fp.ParitySize()); err != nil {
		return nil, err
	}
	return &fecResult{Device: pl.path, Roots: pl.roots, Blocks: fp.Blocks, ParityBlocks: fp.ParityBlocks(),
		Offset: pl.offset, Start: pl.offset / uint64(fp.BlockSize), Size: fp.ParitySize(), inHash: pl.inHash, inData: pl.inData}, nil
}
