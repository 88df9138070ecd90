package verity

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/pkcs7"
	"github.com/veritytree/veritytree/internal/testtool"
)

var sigRoot, _ = hex.DecodeString("4f3c8e0d9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5")

func pemOf(typ string, der []byte, headers map[string]string) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der, Headers: headers})
}

// TestParseSigningKey: the PEM forms of keys openssl writes are read;
// encrypted keys, keys the kernel cannot check and files that hold no
// key are refused, each saying why.
func TestParseSigningKey(t *testing.T) {
	rsaKey := testtool.SigningKey(t, "rsa2048").(*rsa.PrivateKey)
	ecKey := testtool.SigningKey(t, "ec256").(*ecdsa.PrivateKey)
	pkcs8 := func(k crypto.Signer) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := testtool.SelfSignedCert(t, rsaKey, "k")
	ecParams := pemOf("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}, nil)
	for _, c := range []struct {
		name string
		pem  []byte
		want crypto.PublicKey
		err  string
	}{
		{"PKCS#8 RSA", pemOf("PRIVATE KEY", pkcs8(rsaKey), nil), rsaKey.Public(), ""},
		{"PKCS#1 RSA", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), nil), rsaKey.Public(), ""},
		{"PKCS#8 EC", pemOf("PRIVATE KEY", pkcs8(ecKey), nil), ecKey.Public(), ""},
		{"SEC1 EC after EC PARAMETERS", append(ecParams, pemOf("EC PRIVATE KEY", sec1, nil)...), ecKey.Public(), ""},
		{"a certificate then the key", append(pemOf("CERTIFICATE", cert.Raw, nil), pemOf("PRIVATE KEY", pkcs8(rsaKey), nil)...), rsaKey.Public(), ""},
		{"encrypted PKCS#8", pemOf("ENCRYPTED PRIVATE KEY", []byte{0x30, 0}, nil), nil, "the private key is encrypted"},
		{"encrypted PKCS#1", pemOf("RSA PRIVATE KEY", []byte{1, 2, 3}, map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00112233445566778899AABBCCDDEEFF"}), nil, "the private key is encrypted"},
		{"Ed25519", pemOf("PRIVATE KEY", pkcs8(testtool.SigningKey(t, "ed25519")), nil), nil, "Ed25519 key cannot sign a root hash"},
		{"P-521", pemOf("PRIVATE KEY", pkcs8(testtool.SigningKey(t, "ec521")), nil), nil, "P-521: the kernel checks"},
		{"a certificate only", pemOf("CERTIFICATE", cert.Raw, nil), nil, "no private key in it, only CERTIFICATE"},
		{"damaged", pemOf("PRIVATE KEY", []byte{0x30, 3, 1, 2, 3}, nil), nil, "its PRIVATE KEY cannot be read"},
		{"not PEM", []byte("hello"), nil, "no PEM private key in it"},
		{"empty", nil, nil, "no PEM private key in it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := ParseSigningKey(c.pem)
			if c.err != "" {
				var e *Error
				if !errors.As(err, &e) || e.Kind != KindInput || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want KindInput saying %q", err, c.err)
				}
				if c.err == "the private key is encrypted" && !strings.Contains(e.Hint, "<(openssl pkey -in KEY.pem)") {
					t.Errorf("hint %q does not say how to decrypt it into a pipe", e.Hint)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !k.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(c.want) {
				t.Error("another key")
			}
		})
	}
}

// TestLoadSigningKey: key and certificate files, read through the small
// input reader (a pipe works), must belong together.
func TestLoadSigningKey(t *testing.T) {
	d := t.TempDir()
	key, cert := testtool.WriteSigningKey(t, d, "a", "ec256")
	_, other := testtool.WriteSigningKey(t, d, "b", "ec384")
	ctx := context.Background()
	if _, c, err := LoadSigningKey(ctx, key, cert); err != nil || c.Subject.CommonName != "a" {
		t.Fatalf("%v, %v", c, err)
	}
	_, _, err := LoadSigningKey(ctx, key, other)
	fmtWantError(t, err, KindInput, "", "signing key "+key+" is not the key of certificate "+other+" (CN=b,O=veritytree tests)")
	_, _, err = LoadSigningKey(ctx, cert, cert)
	fmtWantError(t, err, KindInput, "", "signing key "+cert+": no private key in it, only CERTIFICATE")
	_, _, err = LoadSigningKey(ctx, key, key)
	fmtWantError(t, err, KindInput, "", "certificate "+key+": no certificate in it")
	_, _, err = LoadSigningKey(ctx, filepath.Join(d, "missing.pem"), cert)
	fmtWantError(t, err, KindIO, "", "reading signing key "+filepath.Join(d, "missing.pem")+": no such file or directory")
	big := filepath.Join(d, "big.pem")
	if err := os.WriteFile(big, make([]byte, maxKeyFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadSigningKey(ctx, big, cert)
	fmtWantError(t, err, KindInput, "", "signing key "+big+" is larger than 65536 bytes")
}

// TestSignVerifyRootHash: what SignRootHash makes, VerifyRootHashSignature
// accepts with the certificate trusted, and refuses otherwise; a
// signature of the root hash and a newline (echo's) is refused with a
// hint that says so.
func TestSignVerifyRootHash(t *testing.T) {
	for _, kind := range []string{"rsa2048", "ec256", "ec384"} {
		key := testtool.SigningKey(t, kind)
		cert := testtool.SelfSignedCert(t, key, kind)
		for _, h := range []crypto.Hash{crypto.SHA1, crypto.SHA256, crypto.SHA384, crypto.SHA512} {
			sig, err := SignRootHash(sigRoot, key, cert, &SignOptions{Hash: h})
			if err != nil {
				t.Fatal(err)
			}
			s, err := VerifyRootHashSignature(sigRoot, sig, []*x509.Certificate{cert})
			if err != nil || s.Hash != h || !s.Certificate.Equal(cert) || !s.Trusted.Equal(cert) || s.SignedAttributes {
				t.Fatalf("%s %v: %+v, %v", kind, h, s, err)
			}
			if fp := sha256.Sum256(cert.Raw); !bytes.Equal(s.Fingerprint(), fp[:]) {
				t.Errorf("fingerprint %x", s.Fingerprint())
			}
		}
	}
	key := testtool.SigningKey(t, "ec256")
	cert, other := testtool.SelfSignedCert(t, key, "a"), testtool.SelfSignedCert(t, testtool.SigningKey(t, "rsa2048"), "b")
	sig, err := SignRootHash(sigRoot, key, cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyRootHashSignature(sigRoot, sig, []*x509.Certificate{other})
	fmtWantError(t, err, KindUntrusted, "", "the root hash signature is not trusted: signed with the certificate of issuer \"CN=a,O=veritytree tests\"")
	if !errors.Is(err, ErrUntrusted) {
		t.Error("not ErrUntrusted")
	}
	_, err = VerifyRootHashSignature(append([]byte{}, sigRoot[1:]...), sig, []*x509.Certificate{cert})
	fmtWantError(t, err, KindUntrusted, "", "the root hash signature does not verify")
	_, err = VerifyRootHashSignature(sigRoot, sig[:40], []*x509.Certificate{cert})
	fmtWantError(t, err, KindInput, "", "the root hash signature cannot be checked: not a DER PKCS#7 SignedData")

	if _, err := SignRootHash(nil, key, cert, nil); err == nil {
		t.Error("signed no root hash")
	}
	// Signed over "ROOT\n", as `echo ROOT | openssl smime -sign` does.
	nl, err := pkcs7.Sign([]byte(hex.EncodeToString(sigRoot)+"\n"), key, cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyRootHashSignature(sigRoot, nl, []*x509.Certificate{cert})
	e := fmtWantError(t, err, KindUntrusted, "", "does not verify")
	if !strings.Contains(e.Hint, "it signs the root hash followed by a newline (as echo writes it)") || !strings.Contains(e.Hint, "printf %s "+hex.EncodeToString(sigRoot)) {
		t.Errorf("hint %q", e.Hint)
	}
}

// TestSignRootHashRefuses: keys the kernel cannot check, and a key that
// is not the certificate's, are refused before anything is signed.
func TestSignRootHashRefuses(t *testing.T) {
	ed := testtool.SigningKey(t, "ed25519")
	ec := testtool.SigningKey(t, "ec256")
	for _, c := range []struct {
		key  crypto.Signer
		cert *x509.Certificate
		opts *SignOptions
		want string
	}{
		{ed, testtool.SelfSignedCert(t, ed, "ed"), nil, "Ed25519 key cannot sign a root hash: openssl smime (PKCS#7) cannot make such a signature and the kernel's dm-verity signature check cannot verify one"},
		{ec, testtool.SelfSignedCert(t, testtool.SigningKey(t, "ec384"), "other"), nil, "the key is not the key of the certificate (CN=other,O=veritytree tests)"},
		{ec, testtool.SelfSignedCert(t, ec, "ec"), &SignOptions{Hash: crypto.MD5}, "digest MD5 is not one of"},
	} {
		_, err := SignRootHash(sigRoot, c.key, c.cert, c.opts)
		fmtWantError(t, err, KindParam, "", c.want)
	}
}

// TestSignatureJSON: systemd-repart's JSON, byte for byte in form, read
// back with and without the partition's NUL padding; what systemd would
// not read is refused.
func TestSignatureJSON(t *testing.T) {
	key := testtool.SigningKey(t, "ec256")
	cert := testtool.SelfSignedCert(t, key, "j")
	sig, err := SignRootHash(sigRoot, key, cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	fp := sha256.Sum256(cert.Raw)
	want := `{"rootHash":"` + hex.EncodeToString(sigRoot) + `","certificateFingerprint":"` + hex.EncodeToString(fp[:]) + `","signature":"` + base64.StdEncoding.EncodeToString(sig) + `"}`
	got := RootHashSignatureJSON(sigRoot, sig, cert)
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if noFP := RootHashSignatureJSON(sigRoot, sig, nil); strings.Contains(string(noFP), "certificateFingerprint") {
		t.Errorf("fingerprint without a certificate: %s", noFP)
	}
	padded := append(append([]byte{}, got...), make([]byte, 4096-len(got))...)
	for _, b := range [][]byte{got, padded, append(got, '\n')} {
		f, err := ParseRootHashSignatureFile(b)
		if err != nil {
			t.Fatal(err)
		}
		if f.Format != SignatureFormatJSON || !bytes.Equal(f.Signature, sig) || !bytes.Equal(f.RootHash, sigRoot) || !bytes.Equal(f.CertificateFingerprint, fp[:]) {
			t.Fatalf("%+v", f)
		}
		if s, err := f.Verify(sigRoot, []*x509.Certificate{cert}); err != nil || !s.Certificate.Equal(cert) {
			t.Fatalf("%v %v", s, err)
		}
	}
	f, err := ParseRootHashSignatureFile(sig)
	if err != nil || f.Format != SignatureFormatPKCS7 || f.RootHash != nil {
		t.Fatalf("%+v, %v", f, err)
	}
	other := append([]byte{}, sigRoot...)
	other[0] ^= 1
	jf, _ := ParseRootHashSignatureFile(got)
	_, err = jf.Verify(other, []*x509.Certificate{cert})
	fmtWantError(t, err, KindUntrusted, "", "the signature JSON is for root hash "+hex.EncodeToString(sigRoot))
	wrongFP := bytes.Replace(got, []byte(hex.EncodeToString(fp[:4])), []byte("00000000"), 1)
	jf, err = ParseRootHashSignatureFile(wrongFP)
	if err != nil {
		t.Fatal(err)
	}
	_, err = jf.Verify(sigRoot, []*x509.Certificate{cert})
	fmtWantError(t, err, KindUntrusted, "", "certificateFingerprint 00000000")

	b64 := base64.StdEncoding.EncodeToString(sig)
	hexRoot := hex.EncodeToString(sigRoot)
	for _, c := range []struct{ json, err string }{
		{`{"rootHash":"` + hexRoot + `"}`, `no "signature" field`},
		{`{"rootHash":"` + hexRoot + `","signature":"` + b64 + `","rootHash":"` + hexRoot + `"}`, `field "rootHash" given twice`},
		{`{"roothash":"` + hexRoot + `","signature":"` + b64 + `"}`, `signature JSON: no "rootHash" field`},
		{`{"rootHash":"xyz","signature":"` + b64 + `"}`, `"rootHash" is not hex`},
		{`{"rootHash":"abcd","signature":"` + b64 + `"}`, `rootHash has 2 bytes`},
		{`{"rootHash":"` + hexRoot + `","signature":"!!"}`, `signature is not base64`},
		{`{"rootHash":"` + hexRoot + `","signature":7}`, `"signature" is not a string`},
		{`{"rootHash":"` + hexRoot + `","signature":"` + b64 + `","certificateFingerprint":"abcd"}`, `not a SHA-256`},
		{`{"rootHash":"` + hexRoot + `","signature":"` + b64 + `"}{}`, `more than one JSON value`},
		{`{"rootHash":"` + hexRoot + `","signature":"` + b64 + `"` + "\x00}", `NUL byte inside the JSON`},
		{`{"rootHash":"` + hexRoot + `","signature":"` + b64, `not valid JSON`},
	} {
		_, err := ParseRootHashSignatureFile([]byte(c.json))
		fmtWantError(t, err, KindInput, "", c.err)
	}
	_, err = ParseRootHashSignatureFile(pemOf("PKCS7", sig, nil))
	e := fmtWantError(t, err, KindInput, "", "neither DER PKCS#7 nor systemd's signature JSON")
	if !strings.Contains(e.Hint, "openssl pkcs7 -inform pem -outform der") {
		t.Errorf("hint %q", e.Hint)
	}
}

// TestFormatSigns: Format writes the signature and the JSON once the
// tree is complete; they verify, and follow the root hash file's rules.
func TestFormatSigns(t *testing.T) {
	d := t.TempDir()
	data := filepath.Join(d, "d.img")
	fmtImage(t, data, 1<<20)
	key := testtool.SigningKey(t, "rsa2048")
	cert := testtool.SelfSignedCert(t, key, "f")
	opts := fixedOptions()
	sigPath, jsonPath := filepath.Join(d, "root.p7s"), filepath.Join(d, "root.verity-sig")
	opts.Sign = &RootHashSigning{Signer: key, Certificate: cert, SignatureFile: sigPath, JSONFile: jsonPath}
	res, err := Format(context.Background(), data, filepath.Join(d, "h"), opts)
	if err != nil {
		t.Fatal(err)
	}
	sig := fmtRead(t, sigPath)
	if !bytes.Equal(sig, res.RootHashSignature) {
		t.Error("the signature file is not the signature returned")
	}
	if _, err := VerifyRootHashSignature(res.RootHash, sig, []*x509.Certificate{cert}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmtRead(t, jsonPath), RootHashSignatureJSON(res.RootHash, sig, cert); !bytes.Equal(got, want) {
		t.Errorf("JSON %s, want %s", got, want)
	}
	// Again: both are ours, so replaced.
	if _, err := Format(context.Background(), data, filepath.Join(d, "h"), opts); err != nil {
		t.Fatal(err)
	}
	// A file that is not a signature is not replaced, and nothing is
	// written: not the tree either.
	for _, p := range []string{sigPath, jsonPath} {
		if err := os.WriteFile(p, []byte("precious"), 0o600); err != nil {
			t.Fatal(err)
		}
		before := fmtListing(t, d)
		hashBefore := fmtRead(t, filepath.Join(d, "h"))
		_, err := Format(context.Background(), data, filepath.Join(d, "h"), fixedOptionsSigned(opts, "other"))
		fmtWantError(t, err, KindRefused, "", "is not a ")
		if got := fmtRead(t, p); string(got) != "precious" || fmtListing(t, d) != before || !bytes.Equal(fmtRead(t, filepath.Join(d, "h")), hashBefore) {
			t.Errorf("%s: written anyway", p)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// fixedOptionsSigned returns opts with another salt, so that a tree
// written with it would differ.
func fixedOptionsSigned(opts *FormatOptions, salt string) *FormatOptions {
	o := *opts
	o.Salt = []byte(salt)
	return &o
}

// TestFormatSignChecksFirst: signing options are checked before any file
// is opened.
func TestFormatSignChecksFirst(t *testing.T) {
	d := t.TempDir()
	data := filepath.Join(d, "d.img")
	fmtImage(t, data, 1<<16)
	key := testtool.SigningKey(t, "ec256")
	cert := testtool.SelfSignedCert(t, key, "c")
	otherCert := testtool.SelfSignedCert(t, testtool.SigningKey(t, "ec384"), "o")
	p := filepath.Join(d, "s")
	for _, c := range []struct {
		sign *RootHashSigning
		root string
		want string
	}{
		{&RootHashSigning{Signer: key, Certificate: cert}, "", "no file to write the signature to"},
		{&RootHashSigning{Signer: key, SignatureFile: p}, "", "needs a key and its certificate"},
		{&RootHashSigning{Signer: key, Certificate: otherCert, SignatureFile: p}, "", "the key is not the key of the certificate"},
		{&RootHashSigning{Signer: key, Certificate: cert, SignatureFile: p, JSONFile: p}, "", "RootHashSigning.SignatureFile and RootHashSigning.JSONFile are both"},
		{&RootHashSigning{Signer: key, Certificate: cert, JSONFile: p}, p, "RootHashSigning.JSONFile " + p + " is also FormatOptions.RootHashFile"},
		{&RootHashSigning{Signer: key, Certificate: cert, SignatureFile: p, SignOptions: SignOptions{Hash: crypto.SHA224}}, "", "digest \"sha224\" is not one of"},
		{&RootHashSigning{Signer: key, Certificate: cert, SignatureFile: filepath.Join(d, "h")}, "", "RootHashSigning.SignatureFile " + filepath.Join(d, "h") + " is HASH: the signature would replace the tree"},
		{&RootHashSigning{Signer: key, Certificate: cert, JSONFile: data}, "", "RootHashSigning.JSONFile " + data + " is DATA: the signature JSON would replace the image"},
		{&RootHashSigning{Signer: key, Certificate: cert, JSONFile: filepath.Join(d, "no", "s")}, "", "its directory " + filepath.Join(d, "no") + " does not exist"},
	} {
		opts := fixedOptions()
		opts.Sign, opts.RootHashFile = c.sign, c.root
		_, err := Format(context.Background(), data, filepath.Join(d, "h"), opts)
		fmtWantError(t, err, KindParam, "Sign", c.want)
		if l := fmtListing(t, d); l != "d.img:65536" {
			t.Errorf("files: %s", l)
		}
	}
	opts := fixedOptions()
	opts.FECDevice = filepath.Join(d, "s")
	opts.Sign = &RootHashSigning{Signer: key, Certificate: cert, SignatureFile: opts.FECDevice}
	_, err := Format(context.Background(), data, filepath.Join(d, "h"), opts)
	fmtWantError(t, err, KindParam, "FECDevice", "FormatOptions.FECDevice and RootHashSigning.SignatureFile are the same file")
}
