//go:build !purego

package hashes

import (
	"testing"

	"golang.org/x/sys/cpu"
)

func TestSHA256CE4Kernel(t *testing.T) {
	if !cpu.ARM64.HasSHA2 {
		t.Skip("no SHA-256 instructions")
	}
	testKernel32x4(t, newSHA256CE4Kernel(), sha256BlockRef)
}

func TestSHA1CE4Kernel(t *testing.T) {
	if !cpu.ARM64.HasSHA1 {
		t.Skip("no SHA-1 instructions")
	}
	testKernel32x4(t, newSHA1CE4Kernel(), sha1BlockRef)
}

func TestSHA512CE2Kernel(t *testing.T) {
	if !cpu.ARM64.HasSHA512 {
		t.Skip("no SHA-512 instructions")
	}
	testKernel64x2(t, newSHA512CE2Kernel())
}
