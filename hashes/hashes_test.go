package hashes

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/md4"       //lint:ignore SA1019 the reference for the kernel's md4
	"golang.org/x/crypto/ripemd160" //lint:ignore SA1019 the reference for the kernel's rmd160
	xsha3 "golang.org/x/crypto/sha3"
)

// reference returns the standard library's (x/crypto's for BLAKE2b,
// BLAKE2s, MD4 and RIPEMD-160) hash of the same name: the yardstick for
// every implementation here.
func reference(t testing.TB, a *Algorithm) func() hash.Hash {
	b2b := func(size int) func() hash.Hash {
		return func() hash.Hash { h, _ := blake2b.New(size, nil); return h }
	}
	refs := map[*Algorithm]func() hash.Hash{
		SHA1: sha1.New, SHA224: sha256.New224, SHA256: sha256.New, SHA384: sha512.New384, SHA512: sha512.New,
		SHA3_224: func() hash.Hash { return xsha3.New224() }, SHA3_256: func() hash.Hash { return xsha3.New256() },
		SHA3_384: func() hash.Hash { return xsha3.New384() }, SHA3_512: func() hash.Hash { return xsha3.New512() },
		BLAKE2b160: b2b(20), BLAKE2b256: b2b(32), BLAKE2b384: b2b(48), BLAKE2b512: b2b(64),
		BLAKE2s256: func() hash.Hash { h, _ := blake2s.New256(nil); return h },
		MD5:        md5.New, MD4: md4.New, RMD160: ripemd160.New,
	}
	if r, ok := refs[a]; ok {
		return r
	}
	t.Fatalf("no reference for %s", a.Name())
	return nil
}

func refSum(newHash func() hash.Hash, salt, block []byte, pos SaltPosition) []byte {
	h := newHash()
	if pos == SaltBefore {
		h.Write(salt)
		h.Write(block)
	} else {
		h.Write(block)
		h.Write(salt)
	}
	return h.Sum(nil)
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"sha1", "SHA256", "Sha512", "BLAKE2B-256", "blake2b-256", "sha3-256", "RMD160", "md5"} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
		if a.Name() != strings.ToLower(name) {
			t.Errorf("Lookup(%q).Name() = %q, want lower case", name, a.Name())
		}
	}
	for _, name := range []string{"", "whirlpool", "sm3", "blake2b", "sha3_256", "sha256 ", "sha512-256", "streebog256", "shake128", "blake2s-128"} {
		_, err := Lookup(name)
		var ue *unknownAlgorithmError
		if !errors.As(err, &ue) {
			t.Fatalf("Lookup(%q) = %v, want unknownAlgorithmError", name, err)
		}
		for _, known := range Names() {
			if !strings.Contains(err.Error(), known) {
				t.Errorf("error %q does not list %s", err, known)
			}
		}
	}
}

func TestSizesMatchReference(t *testing.T) {
	for _, a := range all {
		ref := reference(t, a)()
		if a.Size() != ref.Size() || a.New().Size() != ref.Size() {
			t.Errorf("%s: Size %d, New().Size %d, reference %d", a.Name(), a.Size(), a.New().Size(), ref.Size())
		}
	}
}

// TestHashBlocksAllImplementations runs every implementation this machine
// can run against the reference, on random blocks and salts, with block
// sizes around the hashes' own 64- and 128-byte blocks and counts that are
// not multiples of any lane count.
func TestHashBlocksAllImplementations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	blockSizes := []int{1, 31, 32, 55, 56, 63, 64, 65, 96, 111, 112, 127, 128, 129, 512, 1000, 4096}
	saltSizes := []int{0, 1, 32, 63, 64, 65, 127, 128, 129, 256}
	counts := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33}
	for _, a := range all {
		ref := reference(t, a)
		for _, impl := range a.Implementations() {
			t.Run(a.Name()+"/"+impl, func(t *testing.T) {
				for _, bs := range blockSizes {
					for _, ss := range saltSizes {
						count := counts[rng.IntN(len(counts))]
						pos := SaltPosition(rng.IntN(2))
						salt := randBytes(rng, ss)
						blocks := randBytes(rng, bs*count)
						stride := a.Size() + rng.IntN(3)*8
						bh, err := a.NewBlockHasherImpl(impl, bs, salt, pos)
						if err != nil {
							t.Fatal(err)
						}
						dst := bytes.Repeat([]byte{0xa5}, stride*count+5)
						bh.HashBlocks(dst, stride, blocks)
						for i := range count {
							want := refSum(ref, salt, blocks[i*bs:(i+1)*bs], pos)
							got := dst[i*stride : i*stride+a.Size()]
							if !bytes.Equal(got, want) {
								t.Fatalf("block size %d, salt %d, pos %d, count %d: block %d digest %x, want %x",
									bs, ss, pos, count, i, got, want)
							}
							for _, c := range dst[i*stride+a.Size() : min((i+1)*stride, len(dst))] {
								if c != 0xa5 {
									t.Fatalf("bytes between digests were changed")
								}
							}
						}
						if !bytes.Equal(dst[len(dst)-5:], bytes.Repeat([]byte{0xa5}, 5)) {
							t.Fatalf("bytes past the last digest were changed")
						}
					}
				}
			})
		}
	}
}

func TestHashBlocksKeepsSaltCopy(t *testing.T) {
	salt := []byte("salt")
	bh := SHA256.NewBlockHasher(64, salt, SaltBefore)
	salt[0] = 'X'
	block := make([]byte, 64)
	dst := make([]byte, 32)
	bh.HashBlocks(dst, 32, block)
	if want := refSum(sha256.New, []byte("salt"), block, SaltBefore); !bytes.Equal(dst, want) {
		t.Fatal("BlockHasher used the caller's salt after it changed")
	}
}

func TestHashBlocksNoAllocs(t *testing.T) {
	for _, a := range all {
		bh := a.NewBlockHasher(4096, make([]byte, 32), SaltBefore)
		blocks := make([]byte, 16*4096)
		dst := make([]byte, 16*64)
		if n := testing.AllocsPerRun(10, func() { bh.HashBlocks(dst, 64, blocks) }); n != 0 {
			t.Errorf("%s/%s: %v allocations per HashBlocks call", a.Name(), bh.Implementation(), n)
		}
	}
}

func TestHashBlocksPanicsOnMisuse(t *testing.T) {
	bh := SHA256.NewBlockHasher(64, nil, SaltBefore)
	for name, f := range map[string]func(){
		"partial block": func() { bh.HashBlocks(make([]byte, 64), 32, make([]byte, 100)) },
		"short stride":  func() { bh.HashBlocks(make([]byte, 64), 16, make([]byte, 64)) },
		"short dst":     func() { bh.HashBlocks(make([]byte, 63), 32, make([]byte, 128)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestPreferImplementation(t *testing.T) {
	t.Cleanup(func() { PreferImplementation(os.Getenv(ImplEnv)) })
	for _, a := range all {
		PreferImplementation("generic")
		if got := a.NewBlockHasher(4096, nil, SaltBefore).Implementation(); got != "generic" {
			t.Errorf("%s preferring generic: got %s", a.Name(), got)
		}
		PreferImplementation("no-such-impl")
		if got, want := a.NewBlockHasher(4096, nil, SaltBefore).Implementation(), a.Implementations()[0]; got != want {
			t.Errorf("%s preferring an unknown implementation: got %s, want the default %s", a.Name(), got, want)
		}
	}
	PreferImplementation("")
	if _, err := SHA256.NewBlockHasherImpl("no-such-impl", 4096, nil, SaltBefore); err == nil {
		t.Error("NewBlockHasherImpl accepted an unknown implementation")
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// BenchmarkHashBlocks hashes 1 MiB per op as 256 blocks of 4 KiB with a
// 32-byte salt, for every implementation and for ref: the standard library
// (x/crypto for BLAKE2b) one block at a time, so ratios come from one run.
func BenchmarkHashBlocks(b *testing.B) {
	const bs, count = 4096, 256
	salt := bytes.Repeat([]byte{0x5a}, 32)
	blocks := randBytes(rand.New(rand.NewPCG(3, 4)), bs*count)
	for _, a := range all {
		dst := make([]byte, count*64)
		for _, impl := range a.Implementations() {
			b.Run(fmt.Sprintf("%s/%s", a.Name(), impl), func(b *testing.B) {
				bh, err := a.NewBlockHasherImpl(impl, bs, salt, SaltBefore)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(bs * count)
				for b.Loop() {
					bh.HashBlocks(dst, 64, blocks)
				}
			})
		}
		b.Run(a.Name()+"/ref", func(b *testing.B) {
			h := reference(b, a)()
			b.SetBytes(bs * count)
			for b.Loop() {
				for i := range count {
					h.Reset()
					h.Write(salt)
					h.Write(blocks[i*bs : (i+1)*bs])
					h.Sum(dst[i*64 : i*64])
				}
			}
		})
	}
}
