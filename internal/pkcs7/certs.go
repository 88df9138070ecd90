package pkcs7

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"errors"
)

// rawSerial returns the serial number element of cert as encoded in it
// (the kernel compares those bytes, not the number).
func rawSerial(cert *x509.Certificate) (asn1.RawValue, error) {
	var tbs, el asn1.RawValue
	if _, err := asn1.Unmarshal(cert.RawTBSCertificate, &tbs); err != nil {
		return el, errors.New("the certificate's TBSCertificate cannot be read")
	}
	rest, err := asn1.Unmarshal(tbs.Bytes, &el)
	if err == nil && el.Class == asn1.ClassContextSpecific && el.Tag == 0 {
		_, err = asn1.Unmarshal(rest, &el) // [0] version, then the serial
	}
	if err != nil || el.Class != asn1.ClassUniversal || el.Tag != asn1.TagInteger {
		return el, errors.New("the certificate's serial number cannot be read")
	}
	return el, nil
}

// kernelID is the kernel's asymmetric_key_id of an issuer and serial
// number: the serial number's content bytes, then the issuer Name's DER.
// A subjectKeyIdentifier's ID is its bytes.
func kernelID(serial, issuer []byte) []byte {
	return append(append([]byte{}, serial...), issuer...)
}

func sameID(a, b []byte) bool { return a != nil && b != nil && bytes.Equal(a, b) }

// certInfo is a certificate with what the kernel's X.509 parser keeps of
// it for chains (crypto/asymmetric_keys/x509_cert_parser.c).
type certInfo struct {
	cert *x509.Certificate
	id   []byte // by issuer and serial number
	skid []byte
	// authID and authSKID are its authorityKeyIdentifier's issuer and
	// serial, and keyIdentifier (nil when absent): the kernel's
	// sig->auth_ids[0] and [1].
	authID     []byte
	authSKID   []byte
	selfSigned bool

	signer *certInfo // its issuer among the signature's certificates
	seen   bool
}

func newCertInfo(cert *x509.Certificate) (*certInfo, error) {
	serial, err := rawSerial(cert)
	if err != nil {
		return nil, err
	}
	c := &certInfo{cert: cert, id: kernelID(serial.Bytes, cert.RawIssuer)}
	if len(cert.SubjectKeyId) > 0 {
		c.skid = cert.SubjectKeyId
	}
	for _, ext := range cert.Extensions {
		if ext.Id.Equal(oidAuthorityKeyID) {
			if c.authID, c.authSKID, err = parseAKID(ext.Value); err != nil {
				return nil, errorf(Malformed, "certificate %s: %v", cert.Subject, err)
			}
		}
	}
	if err := c.checkSelfSigned(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseAKID reads an AuthorityKeyIdentifier: keyIdentifier [0], and the
// first directoryName of authorityCertIssuer [1] with
// authorityCertSerialNumber [2].
func parseAKID(der []byte) ([]byte, []byte, error) {
	var seq asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &seq); err != nil || len(rest) > 0 || seq.Tag != asn1.TagSequence {
		return nil, nil, errors.New("malformed authorityKeyIdentifier")
	}
	var skid, issuer, serial []byte
	for rest := seq.Bytes; len(rest) > 0; {
		var el asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &el); err != nil || el.Class != asn1.ClassContextSpecific {
			return nil, nil, errors.New("malformed authorityKeyIdentifier")
		}
		switch el.Tag {
		case 0:
			skid = el.Bytes
		case 1:
			issuer = firstDirectoryName(el.Bytes)
		case 2:
			serial = el.Bytes
		}
	}
	var id []byte
	if issuer != nil && serial != nil {
		id = kernelID(serial, issuer)
	}
	return id, skid, nil
}

// firstDirectoryName returns the Name of the first directoryName [4] in
// GeneralNames, or nil.
func firstDirectoryName(names []byte) []byte {
	for rest := names; len(rest) > 0; {
		var el asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &el); err != nil {
			return nil
		}
		if el.Class == asn1.ClassContextSpecific && el.Tag == 4 {
			var name asn1.RawValue
			if _, err := asn1.Unmarshal(el.Bytes, &name); err != nil {
				return nil
			}
			return name.FullBytes
		}
	}
	return nil
}

// checkSelfSigned decides, as x509_check_for_self_signed, whether the
// certificate is its own issuer: same subject and issuer, an
// authorityKeyIdentifier (if any) naming itself, and a signature its own
// key verifies; a certificate that claims to be but whose signature fails
// is refused, as the kernel refuses to parse it.
func (c *certInfo) checkSelfSigned() error {
	cert := c.cert
	if !bytes.Equal(cert.RawSubject, cert.RawIssuer) {
		return nil
	}
	if c.authID != nil || c.authSKID != nil {
		a := sameID(c.skid, c.authSKID)
		b := sameID(c.id, c.authID)
		if !a && !b {
			return nil
		}
		if a != b && c.authID != nil && c.authSKID != nil {
			return errorf(Invalid, "certificate %s: its authorityKeyIdentifier names itself only in part", cert.Subject)
		}
	}
	err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature)
	var insecure x509.InsecureAlgorithmError
	switch {
	case errors.Is(err, x509.ErrUnsupportedAlgorithm) || errors.As(err, &insecure):
		return nil // the kernel too leaves such a certificate unchecked
	case err != nil:
		return errorf(Invalid, "certificate %s is self-issued but its signature does not verify", cert.Subject)
	}
	c.selfSigned = true
	return nil
}

// checkIssuedBy checks c's signature with issuer's key, as
// public_key_verify_signature(issuer->pub, c->sig).
func (c *certInfo) checkIssuedBy(issuer *certInfo) error {
	cert := c.cert
	err := issuer.cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature)
	var insecure x509.InsecureAlgorithmError
	switch {
	case errors.As(err, &insecure):
		return errorf(Unsupported, "certificate %s is signed with %s, which this check does not take", cert.Subject, cert.SignatureAlgorithm)
	case errors.Is(err, x509.ErrUnsupportedAlgorithm):
		return errorf(Unsupported, "certificate %s is signed with an algorithm this check does not do", cert.Subject)
	case err != nil:
		return errorf(Invalid, "certificate %s: its signature does not verify with the key of %s", cert.Subject, issuer.cert.Subject)
	}
	return nil
}

// keyring is the set of trusted certificates, searched as the kernel's
// find_asymmetric_key searches a keyring.
type keyring []*certInfo

// find returns the first key one of whose IDs (issuer and serial, or
// subjectKeyIdentifier) is id0 (or id1 when id0 is nil), as
// find_asymmetric_key: when both are given, that key must also have id1
// as its subjectKeyIdentifier, or it is rejected (nil, true).
func (r keyring) find(id0, id1 []byte) (k *certInfo, rejected bool) {
	want := id0
	if want == nil {
		want = id1
	}
	if want == nil {
		return nil, false
	}
	for _, k := range r {
		if !sameID(k.id, want) && !sameID(k.skid, want) {
			continue
		}
		if id0 != nil && id1 != nil && !sameID(k.skid, id1) {
			return nil, true
		}
		return k, false
	}
	return nil, false
}
