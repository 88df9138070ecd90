package verity

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/veritytree/veritytree/internal/pkcs7"
)

// Limits on the key and certificate files read.
const (
	maxKeyFile  = 64 << 10
	maxCertFile = 1 << 20
)

// decryptHint says how to give an encrypted key without writing it
// decrypted to disk: through a pipe, which ReadSigningKey reads.
const decryptHint = "decrypt it into a pipe, which keeps it off the disk, and read the key from there: <(openssl pkey -in KEY.pem)"

// ErrKeyEncrypted is what the KindInput error for an encrypted private
// key matches (errors.Is): its message says so, its hint how to decrypt
// it without writing it to disk.
var ErrKeyEncrypted = errors.New("verity: the private key is encrypted")

// ParseSigningKey decodes a private key in PEM, unencrypted, to sign root
// hashes with: PKCS#8 (BEGIN PRIVATE KEY), PKCS#1 (BEGIN RSA PRIVATE KEY)
// or SEC1 (BEGIN EC PRIVATE KEY), the first such block of the file (EC
// PARAMETERS and certificates around it are skipped). An encrypted key is
// refused with a hint on decrypting it; so is a key of a type the kernel
// cannot check (Ed25519, say). Errors are *Error of KindInput.
func ParseSigningKey(pemBytes []byte) (crypto.Signer, error) {
	rest := pemBytes
	var types []string
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if k, ok, err := parseKeyBlock(blk); ok {
			return k, err
		}
		types = append(types, blk.Type)
	}
	if len(types) > 0 {
		return nil, errorf(KindInput, "give the private key, e.g. made by openssl genpkey", "no private key in it, only %s", strings.Join(types, ", "))
	}
	return nil, errorf(KindInput, "give a private key in PEM (BEGIN PRIVATE KEY), e.g. made by openssl genpkey", "no PEM private key in it")
}

// parseKeyBlock decodes blk if it is a private key (ok).
func parseKeyBlock(blk *pem.Block) (key crypto.Signer, ok bool, err error) {
	if blk.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(blk.Headers["Proc-Type"], "ENCRYPTED") {
		e := causedErrorf(KindInput, ErrKeyEncrypted, "the private key is encrypted")
		e.Hint = decryptHint
		return nil, true, e
	}
	var k any
	switch blk.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, errorf(KindInput, "", "its %s cannot be read (a key of a type other than RSA and ECDSA, or damaged)", blk.Type)
	}
	s, isSigner := k.(crypto.Signer)
	if !isSigner {
		return nil, true, errorf(KindInput, "use an RSA or ECDSA (P-256, P-384) key", "a %T key cannot sign", k)
	}
	if err := pkcs7.CheckKey(s.Public()); err != nil {
		return nil, true, errorf(KindInput, "", "%v", err)
	}
	return s, true, nil
}

// ParseCertificates decodes X.509 certificates: every CERTIFICATE block
// of PEM (a bundle), or one certificate in DER. Errors are *Error of
// KindInput.
func ParseCertificates(b []byte) ([]*x509.Certificate, error) {
	if len(b) > 0 && b[0] == 0x30 {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return nil, errorf(KindInput, "", "the DER certificate cannot be parsed")
		}
		return []*x509.Certificate{c}, nil
	}
	var certs []*x509.Certificate
	others := false
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			others = true
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, errorf(KindInput, "", "certificate %d of the file cannot be parsed", len(certs)+1)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		hint := "give an X.509 certificate (BEGIN CERTIFICATE, or DER), e.g. made by openssl req -x509"
		if others {
			hint = "it holds PEM, but no CERTIFICATE block: is it the key? " + hint
		}
		return nil, errorf(KindInput, hint, "no certificate in it")
	}
	return certs, nil
}

// LoadSigningKey reads the private key at keyPath (see ReadSigningKey)
// and its certificate at certPath (the first of a PEM bundle, or DER),
// and checks that the key is the certificate's. Either path may be a pipe
// (bash's <(...)); ctx ends the wait for its writer. Errors name the
// files "signing key" and "certificate".
func LoadSigningKey(ctx context.Context, keyPath, certPath string) (crypto.Signer, *x509.Certificate, error) {
	key, err := ReadSigningKey(ctx, "signing key", keyPath)
	if err != nil {
		return nil, nil, err
	}
	certs, err := LoadCertificates(ctx, "certificate", certPath)
	if err != nil {
		return nil, nil, err
	}
	cert := certs[0]
	if err := pkcs7.SameKey(key.Public(), cert); err != nil {
		return nil, nil, errorf(KindInput, "give the certificate made for this key: openssl req -x509 -key "+keyPath+" ...",
			"signing key %s is not the key of certificate %s (%s)", keyPath, certPath, cert.Subject)
	}
	return key, cert, nil
}

// ReadSigningKey reads the private key at path (see ParseSigningKey),
// which may be a pipe (bash's <(...)); ctx ends the wait for its writer.
// role names the file in errors (a command line's flag, say).
func ReadSigningKey(ctx context.Context, role, path string) (crypto.Signer, error) {
	b, err := readSigningInput(ctx, role, path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	key, err := ParseSigningKey(b)
	if err != nil {
		return nil, withHint(KindInput, fmt.Errorf("%s %s: %w", role, path, err), hintOf(err))
	}
	return key, nil
}

// LoadCertificates reads the certificates at path (a PEM bundle, or one in
// DER; see ParseCertificates); role names the path in errors (e.g.
// "trusted certificate", or a command line's flag).
func LoadCertificates(ctx context.Context, role, path string) ([]*x509.Certificate, error) {
	b, err := readSigningInput(ctx, role, path, maxCertFile)
	if err != nil {
		return nil, err
	}
	certs, err := ParseCertificates(b)
	if err != nil {
		return nil, withHint(KindInput, fmt.Errorf("%s %s: %w", role, path, err), hintOf(err))
	}
	return certs, nil
}
