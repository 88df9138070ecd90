package pkcs7

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"time"
)

// Signer is what Verify says of the signer the trusted certificates vouch
// for.
type Signer struct {
	// Index is the signer's place among the signature's signers, from 1.
	Index int
	// Certificate is the signer's certificate: the one the signature
	// carries, or else the trusted one whose key verified it.
	Certificate *x509.Certificate
	// Trusted is the trusted certificate that vouches for it: Certificate
	// itself, or one it was issued by (through the certificates the
	// signature carries).
	Trusted *x509.Certificate
	// Hash is the digest the signature is made with.
	Hash crypto.Hash
	// SignedAttributes says whether it signs attributes (contentType,
	// messageDigest, ...) rather than the content alone.
	SignedAttributes bool
	// SigningTime is the signingTime attribute; zero without one.
	SigningTime time.Time
	// BySubjectKeyID says the signer names its certificate by
	// subjectKeyIdentifier (CMS, openssl cms -keyid), not issuer and serial.
	BySubjectKeyID bool
}

// Verify checks the signature of content (which it does not hold) as the
// kernel's verify_pkcs7_signature does with trusted as its keyring
// (pkcs7_verify, then pkcs7_validate_trust): every signer's digest must
// match content, and the signature of every signer whose certificate the
// message carries must verify with it, as must the certificates that
// carry on its chain; then one signer must be vouched for by a trusted
// certificate: its certificate (or one up its chain) is trusted (same
// issuer and serial number, or subjectKeyIdentifier) and the trusted key
// verifies the signature below it, or the trusted key names and verifies
// the signer directly. A signingTime outside the signer's certificate's
// validity is refused; nothing else is checked against the clock, as in
// the kernel. It returns the first signer vouched for.
func (s *SignedData) Verify(content []byte, trusted []*x509.Certificate) (*Signer, error) {
	ring := make(keyring, 0, len(trusted))
	for _, t := range trusted {
		k, err := newCertInfo(t)
		if err != nil {
			return nil, errorf(Malformed, "trusted certificate %s: %v", t.Subject, err)
		}
		ring = append(ring, k)
	}
	for _, c := range s.certs {
		c.signer, c.seen = nil, false
	}
	sums := make([][]byte, len(s.signers))
	for i, si := range s.signers {
		sum, err := s.verifyOne(si, content)
		if err != nil {
			return nil, err
		}
		sums[i] = sum
	}
	for _, c := range s.certs {
		c.seen = false
	}
	verified := map[*certInfo]*x509.Certificate{}
	var first *Signer
	for i, si := range s.signers {
		out, err := s.validateTrust(si, sums[i], ring, verified)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = out
		}
	}
	if first == nil {
		return nil, errorf(Untrusted, "signed with %s, which is not one of the trusted certificates and was not issued by one", s.signers[0].describe())
	}
	return first, nil
}

// verifyOne is pkcs7_verify_one: the digest, then, when the message
// carries the signer's certificate (found by issuer and serial number
// only, as the kernel finds it), the signing time and the signature
// against it, and its chain. It returns what the signature signs.
func (s *SignedData) verifyOne(si *signerInfo, content []byte) ([]byte, error) {
	h := si.digest.hash.New()
	h.Write(content)
	sum := h.Sum(nil)
	if si.authAttrs != nil {
		if !bytes.Equal(sum, si.messageDigest) {
			return nil, errorf(Invalid, "signer %d: the %s digest of the content does not match its messageDigest attribute: it signs other content", si.index, si.digest.name)
		}
		h.Reset()
		h.Write(si.authAttrs)
		sum = h.Sum(nil)
	}
	si.signer = nil
	if !si.bySKID {
		for _, c := range s.certs {
			if sameID(c.id, si.id) {
				si.signer = c
				break
			}
		}
	}
	if si.signer == nil {
		return sum, nil
	}
	if err := si.checkTime(si.signer.cert); err != nil {
		return nil, err
	}
	if err := si.verifyWith(si.signer.cert, sum); err != nil {
		return nil, errorf(Invalid, "signer %d: its signature does not verify with the certificate it names (%s), carried in the signature: %v", si.index, si.signer.cert.Subject, err)
	}
	return sum, s.verifyChain(si)
}

// checkTime refuses a signing time outside cert's validity.
func (si *signerInfo) checkTime(cert *x509.Certificate) error {
	if si.hasTime && (si.signingTime.Before(cert.NotBefore) || si.signingTime.After(cert.NotAfter)) {
		return errorf(Invalid, "signer %d: signed at %s, outside the validity of its certificate %s (%s to %s)", si.index,
			si.signingTime.UTC().Format(time.RFC3339), cert.Subject, cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// verifyWith checks the signer's signature over sum with cert's key.
func (si *signerInfo) verifyWith(cert *x509.Certificate, sum []byte) error {
	switch k := cert.PublicKey.(type) {
	case *rsa.PublicKey:
		if si.key != keyRSA {
			return errorf(Invalid, "an ECDSA signature and an RSA key")
		}
	case *ecdsa.PublicKey:
		if si.key != keyECDSA {
			return errorf(Invalid, "an RSA signature and an ECDSA key")
		}
		if err := checkCurve(k); err != nil {
			return err
		}
	default:
		return errorf(Unsupported, "the certificate's key is %T, not RSA or ECDSA", cert.PublicKey)
	}
	if err := verifyDigest(cert.PublicKey, si.digest, sum, si.signature); err != nil {
		return errorf(Invalid, "it is not that key's signature of this content")
	}
	return nil
}

// verifyChain is pkcs7_verify_sig_chain: from the signer's certificate,
// each certificate's issuer among the message's (by its
// authorityKeyIdentifier: issuer and serial, whose subjectKeyIdentifier
// must then match too, or else keyIdentifier) must verify its signature,
// up to a self-signed one, one whose issuer is not there, or a loop.
func (s *SignedData) verifyChain(si *signerInfo) error {
	for _, c := range s.certs {
		c.seen = false
	}
	for x := si.signer; ; {
		x.seen = true
		if x.selfSigned {
			x.signer = x
			return nil
		}
		var p *certInfo
		switch {
		case x.authID != nil:
			for _, c := range s.certs {
				if sameID(c.id, x.authID) {
					p = c
					break
				}
			}
			if p != nil && x.authSKID != nil && !sameID(p.skid, x.authSKID) {
				return errorf(Invalid, "certificate %s: its issuer %s has another subjectKeyIdentifier than it names", x.cert.Subject, p.cert.Subject)
			}
		case x.authSKID != nil:
			for _, c := range s.certs {
				if sameID(c.skid, x.authSKID) {
					p = c
					break
				}
			}
		}
		if p == nil || p.seen {
			return nil // the top of the chain here, or a loop
		}
		if err := x.checkIssuedBy(p); err != nil {
			return err
		}
		x.signer = p
		x = p
	}
}

// check is a signature to verify with a trusted key: the signer's, or a
// certificate's in its chain.
type check func(key *certInfo) error

// checkWith is the check of the signer's own signature over sum.
func (si *signerInfo) checkWith(sum []byte) check {
	return func(k *certInfo) error {
		if err := si.verifyWith(k.cert, sum); err != nil {
			return fmt.Errorf("the trusted certificate %s does not verify its signature: %v", k.cert.Subject, err)
		}
		return nil
	}
}

// validateTrust is pkcs7_validate_trust_one: it returns the signer if a
// trusted key vouches for it, nil if none does, or an error if a trusted
// key was found whose signature check fails.
func (s *SignedData) validateTrust(si *signerInfo, sum []byte, ring keyring, verified map[*certInfo]*x509.Certificate) (*Signer, error) {
	out := &Signer{Index: si.index, Hash: si.digest.hash, SignedAttributes: si.authAttrs != nil,
		SigningTime: si.signingTime, BySubjectKeyID: si.bySKID}
	if si.signer != nil {
		out.Certificate = si.signer.cert
	}
	verify := si.checkWith(sum)
	var last *certInfo
	for x := si.signer; x != nil; x = x.signer {
		if x.seen {
			if t := verified[x]; t != nil {
				out.Trusted = t // vouched for through another signer's chain
				return out, nil
			}
			return nil, nil
		}
		x.seen = true
		if k, _ := ring.find(x.id, x.skid); k != nil {
			return s.matched(out, k, verify, x, si, verified)
		}
		if x.signer == x {
			return nil, nil // an unknown self-signed root
		}
		prev := x
		last, verify = x, func(k *certInfo) error { return prev.checkIssuedBy(k) }
	}
	if last != nil && (last.authID != nil || last.authSKID != nil) {
		k, rejected := ring.find(last.authID, last.authSKID)
		if rejected {
			return nil, errorf(Invalid, "certificate %s names a trusted certificate by issuer and serial number whose subjectKeyIdentifier differs", last.cert.Subject)
		}
		if k != nil {
			return s.matched(out, k, verify, last, si, verified)
		}
	}
	if k, _ := ring.find(si.id, nil); k != nil {
		if err := si.checkTime(k.cert); err != nil {
			return nil, err
		}
		out.Certificate = k.cert
		return s.matched(out, k, si.checkWith(sum), nil, si, verified)
	}
	return nil, nil
}

// matched finishes validateTrust once the trusted key k is found: verify
// must pass with it; x (nil when k names the signer directly) and the
// certificates below it are then verified.
func (s *SignedData) matched(out *Signer, k *certInfo, verify check, x *certInfo, si *signerInfo, verified map[*certInfo]*x509.Certificate) (*Signer, error) {
	if err := verify(k); err != nil {
		return nil, errorf(Invalid, "signer %d: %v", si.index, err)
	}
	out.Trusted = k.cert
	if x != nil {
		verified[x] = k.cert
		for p := si.signer; p != nil && p != x; p = p.signer {
			verified[p] = k.cert
		}
	}
	return out, nil
}
