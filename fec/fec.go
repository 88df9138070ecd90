// Package fec computes and uses dm-verity's forward error correction: the
// Reed-Solomon parity that `veritysetup format --fec-device`, Android's fec
// tool and avbtool write, and that the Linux kernel's dm-verity reads to
// repair corrupted blocks.
//
// The code is RS(255, k = 255-roots) over GF(2^8) with field polynomial
// 0x11d, primitive element 2 and first consecutive root 2^0: the generator is
// g(x) = (x - 2^0)(x - 2^1)...(x - 2^(roots-1)), roots from 2 to 24. It is
// systematic: the parity of a message m(x) is m(x)*x^roots mod g(x). Message
// byte 0 is the coefficient of highest degree, and so is parity byte 0.
//
// The message M is made of Params.Blocks blocks of Params.BlockSize bytes (in
// dm-verity: the data blocks followed by the hash device's blocks from
// hash_start_block on, see MessageBlocks); bytes past its end are zero. The
// codewords are interleaved as widely as possible: with rounds =
// ceil(Blocks / k), codeword c (0 <= c < rounds*BlockSize) takes the message
// bytes M[c + j*rounds*BlockSize], j = 0..k-1, so each codeword touches k
// different blocks and a lost block costs each codeword at most one byte.
// Seen block-wise, the codewords of round r (c in [r*bs, (r+1)*bs)) read
// byte c - r*bs of the blocks j*rounds + r. The parity file holds the roots
// parity bytes of codeword 0, then of codeword 1, and so on: rounds*roots
// blocks.
package fec

import (
	"errors"
	"fmt"
)

// Limits of the code.
const (
	// N is the length of a full codeword.
	N = 255
	// MinRoots and MaxRoots bound the number of parity bytes per codeword
	// (the kernel's and veritysetup's limits); veritysetup's default is 2.
	MinRoots     = 2
	MaxRoots     = 24
	DefaultRoots = 2
	// MinBlockSize and MaxBlockSize bound the block size (dm-verity's).
	MinBlockSize = 512
	MaxBlockSize = 512 << 10
)

// ErrInvalidParams is wrapped by the errors for unusable parameters.
var ErrInvalidParams = errors.New("invalid FEC parameters")

// ErrTooManyErrors means a codeword has more errors and erasures than the
// code can correct (2*errors + erasures > roots), as far as the decoder can
// tell.
var ErrTooManyErrors = errors.New("fec: too many errors to correct")

// Params describe an FEC area.
type Params struct {
	// Roots is the number of parity bytes per codeword, 2 to 24: the
	// kernel table's fec_roots.
	Roots int
	// BlockSize is the block size of the message and of the parity: in
	// dm-verity the data block size, which must equal the hash block size.
	BlockSize int
	// Blocks is the number of message blocks: the kernel table's
	// fec_blocks (see MessageBlocks).
	Blocks uint64
}

// K returns the number of message bytes per codeword, 255 - Roots.
func (p Params) K() int { return N - p.Roots }

// Rounds returns ceil(Blocks / K()): the number of groups of BlockSize
// codewords.
func (p Params) Rounds() uint64 {
	k := uint64(p.K())
	return (p.Blocks + k - 1) / k
}

// ParityBlocks returns the size of the parity in blocks: Rounds()*Roots.
func (p Params) ParityBlocks() uint64 { return p.Rounds() * uint64(p.Roots) }

// ParitySize returns the size of the parity in bytes.
func (p Params) ParitySize() uint64 { return p.ParityBlocks() * uint64(p.BlockSize) }

// messageSize returns the size of the message in bytes: Blocks*BlockSize.
func (p Params) messageSize() uint64 { return p.Blocks * uint64(p.BlockSize) }

// Validate returns an error wrapping ErrInvalidParams unless p is usable.
func (p Params) Validate() error {
	if err := checkRoots(p.Roots); err != nil {
		return err
	}
	bs := p.BlockSize
	if bs < MinBlockSize || bs > MaxBlockSize || bs&(bs-1) != 0 {
		return fmt.Errorf("%w: block size %d is not a power of two from %d to %d",
			ErrInvalidParams, bs, MinBlockSize, MaxBlockSize)
	}
	if p.Blocks == 0 {
		return fmt.Errorf("%w: no message blocks", ErrInvalidParams)
	}
	// Every offset, in the message and in the parity, must fit in an int64.
	limit := uint64(1<<63-1) / uint64(bs)
	if p.Blocks > limit || p.Rounds() > limit/uint64(p.Roots) {
		return fmt.Errorf("%w: %d blocks of %d bytes do not fit in 63 bits", ErrInvalidParams, p.Blocks, bs)
	}
	return nil
}

func checkRoots(roots int) error {
	if roots < MinRoots || roots > MaxRoots {
		return fmt.Errorf("%w: %d roots (parity bytes per codeword) is not from %d to %d",
			ErrInvalidParams, roots, MinRoots, MaxRoots)
	}
	return nil
}

// MessageBlocks returns fec_blocks, the number of message blocks, the way
// veritysetup (cryptsetup's VERITY_FEC_blocks) computes it and passes it to
// the kernel:
//
//	fec_blocks = dataBlocks + floor(hashEnd / bs) - hashStartBlock
//
// where hashStartBlock is the kernel table's hash_start_block (with a
// superblock ceil((hash_offset + 512) / bs), without one hash_offset / bs)
// and hashEnd is where the message ends in the hash device, in bytes: with
// a separate FEC device, the size of the hash device (the whole rest of the
// hash file is covered, including any padding or foreign data after the
// tree); with the FEC area inside the hash device, fec_offset. The message
// is then the data blocks followed by hash-device blocks hashStartBlock to
// hashStartBlock + fec_blocks - dataBlocks - 1. (veritysetup checks this
// for us: its --debug output lists "FEC input <hash device>, offset
// hashStartBlock*bs, length (fec_blocks - dataBlocks)*bs".) When hashEnd
// does not reach past the start of the tree, the hash device contributes
// nothing.
func MessageBlocks(dataBlocks, hashStartBlock, hashEnd uint64, bs int) uint64 {
	end := hashEnd / uint64(bs)
	if end <= hashStartBlock {
		return dataBlocks
	}
	return dataBlocks + end - hashStartBlock
}

// encodeCodeword computes the parity of one codeword: msg is the message
// (at most 255-roots bytes; a shorter one is a shortened codeword, as if
// preceded by zeros) and parity receives the roots parity bytes.
func encodeCodeword(roots int, msg, parity []byte) error {
	if err := checkRoots(roots); err != nil {
		return err
	}
	if len(msg) > N-roots {
		return fmt.Errorf("fec: message of %d bytes is longer than %d", len(msg), N-roots)
	}
	if len(parity) != roots {
		return fmt.Errorf("fec: parity buffer of %d bytes, want %d", len(parity), roots)
	}
	encoderFor(roots).codeword(msg, parity)
	return nil
}
