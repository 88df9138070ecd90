package verity_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"log"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/veritytree/veritytree/verity"
)

// exampleSigner makes a key and a self-signed certificate for it; a real
// one would come from LoadSigningKey (PEM files) or an HSM.
func exampleSigner() (*ecdsa.PrivateKey, *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "verity signing key"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		log.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		log.Fatal(err)
	}
	return key, cert
}

// SignRootHash makes the signature the kernel checks when a device is
// opened with root_hash_sig_key_desc (veritysetup open
// --root-hash-signature); VerifyRootHashSignature checks it as the kernel
// would, the certificate standing for its keyring; RootHashSignatureJSON
// wraps it as systemd's verity signature partition holds it.
func ExampleSignRootHash() {
	key, cert := exampleSigner()
	root, _ := hex.DecodeString("7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd")

	sig, err := verity.SignRootHash(root, key, cert, nil) // DER PKCS#7, as openssl smime -sign -noattr makes it
	if err != nil {
		log.Fatal(err)
	}
	signer, err := verity.VerifyRootHashSignature(root, sig, []*x509.Certificate{cert})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("signed by %s, %s\n", signer.Certificate.Subject.CommonName, signer.Hash)

	f, err := verity.ParseRootHashSignatureFile(verity.RootHashSignatureJSON(root, sig, cert))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.Verify(root, []*x509.Certificate{cert}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s for root hash %x\n", f.Format, f.RootHash)
	// Output:
	// signed by verity signing key, SHA-256
	// systemd-json for root hash 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd
}

// Format with Sign writes the signature of the new root hash once the
// tree is complete, as veritygen --root-hash-signature does.
func ExampleFormat_sign() {
	dir, err := os.MkdirTemp("", "verity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "system.img")
	exampleImage(data, 1<<20)
	key, cert := exampleSigner()

	opts := exampleOptions()
	opts.Sign = &verity.RootHashSigning{Signer: key, Certificate: cert,
		SignatureFile: filepath.Join(dir, "system.roothash.p7s"), JSONFile: filepath.Join(dir, "system.verity-sig")}
	res, err := verity.Format(context.Background(), data, filepath.Join(dir, "system.verity"), opts)
	if err != nil {
		log.Fatal(err)
	}
	sig, err := os.ReadFile(filepath.Join(dir, "system.roothash.p7s"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := verity.VerifyRootHashSignature(res.RootHash, sig, []*x509.Certificate{cert}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("root hash %x, signed\n", res.RootHash)
	// Output:
	// root hash 7f72ef6132f7280f72a87621f95e461a6c896a8625ecacbaddb791d8f7b2dccd, signed
}
