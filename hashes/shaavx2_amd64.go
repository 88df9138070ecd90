//go:build !purego

package hashes

import "github.com/veritytree/veritytree/hashes/internal/consts"

//go:generate sh -c "cd _asm && go run . -alg shaavx2 -out ../shaavx2_amd64.s -stubs ../shaavx2_stubs_amd64.go -pkg hashes"

// The AVX2 kernels (no AVX-512): vecMD on 8 32-bit or 4 64-bit lanes.
//
// smallMax is lanes × (speed of the standard library / speed of the
// kernel), as for the AVX-512 ones, with the standard library as it runs
// where these kernels are the default, without SHA-NI (measured on Zen 4
// with GODEBUG=cpu.sha=off): SHA-1 0.9 against 2.6 GB/s, SHA-256 0.43
// against 1.35, SHA-512 0.65 against 1.1, so 2 for all three.

func newSHA1AVX2(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newVecMD(8, consts.SHA1IV[:], 20, func(st []uint32, p *[16]*byte, n int, half bool) {
		sha1AVX2x8((*[232]uint32)(st), (*[8]*byte)(p[:8]), n, half)
	}, blockSize, salt, pos)
	h.small, h.smallMax = newStreamingBulk(a, blockSize, salt, pos), 2
	return h
}

func newSHA256AVX2(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newVecMD(8, consts.SHA256IV[:], 32, func(st []uint32, p *[16]*byte, n int, half bool) {
		sha256AVX2x8((*[256]uint32)(st), (*[8]*byte)(p[:8]), n, half)
	}, blockSize, salt, pos)
	h.small, h.smallMax = newStreamingBulk(a, blockSize, salt, pos), 2
	return h
}

func newSHA512AVX2(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newVecMD(4, consts.SHA512IV[:], 64, func(st []uint64, p *[16]*byte, n int, half bool) {
		sha512AVX2x4((*[112]uint64)(st), (*[4]*byte)(p[:4]), n, half)
	}, blockSize, salt, pos)
	h.small, h.smallMax = newStreamingBulk(a, blockSize, salt, pos), 2
	return h
}
