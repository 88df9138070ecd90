//go:build !purego

package hashes

// msgLayout splits the message of one salted block (salt || block or
// block || salt, then the hash's padding) into the chunks that a
// multi-stream compression function reads, so that as many chunks as
// possible are read straight from the caller's memory:
//
//	[0, pre)                  salt only: the same for every block, compressed
//	                          once at construction into a midstate
//	[pre, pre+headN)          head: built per block in a small scratch buffer
//	[.., +directN)            direct: read in place at block[directOff:]
//	[.., chunks)              tail: the rest and the padding, in scratch
//
// With the usual 32-byte salt before a 4096-byte block and 64-byte chunks
// that is 1 head chunk (salt || block[:32]), 63 direct chunks from
// block[32:] and 1 tail chunk (block[4064:] and the padding).
//
// The scratch of each lane is laid out as the head chunks then the tail
// chunks. Its salt and padding bytes are written once (template) and only
// the block's bytes are copied in per block (fill).
type msgLayout struct {
	chunk     int
	blockSize int
	blockOff  int // where the block starts in the message
	msgLen    int
	chunks    int

	pre, headN, directN, tailN int
	directOff                  int // block offset of the first direct chunk

	// half: the direct chunks are read as whole chunk-sized lines from
	// the block's start, each chunk being the last 32 bytes of the previous
	// line (the salt's last 32 for the first) and the start of the next.
	// That is the usual 32-byte salt before the block: the vector kernels
	// then load (and transpose) aligned lines once instead of lines
	// straddling two cache lines.
	half bool

	scratch  int    // scratch bytes per lane
	template []byte // a lane's scratch with zeros where the block goes
}

// padding is how a hash pads its message.
type padding uint8

const (
	padMD64  padding = iota // 0x80, zeros, 64-bit big-endian bit length: SHA-1, SHA-256
	padMD128                // 0x80, zeros, 128-bit big-endian bit length: SHA-512
	padZero                 // zeros up to the chunk, length in the counter: BLAKE2b
)

// newMsgLayout plans the chunks; halfOK says the kernel has the half mode
// (see msgLayout.half), which is used when the salt is before the block, is
// 32 bytes past a whole number of chunks and the block holds a whole chunk.
func newMsgLayout(chunk int, pad padding, blockSize int, salt []byte, pos SaltPosition, halfOK bool) *msgLayout {
	s := len(salt)
	l := &msgLayout{chunk: chunk, blockSize: blockSize, msgLen: s + blockSize}
	if pos == SaltBefore {
		l.blockOff = s
		// Salt-only chunks; at least one byte of the block follows them,
		// so none of them is the last (which matters to BLAKE2b).
		l.pre = s / chunk
	}
	switch pad {
	case padMD64:
		l.chunks = (l.msgLen + 1 + 8 + chunk - 1) / chunk
	case padMD128:
		l.chunks = (l.msgLen + 1 + 16 + chunk - 1) / chunk
	default:
		l.chunks = max(1, (l.msgLen+chunk-1)/chunk)
	}
	// Direct chunks lie wholly inside the block; BLAKE2b's last chunk is
	// compressed with the final flag, so it always goes through the tail.
	k0 := max(l.pre, (l.blockOff+chunk-1)/chunk)
	k1 := (l.blockOff + blockSize) / chunk
	if pad == padZero {
		k1 = min(k1, l.chunks-1)
	}
	if halfOK && pos == SaltBefore && s%chunk == 32 && blockSize >= chunk {
		// Lines [0, blockSize/chunk) are chunks pre..; the chunk ending
		// with line k's first chunk-32 bytes is never BLAKE2b's last.
		l.half = true
		l.directN = blockSize / chunk
	} else if k1 > k0 {
		l.headN = k0 - l.pre
		l.directN = k1 - k0
		l.directOff = k0*chunk - l.blockOff
	}
	l.tailN = l.chunks - l.pre - l.headN - l.directN
	l.scratch = (l.headN + l.tailN) * chunk

	// The padded message with zeros for the block, as far as the scratch needs it.
	padded := make([]byte, l.chunks*chunk)
	if pos == SaltBefore {
		copy(padded, salt)
	} else {
		copy(padded[blockSize:], salt)
	}
	switch pad {
	case padMD64, padMD128:
		padded[l.msgLen] = 0x80
		bits := uint64(l.msgLen) * 8
		for i := range 8 {
			padded[len(padded)-1-i] = byte(bits >> (8 * i))
		}
	}
	l.template = make([]byte, l.scratch)
	copy(l.template, padded[l.headStart():l.headStart()+l.headN*chunk])
	copy(l.template[l.headN*chunk:], padded[l.tailStart():])
	return l
}

func (l *msgLayout) headStart() int { return l.pre * l.chunk }
func (l *msgLayout) tailStart() int { return (l.pre + l.headN + l.directN) * l.chunk }

// fill copies the bytes of block that fall in the head and tail chunks into
// a lane's scratch, which must hold the template.
func (l *msgLayout) fill(scratch, block []byte) {
	l.fillRegion(scratch[:l.headN*l.chunk], l.headStart(), block)
	l.fillRegion(scratch[l.headN*l.chunk:], l.tailStart(), block)
}

func (l *msgLayout) fillRegion(dst []byte, msgStart int, block []byte) {
	a := max(msgStart, l.blockOff)
	b := min(msgStart+len(dst), l.blockOff+l.blockSize)
	if a < b {
		copy(dst[a-msgStart:], block[a-l.blockOff:b-l.blockOff])
	}
}
