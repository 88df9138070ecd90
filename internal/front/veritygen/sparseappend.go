package veritygen

// --append on an Android sparse DATA: the tree (and with --fec the parity)
// go in as RAW chunks after the image's last one, as --append --avb puts
// them (and avbtool add_hashtree_footer), so that the image expands to
// what --append makes of the expanded image, byte for byte (then zeros to
// a whole sparse block, when the tree's blocks are smaller): the layout of
// --append is that of add_hashtree_footer without vbmeta and footer. The
// writing, with its safety on interruption (a record past the chunks that
// a rerun finishes), is avb.AddHashtreeFooter's, under this verb's own
// name (HashtreeFooterOptions.VerityAppend): add_hashtree_footer does not
// finish what a killed --append left, nor --append what it left.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/appendscan"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
	"github.com/veritytree/veritytree/verity"
)

// isSparseFile reports whether the file at path is an Android sparse image.
func isSparseFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false // Format's to report
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return sparse.IsSparse(f)
}

// sparseAppendRefused refuses the flags --append takes on a raw image but
// not on a sparse one.
func (o *options) sparseAppendRefused(data string) error {
	hint := fmt.Sprintf("leave it out, or expand the image first: simg2img %s image.raw", data)
	for _, name := range append(append([]string{"data-size", "force", "root-hash-file", "uuid", "boot-params"}, bootFlagNames...), signFlagNames...) {
		if o.changed(name) {
			return cli.Errorf(hint, "--%s is not taken with --append on an Android sparse image", name)
		}
	}
	if o.tree.Format != 1 {
		return cli.Errorf(hint, "--format=%d is not taken with --append on an Android sparse image: its tree is of type 1", o.tree.Format)
	}
	if o.tree.HashBlockSize != o.tree.DataBlockSize {
		return cli.Errorf(hint, "--hash-block-size %d is not --data-block-size %d: --append on an Android sparse image uses one block size",
			o.tree.HashBlockSize, o.tree.DataBlockSize)
	}
	return nil
}

// sparseRecord returns the record a killed run left past the chunks of
// the sparse DATA, or nil.
func sparseRecord(path string) *safefile.ResumeRecord {
	f, err := os.Open(path)
	if err != nil {
		return nil // AddHashtreeFooter's to report
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if rec := safefile.ReadResumeRecord(f, fi.Size()); rec != nil && rec.Sparse {
		return rec
	}
	return nil
}

// sparseAppendTarget refuses a sparse DATA whose expansion ends in an AVB
// footer or in the tree of an earlier --append, as --append on a raw
// image does: add_hashtree_footer would take a tree for data, and start
// over from a footer's original size.
func sparseAppendTarget(src *verity.Source, data string, p merkle.Params, roots int) error {
	size := uint64(src.Size())
	if av := appendscan.FindAVBFooter(src, size); av != nil {
		return formatHint(&verity.Error{Kind: verity.KindRefused, Advice: verity.AdviceAVB, Role: verity.RoleData, Path: data,
			Err: fmt.Errorf("DATA %s is an AVB image (it ends in an AVB footer; the image is its first %d bytes): --append would take the AVB metadata for data", data, av.OriginalSize)})
	}
	// A tree of blocks smaller than the sparse image's was padded with
	// zeros to a whole sparse block: it ends up to one before the end.
	unit := uint64(p.DataBlockSize)
	if f, err := os.Open(data); err == nil {
		if fi, err := f.Stat(); err == nil {
			if im, err := sparse.Open(f, fi.Size()); err == nil {
				unit = max(unit, uint64(im.BlockSize()))
			}
		}
		f.Close()
	}
	for _, r := range []int{roots, 0} {
		var found *appendscan.Found
		for pad := uint64(0); pad < unit && pad <= size && found == nil; pad += uint64(p.DataBlockSize) {
			found, _ = appendscan.Find(src, size-pad, p, r) // errors are AddHashtreeFooter's to report
		}
		if found == nil {
			continue
		}
		return cli.Errorf(fmt.Sprintf("expand the image, cut the tree off and append again: simg2img %s image.raw; truncate -s %d image.raw; veritygen --append image.raw", data, found.Original),
			"DATA %s already ends in a tree laid out as an --append of its first %d bytes: appending again would take it for data", data, found.Padded)
	}
	return nil
}

// generateSparse is generate for --append on an Android sparse DATA.
func generateSparse(ctx context.Context, o *options, data string, stderr io.Writer, showProgress bool) (*result, error) {
	if err := o.sparseAppendRefused(data); err != nil {
		return nil, err
	}
	t, err := o.tree.Options()
	if err != nil {
		return nil, err
	}
	hfo := &avb.HashtreeFooterOptions{HashAlgorithm: o.tree.Hash, BlockSize: o.tree.DataBlockSize, FEC: o.fecAppend,
		FECRoots: o.fecRoots, DoNotAppendVBMeta: true, VerityAppend: true, Jobs: o.jobs}
	if o.changed("salt") {
		if hfo.Salt, err = o.avbSalt(); err != nil {
			return nil, err
		}
	}
	p, err := (&verity.TreeOptions{Hash: t.Hash, Salt: hfo.Salt, DataBlockSize: t.DataBlockSize, HashBlockSize: t.DataBlockSize, NoSuperblock: true}).Params()
	if err != nil {
		return nil, err
	}
	roots := 0
	if o.fecAppend {
		roots = cmp.Or(o.fecRoots, fec.DefaultRoots)
	}
	// One look at the expansion: the earlier tree or footer it may end
	// in, and its size for the report line and the progress.
	src, err := verity.OpenSource(data, nil)
	if err != nil {
		return nil, err
	}
	total := uint64(src.Size())
	if rec := sparseRecord(data); rec != nil {
		// A killed run's: its tree may already be counted in the
		// expansion. AddHashtreeFooter finishes it from the original size,
		// or refuses another verb's by name.
		total = min(total, rec.OriginalSize)
	} else {
		err = sparseAppendTarget(src, data, p, roots)
	}
	if err == nil {
		var tree uint64
		bs := uint64(p.DataBlockSize)
		q := p
		q.DataBlocks = (total + bs - 1) / bs
		if g, err := merkle.NewGeometry(q); err == nil {
			tree = g.HashBlocks * bs
		}
		if line := cli.Expansion(data, src.Format(), src.FileSize(), int64(total), tree); line != "" {
			fmt.Fprintf(stderr, "%s: %s\n", prog, line)
		}
	}
	src.Close()
	if err != nil {
		return nil, err
	}
	bar := cli.NewProgress(stderr, showProgress, cli.ProgressLabel("hashing", "android-sparse", total), total)
	hfo.Progress = cli.StageProgress(&bar, verity.StageHashing)
	hfo.Warn = func(msg string) { cli.Warn(stderr, prog, "%s", cli.Flags.Say(msg)) }
	r, err := avb.AddHashtreeFooter(ctx, data, hfo)
	bar.Finish()
	if err != nil {
		return nil, err
	}
	ar, err := newAVBResult(data, hfo, r)
	if err != nil {
		return nil, err
	}
	ht := r.Descriptor
	res := &result{RootHash: ar.RootHash, TreeJSON: ar.TreeJSON, DataFormat: "android-sparse", DataSize: ht.ImageSize,
		ExpandedSize: r.OriginalSize, TreeSize: ht.TreeSize,
		appendResult: &appendResult{OriginalSize: r.OriginalSize, ImageSize: r.Size}}
	if ht.FECNumRoots > 0 {
		g, err := merkle.NewGeometry(merkle.Params{Hash: p.Hash, Salt: ht.Salt, DataBlockSize: int(ht.DataBlockSize), HashBlockSize: int(ht.HashBlockSize),
			DataBlocks: ht.ImageSize / uint64(ht.DataBlockSize), HashOffset: ht.TreeOffset})
		if err == nil {
			res.FECInfo, err = verity.DescribeFEC(g, data, data, data, ht.FECOffset, int(ht.FECNumRoots))
		}
		if err != nil {
			return nil, fmt.Errorf("the tree and parity are written, root hash %s, but describing the parity failed: %w", res.RootHash, err)
		}
	}
	res.CheckCommand = checkCommand(res, data, false)
	return res, nil
}
