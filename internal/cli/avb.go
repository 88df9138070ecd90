package cli

import "github.com/veritytree/veritytree/avb"

// MaxImageSize is avbtool's --calc_max_image_size. The parity size is
// computed whatever the block size (avbtool asks its fec tool, which does
// not care), so that a 1024-byte tree with FEC gets avbtool's answer too.
// Both veritygen --avb and the avbtool front answer it.
func MaxImageSize(o *avb.HashtreeFooterOptions) (int64, error) {
	c := *o
	c.FEC = false
	n, err := avb.MaxImageSize(&c)
	if err != nil || !o.FEC || o.NoHashtree || o.PartitionSize == 0 {
		return n, err
	}
	roots := o.FECRoots
	if roots == 0 {
		roots = 2
	}
	if roots < 1 || roots > 254 {
		return 0, Errorf("2 (the default) to 24", "FEC roots %d: a Reed-Solomon codeword has 255 bytes", roots)
	}
	return n - int64(avb.FECSize(o.PartitionSize, roots)), nil
}
