package safety_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veritytree/veritytree/avb"
)

func init() { moreAttacks = append(moreAttacks, sparseTailAttacks) }

// chunkyFooterImage writes big.simg: 3M one-block FILL chunks (48 MB, 11
// GiB expanded), then a two-block tree, the vbmeta of a hashtree
// descriptor naming them and a footer, as avbtool's sparse layout holds
// them (the vbmeta and the footer block in RAW chunks of their own).
func chunkyFooterImage(t *testing.T, d string) {
	const n, bs = 3_000_000, 4096
	data := uint64(n) * bs
	ht := &avb.HashtreeDescriptor{DMVerityVersion: 1, ImageSize: data, TreeOffset: data, TreeSize: 2 * bs, DataBlockSize: bs,
		HashBlockSize: bs, HashAlgorithm: "sha256", PartitionName: "system", Salt: []byte{1}, RootDigest: make([]byte, 32)}
	blob, err := avb.MakeVBMeta(&avb.VBMetaOptions{Descriptors: []avb.Descriptor{ht}})
	if err != nil {
		t.Fatal(err)
	}
	vb := make([]byte, bs)
	copy(vb, blob)
	footer := make([]byte, bs)
	copy(footer[bs-avb.FooterSize:], avb.NewFooter(data, data+2*bs, uint64(len(blob))).Encode())
	s := &sparseImage{bs: bs}
	s.body.Grow(n*16 + 4*bs)
	for i := range n {
		s.fill(1, 0x11111111*uint32(1+i%2))
	}
	s.chunk(chunkRaw, 2, bytes.Repeat([]byte{0x77}, 2*bs)).chunk(chunkRaw, 1, vb).chunk(chunkDontCare, 1, nil).chunk(chunkRaw, 1, footer)
	writeFile(t, d, "big.simg", s.bytes())
}

// chunksOf returns the chunk count of the sparse image at path and the
// type of its last chunk.
func chunksOf(t *testing.T, path string) (uint32, uint16) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	n, off, typ := le.Uint32(b[20:]), 28, uint16(0)
	for range n {
		typ = le.Uint16(b[off:])
		off += int(le.Uint32(b[off+8:]))
	}
	if off != len(b) {
		t.Fatalf("%d bytes past the last chunk", len(b)-off)
	}
	return n, typ
}

// sparseTailLong is why -short leaves out the 3M-chunk rows.
const sparseTailLong = "the 3M one-block sparse chunks rewritten (avb's sparse tail tests run on small images)"

// sparseTailAttacks: resize_image and zero_hashtree of a sparse image of
// millions of chunks stay in bounded memory (the harness checks the peak
// RSS), and make avbtool's chunks: the image cut after the vbmeta (the
// tree), then two chunks (five).
var sparseTailAttacks = []attack{
	{item: "6", name: "avbtool resize_image on 3M one-block sparse chunks (48 MB)",
		setup: chunkyFooterImage,
		prog:  "avbtool", args: []string{"resize_image", "--image", "big.simg", "--partition_size", fmt.Sprint(uint64(3_000_000*4096 + 1<<20))},
		exit: []int{0}, mayChange: []string{"big.simg"}, timeout: 5 * time.Minute, long: sparseTailLong,
		after: func(t *testing.T, d string, o *outcome) {
			if n, typ := chunksOf(t, filepath.Join(d, "big.simg")); n != 3_000_000+4 || typ != chunkRaw {
				t.Errorf("%d chunks, the last of type %#x; want 3000004, RAW", n, typ)
			}
		}},
	{item: "6", name: "avbtool zero_hashtree on 3M one-block sparse chunks (48 MB)",
		setup: chunkyFooterImage,
		prog:  "avbtool", args: []string{"zero_hashtree", "--image", "big.simg"},
		exit: []int{0}, mayChange: []string{"big.simg"}, timeout: 5 * time.Minute, long: sparseTailLong,
		after: func(t *testing.T, d string, o *outcome) {
			if n, typ := chunksOf(t, filepath.Join(d, "big.simg")); n != 3_000_000+3 || typ != chunkRaw {
				t.Errorf("%d chunks, the last of type %#x; want 3000003, RAW", n, typ)
			}
		}},
}
