package avb

import (
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"

	"github.com/veritytree/veritytree/internal/safefile"
)

// maxKeyBits bounds the public key blobs decoded: libavb knows keys up to
// 8192 bits.
const maxKeyBits = 16384

// EncodePublicKey returns the AVB public key blob of pub
// (AvbRSAPublicKeyHeader: key_num_bits, n0inv, then n and rr = R^2 mod n,
// big-endian, num_bits/8 bytes each), the bytes avbtool's
// extract_public_key writes. num_bits is the modulus size rounded up to a
// power of two, as avbtool has it.
func EncodePublicKey(pub *rsa.PublicKey) ([]byte, error) {
	if pub == nil || pub.N == nil || pub.N.Sign() <= 0 || pub.N.Bit(0) == 0 {
		return nil, paramErr("Key", "", "not a usable RSA public key")
	}
	if pub.E != 65537 {
		return nil, paramErr("Key", "make the key with exponent 65537 (openssl genrsa's default)",
			"RSA public exponent %d: AVB assumes 65537", pub.E)
	}
	bitLen := pub.N.BitLen()
	numBits := 8 // whole bytes, even for a toy modulus: n is stored in numBits/8 bytes
	for numBits < bitLen {
		numBits <<= 1
	}
	if numBits > maxKeyBits {
		return nil, paramErr("Key", "", "RSA key of %d bits is too large for AVB", bitLen)
	}
	b := make([]byte, 8+2*numBits/8)
	binary.BigEndian.PutUint32(b, uint32(numBits))
	// n0inv = -1/n mod 2^32.
	b32 := new(big.Int).Lsh(big.NewInt(1), 32)
	inv := new(big.Int).ModInverse(new(big.Int).Mod(pub.N, b32), b32)
	n0inv := new(big.Int).Sub(b32, inv)
	binary.BigEndian.PutUint32(b[4:], uint32(n0inv.Uint64()))
	pub.N.FillBytes(b[8 : 8+numBits/8])
	// R = 2^(bits of n), as avbtool computes it.
	r := new(big.Int).Lsh(big.NewInt(1), uint(bitLen))
	rr := new(big.Int).Mod(new(big.Int).Mul(r, r), pub.N)
	rr.FillBytes(b[8+numBits/8:])
	return b, nil
}

// DecodePublicKey decodes an AVB public key blob (exponent 65537).
func DecodePublicKey(b []byte) (*rsa.PublicKey, error) {
	if len(b) < 8 {
		return nil, malformed("AVB public key of %d bytes: shorter than its header", len(b))
	}
	bits := binary.BigEndian.Uint32(b)
	if bits == 0 || bits%8 != 0 || bits > maxKeyBits {
		return nil, malformed("AVB public key of %d bits", bits)
	}
	if uint64(len(b)) != 8+2*uint64(bits)/8 {
		return nil, malformed("AVB public key of %d bits takes %d bytes, not %d", bits, 8+2*bits/8, len(b))
	}
	n := new(big.Int).SetBytes(b[8 : 8+bits/8])
	if n.Sign() == 0 {
		return nil, malformed("AVB public key with a zero modulus")
	}
	return &rsa.PublicKey{N: n, E: 65537}, nil
}

// keyHint is what a key that does not parse should be.
const keyHint = "give an RSA private key in PEM, e.g. made by openssl genrsa -out key.pem 4096"

// ParsePrivateKeyPEM decodes an RSA private key in PEM: PKCS#1 (BEGIN RSA
// PRIVATE KEY) or PKCS#8 (BEGIN PRIVATE KEY), unencrypted.
func ParsePrivateKeyPEM(data []byte) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode(data)
	if blk == nil {
		return nil, inputErr(keyHint, "no PEM block in the key")
	}
	switch blk.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
		if err != nil {
			return nil, inputCause(err, keyHint, "its %q block does not hold a valid PKCS#1 RSA private key", blk.Type)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, inputCause(err, keyHint, "its %q block does not hold a valid PKCS#8 private key", blk.Type)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, inputErr(keyHint, "the private key is %s: AVB signs with RSA", keyKind(k))
		}
		return rk, nil
	case "ENCRYPTED PRIVATE KEY":
		return nil, inputErr("decrypt it first: openssl pkcs8 -in KEY -out PLAIN.pem", "the private key is encrypted")
	}
	return nil, inputErr(keyHint, "PEM block %q is not an RSA private key", blk.Type)
}

// keyKind names the kind of a key that is not RSA.
func keyKind(k any) string {
	switch k.(type) {
	case *ecdsa.PrivateKey, *ecdsa.PublicKey:
		return "an ECDSA key, not an RSA one"
	case ed25519.PrivateKey, ed25519.PublicKey:
		return "an Ed25519 key, not an RSA one"
	case *ecdh.PrivateKey, *ecdh.PublicKey:
		return "an X25519 (ECDH) key, not an RSA one"
	}
	return "not an RSA key"
}

// ParsePublicKeyPEM decodes an RSA key in PEM, public (BEGIN PUBLIC KEY,
// BEGIN RSA PUBLIC KEY) or private, and returns its public part.
func ParsePublicKeyPEM(data []byte) (*rsa.PublicKey, error) {
	const hint = "give an RSA key in PEM, public (openssl rsa -pubout) or private"
	blk, _ := pem.Decode(data)
	if blk == nil {
		return nil, inputErr(hint, "no PEM block in the key")
	}
	switch blk.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, inputCause(err, hint, "its %q block does not hold a valid public key (SubjectPublicKeyInfo)", blk.Type)
		}
		rk, ok := k.(*rsa.PublicKey)
		if !ok {
			return nil, inputErr(hint, "the public key is %s: AVB signs with RSA", keyKind(k))
		}
		return rk, nil
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(blk.Bytes)
		if err != nil {
			return nil, inputCause(err, hint, "its %q block does not hold a valid PKCS#1 RSA public key", blk.Type)
		}
		return k, nil
	}
	k, err := ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, err
	}
	return &k.PublicKey, nil
}

// maxKeyFile bounds the key files read: an 8192-bit key in PEM is under
// 7 KiB.
const maxKeyFile = 1 << 20

// readSmall reads a small input (a key, a property's value) through
// safefile.ReadSmall: bounded by limit, from a file, a pipe or a FIFO,
// whose wait for a writer ends with ctx. what names it in errors.
func readSmall(ctx context.Context, path, what string, limit int) ([]byte, error) {
	b, err := safefile.ReadSmall(ctx, path, limit)
	switch {
	case err == nil:
		return b, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, safefile.Interrupted(ctx, what+" "+path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, inputErr("is it the right file?", "%s %s is larger than %d bytes", what, path, limit)
	case errors.Is(err, safefile.ErrNotFile), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		// The cause stays wrapped: the avbtool front words it as Python's
		// OSError where avbtool opens the file itself.
		return nil, inputCause(err, "", "%s %s: %s", what, path, safefile.Message(err))
	}
	return nil, ioErr("reading %s %s: %s", what, path, safefile.Message(err))
}

// unwrapPathErr drops the "op path:" of a *fs.PathError, for messages
// that name the file themselves (see safefile.Cause).
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return safefile.Cause(pe)
	}
	return safefile.Cause(err)
}

// LoadPrivateKey reads an RSA private key from a PEM file (PKCS#1 or
// PKCS#8); path may be a pipe or a FIFO, whose wait ends with ctx.
func LoadPrivateKey(ctx context.Context, path string) (*rsa.PrivateKey, error) {
	b, err := readSmall(ctx, path, "key", maxKeyFile)
	if err != nil {
		return nil, err
	}
	k, err := ParsePrivateKeyPEM(b)
	if err != nil {
		return nil, prefixName("key "+path, err)
	}
	return k, nil
}

// LoadPublicKey reads an RSA key, public or private, from a PEM file and
// returns its public part; path may be a pipe or a FIFO, whose wait ends
// with ctx.
func LoadPublicKey(ctx context.Context, path string) (*rsa.PublicKey, error) {
	b, err := readSmall(ctx, path, "key", maxKeyFile)
	if err != nil {
		return nil, err
	}
	k, err := ParsePublicKeyPEM(b)
	if err != nil {
		return nil, prefixName("key "+path, err)
	}
	return k, nil
}

// ExtractPublicKey returns the AVB public key blob of the RSA key (public
// or private, PEM) at path: what `avbtool extract_public_key` writes.
func ExtractPublicKey(ctx context.Context, path string) ([]byte, error) {
	k, err := LoadPublicKey(ctx, path)
	if err != nil {
		return nil, err
	}
	return EncodePublicKey(k)
}
