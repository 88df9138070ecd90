package veritygen

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/pkcs7"
	"github.com/veritytree/veritytree/verity"
)

const signUsage = `
Root hash signatures: --root-hash-signature=FILE writes the PKCS#7
signature of the root hash that the kernel checks when the device is opened
with it (veritysetup open --root-hash-signature=FILE): detached, DER, no
signed attributes, over the root hash in lower case hex without a newline,
byte for byte what 'printf %s ROOT | openssl smime -sign -nocerts -noattr
-binary -outform der -signer CERT -inkey KEY' makes with an RSA key (ECDSA
P-256 and P-384 keys work too; Ed25519 cannot: neither openssl smime nor
the kernel does it). --root-hash-signature-json=FILE writes systemd's
verity signature JSON with it (the Discoverable Partitions Specification's
signature partition, as systemd-repart writes it; in a partition it is
padded with NULs to a multiple of 4096 bytes: truncate -s %4096 FILE).
Both need --sign-key (PEM: PKCS#8, PKCS#1 or SEC1, not encrypted; a pipe
such as <(openssl pkey -in ENCRYPTED.pem) works) and --sign-cert, its
certificate. They follow --root-hash-file's rules: an existing regular file
is replaced only if it holds such a signature (or nothing, or with --force).
`

// signFlags are the root hash signature flags.
type signFlags struct {
	out, jsonOut string
	key, cert    string
	digest       string
	embedCert    bool
	fs           *pflag.FlagSet
}

var signFlagNames = []string{"root-hash-signature", "root-hash-signature-json", "sign-key", "sign-cert", "sign-digest", "sign-embed-cert"}

func (s *signFlags) register(fs *pflag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.out, "root-hash-signature", "", "also write the PKCS#7 signature to `FILE`")
	fs.StringVar(&s.jsonOut, "root-hash-signature-json", "", "also write systemd's JSON of it to `FILE`")
	fs.StringVar(&s.key, "sign-key", "", "`PEM` the private key that signs")
	fs.StringVar(&s.cert, "sign-cert", "", "`PEM` its certificate (or DER)")
	fs.StringVar(&s.digest, "sign-digest", "sha256", "`DIGEST` sha384, sha512 or sha1")
	fs.BoolVar(&s.embedCert, "sign-embed-cert", false, "put the certificate in the signature")
}

// wanted reports whether any signature flag is given.
func (s *signFlags) wanted() bool {
	for _, name := range signFlagNames {
		if s.fs.Changed(name) {
			return true
		}
	}
	return false
}

// notWithAVB refuses the flags on an --avb command line.
func (s *signFlags) notWithAVB() error {
	if s.wanted() {
		return cli.Errorf("sign the vbmeta with --avb-key, or sign a tree made without --avb",
			"the root hash signature flags do not go with --avb: AVB signs the vbmeta, which holds the root digest")
	}
	return nil
}

// signing checks the flags, reads the key and its certificate and
// returns what Format is to sign; nil without the flags.
func (s *signFlags) signing(ctx context.Context) (*verity.RootHashSigning, error) {
	if !s.wanted() {
		return nil, nil
	}
	if s.out == "" && s.jsonOut == "" {
		return nil, cli.Errorf("add --root-hash-signature=FILE (or --root-hash-signature-json=FILE)",
			"--sign-key, --sign-cert, --sign-digest and --sign-embed-cert need --root-hash-signature or --root-hash-signature-json")
	}
	if s.key == "" || s.cert == "" {
		return nil, cli.Errorf("e.g. --sign-key=verity.key --sign-cert=verity.crt (openssl req -x509 -newkey rsa:2048 -nodes -keyout verity.key -out verity.crt)",
			"signing the root hash needs --sign-key and --sign-cert")
	}
	h, err := verity.ParseSigningHash(s.digest)
	if err != nil {
		return nil, cli.WithHint(fmt.Errorf("--sign-digest: %w", err), cli.LibraryHint(err))
	}
	key, cert, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	return &verity.RootHashSigning{Signer: key, Certificate: cert, SignOptions: verity.SignOptions{Hash: h, EmbedCertificate: s.embedCert},
		SignatureFile: s.out, JSONFile: s.jsonOut}, nil
}

// load reads --sign-key and --sign-cert, as the library's LoadSigningKey
// does, with the files named by their flags and the hints in flags.
func (s *signFlags) load(ctx context.Context) (crypto.Signer, *x509.Certificate, error) {
	key, err := verity.ReadSigningKey(ctx, "--sign-key", s.key)
	if errors.Is(err, verity.ErrKeyEncrypted) {
		return nil, nil, cli.WithHint(err, "decrypt it into a pipe, which keeps it off the disk: --sign-key=<(openssl pkey -in KEY.pem)")
	}
	if err != nil {
		return nil, nil, err
	}
	certs, err := verity.LoadCertificates(ctx, "--sign-cert", s.cert)
	if err != nil {
		return nil, nil, err
	}
	cert := certs[0]
	if pkcs7.SameKey(key.Public(), cert) != nil {
		return nil, nil, cli.Errorf("give the certificate made for this key: openssl req -x509 -key "+s.key+" ...",
			"--sign-key %s is not the key of --sign-cert %s (%s)", s.key, s.cert, cert.Subject)
	}
	return key, cert, nil
}

// signResult is what the report says of the signature.
type signResult struct {
	File        string `json:"file,omitempty"`
	JSONFile    string `json:"json_file,omitempty"`
	Signer      string `json:"signer"`
	Fingerprint string `json:"certificate_sha256"`
	Digest      string `json:"digest"`
}

func newSignResult(s *verity.RootHashSigning, digest string) *signResult {
	if s == nil {
		return nil
	}
	return &signResult{File: s.SignatureFile, JSONFile: s.JSONFile, Signer: s.Certificate.Subject.String(),
		Fingerprint: hex.EncodeToString((&verity.RootHashSigner{Certificate: s.Certificate}).Fingerprint()), Digest: digest}
}

func (r *signResult) print(w io.Writer) {
	if r == nil {
		return
	}
	if r.File != "" {
		fmt.Fprintf(w, "Signature:       \t%s\n", r.File)
	}
	if r.JSONFile != "" {
		fmt.Fprintf(w, "Signature JSON:  \t%s\n", r.JSONFile)
	}
	fmt.Fprintf(w, "Signed by:       \t%s (certificate sha256 %s, %s)\n", r.Signer, r.Fingerprint, r.Digest)
}
