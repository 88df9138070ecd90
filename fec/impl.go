package fec

import "sync/atomic"

// ImplEnv is the environment variable with which the commands (and this
// package's tests) force an encoder by name, passing its value to
// PreferImplementation (the package reads no environment itself), for
// tests and for users who want to compare: "generic" (the Go LFSR, on every
// platform) or, on amd64, "gfni512" (GFNI on AVX-512 zmm registers, 64
// codewords a vector), "gfni256" (GFNI on AVX2 ymm registers, 32) or
// "avx2" (VPSHUFB nibble tables on ymm registers, 32). A name the machine
// cannot run falls back to the default, the first of Implementations.
// Building with the purego tag leaves out the assembly.
const ImplEnv = "VERITYTREE_FEC_IMPL"

// preferred is the encoder name PreferImplementation set.
var preferred atomic.Pointer[string]

// PreferImplementation makes Encode use the encoder named (see ImplEnv for
// the names) when the machine runs it, in the whole process; "" restores
// the default, the fastest. The parity is the same for every encoder.
func PreferImplementation(name string) {
	preferred.Store(&name)
}

func preferredImpl() string {
	if p := preferred.Load(); p != nil {
		return *p
	}
	return ""
}
