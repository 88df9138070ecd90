package merkle

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeSuperblock: the lenient decoder veritycheck uses never panics,
// fails only with ErrBadSuperblock, and agrees with the strict parser: a
// superblock that decodes is strictly valid exactly when its reserved and
// padding bytes are the canonical ones, and then re-encodes to itself.
func FuzzDecodeSuperblock(f *testing.F) {
	good := EncodeSuperblock(testSuperblockGeometry(f))
	f.Add(good)
	f.Add(make([]byte, 512))
	dirty := bytes.Clone(good)
	dirty[300] = 1 // a padding byte
	f.Add(dirty)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeSuperblock(b)
		if err != nil {
			if !errors.Is(err, ErrBadSuperblock) {
				t.Fatalf("error does not wrap ErrBadSuperblock: %v", err)
			}
			if SuperblockPaddingErrors(b) != nil {
				t.Fatal("SuperblockPaddingErrors lists bytes of a superblock that does not decode")
			}
			return
		}
		if !p.Superblock || p.HashOffset != 0 {
			t.Fatalf("decoded %+v: want Superblock true and HashOffset 0", p)
		}
		pad := SuperblockPaddingErrors(b)
		strict, serr := ParseSuperblock(b)
		switch {
		case len(pad) == 0 && serr != nil:
			t.Fatalf("no padding errors but ParseSuperblock fails: %v", serr)
		case len(pad) > 0 && serr == nil:
			t.Fatalf("padding errors at %v but ParseSuperblock accepts it", pad)
		}
		for _, off := range pad {
			if off < 0 || off >= SuperblockSize {
				t.Fatalf("padding error offset %d outside the superblock", off)
			}
		}
		if serr == nil {
			if enc := encodeParams(strict); !bytes.Equal(enc, b[:SuperblockSize]) {
				t.Fatalf("a strictly valid superblock re-encodes differently:\n got %x\nwant %x", enc, b[:SuperblockSize])
			}
		}
	})
}
