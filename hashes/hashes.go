// Package hashes provides the digest algorithms of dm-verity by their kernel
// names (sha1, sha224, sha256, sha384, sha512, sha3-224 to sha3-512,
// blake2b-160 to blake2b-512, blake2s-256, md5, md4, rmd160), each as a streaming
// hash.Hash and as a bulk call that hashes many equal-sized salted blocks at
// once. Lookup also takes the other spellings veritysetup takes (OpenSSL's:
// sha2-256, ripemd160, blake2b512...).
//
// The bulk call, BlockHasher.HashBlocks, is the one seam between the tree code
// and everything that makes hashing fast: implementations behind it may hash
// several blocks at once (multi-buffer SIMD) without the callers changing.
package hashes

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
	"sync/atomic"
)

// Algorithm is one supported digest algorithm. The zero value is not usable;
// get one from Lookup or one of the package variables.
type Algorithm struct {
	name string
	// aliases are the other names veritysetup 2.6.1 takes for it, in lower
	// case: OpenSSL 3's names and OIDs of the digest (EVP_MD_fetch, which
	// ignores case), and cryptsetup's own "blake2b-512" and "blake2s-256".
	aliases []string
	size    int
	newHash func() hash.Hash
	// impls lists the bulk implementations, fastest first; the last is
	// always the portable one ("generic").
	impls []*implementation
}

// The supported algorithms, by their names in the kernel's crypto API (what
// a dm-verity table names). The BLAKE2b ones are unkeyed BLAKE2b (RFC 7693)
// with their digest length in the parameter block, not a truncated
// BLAKE2b-512, as the kernel's "blake2b-256"; OpenSSL, so veritysetup, has
// BLAKE2b-512 only. SHA-1, SHA-256, SHA-512 and BLAKE2b-256 have SIMD
// implementations; the others hash one block at a time.
var (
	SHA1       = &Algorithm{name: "sha1", aliases: []string{"sha-1", "ssl3-sha1", "1.3.14.3.2.26"}, size: sha1.Size, newHash: sha1.New}
	SHA224     = &Algorithm{name: "sha224", aliases: []string{"sha-224", "sha2-224", "2.16.840.1.101.3.4.2.4"}, size: sha256.Size224, newHash: sha256.New224}
	SHA256     = &Algorithm{name: "sha256", aliases: []string{"sha-256", "sha2-256", "2.16.840.1.101.3.4.2.1"}, size: sha256.Size, newHash: sha256.New}
	SHA384     = &Algorithm{name: "sha384", aliases: []string{"sha-384", "sha2-384", "2.16.840.1.101.3.4.2.2"}, size: sha512.Size384, newHash: sha512.New384}
	SHA512     = &Algorithm{name: "sha512", aliases: []string{"sha-512", "sha2-512", "2.16.840.1.101.3.4.2.3"}, size: sha512.Size, newHash: sha512.New}
	SHA3_224   = &Algorithm{name: "sha3-224", aliases: []string{"2.16.840.1.101.3.4.2.7"}, size: 28, newHash: func() hash.Hash { return sha3.New224() }}
	SHA3_256   = &Algorithm{name: "sha3-256", aliases: []string{"2.16.840.1.101.3.4.2.8"}, size: 32, newHash: func() hash.Hash { return sha3.New256() }}
	SHA3_384   = &Algorithm{name: "sha3-384", aliases: []string{"2.16.840.1.101.3.4.2.9"}, size: 48, newHash: func() hash.Hash { return sha3.New384() }}
	SHA3_512   = &Algorithm{name: "sha3-512", aliases: []string{"2.16.840.1.101.3.4.2.10"}, size: 64, newHash: func() hash.Hash { return sha3.New512() }}
	BLAKE2b160 = &Algorithm{name: "blake2b-160", size: 20, newHash: func() hash.Hash { return newBLAKE2b(20) }}
	BLAKE2b256 = &Algorithm{name: "blake2b-256", size: 32, newHash: newBLAKE2b256}
	BLAKE2b384 = &Algorithm{name: "blake2b-384", size: 48, newHash: func() hash.Hash { return newBLAKE2b(48) }}
	BLAKE2b512 = &Algorithm{name: "blake2b-512", aliases: []string{"blake2b512", "1.3.6.1.4.1.1722.12.2.1.16"}, size: 64, newHash: func() hash.Hash { return newBLAKE2b(64) }}
	BLAKE2s256 = &Algorithm{name: "blake2s-256", aliases: []string{"blake2s256", "1.3.6.1.4.1.1722.12.2.2.8"}, size: 32, newHash: newBLAKE2s256}
	MD5        = &Algorithm{name: "md5", aliases: []string{"ssl3-md5", "1.2.840.113549.2.5"}, size: md5.Size, newHash: md5.New}
	MD4        = &Algorithm{name: "md4", aliases: []string{"1.2.840.113549.2.4"}, size: 16, newHash: newMD4}
	RMD160     = &Algorithm{name: "rmd160", aliases: []string{"ripemd160", "ripemd-160", "ripemd", "1.3.36.3.2.1"}, size: rmd160Size, newHash: newRMD160}
)

// all lists the algorithms in the order they are shown to users: the four
// usual ones first, as they were the only ones for a long time, then the
// others by family.
var all = []*Algorithm{SHA1, SHA256, SHA512, BLAKE2b256,
	SHA224, SHA384, SHA3_224, SHA3_256, SHA3_384, SHA3_512,
	BLAKE2b160, BLAKE2b384, BLAKE2b512, BLAKE2s256, MD5, MD4, RMD160}

// Names returns the canonical names of the supported algorithms.
func Names() []string {
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.name
	}
	return names
}

// All returns the supported algorithms, in the order of Names.
func All() []*Algorithm { return append([]*Algorithm(nil), all...) }

// unsupported are names veritysetup (OpenSSL) or the kernel know that we
// refuse, with why: Lookup's error says it rather than "unknown".
var unsupported = map[string]string{
	"whirlpool":    "Go has no Whirlpool, the kernel's wp512",
	"wp512":        "Go has no Whirlpool",
	"wp384":        "Go has no Whirlpool",
	"wp256":        "Go has no Whirlpool",
	"sm3":          "Go has no SM3",
	"streebog256":  "Go has no Streebog",
	"streebog512":  "Go has no Streebog",
	"sha512-224":   "the kernel has no sha512-224: dm-verity could not open the tree",
	"sha512-256":   "the kernel has no sha512-256: dm-verity could not open the tree",
	"sha2-512/224": "the kernel has no sha512-224: dm-verity could not open the tree",
	"sha2-512/256": "the kernel has no sha512-256: dm-verity could not open the tree",
	"sha-512/224":  "the kernel has no sha512-224: dm-verity could not open the tree",
	"sha-512/256":  "the kernel has no sha512-256: dm-verity could not open the tree",
	"shake128":     "SHAKE is no fixed-size hash and the kernel has none",
	"shake256":     "SHAKE is no fixed-size hash and the kernel has none",
	"shake-128":    "SHAKE is no fixed-size hash and the kernel has none",
	"shake-256":    "SHAKE is no fixed-size hash and the kernel has none",
	"md5-sha1":     "the kernel has no md5-sha1",
}

// Unsupported says why an algorithm veritysetup or the kernel know by that
// name is not one of ours ("Go has no SM3"), or "" if the name is not one
// of those (it may be unknown, or supported).
func Unsupported(name string) string { return unsupported[strings.ToLower(name)] }

// unknownAlgorithmError is returned by Lookup for a name it does not know.
type unknownAlgorithmError struct{ name, why string }

func (e *unknownAlgorithmError) Error() string {
	if e.why != "" {
		return fmt.Sprintf("hash algorithm %q is not supported: %s (supported: %s)", e.name, e.why, strings.Join(Names(), ", "))
	}
	return fmt.Sprintf("unknown hash algorithm %q (supported: %s)", e.name, strings.Join(Names(), ", "))
}

// Lookup returns the algorithm named, ignoring case: its kernel name or
// another name veritysetup takes for it ("ripemd160" is RMD160,
// "sha2-256" SHA256, "blake2b512" BLAKE2b512). An unknown name is an error
// listing the supported ones; there is no fallback.
func Lookup(name string) (*Algorithm, error) {
	for _, a := range all {
		if a.Is(name) {
			return a, nil
		}
	}
	return nil, &unknownAlgorithmError{name: name, why: unsupported[strings.ToLower(name)]}
}

// Is reports whether name names a, ignoring case: its kernel name or one
// of its aliases.
func (a *Algorithm) Is(name string) bool {
	if strings.EqualFold(name, a.name) {
		return true
	}
	for _, n := range a.aliases {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// Aliases returns the other names Lookup takes for a (veritysetup's), in
// lower case.
func (a *Algorithm) Aliases() []string { return append([]string(nil), a.aliases...) }

// Name returns the canonical (kernel) name, in lower case.
func (a *Algorithm) Name() string { return a.name }

// String returns the canonical name.
func (a *Algorithm) String() string { return a.name }

// Size returns the digest size in bytes.
func (a *Algorithm) Size() int { return a.size }

// New returns a new streaming hash.
func (a *Algorithm) New() hash.Hash { return a.newHash() }

// SaltPosition says where the salt goes relative to each block.
type SaltPosition uint8

const (
	// SaltBefore hashes salt || block: dm-verity format (hash type) 1.
	SaltBefore SaltPosition = iota
	// SaltAfter hashes block || salt: dm-verity format 0 (Chrome OS).
	SaltAfter
)

// BlockHasher hashes equal-sized blocks, each with the same salt. It is not
// safe for concurrent use: give each goroutine its own.
type BlockHasher struct {
	alg       *Algorithm
	blockSize int
	impl      string
	bulk      bulkHasher
}

// bulkHasher is what an implementation provides: hash len(blocks)/blockSize
// blocks, digest i at dst[i*stride:].
type bulkHasher interface {
	hashBlocks(dst []byte, stride int, blocks []byte)
}

type implementation struct {
	name string
	// available reports whether this machine can run it.
	available func() bool
	new       func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher
}

// generic works everywhere: one streaming hash, reset per block.
var generic = &implementation{
	name:      "generic",
	available: func() bool { return true },
	new:       newStreamingBulk,
}

// ImplEnv is the environment variable with which the commands (and this
// package's tests) force a bulk implementation by name, for example
// VERITYTREE_HASH_IMPL=generic: for tests and for users who want to
// compare. The package itself reads no environment: the commands pass the
// variable's value to PreferImplementation. An implementation the machine
// cannot run, or a name an algorithm does not have, falls back to that
// algorithm's default.
//
// Every algorithm has "generic" (its streaming hash, one block at a time).
// On amd64 there are also, chosen at init from the CPU's features:
// "avx512" for every algorithm (one block per vector lane: 16 for SHA-1 and
// SHA-256, 8 for SHA-512, 2×8 for BLAKE2b-256), "avx2" for every algorithm
// (8 lanes for SHA-1 and SHA-256, 4 for SHA-512 and BLAKE2b-256) and "shani4"
// for SHA-1 and SHA-256 (4 interleaved SHA-NI streams). On arm64
// and arm (NEON detected at run time, never assumed from GOARM): "neon" for
// BLAKE2b-256, "neon2x" (two blocks per vector: SHA-512, and BLAKE2b-256 on
// arm64), "neon4x" (four: SHA-1, SHA-256), and with the ARMv8 crypto
// instructions "ce": for SHA-1, SHA-256 and SHA-512 on arm64, for SHA-1 and
// SHA-256 on arm (AArch32 state of ARMv8 cores);
// Algorithm.Implementations lists what this machine runs, the default
// first. Building with the purego tag leaves out all assembly.
const ImplEnv = "VERITYTREE_HASH_IMPL"

// Implementations returns the names of the bulk implementations of a that
// this machine can run, the default first.
func (a *Algorithm) Implementations() []string {
	var names []string
	for _, im := range a.implementations() {
		if im.available() {
			names = append(names, im.name)
		}
	}
	return names
}

func (a *Algorithm) implementations() []*implementation {
	return append(a.impls[:len(a.impls):len(a.impls)], generic)
}

func (a *Algorithm) pick(name string) *implementation {
	for _, im := range a.implementations() {
		if im.available() && (name == "" || im.name == name) {
			return im
		}
	}
	return nil
}

// preferred is the implementation name PreferImplementation set.
var preferred atomic.Pointer[string]

// PreferImplementation makes NewBlockHasher use the bulk implementation
// named (see ImplEnv for the names) wherever the machine runs it and the
// algorithm has it, in the whole process; "" restores the default, the
// fastest. The output is the same for every implementation.
func PreferImplementation(name string) {
	preferred.Store(&name)
}

// NewBlockHasher returns a BlockHasher for blocks of blockSize bytes salted
// with salt at pos, using the fastest implementation this machine runs (or
// the one PreferImplementation named). The salt is copied.
func (a *Algorithm) NewBlockHasher(blockSize int, salt []byte, pos SaltPosition) *BlockHasher {
	name := ""
	if p := preferred.Load(); p != nil {
		name = *p
	}
	im := a.pick(name)
	if im == nil {
		im = a.pick("")
	}
	return a.newBlockHasher(im, blockSize, salt, pos)
}

// NewBlockHasherImpl is NewBlockHasher with the implementation named; it
// fails if the machine cannot run it.
func (a *Algorithm) NewBlockHasherImpl(impl string, blockSize int, salt []byte, pos SaltPosition) (*BlockHasher, error) {
	im := a.pick(impl)
	if im == nil {
		return nil, fmt.Errorf("hashes: %s has no implementation %q that runs here (available: %s)",
			a.name, impl, strings.Join(a.Implementations(), ", "))
	}
	return a.newBlockHasher(im, blockSize, salt, pos), nil
}

func (a *Algorithm) newBlockHasher(im *implementation, blockSize int, salt []byte, pos SaltPosition) *BlockHasher {
	if blockSize <= 0 {
		panic("hashes: block size must be positive")
	}
	salt = append([]byte(nil), salt...)
	return &BlockHasher{alg: a, blockSize: blockSize, impl: im.name, bulk: im.new(a, blockSize, salt, pos)}
}

// Algorithm returns the algorithm.
func (b *BlockHasher) Algorithm() *Algorithm { return b.alg }

// Implementation returns the name of the implementation in use.
func (b *BlockHasher) Implementation() string { return b.impl }

// BlockSize returns the size of the blocks it hashes.
func (b *BlockHasher) BlockSize() int { return b.blockSize }

// HashBlocks hashes each of the len(blocks)/BlockSize() blocks and writes the
// digest of block i to dst[i*stride : i*stride+Size()]. Bytes of dst between
// digests are left as they are. len(blocks) must be a multiple of the block
// size, stride at least the digest size and dst long enough; anything else
// panics, as it is a programming error.
func (b *BlockHasher) HashBlocks(dst []byte, stride int, blocks []byte) {
	n := len(blocks) / b.blockSize
	if n*b.blockSize != len(blocks) {
		panic("hashes: blocks is not a whole number of blocks")
	}
	if stride < b.alg.size {
		panic("hashes: stride shorter than the digest")
	}
	if n == 0 {
		return
	}
	if len(dst) < (n-1)*stride+b.alg.size {
		panic("hashes: dst too short")
	}
	b.bulk.hashBlocks(dst, stride, blocks)
}

// streamingBulk hashes one block at a time with a reused streaming hash.
type streamingBulk struct {
	h         hash.Hash
	blockSize int
	salt      []byte
	pos       SaltPosition
}

func newStreamingBulk(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	return &streamingBulk{h: a.newHash(), blockSize: blockSize, salt: salt, pos: pos}
}

func (s *streamingBulk) hashBlocks(dst []byte, stride int, blocks []byte) {
	for i := 0; len(blocks) > 0; i++ {
		block := blocks[:s.blockSize]
		blocks = blocks[s.blockSize:]
		s.h.Reset()
		if s.pos == SaltBefore {
			s.h.Write(s.salt)
			s.h.Write(block)
		} else {
			s.h.Write(block)
			s.h.Write(s.salt)
		}
		// Sum appends into dst's own array: dst[o:o] has the capacity.
		s.h.Sum(dst[i*stride : i*stride])
	}
}
