//go:build !purego

package hashes

import "golang.org/x/sys/cpu"

//go:generate sh -c "GOOS= GOARCH= GOARM= go run ./asm_arm/_gen -dir ."

// blake2bBlocksNEON is blake2bBlocksGeneric in NEON, WORD-encoded by
// asm_arm. It compresses len(blocks)/128 whole blocks. NEON is detected at
// run time: a GOARM=6 or 7 build runs it only where the CPU has it.
//
//go:noescape
func blake2bBlocksNEON(h *[8]uint64, c *[2]uint64, flag uint64, blocks []byte)

var haveNEON = cpu.ARM.HasNEON

func init() {
	if haveNEON {
		blake2bBlocks = blake2bBlocksNEONSeam
	}
	BLAKE2b256.impls = append([]*implementation{blake2bNEON}, BLAKE2b256.impls...)
}
