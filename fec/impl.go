package fec

// ImplEnv is the environment variable that forces an encoder by name, for
// tests and for users who want to compare: "generic" (the Go LFSR, on every
// platform) or, on amd64, "gfni512" (GFNI on AVX-512 zmm registers, 64
// codewords a vector), "gfni256" (GFNI on AVX2 ymm registers, 32) or
// "avx2" (VPSHUFB nibble tables on ymm registers, 32). A name the machine
// cannot run falls back to the default, the first of Implementations.
// Building with the purego tag leaves out the assembly.
const ImplEnv = "VERITYTREE_FEC_IMPL"
