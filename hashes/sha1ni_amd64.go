//go:build !purego

package hashes

import (
	"unsafe"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

//go:generate sh -c "cd _asm && go run . -alg sha1ni -out ../sha1ni_amd64.s -stubs ../sha1ni_stubs_amd64.go -pkg hashes"

// sha1NIKernels[n] compresses n interleaved SHA-1 streams with the SHA
// extensions.
var sha1NIKernels = [5]func(*[4][5]uint32, *[4]*byte, int){1: sha1NIx1, 2: sha1NIx2, 3: sha1NIx3, 4: sha1NIx4}

func newSHA1NI(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	var k [5]func([]uint32, *[4]*byte, int)
	for n, kernel := range sha1NIKernels {
		if kernel != nil {
			k[n] = func(st []uint32, p *[4]*byte, chunks int) {
				kernel((*[4][5]uint32)(unsafe.Pointer(&st[0])), p, chunks)
			}
		}
	}
	return newSHANI(consts.SHA1IV[:], k, blockSize, salt, pos)
}
