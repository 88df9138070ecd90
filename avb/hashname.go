package avb

import (
	"strings"

	"github.com/veritytree/veritytree/hashes"
)

// hashlibNames are the names Python's hashlib gives algorithms that package
// hashes knows under other names; avbtool passes --hash_algorithm to
// hashlib.new, so a descriptor may hold any of them.
var hashlibNames = map[string]string{
	"blake2b":  "blake2b-512",
	"blake2s":  "blake2s-256",
	"sha3_224": "sha3-224",
	"sha3_256": "sha3-256",
	"sha3_384": "sha3-384",
	"sha3_512": "sha3-512",
}

// LookupHash returns the hash algorithm a hash or hashtree descriptor (or
// HashAlgorithm option) names, as avbtool reads the name: hashlib's names
// (blake2b is BLAKE2b-512, blake2s BLAKE2s-256, sha3_256 SHA3-256) and every
// name hashes.Lookup takes. The descriptor keeps the name as given.
func LookupHash(name string) (*hashes.Algorithm, error) {
	if n, ok := hashlibNames[strings.ToLower(name)]; ok {
		name = n
	}
	return hashes.Lookup(name)
}
