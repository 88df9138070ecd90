package veritycheck

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/verity"
)

const signUsage = `
--root-hash-signature FILE checks the root hash's signature first, as the
kernel does when it opens the device with it (veritysetup open
--root-hash-signature), with the --sign-cert certificates standing for the
kernel's keyring: FILE is the DER PKCS#7 (openssl smime -sign ... -outform
der, veritygen --root-hash-signature) or systemd's verity signature JSON,
whose rootHash is then the root hash to check against unless one is given.
A signature that does not verify, or not with a --sign-cert certificate
(nor one it chains up to through the certificates it carries), is exit 1.
`

// signCheck is the root hash signature check: --root-hash-signature and
// the trusted certificates.
type signCheck struct {
	file  string
	certs []string
	fs    *pflag.FlagSet
}

func (s *signCheck) register(fs *pflag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.file, "root-hash-signature", "", "check the root hash's signature in `FILE`")
	fs.StringArrayVar(&s.certs, "sign-cert", nil, "`FILE` a trusted certificate (repeatable)")
}

func (s *signCheck) wanted() bool {
	return s.fs.Changed("root-hash-signature") || s.fs.Changed("sign-cert")
}

// load reads the signature file and the trusted certificates; nil without
// the flags.
func (s *signCheck) load(ctx context.Context) (*verity.RootHashSignatureFile, []*x509.Certificate, error) {
	if !s.wanted() {
		return nil, nil, nil
	}
	if s.file == "" {
		return nil, nil, cli.Errorf("add --root-hash-signature=FILE", "--sign-cert needs --root-hash-signature")
	}
	if len(s.certs) == 0 {
		return nil, nil, cli.Errorf("give the certificate the kernel's keyring holds for the key (or its CA's): --sign-cert=CERT.pem",
			"--root-hash-signature needs --sign-cert: a signature checked against the certificate it carries itself proves nothing")
	}
	f, err := verity.ReadRootHashSignatureFile(ctx, "--root-hash-signature", s.file)
	if err != nil {
		return nil, nil, err
	}
	var trusted []*x509.Certificate
	for _, p := range s.certs {
		c, err := verity.LoadCertificates(ctx, "--sign-cert", p)
		if err != nil {
			return nil, nil, err
		}
		trusted = append(trusted, c...)
	}
	return f, trusted, nil
}

// signatureJSON is what the JSON report says of the signature.
type signatureJSON struct {
	File             string `json:"file"`
	Format           string `json:"format"`
	Signer           string `json:"signer"`
	Fingerprint      string `json:"certificate_sha256"`
	TrustedBy        string `json:"trusted_by"`
	Digest           string `json:"digest"`
	SignedAttributes bool   `json:"signed_attributes"`
	SigningTime      string `json:"signing_time,omitempty"`
}

// checkSignature checks f over root against trusted and prints who signed
// (as text; the JSON report gets the returned summary). A signature that
// does not verify is exit 1.
func checkSignature(o *options, f *verity.RootHashSignatureFile, trusted []*x509.Certificate, root []byte, stdout io.Writer) (*signatureJSON, int, error) {
	s, err := f.Verify(root, trusted)
	if err != nil {
		if errors.Is(err, verity.ErrUntrusted) {
			if o.json {
				cli.ReportJSON(stdout, err)
			}
			return nil, cli.ExitCorrupt, err
		}
		return nil, cli.ExitError, err
	}
	out := &signatureJSON{File: o.sign.file, Format: f.Format, Signer: s.Certificate.Subject.String(),
		Fingerprint: hex.EncodeToString(s.Fingerprint()), TrustedBy: s.Trusted.Subject.String(),
		Digest: strings.ToLower(strings.ReplaceAll(s.Hash.String(), "-", "")), SignedAttributes: s.SignedAttributes}
	if !s.SigningTime.IsZero() {
		out.SigningTime = s.SigningTime.UTC().Format(time.RFC3339)
	}
	if !o.json {
		via := ""
		if !s.Trusted.Equal(s.Certificate) {
			via = ", issued by trusted " + out.TrustedBy
		}
		fmt.Fprintf(stdout, "signature: root hash %x signed by %s (certificate sha256 %s, %s%s)\n", root, out.Signer, out.Fingerprint, out.Digest, via)
	}
	return out, cli.ExitOK, nil
}

// signatureRoot returns the root hash to check: the one given, or else a
// signature JSON's.
func signatureRoot(ctx context.Context, o *options, f *verity.RootHashSignatureFile) ([]byte, error) {
	given := o.tree.Changed("root-hash") || o.rootPositional || o.tree.Changed("root-hash-file")
	if f != nil && f.RootHash != nil && !given {
		return f.RootHash, nil
	}
	root, err := rootHash(ctx, o, &o.tree)
	if err != nil && f != nil && !given {
		err = cli.WithHint(err, "a DER signature holds no root hash: give it (systemd's signature JSON holds one)")
	}
	return root, err
}
