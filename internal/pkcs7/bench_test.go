package pkcs7

import (
	"crypto/x509"
	"testing"
)

// BenchmarkSign and BenchmarkVerify: what a root hash signature adds to a
// veritygen or veritycheck run, per key.
func BenchmarkSign(b *testing.B) {
	for _, k := range []string{"rsa2048", "rsa4096", "ec256", "ec384"} {
		key, cert := loadSigner(b, k+".pem"), loadCert(b, k+".crt")
		b.Run(k, func(b *testing.B) {
			for b.Loop() {
				if _, err := Sign([]byte(root256), key, cert, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, k := range []string{"rsa2048", "rsa4096", "ec256", "ec384"} {
		cert := loadCert(b, k+".crt")
		sig, err := Sign([]byte(root256), loadSigner(b, k+".pem"), cert, &SignOptions{EmbedCertificate: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(k, func(b *testing.B) {
			for b.Loop() {
				sd, err := Parse(sig)
				if err == nil {
					_, err = sd.Verify([]byte(root256), []*x509.Certificate{cert})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
