package pkcs7

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseVerify: whatever the bytes, Parse and Verify end with a
// signer or an *Error (never a panic), and accept only what verifies:
// a signer whose trusted certificate is one of those given.
func FuzzParseVerify(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "openssl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "openssl", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var trusted []*x509.Certificate
	for _, name := range []string{"rsa2048.crt", "ec256.crt", "ec384.crt", "ca.crt"} {
		trusted = append(trusted, loadCert(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sd, err := Parse(b)
		if err == nil {
			sd.Certificates()
			var s *Signer
			s, err = sd.Verify([]byte(root256), trusted)
			if err == nil {
				found := false
				for _, c := range trusted {
					found = found || s.Trusted.Equal(c)
				}
				if !found || s.Certificate == nil {
					t.Fatalf("accepted, vouched for by %v, not a trusted certificate", s.Trusted.Subject)
				}
			}
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %T %v is not an *Error", err, err)
		}
	})
}
