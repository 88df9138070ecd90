package veritycheck

// --kernel: the kernel's verdict. The image is opened through dm-verity
// (verity.Activate: loop devices, device-mapper), read whole through the
// mapped device, and closed again; the blocks whose reads the kernel
// fails (EIO) are what it found corrupted.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

const kernelUsage = `
--kernel asks the kernel instead: DATA is opened as a dm-verity device (loop
devices for files, through device-mapper, as 'veritysetup open' does; root
needed), read whole through it, then closed; veritycheck names the blocks
whose reads the kernel failed (EIO), and the kernel's status (V or C). With
--fec-device the kernel corrects what it can, as it would at run time.
Nothing is left open or attached, also when it fails or is interrupted.
`

// kernelIncompatible are the flags --kernel does not take: the kernel
// neither repairs nor reads an Android sparse image or an AVB footer.
var kernelIncompatible = []string{"repair", "avb", "avb-key", "json", "root-hash-signature", "sign-cert"}

// kernelReadChunk is how much is read at a time; a failed chunk is read
// again block by block to find the blocks the kernel refuses.
const kernelReadChunk = 1 << 20

// kernelCloseTimeout bounds the removal of the device at the end, which
// runs even when the check was interrupted.
const kernelCloseTimeout = 30 * time.Second

// kernelResult is what the kernel said.
type kernelResult struct {
	blocks    uint64   // data blocks read
	blockSize int      // their size
	failed    []uint64 // data blocks whose reads failed with EIO
	corrupted bool     // the target's status after the read: C
	loops     []string // the loop devices used
}

// kernelFlags refuses the flags --kernel does not take, before anything
// else is checked.
func kernelFlags(o *options) error {
	for _, name := range kernelIncompatible {
		if o.tree.Changed(name) {
			return cli.Errorf("leave --"+name+" out: the kernel only reads the image through its tree",
				"--%s does not go with --kernel", name)
		}
	}
	return nil
}

func checkKernel(ctx context.Context, o *options, dataPath, hashPath string, root []byte, vo *verity.VerifyOptions, stdout io.Writer) (int, error) {
	ao := &verity.ActivateOptions{TreeOptions: vo.TreeOptions, FECDevice: vo.FECDevice, FECOffset: vo.FECOffset, FECRoots: vo.FECRoots}
	res, err := kernelRead(ctx, dataPath, hashPath, root, ao)
	if err != nil {
		return cli.ExitError, err
	}
	for i, b := range res.failed {
		if o.maxProblems >= 0 && i >= o.maxProblems {
			fmt.Fprintf(stdout, "... and %d more (%d in all; --max-problems=-1 lists all)\n", len(res.failed)-i, len(res.failed))
			break
		}
		fmt.Fprintf(stdout, "data block %d (offset %d): the kernel fails its read (EIO)\n", b, b*uint64(res.blockSize))
	}
	switch {
	case len(res.failed) == 0 && !res.corrupted:
		fmt.Fprintf(stdout, "verified by the kernel: %d data blocks read through dm-verity, status V\n", res.blocks)
		return cli.ExitOK, nil
	case len(res.failed) == 0:
		// With --fec-device the kernel may have corrected everything it
		// found, and still say it found corruption.
		fmt.Fprintf(stdout, "read whole through dm-verity (%d data blocks), but the kernel found corruption (status C), corrected by FEC\n", res.blocks)
		return cli.ExitCorrupt, fmt.Errorf("the kernel found corruption in %s or %s", dataPath, hashPath)
	}
	return cli.ExitCorrupt, fmt.Errorf("the kernel fails the reads of %d of %d data blocks of %s (status C)", len(res.failed), res.blocks, dataPath)
}

// kernelRead opens the image through dm-verity under a name of its own,
// reads it whole, and closes it, whatever happens.
func kernelRead(ctx context.Context, dataPath, hashPath string, root []byte, ao *verity.ActivateOptions) (res *kernelResult, err error) {
	var id [6]byte
	rand.Read(id[:])
	name := fmt.Sprintf("veritycheck-%d-%s", os.Getpid(), hex.EncodeToString(id[:]))
	d, err := verity.Activate(ctx, name, dataPath, hashPath, root, ao)
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), kernelCloseTimeout)
		defer cancel()
		if _, cerr := verity.Deactivate(cctx, name, nil); cerr != nil && err == nil {
			err = cli.WithHint(fmt.Errorf("closing the dm-verity device: %w", cerr), "remove it with veritysetup close "+name)
		}
	}()
	res = &kernelResult{blockSize: d.Geometry.DataBlockSize, blocks: d.Geometry.DataBlocks, loops: d.Loops}
	f, err := os.Open(d.Path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", d.Path, safefile.Cause(err))
	}
	defer f.Close()
	size := int64(res.blocks) * int64(res.blockSize)
	buf := make([]byte, kernelReadChunk)
	for off := int64(0); off < size; off += kernelReadChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(int64(len(buf)), size-off)
		if _, err := f.ReadAt(buf[:n], off); err == nil {
			continue
		} else if !errors.Is(err, syscall.EIO) {
			return nil, fmt.Errorf("reading %s at %d: %w", d.Path, off, safefile.Cause(err))
		}
		// Which blocks of the chunk fail.
		for b := off; b < off+n; b += int64(res.blockSize) {
			if _, err := f.ReadAt(buf[:res.blockSize], b); errors.Is(err, syscall.EIO) {
				res.failed = append(res.failed, uint64(b/int64(res.blockSize)))
			} else if err != nil {
				return nil, fmt.Errorf("reading %s at %d: %w", d.Path, b, safefile.Cause(err))
			}
		}
	}
	s, err := verity.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	res.corrupted = s.Corrupted
	return res, nil
}
