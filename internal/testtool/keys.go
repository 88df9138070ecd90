package testtool

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// keys caches the keys made, one per kind: tests need new keys, not
// different ones.
var keys sync.Map

// rsaKeyFiles are the RSA keys of the AVB vectors, which SigningKey reads
// rather than generate its own: generating one costs seconds under the race
// detector (a 4096-bit one up to tens), in every test binary that signs.
// The path is found from the working directory at start: tests change it.
var rsaKeyFiles = func() string {
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "avb", "testdata", "vectors", "keys")
}()

// SigningKey returns a private key of kind: "rsa2048", "rsa4096",
// "ec256", "ec384", "ec521" or "ed25519" (the same one for the whole
// test binary).
func SigningKey(t testing.TB, kind string) crypto.Signer {
	t.Helper()
	if k, ok := keys.Load(kind); ok {
		return k.(crypto.Signer)
	}
	var k crypto.Signer
	var err error
	switch kind {
	case "rsa2048", "rsa4096":
		k, err = readRSAKey(filepath.Join(rsaKeyFiles, kind+".pem"))
	case "ec256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ec384":
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ec521":
		k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	actual, _ := keys.LoadOrStore(kind, k)
	return actual.(crypto.Signer)
}

// SelfSignedCert returns a self-signed certificate for key, subject
// CN=name, valid from an hour ago for ten years, a CA with a
// subjectKeyIdentifier (as openssl req -x509 makes them).
func SelfSignedCert(t testing.TB, key crypto.Signer, name string) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"veritytree tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// WriteSigningKey writes a key of kind (see SigningKey) as PKCS#8 PEM to
// dir/name.pem and a self-signed certificate for it (see SelfSignedCert)
// as PEM to dir/name.crt, and returns their paths.
func WriteSigningKey(t testing.TB, dir, name, kind string) (keyPath, certPath string) {
	t.Helper()
	key := SigningKey(t, kind)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPath, certPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".crt")
	cert := SelfSignedCert(t, key, name)
	for p, blk := range map[string]*pem.Block{keyPath: {Type: "PRIVATE KEY", Bytes: der}, certPath: {Type: "CERTIFICATE", Bytes: cert.Raw}} {
		if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return keyPath, certPath
}

// readRSAKey reads a PKCS#1 PEM RSA private key.
func readRSAKey(path string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "RSA PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no RSA PRIVATE KEY in PEM", path)
	}
	return x509.ParsePKCS1PrivateKey(blk.Bytes)
}
