package avb

import (
	"crypto"
	"strings"

	// The hashes the signing algorithms use.
	_ "crypto/sha256"
	_ "crypto/sha512"
)

// Algorithm is one of the vbmeta signing algorithms (AvbAlgorithmType).
type Algorithm struct {
	Name string
	Type uint32
	// Hash is the digest signed; 0 for NONE.
	Hash crypto.Hash
	// HashSize, SignatureSize and PublicKeySize are the bytes each takes
	// in the vbmeta blob (0 for NONE).
	HashSize, SignatureSize, PublicKeySize int
}

// KeyBits is the RSA modulus size the algorithm needs; 0 for NONE.
func (a *Algorithm) KeyBits() int { return a.SignatureSize * 8 }

// Algorithms are the algorithms of libavb's avb_crypto.h, by type.
var Algorithms = []*Algorithm{
	{Name: "NONE", Type: 0},
	rsaAlg("SHA256_RSA2048", 1, crypto.SHA256, 2048),
	rsaAlg("SHA256_RSA4096", 2, crypto.SHA256, 4096),
	rsaAlg("SHA256_RSA8192", 3, crypto.SHA256, 8192),
	rsaAlg("SHA512_RSA2048", 4, crypto.SHA512, 2048),
	rsaAlg("SHA512_RSA4096", 5, crypto.SHA512, 4096),
	rsaAlg("SHA512_RSA8192", 6, crypto.SHA512, 8192),
}

func rsaAlg(name string, typ uint32, h crypto.Hash, bits int) *Algorithm {
	return &Algorithm{Name: name, Type: typ, Hash: h, HashSize: h.Size(),
		SignatureSize: bits / 8, PublicKeySize: 8 + 2*bits/8}
}

// AlgorithmByName returns the algorithm of that name (as avbtool's
// --algorithm takes it); "" means NONE.
func AlgorithmByName(name string) (*Algorithm, error) {
	if name == "" {
		name = "NONE"
	}
	for _, a := range Algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = a.Name
	}
	return nil, paramErr("Algorithm", "one of "+strings.Join(names, ", "), "unknown algorithm %q", name)
}

// AlgorithmByType returns the algorithm of a vbmeta header's algorithm_type.
func AlgorithmByType(t uint32) (*Algorithm, error) {
	if int(t) < len(Algorithms) {
		return Algorithms[t], nil
	}
	return nil, inputErr("", "unknown vbmeta algorithm type %d", t)
}

// digestInfoPrefix is the DER DigestInfo that PKCS#1 v1.5 puts before the
// digest, as libavb and avbtool spell it (RFC 8017 section 9.2, note 1).
var digestInfoPrefix = map[crypto.Hash][]byte{
	crypto.SHA256: {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20},
	crypto.SHA512: {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40},
}

// padding is the PKCS#1 v1.5 encoded message up to the digest: 00 01 FF..FF
// 00 DigestInfo, SignatureSize-HashSize bytes.
func (a *Algorithm) padding() []byte {
	prefix := digestInfoPrefix[a.Hash]
	n := a.SignatureSize - a.HashSize
	p := make([]byte, n)
	p[1] = 1
	for i := 2; i < n-len(prefix)-1; i++ {
		p[i] = 0xff
	}
	copy(p[n-len(prefix):], prefix)
	return p
}
