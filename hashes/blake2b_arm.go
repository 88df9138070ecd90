//go:build !purego

package hashes

import "golang.org/x/sys/cpu"

//go:generate sh -c "GOOS= GOARCH= GOARM= go run ./asm_arm -dir ."

// blake2bBlocksNEON is blake2bBlocksGeneric in NEON, WORD-encoded by
// asm_arm. It compresses len(blocks)/128 whole blocks. NEON is detected at
// run time: a GOARM=6 or 7 build runs it only where the CPU has it.
//
//go:noescape
func blake2bBlocksNEON(h *[8]uint64, c *[2]uint64, flag uint64, blocks []byte)

var haveNEON = cpu.ARM.HasNEON

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

func init() {
	if haveNEON {
		blake2bBlocks = blake2bBlocksNEONSeam
	}
	BLAKE2b256.impls = append([]*implementation{blake2bNEON}, BLAKE2b256.impls...)
}
