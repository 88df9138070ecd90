package pkcs7

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An openssl-made signature, and how it is made (with -update); d holds
// root.txt (root256), root-nl.txt (the same and a newline) and the keys.
type fixture struct {
	name string
	args []string
}

var fixtures = []fixture{
	{"v-smime-noattr.der", []string{"smime", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-smime-noattr-certs.der", []string{"smime", "-sign", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-smime-attrs.der", []string{"smime", "-sign", "-nocerts", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-smime-nosmimecap.der", []string{"smime", "-sign", "-nocerts", "-nosmimecap", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-cms-noattr.der", []string{"cms", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-cms-attrs.der", []string{"cms", "-sign", "-nocerts", "-nosmimecap", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "ec384.crt", "-inkey", "ec384.pem", "-md", "sha384"}},
	{"v-cms-keyid.der", []string{"cms", "-sign", "-nocerts", "-noattr", "-keyid", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-cms-keyid-certs.der", []string{"cms", "-sign", "-noattr", "-keyid", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "ec256.crt", "-inkey", "ec256.pem"}},
	{"v-leaf-certs.der", []string{"smime", "-sign", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "leaf.crt", "-inkey", "leaf.pem"}},
	{"v-leaf-nocerts.der", []string{"smime", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "leaf.crt", "-inkey", "leaf.pem"}},
	{"v-nodetach.der", []string{"smime", "-sign", "-nodetach", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-newline.der", []string{"smime", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root-nl.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-newline-attrs.der", []string{"smime", "-sign", "-nocerts", "-nosmimecap", "-binary", "-outform", "der", "-in", "root-nl.txt", "-signer", "ec256.crt", "-inkey", "ec256.pem"}},
	{"v-pss.der", []string{"cms", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem", "-keyopt", "rsa_padding_mode:pss"}},
	{"v-pem.p7s", []string{"smime", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "pem", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem"}},
	{"v-two-signers.der", []string{"cms", "-sign", "-nocerts", "-noattr", "-binary", "-outform", "der", "-in", "root.txt", "-signer", "rsa2048.crt", "-inkey", "rsa2048.pem", "-signer", "ec256.crt", "-inkey", "ec256.pem"}},
}

func fixtureBytes(t *testing.T, name string) []byte {
	t.Helper()
	if *update {
		for _, f := range fixtures {
			if f.name == name {
				d := workDir(t, root256)
				if err := os.WriteFile(filepath.Join(d, "root-nl.txt"), []byte(root256+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				recorded(t, name, runOpenSSL(t, d, f.args...))
			}
		}
	}
	return readRecorded(t, name)
}

// TestVerifyOpenSSLMade: the signatures openssl smime and cms make, with
// and without certificates and signed attributes, named by issuer and
// serial or by subjectKeyIdentifier, by a leaf of a CA, are accepted or
// refused as the kernel would, with trusted certificates standing for its
// keyring.
func TestVerifyOpenSSLMade(t *testing.T) {
	rsa, ec256, ec384 := loadCert(t, "rsa2048.crt"), loadCert(t, "ec256.crt"), loadCert(t, "ec384.crt")
	ca, leaf := loadCert(t, "ca.crt"), loadCert(t, "leaf.crt")
	type want struct {
		signer, trusted *x509.Certificate
		index           int
		attrs, bySKID   bool
	}
	for _, c := range []struct {
		name    string
		trusted []*x509.Certificate
		content string
		want    *want
		kind    Kind
		err     string
	}{
		{"v-smime-noattr.der", []*x509.Certificate{rsa}, root256, &want{signer: rsa, trusted: rsa}, 0, ""},
		{"v-smime-noattr.der", []*x509.Certificate{ec256, ca}, root256, nil, Untrusted, `not one of the trusted certificates`},
		{"v-smime-noattr.der", []*x509.Certificate{rsa}, root256 + "\n", nil, Invalid, `trusted certificate CN=rsa2048,O=veritytree tests does not verify its signature: it is not that key's signature of this content`},
		{"v-smime-noattr.der", nil, root256, nil, Untrusted, `issuer "CN=rsa2048,O=veritytree tests", serial 01`},
		{"v-smime-noattr-certs.der", []*x509.Certificate{ec256, rsa}, root256, &want{signer: rsa, trusted: rsa}, 0, ""},
		{"v-smime-noattr-certs.der", []*x509.Certificate{ec256}, root256, nil, Untrusted, ``},
		{"v-smime-attrs.der", []*x509.Certificate{rsa}, root256, nil, Invalid, `S/MIME capabilities signed attribute, which the kernel refuses`},
		{"v-smime-nosmimecap.der", []*x509.Certificate{rsa}, root256, &want{signer: rsa, trusted: rsa, attrs: true}, 0, ""},
		{"v-smime-nosmimecap.der", []*x509.Certificate{rsa}, root160, nil, Invalid, `does not match its messageDigest attribute`},
		{"v-cms-noattr.der", []*x509.Certificate{rsa}, root256, &want{signer: rsa, trusted: rsa}, 0, ""},
		{"v-cms-attrs.der", []*x509.Certificate{ec384}, root256, &want{signer: ec384, trusted: ec384, attrs: true}, 0, ""},
		{"v-cms-keyid.der", []*x509.Certificate{rsa}, root256, &want{signer: rsa, trusted: rsa, bySKID: true}, 0, ""},
		{"v-cms-keyid.der", []*x509.Certificate{ec256}, root256, nil, Untrusted, `subjectKeyIdentifier [0-9a-f]{40}`},
		{"v-cms-keyid-certs.der", []*x509.Certificate{ec256}, root256, &want{signer: ec256, trusted: ec256, bySKID: true}, 0, ""},
		{"v-leaf-certs.der", []*x509.Certificate{ca}, root256, &want{signer: leaf, trusted: ca}, 0, ""},
		{"v-leaf-certs.der", []*x509.Certificate{leaf}, root256, &want{signer: leaf, trusted: leaf}, 0, ""},
		{"v-leaf-certs.der", []*x509.Certificate{rsa}, root256, nil, Untrusted, ``},
		// Without the leaf's certificate the kernel cannot chain to the CA.
		{"v-leaf-nocerts.der", []*x509.Certificate{ca}, root256, nil, Untrusted, ``},
		{"v-leaf-nocerts.der", []*x509.Certificate{leaf}, root256, &want{signer: leaf, trusted: leaf}, 0, ""},
		{"v-nodetach.der", []*x509.Certificate{rsa}, root256, nil, Invalid, `holds the signed content itself: the kernel takes a detached signature only`},
		{"v-newline.der", []*x509.Certificate{rsa}, root256, nil, Invalid, `trusted certificate CN=rsa2048,O=veritytree tests does not verify its signature: it is not that key's signature of this content`},
		{"v-newline.der", []*x509.Certificate{rsa}, root256 + "\n", &want{signer: rsa, trusted: rsa}, 0, ""},
		{"v-newline-attrs.der", []*x509.Certificate{ec256}, root256, nil, Invalid, `does not match its messageDigest`},
		{"v-pss.der", []*x509.Certificate{rsa}, root256, nil, Unsupported, `RSASSA-PSS: the kernel takes rsaEncryption`},
		{"v-pem.p7s", []*x509.Certificate{rsa}, root256, nil, Malformed, `not a DER PKCS#7 SignedData`},
		// openssl sorts the SET of signers: the ECDSA one comes first.
		{"v-two-signers.der", []*x509.Certificate{rsa}, root256, &want{signer: rsa, trusted: rsa, index: 2}, 0, ""},
		{"v-two-signers.der", []*x509.Certificate{rsa, ec256}, root256, &want{signer: ec256, trusted: ec256, index: 1}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := verifyBytes(fixtureBytes(t, c.name), []byte(c.content), c.trusted)
			if c.want == nil {
				if err == nil || kindOf(err) != c.kind || !regexpMatch(c.err, err.Error()) {
					t.Fatalf("got %+v, %v; want a kind %d error matching %q", got, err, c.kind, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if w.index == 0 {
				w.index = 1
			}
			if !got.Certificate.Equal(w.signer) || !got.Trusted.Equal(w.trusted) || got.Index != w.index ||
				got.SignedAttributes != w.attrs || got.BySubjectKeyID != w.bySKID || got.SigningTime.IsZero() == w.attrs {
				t.Errorf("got signer %s trusted %s index %d attrs %v bySKID %v time %v; want %s, %s, %d, %v, %v",
					got.Certificate.Subject, got.Trusted.Subject, got.Index, got.SignedAttributes, got.BySubjectKeyID, got.SigningTime,
					w.signer.Subject, w.trusted.Subject, w.index, w.attrs, w.bySKID)
			}
		})
	}
}

func verifyBytes(sig, content []byte, trusted []*x509.Certificate) (*Signer, error) {
	sd, err := Parse(sig)
	if err != nil {
		return nil, err
	}
	return sd.Verify(content, trusted)
}

// TestVerifyOurs: what Sign makes verifies, for every key and digest.
func TestVerifyOurs(t *testing.T) {
	for _, c := range append(append([]rsaCase{}, rsaCases...),
		rsaCase{"ec256.pem", "ec256.crt", root256, crypto.SHA1, true}, rsaCase{"ec384.pem", "ec384.crt", root512, crypto.SHA512, false}) {
		cert := loadCert(t, c.cert)
		sig, err := Sign([]byte(c.root), loadSigner(t, c.key), cert, &SignOptions{Hash: c.hash, EmbedCertificate: c.embed})
		if err != nil {
			t.Fatal(err)
		}
		got, err := verifyBytes(sig, []byte(c.root), []*x509.Certificate{cert})
		if err != nil || got.Hash != c.hash || !got.Trusted.Equal(cert) {
			t.Errorf("%s: %+v, %v", c.name(), got, err)
		}
	}
}

// mutate returns a copy of b with old replaced by new once, failing if old
// is not there.
func mutate(t *testing.T, b, old, new []byte) []byte {
	t.Helper()
	i := bytes.Index(b, old)
	if i < 0 {
		t.Fatalf("% x not found", old)
	}
	return append(append(append([]byte{}, b[:i]...), new...), b[i+len(old):]...)
}

// TestVerifyRefusesCrafted: crafted changes to a good signature are
// refused, each with its reason.
func TestVerifyRefusesCrafted(t *testing.T) {
	rsaCert := loadCert(t, "rsa2048.crt")
	good, err := Sign([]byte(root256), loadSigner(t, "rsa2048.pem"), rsaCert, nil)
	if err != nil {
		t.Fatal(err)
	}
	withCert, err := Sign([]byte(root256), loadSigner(t, "rsa2048.pem"), rsaCert, &SignOptions{EmbedCertificate: true})
	if err != nil {
		t.Fatal(err)
	}
	sigAt := len(good) - 256
	flipped := append([]byte{}, good...)
	flipped[sigAt+100] ^= 1
	// The certificate carried in the signature, but with another key: its
	// signature (of the TBS) no longer verifies, and the signer's fails.
	otherKeyCert := mutate(t, withCert, rsaCert.RawSubjectPublicKeyInfo[40:60], make([]byte, 20))
	rsaOID, _ := asn1.Marshal(oidRSAEncryption)
	sha256RSA, _ := asn1.Marshal(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11})
	sha256OID, _ := asn1.Marshal(asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1})
	sha3OID, _ := asn1.Marshal(asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 8})
	dataOID, _ := asn1.Marshal(oidData)
	otherOID, _ := asn1.Marshal(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 9})
	indefinite := append([]byte{0x30, 0x80}, good[4:]...)
	indefinite = append(indefinite, 0, 0)
	for _, c := range []struct {
		name string
		sig  []byte
		kind Kind
		err  string
	}{
		{"signature bit flipped", flipped, Invalid, `trusted certificate CN=rsa2048,O=veritytree tests does not verify its signature: it is not that key's signature of this content`},
		{"trailing byte", append(append([]byte{}, good...), 0), Malformed, `1 bytes follow its end`},
		{"truncated", good[:len(good)-1], Malformed, `not a DER PKCS#7`},
		{"empty", nil, Malformed, `not a DER PKCS#7`},
		{"BER", indefinite, Unsupported, `BER with indefinite lengths`},
		{"too large", make([]byte, MaxSize+1), Unsupported, `32768 bytes, more than the 32767`},
		{"sha256WithRSAEncryption", mutate(t, good, rsaOID, sha256RSA), Unsupported, `sha256WithRSAEncryption: the kernel takes rsaEncryption`},
		{"sha3-256 digest", bytes.ReplaceAll(good, sha256OID, sha3OID), Unsupported, `digest 2.16.840.1.101.3.4.2.8: this check does sha1`},
		{"content type not data", mutate(t, good, dataOID, otherOID), Invalid, `content of type 1.2.840.113549.1.7.9, not data`},
		{"another key in the carried certificate", otherKeyCert, Invalid, `CN=rsa2048,O=veritytree tests is self-issued but its signature does not verify`},
		{"not SignedData", mutate(t, good, oidDER(oidSignedData), dataOID), Unsupported, `type 1.2.840.113549.1.7.1, not SignedData`},
		{"SignedData version 2", mutate(t, good, []byte{0x02, 0x01, 0x01, 0x31}, []byte{0x02, 0x01, 0x02, 0x31}), Unsupported, `SignedData version 2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := verifyBytes(c.sig, []byte(root256), []*x509.Certificate{rsaCert})
			if err == nil || kindOf(err) != c.kind || !regexpMatch(c.err, err.Error()) {
				t.Errorf("error %v (kind %d), want kind %d matching %q", err, kindOf(err), c.kind, c.err)
			}
		})
	}
}

// signWithAttributes makes, by hand, a signature with signed attributes
// (contentType, messageDigest of digested, and extra), as openssl cms
// would: for the attribute rules openssl cannot be made to break.
func signWithAttributes(t *testing.T, digested []byte, extra ...[]byte) []byte {
	t.Helper()
	key, cert := loadSigner(t, "rsa2048.pem"), loadCert(t, "rsa2048.crt")
	sum := sha256.Sum256(digested)
	attr := func(oid asn1.ObjectIdentifier, value []byte) []byte {
		return tlv(tagSequence, oidDER(oid), tlv(tagSet, value))
	}
	attrs := [][]byte{attr(oidContentType, oidDER(oidData)), attr(oidMessageDigest, tlv(tagOctetString, sum[:]))}
	attrs = append(attrs, extra...)
	set := tlv(tagSet, attrs...)
	signed := sha256.Sum256(set)
	sig, err := key.Sign(rand.Reader, signed[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rawSerial(cert)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := digestByHash(crypto.SHA256)
	implicit := append([]byte{tagContext0}, set[1:]...)
	si := tlv(tagSequence, tlv(tagInteger, []byte{1}), tlv(tagSequence, cert.RawIssuer, serial.FullBytes),
		algorithmID(d.oid, true), implicit, algorithmID(oidRSAEncryption, true), tlv(tagOctetString, sig))
	sd := tlv(tagSequence, tlv(tagInteger, []byte{1}), tlv(tagSet, algorithmID(d.oid, true)),
		tlv(tagSequence, oidDER(oidData)), tlv(tagSet, si))
	return tlv(tagSequence, oidDER(oidSignedData), tlv(tagContext0, sd))
}

// TestVerifySignedAttributes: the kernel's rules on signed attributes.
func TestVerifySignedAttributes(t *testing.T) {
	cert := loadCert(t, "rsa2048.crt")
	timeAttr := func(at time.Time) []byte {
		v, err := asn1.Marshal(at.UTC())
		if err != nil {
			t.Fatal(err)
		}
		return tlv(tagSequence, oidDER(oidSigningTime), tlv(tagSet, v))
	}
	ct := tlv(tagSequence, oidDER(oidContentType), tlv(tagSet, oidDER(oidData)))
	unknown := tlv(tagSequence, oidDER(asn1.ObjectIdentifier{1, 2, 3, 4}), tlv(tagSet, []byte{tagNull, 0}))
	for _, c := range []struct {
		name     string
		digested string
		extra    [][]byte
		kind     Kind
		err      string
	}{
		{"the root hash", root256, nil, 0, ""},
		{"an unknown attribute, ignored", root256, [][]byte{unknown}, 0, ""},
		{"signed within the certificate's validity", root256, [][]byte{timeAttr(time.Now())}, 0, ""},
		{"signed before the certificate", root256, [][]byte{timeAttr(cert.NotBefore.Add(-time.Hour))}, Invalid, `signed at .* outside the validity of its certificate CN=rsa2048`},
		{"two signing times", root256, [][]byte{timeAttr(time.Now()), timeAttr(time.Now())}, Invalid, `signingTime signed attribute repeated`},
		{"two content types", root256, [][]byte{ct}, Invalid, `contentType signed attribute repeated`},
		{"another content", root256 + "\n", nil, Invalid, `does not match its messageDigest attribute`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := verifyBytes(signWithAttributes(t, []byte(c.digested), c.extra...), []byte(root256), []*x509.Certificate{cert})
			switch {
			case c.kind == 0 && (err != nil || !got.SignedAttributes):
				t.Errorf("%+v, %v", got, err)
			case c.kind != 0 && (err == nil || kindOf(err) != c.kind || !regexpMatch(c.err, err.Error())):
				t.Errorf("error %v, want kind %d matching %q", err, c.kind, c.err)
			}
		})
	}
}

// TestVerifyChainRules: the carried chain as the kernel walks it: a
// trusted CA vouches for a leaf the message carries; a carried
// certificate that claims the trusted one's place but with another key
// does not.
func TestVerifyChainRules(t *testing.T) {
	leaf, ca := loadCert(t, "leaf.crt"), loadCert(t, "ca.crt")
	sig := fixtureBytes(t, "v-leaf-certs.der")
	if _, err := verifyBytes(sig, []byte(root256), []*x509.Certificate{ca}); err != nil {
		t.Fatal(err)
	}
	// The leaf's certificate, carried, with its signature broken: the
	// kernel's chain walk fails on it.
	broken := mutate(t, sig, leaf.Signature[10:30], make([]byte, 20))
	if _, err := verifyBytes(broken, []byte(root256), []*x509.Certificate{ca}); kindOf(err) != Invalid || !strings.Contains(err.Error(), "does not verify with the key of CN=ca") {
		t.Errorf("broken leaf certificate: %v", err)
	}
}
