package verity

import (
	"bytes"
	"crypto/x509"
	"errors"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// FuzzRootHashSignatureFile: any file content is read as a signature file
// (DER or systemd's JSON) or refused with an *Error of KindInput; what
// is read as JSON writes back to the same fields; checking it never
// panics and passes only with the trusted certificate's signature.
func FuzzRootHashSignatureFile(f *testing.F) {
	key := testtool.SigningKey(f, "ec256")
	cert := testtool.SelfSignedCert(f, key, "fuzz")
	sig, err := SignRootHash(sigRoot, key, cert, nil)
	if err != nil {
		f.Fatal(err)
	}
	j := RootHashSignatureJSON(sigRoot, sig, cert)
	f.Add(sig)
	f.Add(j)
	f.Add(append(append([]byte{}, j...), make([]byte, 100)...))
	f.Add([]byte(`{"rootHash":"00","signature":""}`))
	f.Add([]byte(`{"rootHash":"` + string(bytes.Repeat([]byte("ab"), 32)) + `","signature":"MAA=","x":[1,{"y":null}]}`))
	trusted := []*x509.Certificate{cert}
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := ParseRootHashSignatureFile(b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindInput {
				t.Fatalf("error %v is not a KindInput *Error", err)
			}
			return
		}
		if sf.Format == SignatureFormatJSON {
			again, err := ParseRootHashSignatureJSON(RootHashSignatureJSON(sf.RootHash, sf.Signature, nil))
			if err != nil || !bytes.Equal(again.RootHash, sf.RootHash) || !bytes.Equal(again.Signature, sf.Signature) {
				t.Fatalf("written back: %+v, %v", again, err)
			}
		}
		if _, err := sf.Verify(sigRoot, trusted); err == nil && !bytes.Equal(sf.Signature, sig) {
			// Another signature of the same root hash by the same key is
			// possible only with the key: ECDSA signatures are random.
			if _, err2 := VerifyRootHashSignature(sigRoot, sf.Signature, trusted); err2 != nil {
				t.Fatalf("accepted by Verify, refused by VerifyRootHashSignature: %v", err2)
			}
		}
	})
}
