//go:build !amd64 || purego

package fec

// newTileEncoder returns nil: without the amd64 kernels every codeword goes
// through the Go LFSR.
func newTileEncoder(int, string) tileEncoder { return nil }

// Implementations returns the names of the encoders this machine runs, the
// default first: here only "generic".
func Implementations() []string { return []string{"generic"} }
