package dm

import (
	"testing"
)

// FuzzDecode feeds the decoders of the kernel's answers arbitrary bytes:
// they must return an error, never panic or read out of bounds.
func FuzzDecode(f *testing.F) {
	f.Add(kernelTargets([]Target{{0, 8, "verity", "1 7:0 7:0 4096 4096 1 1 sha256 00 -"}}), uint32(1))
	f.Add(kernelNames([]Device{{Name: "vroot", UUID: "CRYPT-VERITY-vroot", Major: 253}, {Name: "b", Major: 253, Minor: 1}}, true), uint32(2))
	f.Add(make([]byte, 16), uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, count uint32) {
		decodeTargets(data, count%64)
		decodeNames(data, count%2 == 0)
		decodeVersions(data)
		if len(data) >= headerSize {
			decodeReply(data)
		}
	})
}
