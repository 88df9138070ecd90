package merkle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

func testSuperblockGeometry(t testing.TB) *Geometry {
	g, err := NewGeometry(Params{Hash: hashes.BLAKE2b256, Salt: []byte{1, 2, 3},
		DataBlockSize: 4096, HashBlockSize: 1024, DataBlocks: 1<<33 + 5, Superblock: true,
		UUID: [16]byte{0xa6, 0x0c, 0x98, 0xd2, 0xae, 0x9b, 0x48, 0x65, 0xbf, 0xcb, 0xb4, 0xe3, 0xac, 0xe1, 0x10, 0x33}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSuperblockLayout(t *testing.T) {
	g := testSuperblockGeometry(t)
	b := EncodeSuperblock(g)
	le := binary.LittleEndian
	if len(b) != 512 || string(b[:8]) != "verity\x00\x00" || le.Uint32(b[8:]) != 1 || le.Uint32(b[12:]) != 1 {
		t.Fatalf("header fields wrong: %x", b[:16])
	}
	if !bytes.Equal(b[16:32], g.UUID[:]) || string(b[32:43]) != "blake2b-256" || b[43] != 0 {
		t.Fatalf("uuid or algorithm wrong: %x", b[16:64])
	}
	if le.Uint32(b[64:]) != 4096 || le.Uint32(b[68:]) != 1024 || le.Uint64(b[72:]) != 1<<33+5 || le.Uint16(b[80:]) != 3 {
		t.Fatalf("sizes wrong: %x", b[64:88])
	}
	if !bytes.Equal(b[88:91], []byte{1, 2, 3}) || firstNonZero(b[91:]) >= 0 || firstNonZero(b[43:64]) >= 0 || firstNonZero(b[82:88]) >= 0 {
		t.Fatalf("salt or padding wrong")
	}
}

func TestSuperblockRoundTrip(t *testing.T) {
	for _, alg := range []*hashes.Algorithm{hashes.SHA1, hashes.SHA256, hashes.SHA512, hashes.BLAKE2b256} {
		for _, saltLen := range []int{0, 1, 32, 256} {
			g, err := NewGeometry(Params{Hash: alg, LegacyFormat: saltLen%2 == 0, Salt: bytes.Repeat([]byte{0xee}, saltLen),
				DataBlockSize: 512, HashBlockSize: 512 << 10, DataBlocks: 77, Superblock: true, UUID: [16]byte{9: 1}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParseSuperblock(EncodeSuperblock(g))
			if err != nil {
				t.Fatal(err)
			}
			if p.Hash != alg || p.Format() != g.Format() || !bytes.Equal(p.Salt, g.Salt) || p.DataBlockSize != 512 ||
				p.HashBlockSize != 512<<10 || p.DataBlocks != 77 || p.UUID != g.UUID || !p.Superblock {
				t.Fatalf("round trip: got %+v, want %+v", p, g.Params)
			}
		}
	}
}

func TestSuperblockStrict(t *testing.T) {
	good := EncodeSuperblock(testSuperblockGeometry(t))
	le := binary.LittleEndian
	for _, c := range []struct {
		name  string
		field string
		mod   func(b []byte)
	}{
		{"signature", "signature", func(b []byte) { b[0] = 'V' }},
		{"signature tail", "signature", func(b []byte) { b[7] = 1 }},
		{"version 0", "version", func(b []byte) { le.PutUint32(b[8:], 0) }},
		{"version 2", "version", func(b []byte) { le.PutUint32(b[8:], 2) }},
		{"hash type 2", "hash type", func(b []byte) { le.PutUint32(b[12:], 2) }},
		{"unknown algorithm", "algorithm", func(b []byte) { copy(b[32:], "whirlpool\x00\x00") }},
		{"upper-case algorithm", "algorithm", func(b []byte) { copy(b[32:], "BLAKE2B-256") }},
		{"upper-case spelling", "algorithm", func(b []byte) { copy(b[32:], "SHA2-256\x00\x00\x00") }},
		{"unterminated algorithm", "algorithm", func(b []byte) { copy(b[32:64], bytes.Repeat([]byte{'a'}, 32)) }},
		{"junk after algorithm", "algorithm", func(b []byte) { b[60] = 1 }},
		{"data block size 0", "data block size", func(b []byte) { le.PutUint32(b[64:], 0) }},
		{"data block size 3000", "data block size", func(b []byte) { le.PutUint32(b[64:], 3000) }},
		{"hash block size 1 MiB", "hash block size", func(b []byte) { le.PutUint32(b[68:], 1<<20) }},
		{"data blocks 0", "data blocks", func(b []byte) { le.PutUint64(b[72:], 0) }},
		{"data blocks overflow", "data blocks", func(b []byte) { le.PutUint64(b[72:], 1<<62) }},
		{"salt size 257", "salt size", func(b []byte) { le.PutUint16(b[80:], 257) }},
		{"reserved after salt size", "reserved", func(b []byte) { b[85] = 1 }},
		{"salt padding", "salt", func(b []byte) { b[88+3] = 1 }},
		{"salt padding end", "salt", func(b []byte) { b[343] = 1 }},
		{"reserved tail", "reserved", func(b []byte) { b[344] = 1 }},
		{"reserved last", "reserved", func(b []byte) { b[511] = 0x80 }},
	} {
		b := bytes.Clone(good)
		c.mod(b)
		_, err := ParseSuperblock(b)
		var se *SuperblockError
		if !errors.As(err, &se) || !errors.Is(err, ErrBadSuperblock) {
			t.Errorf("%s: err = %v, want a SuperblockError", c.name, err)
			continue
		}
		if se.Field != c.field {
			t.Errorf("%s: field %q, want %q (%v)", c.name, se.Field, c.field, err)
		}
	}
	if _, err := ParseSuperblock(good[:511]); !errors.Is(err, ErrBadSuperblock) {
		t.Errorf("short superblock: %v", err)
	}
	if _, err := ParseSuperblock(good); err != nil {
		t.Fatalf("good superblock: %v", err)
	}
}

// TestSuperblockSpellings: the superblock keeps the name veritysetup was
// given (in lower case): another spelling of the algorithm reads back as
// that algorithm and encodes to the same bytes; the kernel name is stored
// when none is given, or one of another algorithm.
func TestSuperblockSpellings(t *testing.T) {
	for _, c := range []struct {
		alg        *hashes.Algorithm
		name, want string
	}{
		{hashes.RMD160, "ripemd160", "ripemd160"},
		{hashes.RMD160, "RIPEMD-160", "ripemd-160"},
		{hashes.SHA256, "sha2-256", "sha2-256"},
		{hashes.BLAKE2b512, "blake2b512", "blake2b512"},
		{hashes.SHA3_256, "", "sha3-256"},
		{hashes.SHA256, "sha512", "sha256"}, // another algorithm's name is not this one's spelling
	} {
		g := testSuperblockGeometry(t)
		g.Hash, g.HashName = c.alg, c.name
		b := EncodeSuperblock(g)
		if got := string(bytes.TrimRight(b[32:64], "\x00")); got != c.want {
			t.Errorf("%s as %q: superblock names %q, want %q", c.alg, c.name, got, c.want)
		}
		p, err := ParseSuperblock(b)
		if err != nil {
			t.Fatalf("%s as %q: %v", c.alg, c.name, err)
		}
		if p.Hash != c.alg || p.SuperblockHashName() != c.want {
			t.Errorf("%s as %q: read back %s as %q", c.alg, c.name, p.Hash, p.SuperblockHashName())
		}
		if g2, err := NewGeometry(p); err != nil || !bytes.Equal(EncodeSuperblock(g2), b) {
			t.Errorf("%s as %q: does not encode back to the same bytes (%v)", c.alg, c.name, err)
		}
	}
}

// FuzzParseSuperblock: any input either fails cleanly or describes
// parameters whose encoding is exactly the input (the format has one
// encoding per parameter set).
func FuzzParseSuperblock(f *testing.F) {
	f.Add(EncodeSuperblock(testSuperblockGeometry(f)))
	f.Add(make([]byte, 512))
	// veritysetup's other spellings, and a name it has and we do not.
	for _, name := range []string{"ripemd160", "2.16.840.1.101.3.4.2.10", "sm3"} {
		g := testSuperblockGeometry(f)
		g.Hash, g.HashName = hashes.RMD160, name
		b := encodeParams(g.Params)
		copy(b[32:64], make([]byte, 32))
		copy(b[32:], name)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseSuperblock(b)
		if err != nil {
			if !errors.Is(err, ErrBadSuperblock) {
				t.Fatalf("error does not wrap ErrBadSuperblock: %v", err)
			}
			return
		}
		g, err := NewGeometry(p)
		if err != nil {
			// Valid superblocks can still describe an impossible tree only
			// through sizes NewGeometry checks beyond the superblock's own.
			if !errors.Is(err, ErrInvalidParams) {
				t.Fatal(err)
			}
			return
		}
		if enc := EncodeSuperblock(g); !bytes.Equal(enc, b[:512]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", enc, b[:512])
		}
	})
}
