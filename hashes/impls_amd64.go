//go:build !purego

package hashes

import "golang.org/x/sys/cpu"

// The amd64 bulk implementations, fastest first for each algorithm (init
// below); NewBlockHasher takes the first one the CPU runs, and
// VERITYTREE_HASH_IMPL (ImplEnv) forces another. The order is what measured
// fastest on an AMD Zen 4 (2 vCPUs of a shared build machine), with our
// kernels and the C kernels of shared/limits timed round-robin in one
// process, 1 MiB of 4 KiB blocks with a 32-byte salt.

// SHA-256 with the SHA extensions: 4 interleaved streams (a 1..3-stream
// kernel for the rest). SHA256RNDS2 is latency-bound: one stream leaves the
// SHA unit mostly idle, 4 keep it busy (about 2.4x one stream on a quiet
// core). It is the default on CPUs with SHA-NI but without AVX-512 (Zen 2/3,
// recent Intel client cores), and hashes the last few blocks for "avx512".
var shaNI4 = &implementation{
	name:      "shani4",
	available: func() bool { return hasSHA && cpu.X86.HasSSE41 && cpu.X86.HasSSSE3 },
	new:       newSHA256NI,
}

// SHA-256 on AVX-512: 16 lanes, rounds in ordinary vector instructions
// (VPRORD, VPTERNLOGD for Ch, Maj and the three-way xors). On a quiet Zen 4
// core shared/limits has SHA-NI ×4 ahead of C AVX-512 (4.4 against 3.2 GB/s),
// but our AVX-512 kernel runs 1.0-1.4x that C one, and on the loaded machine
// where we measured it beat our SHA-NI ×4 by 1.3-1.6x in every run (the SHA
// unit suffers more from a busy neighbour): so it comes first where the CPU
// has it.
var sha256AVX512Impl = &implementation{
	name:      "avx512",
	available: func() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW },
	new:       newSHA256AVX512,
}

// BLAKE2b-256: AVX-512, two interleaved groups of 8 lanes (one block per
// 64-bit lane; 16 blocks at a time, 8 when 8 or fewer are left): 4.2
// against 3.7 GB/s for one group in shared/limits. BLAKE2b is all 64-bit
// adds, xors and rotates: VPRORQ rotates in one instruction and the 32 zmm
// registers hold both groups' 16 work vectors.
var blake2bAVX512Impl = &implementation{
	name:      "avx512",
	available: func() bool { return cpu.X86.HasAVX512F },
	new:       newBLAKE2bAVX512,
}

// BLAKE2b-256 without AVX-512: AVX2, 4 lanes (2.5 GB/s in shared/limits,
// against about 0.9 for one block at a time).
var blake2bAVX2Impl = &implementation{
	name:      "avx2",
	available: func() bool { return cpu.X86.HasAVX2 },
	new:       newBLAKE2bAVX2,
}

// SHA-1: AVX-512, 16 lanes, everything in registers. SHA-1's rounds are
// cheap vector work (the three-way functions in one VPTERNLOGD, rotates in
// one VPROLD), so 16 lanes at once beat SHA-NI's 4 interleaved streams (5.8
// against 4.1 GB/s in shared/limits). Without AVX-512: "shani4" or "avx2".
var sha1AVX512Impl = &implementation{
	name:      "avx512",
	available: func() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW },
	new:       newSHA1AVX512,
}

// SHA-1 with the SHA extensions: 4 interleaved streams (a 1..3-stream kernel
// for the rest), bound by SHA1RNDS4's throughput; ours runs at 1.0-1.1x the
// C SHA-NI ×4 of shared/limits. It sits after "avx512", whose 16 lanes are
// faster (5.8 against 4.1 GB/s in shared/limits), and before AVX2's 8 lanes
// (3.4 GB/s): it is the default on CPUs with SHA-NI but no AVX-512 (Zen 1-3,
// Intel client cores).
var sha1NI4 = &implementation{
	name:      "shani4",
	available: func() bool { return hasSHA && cpu.X86.HasSSE41 && cpu.X86.HasSSSE3 },
	new:       newSHA1NI,
}

// SHA-512: AVX-512, 8 lanes, everything in registers; Zen 4 has no SHA-512
// instruction. Without AVX-512: "avx2".
var sha512AVX512Impl = &implementation{
	name:      "avx512",
	available: func() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW },
	new:       newSHA512AVX512,
}

// The AVX2 multi-buffer kernels, for CPUs without AVX-512: 8 lanes of
// SHA-1 or SHA-256, 4 of SHA-512 (16 ymm registers: the state stays in
// registers, the message schedule in memory). Timed on Zen 4 in thread CPU
// time, alternating with the C AVX2 kernels of shared/limits on the loaded
// machine: SHA-1 2.6 GB/s (C 2.1), SHA-256 1.3 (C 1.1), SHA-512 1.1 (C 0.85;
// the standard library 0.6). They come after "avx512" (twice the lanes and
// VPROLD/VPTERNLOG: 2-3x faster) and, for SHA-1 and SHA-256, after "shani4"
// (3.0-4.0 and 2.2-2.6 GB/s in the same runs), so they are the default on
// AVX2 CPUs without SHA-NI (Intel Haswell to Comet Lake), where the
// standard library's one-block AVX2 code does 0.9 and 0.43 GB/s (Zen 4 with
// GODEBUG=cpu.sha=off); and for SHA-512 on every AVX2 CPU without AVX-512.
var (
	sha1AVX2Impl   = &implementation{name: "avx2", available: hasAVX2, new: newSHA1AVX2}
	sha256AVX2Impl = &implementation{name: "avx2", available: hasAVX2, new: newSHA256AVX2}
	sha512AVX2Impl = &implementation{name: "avx2", available: hasAVX2, new: newSHA512AVX2}
)

func hasAVX2() bool { return cpu.X86.HasAVX2 }

// hasSHA reports the SHA extensions (CPUID.(EAX=7,ECX=0):EBX bit 29), which
// golang.org/x/sys/cpu does not.
var hasSHA = func() bool {
	if maxLeaf, _, _, _ := cpuid(0, 0); maxLeaf < 7 {
		return false
	}
	_, ebx, _, _ := cpuid(7, 0)
	return ebx&(1<<29) != 0
}()

func init() {
	SHA1.impls = []*implementation{sha1AVX512Impl, sha1NI4, sha1AVX2Impl}
	SHA256.impls = []*implementation{sha256AVX512Impl, shaNI4, sha256AVX2Impl}
	SHA512.impls = []*implementation{sha512AVX512Impl, sha512AVX2Impl}
	BLAKE2b256.impls = []*implementation{blake2bAVX512Impl, blake2bAVX2Impl}
}
