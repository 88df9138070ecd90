//go:build (arm || arm64) && !purego

package hashes

// What BLAKE2b on NEON shares between arm and arm64: blake2bBlocksNEON
// (blake2b_arm.s, blake2b_arm64.s) and haveNEON are per architecture.

// blake2bNEON names the BLAKE2b-256 bulk implementation on NEON machines:
// the streaming hash, one block at a time, whose compression function (the
// blake2bBlocks seam) is blake2bBlocksNEON there. The seam is switched for
// every BLAKE2b user, so on such a machine "generic" runs the NEON
// compression too; the pure Go one is what a purego build runs.
var blake2bNEON = &implementation{
	name:      "neon",
	available: func() bool { return haveNEON },
	new:       newStreamingBulk,
}

// blake2bBlocksNEONSeam keeps the generic function's check of the length.
func blake2bBlocksNEONSeam(h *[8]uint64, c *[2]uint64, flag uint64, blocks []byte) {
	if len(blocks)%blake2bBlockSize != 0 {
		panic("hashes: blake2b input not a multiple of the block size")
	}
	blake2bBlocksNEON(h, c, flag, blocks)
}
