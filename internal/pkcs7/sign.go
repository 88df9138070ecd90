package pkcs7

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
)

// DER tags used by the encoder.
const (
	tagInteger     = 0x02
	tagOctetString = 0x04
	tagNull        = 0x05
	tagOID         = 0x06
	tagSequence    = 0x30
	tagSet         = 0x31
	tagContext0    = 0xa0 // [0], constructed
)

// tlv encodes one DER element: its tag, its length (short form below 128,
// else the shortest long form) and its contents.
func tlv(tag byte, contents ...[]byte) []byte {
	n := 0
	for _, c := range contents {
		n += len(c)
	}
	out := []byte{tag}
	if n < 0x80 {
		out = append(out, byte(n))
	} else {
		var l []byte
		for v := n; v > 0; v >>= 8 {
			l = append([]byte{byte(v)}, l...)
		}
		out = append(out, 0x80|byte(len(l)))
		out = append(out, l...)
	}
	for _, c := range contents {
		out = append(out, c...)
	}
	return out
}

func oidDER(oid asn1.ObjectIdentifier) []byte {
	b, err := asn1.Marshal(oid)
	if err != nil {
		panic(err) // only the constant OIDs above are encoded
	}
	return b
}

// algorithmID encodes an AlgorithmIdentifier, with NULL parameters when
// null (as openssl writes digests and rsaEncryption) or none (ECDSA).
func algorithmID(oid asn1.ObjectIdentifier, null bool) []byte {
	if null {
		return tlv(tagSequence, oidDER(oid), []byte{tagNull, 0})
	}
	return tlv(tagSequence, oidDER(oid))
}

// SignOptions choose what Sign makes.
type SignOptions struct {
	// Hash is the digest (openssl's -md): SHA1, SHA256, SHA384 or SHA512;
	// 0 means SHA256, openssl's default.
	Hash crypto.Hash
	// EmbedCertificate puts the signer's certificate into the signature, as
	// openssl smime -sign does without -nocerts and systemd-repart does.
	// The kernel does not need it: it finds the key in its keyring.
	EmbedCertificate bool
}

// Sign returns the DER of a detached PKCS#7 SignedData of content made by
// signer, whose certificate is cert, without signed attributes: byte for
// byte what `openssl smime -sign -noattr -binary -outform der` (with
// -nocerts unless opts.EmbedCertificate) makes with the same key for an
// RSA key (PKCS#1 v1.5 signatures are deterministic; ECDSA ones are not).
// signer may be any crypto.Signer (a key in an HSM) whose public key is
// cert's; the signature is checked against cert before it is returned.
func Sign(content []byte, signer crypto.Signer, cert *x509.Certificate, opts *SignOptions) ([]byte, error) {
	if opts == nil {
		opts = &SignOptions{}
	}
	h := opts.Hash
	if h == 0 {
		h = crypto.SHA256
	}
	d, ok := digestByHash(h)
	if !ok || h == crypto.SHA224 {
		return nil, fmt.Errorf("digest %s is not one of sha1, sha256, sha384, sha512", HashName(h))
	}
	sigAlg, err := signatureAlgorithm(signer.Public(), d)
	if err != nil {
		return nil, err
	}
	if err := SameKey(signer.Public(), cert); err != nil {
		return nil, err
	}
	serial, err := rawSerial(cert)
	if err != nil {
		return nil, err
	}
	digest := d.hash.New()
	digest.Write(content)
	sum := digest.Sum(nil)
	sig, err := signer.Sign(rand.Reader, sum, d.hash)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	if err := verifyDigest(cert.PublicKey, d, sum, sig); err != nil {
		return nil, errors.New("the signer made a signature that its certificate's key does not verify")
	}
	signerInfo := tlv(tagSequence,
		tlv(tagInteger, []byte{1}),
		tlv(tagSequence, cert.RawIssuer, serial.FullBytes),
		algorithmID(d.oid, true),
		sigAlg,
		tlv(tagOctetString, sig))
	var certs []byte
	if opts.EmbedCertificate {
		certs = tlv(tagContext0, cert.Raw)
	}
	signedData := tlv(tagSequence,
		tlv(tagInteger, []byte{1}),
		tlv(tagSet, algorithmID(d.oid, true)),
		tlv(tagSequence, oidDER(oidData)),
		certs,
		tlv(tagSet, signerInfo))
	return tlv(tagSequence, oidDER(oidSignedData), tlv(tagContext0, signedData)), nil
}

// signatureAlgorithm is the SignerInfo's digestEncryptionAlgorithm for a
// key, as openssl writes it: rsaEncryption (the only RSA one the kernel
// takes) or ecdsa-with-<digest>. Ed25519 is refused: neither openssl smime
// nor the kernel's PKCS#7 check does it.
func signatureAlgorithm(pub crypto.PublicKey, d digestAlgorithm) ([]byte, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return algorithmID(oidRSAEncryption, true), nil
	case *ecdsa.PublicKey:
		if err := checkCurve(k); err != nil {
			return nil, err
		}
		return algorithmID(d.ecdsa, false), nil
	case ed25519.PublicKey:
		return nil, errors.New("an Ed25519 key cannot sign a root hash: openssl smime (PKCS#7) cannot make such a signature and the kernel's dm-verity signature check cannot verify one; use an RSA or ECDSA (P-256, P-384) key")
	}
	return nil, fmt.Errorf("a %T key cannot sign a root hash: use an RSA or ECDSA (P-256, P-384) key", pub)
}

// CheckKey fails for a key that cannot make a root hash signature the
// kernel checks: one not RSA, nor ECDSA on P-256 or P-384.
func CheckKey(pub crypto.PublicKey) error {
	_, err := signatureAlgorithm(pub, digestAlgorithms[2])
	return err
}

// checkCurve refuses the curves the kernel's ECDSA does not check (P-521
// only from Linux 6.10, P-224 never).
func checkCurve(k *ecdsa.PublicKey) error {
	if k.Curve == elliptic.P256() || k.Curve == elliptic.P384() {
		return nil
	}
	return fmt.Errorf("ECDSA on %s: the kernel checks root hash signatures made on P-256 and P-384 only", k.Curve.Params().Name)
}

// SameKey fails unless pub is the public key of cert.
func SameKey(pub crypto.PublicKey, cert *x509.Certificate) error {
	k, ok := pub.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !k.Equal(cert.PublicKey) {
		return fmt.Errorf("the key is not the key of the certificate (%s)", cert.Subject)
	}
	return nil
}

// verifyDigest checks sig, made with digest d over sum, with pub as the
// kernel does: PKCS#1 v1.5 for RSA, X9.62 (DER) for ECDSA.
func verifyDigest(pub crypto.PublicKey, d digestAlgorithm, sum, sig []byte) error {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return rsa.VerifyPKCS1v15(k, d.hash, sum, sig)
	case *ecdsa.PublicKey:
		if ecdsa.VerifyASN1(k, sum, sig) {
			return nil
		}
		return errors.New("ECDSA signature does not verify")
	}
	return fmt.Errorf("%T key", pub)
}
