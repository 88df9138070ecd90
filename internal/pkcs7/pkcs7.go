// Package pkcs7 makes and checks the detached PKCS#7 SignedData of a
// dm-verity root hash signature: what `openssl smime -sign -nocerts -noattr
// -binary -outform der` makes, and what the kernel's root_hash_sig_key_desc
// check (crypto/asymmetric_keys/pkcs7_*.c) accepts.
//
// It is our own small encoder and parser on encoding/asn1 rather than a
// PKCS#7 library: the structure without signed attributes is a few nested
// SEQUENCEs, byte identity with openssl needs control over every byte
// (NULL parameters, the certificate's own issuer and serial bytes), and
// the checks must follow the kernel's rules, not a general S/MIME
// verifier's (which would accept sha256WithRSAEncryption, S/MIME
// capabilities, BER, chains by name...). The project allows no
// dependency beyond the standard library for that.
package pkcs7

import (
	"crypto"
	"encoding/asn1"
	"fmt"
)

// MaxSize is the largest signature the kernel can be given: it reads it
// from a "user" key, whose payload is at most 32767 bytes.
const MaxSize = 32767

// Limits on what a signature holds, far above what one signer makes, so
// that crafted input costs bounded work.
const (
	maxSigners      = 16
	maxCertificates = 32
	maxAttributes   = 64
)

var (
	oidData              = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidSignedData        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidContentType       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidMessageDigest     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidSigningTime       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}
	oidSMIMECapabilities = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 15}
	oidMSStatementType   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 2, 1, 11}
	oidMSSpOpusInfo      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 2, 1, 12}
	oidRSAEncryption     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidAuthorityKeyID    = asn1.ObjectIdentifier{2, 5, 29, 35}
)

// digestAlgorithm is a digest the kernel knows that we check too, with the
// ECDSA signature algorithm that goes with it.
type digestAlgorithm struct {
	hash  crypto.Hash
	name  string
	oid   asn1.ObjectIdentifier
	ecdsa asn1.ObjectIdentifier
}

var digestAlgorithms = []digestAlgorithm{
	{crypto.SHA1, "sha1", asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 1}},
	{crypto.SHA224, "sha224", asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 4}, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 1}},
	{crypto.SHA256, "sha256", asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}},
	{crypto.SHA384, "sha384", asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 3}},
	{crypto.SHA512, "sha512", asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 4}},
}

func digestByHash(h crypto.Hash) (digestAlgorithm, bool) {
	for _, d := range digestAlgorithms {
		if d.hash == h {
			return d, true
		}
	}
	return digestAlgorithm{}, false
}

func digestByOID(oid asn1.ObjectIdentifier) (digestAlgorithm, bool) {
	for _, d := range digestAlgorithms {
		if d.oid.Equal(oid) {
			return d, true
		}
	}
	return digestAlgorithm{}, false
}

// HashName is the name openssl's -md gives the digest h ("sha256"), or
// h's own name when it is not one of ours.
func HashName(h crypto.Hash) string {
	if d, ok := digestByHash(h); ok {
		return d.name
	}
	return h.String()
}

// HashByName returns the digest of openssl's -md name (sha1, sha224,
// sha256, sha384, sha512).
func HashByName(name string) (crypto.Hash, bool) {
	for _, d := range digestAlgorithms {
		if d.name == name {
			return d.hash, true
		}
	}
	return 0, false
}

// Kind says why a signature was not accepted.
type Kind uint8

const (
	// Malformed: not a DER PKCS#7 SignedData at all.
	Malformed Kind = iota + 1
	// Unsupported: well formed, but made with something the kernel (or
	// this check) does not do: an algorithm, a version, a layout.
	Unsupported
	// Invalid: the kernel would refuse it: a signature or digest that does
	// not match, attributes its rules forbid, content inside.
	Invalid
	// Untrusted: it may be sound, but no signer is one of the trusted
	// certificates or chains up to one.
	Untrusted
)

// Error is the error of Parse and Verify.
type Error struct {
	Kind Kind
	msg  string
}

func (e *Error) Error() string { return e.msg }

func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, msg: fmt.Sprintf(format, args...)}
}
