package pkcs7

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"time"
)

// SignedData is a parsed detached PKCS#7 (or CMS) SignedData.
type SignedData struct {
	version int
	certs   []*certInfo
	signers []*signerInfo
}

// keyAlgorithm is the kind of key a SignerInfo's signature is made with.
type keyAlgorithm uint8

const (
	keyRSA keyAlgorithm = iota + 1
	keyECDSA
)

type signerInfo struct {
	index int // from 1, as the kernel counts them
	// id is the kernel's sig->auth_ids[0]: the issuer and serial number,
	// or (bySKID, CMS version 3) the subjectKeyIdentifier.
	id     []byte
	bySKID bool
	// Issuer and serial, for messages.
	issuer pkix.RDNSequence
	serial []byte

	digest    digestAlgorithm
	key       keyAlgorithm
	signature []byte

	// authAttrs is the DER of the signed attributes as they are digested
	// (their [0] tag turned into SET OF); nil without any.
	authAttrs     []byte
	messageDigest []byte
	signingTime   time.Time
	hasTime       bool

	signer *certInfo // its certificate among the message's, if there
}

// Certificates returns the certificates the signature carries.
func (s *SignedData) Certificates() []*x509.Certificate {
	out := make([]*x509.Certificate, len(s.certs))
	for i, c := range s.certs {
		out[i] = c.cert
	}
	return out
}

// Parse reads a DER PKCS#7 ContentInfo holding a detached SignedData, as
// openssl smime -sign and openssl cms -sign make them with -binary
// -outform der, under the kernel's rules for a dm-verity root hash
// signature: at most MaxSize bytes; SignedData version 1 (signers named by
// issuer and serial number) or 3 (CMS, -keyid: by subjectKeyIdentifier);
// content type data, and no content inside; RSA (rsaEncryption, PKCS#1
// v1.5) or ECDSA signers with sha1, sha224, sha256, sha384 or sha512;
// signed attributes, if any, in every signer, with one contentType (data)
// and one messageDigest, at most one signingTime, and none of the
// Authenticode-only ones (S/MIME capabilities, which openssl smime adds by
// default, among them). BER (indefinite lengths) is refused: openssl's
// -outform der never makes it.
func Parse(der []byte) (*SignedData, error) {
	if len(der) > MaxSize {
		return nil, errorf(Unsupported, "%d bytes, more than the %d a kernel keyring key can hold", len(der), MaxSize)
	}
	var ci struct {
		ContentType asn1.ObjectIdentifier
		Content     asn1.RawValue `asn1:"explicit,tag:0"`
	}
	if rest, err := asn1.Unmarshal(der, &ci); err != nil || len(rest) > 0 {
		return nil, notDER("", err, rest)
	}
	if !ci.ContentType.Equal(oidSignedData) {
		return nil, errorf(Unsupported, "a PKCS#7 message of type %s, not SignedData", ci.ContentType)
	}
	var sd struct {
		Version          int
		DigestAlgorithms asn1.RawValue
		ContentInfo      struct {
			ContentType asn1.ObjectIdentifier
			Content     asn1.RawValue `asn1:"optional,explicit,tag:0"`
		}
		Certificates asn1.RawValue `asn1:"optional,tag:0"`
		CRLs         asn1.RawValue `asn1:"optional,tag:1"`
		SignerInfos  asn1.RawValue
	}
	if rest, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil || len(rest) > 0 {
		return nil, notDER("its SignedData: ", err, rest)
	}
	if !isSet(sd.DigestAlgorithms) || !isSet(sd.SignerInfos) {
		return nil, errorf(Malformed, "its SignedData is not laid out as PKCS#7's")
	}
	if sd.Version != 1 && sd.Version != 3 {
		return nil, errorf(Unsupported, "SignedData version %d (the kernel takes 1, PKCS#7, and 3, CMS)", sd.Version)
	}
	if !sd.ContentInfo.ContentType.Equal(oidData) {
		return nil, errorf(Invalid, "it signs content of type %s, not data: the kernel refuses it", sd.ContentInfo.ContentType)
	}
	if len(sd.ContentInfo.Content.FullBytes) > 0 {
		return nil, errorf(Invalid, "it holds the signed content itself: the kernel takes a detached signature only (openssl smime -sign without -nodetach)")
	}
	s := &SignedData{version: sd.Version}
	if err := s.parseCertificates(sd.Certificates); err != nil {
		return nil, err
	}
	if err := s.parseSigners(sd.SignerInfos.Bytes); err != nil {
		return nil, err
	}
	return s, nil
}

func isSet(v asn1.RawValue) bool {
	return v.Class == asn1.ClassUniversal && v.Tag == asn1.TagSet && v.IsCompound
}

// notDER is the error of DER that cannot be read: where, and whether it
// is BER (which the kernel would read) or trailing bytes.
func notDER(where string, err error, rest []byte) error {
	if err == nil {
		return errorf(Malformed, "%s%d bytes follow its end", where, len(rest))
	}
	if se, ok := err.(asn1.SyntaxError); ok && se.Msg == "indefinite length found (not DER)" {
		return errorf(Unsupported, "%sBER with indefinite lengths, not DER (make it with -outform der)", where)
	}
	return errorf(Malformed, "%snot a DER PKCS#7 SignedData", where)
}

func (s *SignedData) parseCertificates(set asn1.RawValue) error {
	if len(set.FullBytes) == 0 {
		return nil
	}
	if !set.IsCompound {
		return errorf(Malformed, "its certificates are not a SET")
	}
	for rest := set.Bytes; len(rest) > 0; {
		var el asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &el); err != nil {
			return errorf(Malformed, "certificate %d cannot be read", len(s.certs)+1)
		}
		if el.Class != asn1.ClassUniversal || el.Tag != asn1.TagSequence {
			return errorf(Unsupported, "certificate %d is not an X.509 certificate", len(s.certs)+1)
		}
		if len(s.certs) == maxCertificates {
			return errorf(Unsupported, "more than %d certificates", maxCertificates)
		}
		cert, err := x509.ParseCertificate(el.FullBytes)
		if err != nil {
			return errorf(Malformed, "certificate %d cannot be parsed", len(s.certs)+1)
		}
		c, err := newCertInfo(cert)
		if err != nil {
			return err
		}
		s.certs = append(s.certs, c)
	}
	return nil
}

func (s *SignedData) parseSigners(set []byte) error {
	for rest := set; len(rest) > 0; {
		if len(s.signers) == maxSigners {
			return errorf(Unsupported, "more than %d signers", maxSigners)
		}
		var raw asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &raw); err != nil {
			return errorf(Malformed, "signer %d cannot be read", len(s.signers)+1)
		}
		si, err := s.parseSigner(len(s.signers)+1, raw.FullBytes)
		if err != nil {
			return err
		}
		s.signers = append(s.signers, si)
	}
	if len(s.signers) == 0 {
		return errorf(Invalid, "it has no signer")
	}
	for _, si := range s.signers[1:] {
		if (si.authAttrs == nil) != (s.signers[0].authAttrs == nil) {
			return errorf(Invalid, "some signers have signed attributes and some do not: the kernel refuses that")
		}
	}
	return nil
}

func (s *SignedData) parseSigner(index int, der []byte) (*signerInfo, error) {
	var raw struct {
		Version            int
		SID                asn1.RawValue
		DigestAlgorithm    pkix.AlgorithmIdentifier
		AuthAttrs          asn1.RawValue `asn1:"optional,tag:0"`
		SignatureAlgorithm pkix.AlgorithmIdentifier
		Signature          []byte
		UnauthAttrs        asn1.RawValue `asn1:"optional,tag:1"`
	}
	if rest, err := asn1.Unmarshal(der, &raw); err != nil || len(rest) > 0 {
		return nil, errorf(Malformed, "signer %d is not a SignerInfo", index)
	}
	si := &signerInfo{index: index, signature: raw.Signature}
	if err := si.parseID(s.version, raw.Version, raw.SID); err != nil {
		return nil, err
	}
	d, ok := digestByOID(raw.DigestAlgorithm.Algorithm)
	if !ok {
		return nil, errorf(Unsupported, "signer %d uses digest %s: this check does sha1, sha224, sha256, sha384 and sha512", index, raw.DigestAlgorithm.Algorithm)
	}
	si.digest = d
	if err := si.parseKeyAlgorithm(raw.SignatureAlgorithm.Algorithm); err != nil {
		return nil, err
	}
	if len(raw.Signature) == 0 {
		return nil, errorf(Invalid, "signer %d has an empty signature", index)
	}
	if len(raw.AuthAttrs.FullBytes) > 0 {
		if err := si.parseAttributes(raw.AuthAttrs); err != nil {
			return nil, err
		}
	}
	return si, nil
}

// parseID reads the SignerIdentifier: issuerAndSerialNumber in a version
// 1 SignerInfo (which needs a version 1 SignedData), [0]
// subjectKeyIdentifier in a version 3 one (which needs version 3).
func (si *signerInfo) parseID(sdVersion, version int, sid asn1.RawValue) error {
	switch {
	case version == 1 && sdVersion == 1 && sid.Class == asn1.ClassUniversal && sid.Tag == asn1.TagSequence:
		var name, serial asn1.RawValue
		rest, err := asn1.Unmarshal(sid.Bytes, &name)
		if err == nil {
			rest, err = asn1.Unmarshal(rest, &serial)
		}
		if err != nil || len(rest) > 0 || name.Tag != asn1.TagSequence || serial.Tag != asn1.TagInteger || serial.Class != asn1.ClassUniversal {
			return errorf(Malformed, "signer %d: its issuer and serial number cannot be read", si.index)
		}
		if _, err := asn1.Unmarshal(name.FullBytes, &si.issuer); err != nil {
			return errorf(Malformed, "signer %d: its issuer cannot be read", si.index)
		}
		si.id, si.serial = kernelID(serial.Bytes, name.FullBytes), serial.Bytes
	case version == 3 && sdVersion == 3 && sid.Class == asn1.ClassContextSpecific && sid.Tag == 0 && !sid.IsCompound:
		si.id, si.bySKID = sid.Bytes, true
	case version != 1 && version != 3:
		return errorf(Unsupported, "signer %d: SignerInfo version %d", si.index, version)
	default:
		return errorf(Invalid, "signer %d: a version %d SignerInfo in a version %d SignedData, or naming its certificate the other version's way: the kernel refuses it", si.index, version, sdVersion)
	}
	if len(si.id) == 0 {
		return errorf(Malformed, "signer %d names no certificate", si.index)
	}
	return nil
}

// rsaSignatureOIDs are RSA algorithms other than rsaEncryption, which the
// kernel's PKCS#7 parser does not take for a SignerInfo.
var rsaSignatureOIDs = map[string]string{
	"1.2.840.113549.1.1.5":  "sha1WithRSAEncryption",
	"1.2.840.113549.1.1.10": "RSASSA-PSS",
	"1.2.840.113549.1.1.11": "sha256WithRSAEncryption",
	"1.2.840.113549.1.1.12": "sha384WithRSAEncryption",
	"1.2.840.113549.1.1.13": "sha512WithRSAEncryption",
	"1.2.840.113549.1.1.14": "sha224WithRSAEncryption",
}

func (si *signerInfo) parseKeyAlgorithm(oid asn1.ObjectIdentifier) error {
	if oid.Equal(oidRSAEncryption) {
		si.key = keyRSA
		return nil
	}
	if name, ok := rsaSignatureOIDs[oid.String()]; ok {
		return errorf(Unsupported, "signer %d: signature algorithm %s: the kernel takes rsaEncryption (as openssl writes it) and refuses %s", si.index, name, name)
	}
	for _, d := range digestAlgorithms {
		if d.ecdsa.Equal(oid) {
			if d.hash != si.digest.hash {
				return errorf(Invalid, "signer %d: ECDSA signature algorithm for %s with digest %s", si.index, d.name, si.digest.name)
			}
			si.key = keyECDSA
			return nil
		}
	}
	return errorf(Unsupported, "signer %d: signature algorithm %s: this check does RSA (rsaEncryption) and ECDSA", si.index, oid)
}

// parseAttributes reads the signed attributes as the kernel does
// (pkcs7_sig_note_authenticated_attr): contentType must be data and
// messageDigest an OCTET STRING, each present once with one value;
// signingTime at most once; S/MIME capabilities and Microsoft's
// Authenticode attributes are refused outside Authenticode; others are
// ignored.
func (si *signerInfo) parseAttributes(attrs asn1.RawValue) error {
	if !attrs.IsCompound {
		return errorf(Malformed, "signer %d: its signed attributes are not a SET", si.index)
	}
	si.authAttrs = append([]byte{0x31}, attrs.FullBytes[1:]...)
	var hasType, hasDigest bool
	n := 0
	for rest := attrs.Bytes; len(rest) > 0; {
		var a struct {
			Type   asn1.ObjectIdentifier
			Values asn1.RawValue
		}
		var err error
		if rest, err = asn1.Unmarshal(rest, &a); err != nil || !isSet(a.Values) {
			return errorf(Malformed, "signer %d: a signed attribute cannot be read", si.index)
		}
		if n++; n > maxAttributes {
			return errorf(Unsupported, "signer %d: more than %d signed attributes", si.index, maxAttributes)
		}
		for vals := a.Values.Bytes; len(vals) > 0; {
			var v asn1.RawValue
			if vals, err = asn1.Unmarshal(vals, &v); err != nil {
				return errorf(Malformed, "signer %d: signed attribute %s cannot be read", si.index, a.Type)
			}
			if err := si.noteAttribute(a.Type, v, &hasType, &hasDigest); err != nil {
				return err
			}
		}
	}
	if !hasType || !hasDigest {
		return errorf(Invalid, "signer %d: signed attributes without contentType and messageDigest: the kernel refuses them", si.index)
	}
	return nil
}

func (si *signerInfo) noteAttribute(typ asn1.ObjectIdentifier, v asn1.RawValue, hasType, hasDigest *bool) error {
	repeated := func(flag *bool, name string) error {
		if *flag {
			return errorf(Invalid, "signer %d: %s signed attribute repeated or with several values: the kernel refuses it", si.index, name)
		}
		*flag = true
		return nil
	}
	switch {
	case typ.Equal(oidContentType):
		if err := repeated(hasType, "contentType"); err != nil {
			return err
		}
		var oid asn1.ObjectIdentifier
		if _, err := asn1.Unmarshal(v.FullBytes, &oid); err != nil || !oid.Equal(oidData) {
			return errorf(Invalid, "signer %d: its contentType attribute is not data", si.index)
		}
	case typ.Equal(oidMessageDigest):
		if err := repeated(hasDigest, "messageDigest"); err != nil {
			return err
		}
		if v.Class != asn1.ClassUniversal || v.Tag != asn1.TagOctetString || v.IsCompound {
			return errorf(Invalid, "signer %d: its messageDigest attribute is not an OCTET STRING", si.index)
		}
		si.messageDigest = v.Bytes
	case typ.Equal(oidSigningTime):
		if err := repeated(&si.hasTime, "signingTime"); err != nil {
			return err
		}
		if _, err := asn1.Unmarshal(v.FullBytes, &si.signingTime); err != nil {
			return errorf(Invalid, "signer %d: its signingTime attribute cannot be read", si.index)
		}
	case typ.Equal(oidSMIMECapabilities):
		return errorf(Invalid, "signer %d has an S/MIME capabilities signed attribute, which the kernel refuses outside Authenticode (openssl smime -sign adds it: sign with -noattr, or openssl cms -sign -nosmimecap)", si.index)
	case typ.Equal(oidMSSpOpusInfo), typ.Equal(oidMSStatementType):
		return errorf(Invalid, "signer %d has an Authenticode signed attribute, which the kernel refuses here", si.index)
	}
	return nil
}

// describe names the signer's certificate in messages.
func (si *signerInfo) describe() string {
	if si.bySKID {
		return "the certificate with subjectKeyIdentifier " + hex.EncodeToString(si.id)
	}
	var issuer pkix.Name
	issuer.FillFromRDNSequence(&si.issuer)
	return fmt.Sprintf("the certificate of issuer %q, serial %s", issuer.String(), hex.EncodeToString(si.serial))
}
