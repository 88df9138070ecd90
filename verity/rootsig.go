package verity

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/veritytree/veritytree/internal/pkcs7"
	"github.com/veritytree/veritytree/internal/safefile"
)

// Root hash signatures: the PKCS#7 signature dm-verity's
// root_hash_sig_key_desc makes the kernel check when it opens a device
// (`veritysetup open --root-hash-signature`), and systemd's verity
// signature partition, a JSON object that carries it.

// SignOptions tune SignRootHash.
type SignOptions struct {
	// Hash is the digest (openssl's -md): crypto.SHA1, SHA256, SHA384 or
	// SHA512; 0 means SHA-256, openssl's default.
	Hash crypto.Hash
	// EmbedCertificate puts the signer's certificate into the signature,
	// as openssl smime -sign does without -nocerts and systemd-repart
	// does. The kernel does not need it (it finds the key in its keyring)
	// but can use it to chain the signer to a trusted CA.
	EmbedCertificate bool
}

// RootHashSignatureContent returns the bytes a root hash signature signs:
// the root hash in lower case hex without a newline, the string the
// kernel's dm-verity table holds and checks the signature over
// (drivers/md/dm-verity-verify-sig.c), and what `printf %s ROOT | openssl
// smime -sign ...` signs.
func RootHashSignatureContent(root []byte) []byte {
	return []byte(hex.EncodeToString(root))
}

// SignRootHash returns the signature of the root hash root that the kernel
// checks when a dm-verity device is opened with root_hash_sig_key_desc: a
// detached PKCS#7 SignedData in DER, without signed attributes, over
// RootHashSignatureContent(root), made by signer (any crypto.Signer: a
// key in memory, an HSM, a KMS) whose certificate is cert. For an RSA key
// it is byte for byte `printf %s ROOT | openssl smime -sign -nocerts
// -noattr -binary -outform der -signer CERT -inkey KEY` (-nocerts left out
// with opts.EmbedCertificate); an ECDSA signature (P-256 or P-384) has
// the same structure. Ed25519 and other keys are refused (KindParam):
// neither openssl smime nor the kernel makes or checks those.
func SignRootHash(root []byte, signer crypto.Signer, cert *x509.Certificate, opts *SignOptions) ([]byte, error) {
	if len(root) == 0 {
		return nil, paramErrorf("", "", "no root hash to sign")
	}
	if signer == nil || cert == nil {
		return nil, paramErrorf("", "", "signing the root hash needs a key and its certificate")
	}
	if opts == nil {
		opts = &SignOptions{}
	}
	sig, err := pkcs7.Sign(RootHashSignatureContent(root), signer, cert, &pkcs7.SignOptions{Hash: opts.Hash, EmbedCertificate: opts.EmbedCertificate})
	if err != nil {
		return nil, errorf(KindParam, "", "signing the root hash: %v", err)
	}
	return sig, nil
}

// RootHashSigner is what VerifyRootHashSignature says of who signed.
type RootHashSigner struct {
	// Certificate is the signer's certificate: the one the signature
	// carries, or else the trusted one whose key verified it.
	Certificate *x509.Certificate
	// Trusted is the trusted certificate that vouches for the signature:
	// Certificate itself, or the CA that issued it.
	Trusted *x509.Certificate
	// Hash is the signature's digest.
	Hash crypto.Hash
	// SignedAttributes says whether it signs attributes (as openssl
	// without -noattr makes it) rather than the root hash alone.
	SignedAttributes bool
	// SigningTime is the time it says it was made, if it does.
	SigningTime time.Time
}

// Fingerprint returns the SHA-256 of the signer's certificate (DER), as
// systemd's signature JSON names it.
func (s *RootHashSigner) Fingerprint() []byte {
	sum := sha256.Sum256(s.Certificate.Raw)
	return sum[:]
}

// VerifyRootHashSignature checks sig, a root hash signature (DER PKCS#7 or
// CMS SignedData, as SignRootHash, openssl smime -sign and openssl cms
// -sign make it), over the root hash root, as the kernel would when
// opening the device with it, with trusted standing for the kernel's
// keyring: the signer's key must be a trusted certificate's, or its
// certificate (carried in the signature) issued by one; RSA (PKCS#1
// v1.5, rsaEncryption) or ECDSA on P-256 or P-384; detached; signed
// attributes without the S/MIME capabilities openssl smime adds by
// default; over the root hash in lower case hex with no newline (a
// signature over other bytes, a newline added by echo, say, is refused,
// and the hint says so). It returns who signed.
//
// Errors are *Error: KindInput for a signature that cannot be read or is
// made with what the kernel does not check, KindUntrusted for one that
// does not verify, or not with a trusted certificate.
func VerifyRootHashSignature(root, sig []byte, trusted []*x509.Certificate) (*RootHashSigner, error) {
	sd, err := pkcs7.Parse(sig)
	if err != nil {
		return nil, signatureError(err, "")
	}
	content := RootHashSignatureContent(root)
	s, err := sd.Verify(content, trusted)
	var e *pkcs7.Error
	if errors.As(err, &e) && e.Kind == pkcs7.Invalid {
		return nil, signatureError(err, signedInstead(sd, root, trusted))
	}
	if err != nil {
		return nil, signatureError(err, "")
	}
	return &RootHashSigner{Certificate: s.Certificate, Trusted: s.Trusted, Hash: s.Hash,
		SignedAttributes: s.SignedAttributes, SigningTime: s.SigningTime}, nil
}

// signedInstead says what a signature that does not verify over the root
// hash signs instead, if it is a usual mistake (a newline after it, as
// echo writes, upper case hex, the binary root hash), and how to sign it
// right; "" if none of those.
func signedInstead(sd *pkcs7.SignedData, root []byte, trusted []*x509.Certificate) string {
	lower := hex.EncodeToString(root)
	upper := strings.ToUpper(lower)
	for _, c := range []struct{ content, what string }{
		{lower + "\n", "the root hash followed by a newline (as echo writes it)"},
		{upper, "the root hash in upper case hex"},
		{upper + "\n", "the root hash in upper case hex followed by a newline"},
		{string(root), "the binary root hash"},
	} {
		if _, err := sd.Verify([]byte(c.content), trusted); err == nil {
			return fmt.Sprintf("it signs %s: the kernel checks it over the root hash in lower case hex and nothing else; sign that: printf %%s %s | openssl smime -sign ... (or Format with FormatOptions.Sign)", c.what, lower)
		}
	}
	return ""
}

// signatureError turns a pkcs7 error into an *Error of the kind its
// reason calls for.
func signatureError(err error, hint string) error {
	var e *pkcs7.Error
	if !errors.As(err, &e) {
		return errorf(KindInput, hint, "root hash signature: %v", err)
	}
	switch e.Kind {
	case pkcs7.Invalid:
		return errorf(KindUntrusted, hint, "the root hash signature does not verify: %v", err)
	case pkcs7.Untrusted:
		if hint == "" {
			hint = "give the certificate the kernel's keyring holds for it (VerifyRootHashSignature.trusted), or its CA's"
		}
		return errorf(KindUntrusted, hint, "the root hash signature is not trusted: %v", err)
	}
	return errorf(KindInput, "make it with openssl smime -sign -noattr -binary -outform der (or Format with FormatOptions.Sign)",
		"the root hash signature cannot be checked: %v", err)
}

// ParseSigningHash returns the digest of openssl's -md name: sha1, sha256,
// sha384 or sha512.
func ParseSigningHash(name string) (crypto.Hash, error) {
	h, ok := pkcs7.HashByName(strings.ToLower(name))
	if !ok || h == crypto.SHA224 {
		return 0, paramErrorf("Hash", "sha256 (the default), sha384, sha512 or sha1", "digest %q is not one of sha1, sha256, sha384, sha512", name)
	}
	return h, nil
}

// The formats of a root hash signature file (RootHashSignatureFile.Format):
// DER PKCS#7, or systemd's verity signature JSON.
const (
	SignatureFormatPKCS7 = "pkcs7"
	SignatureFormatJSON  = "systemd-json"
)

// RootHashSignatureFile is a root hash signature as a file holds it: the
// DER PKCS#7 itself, or systemd's verity signature JSON.
type RootHashSignatureFile struct {
	// Format is SignatureFormatPKCS7 or SignatureFormatJSON.
	Format string
	// Signature is the DER PKCS#7.
	Signature []byte
	// RootHash is the JSON's rootHash (nil in a DER file).
	RootHash []byte
	// CertificateFingerprint is the JSON's certificateFingerprint, the
	// SHA-256 of the signer's certificate; nil if absent.
	CertificateFingerprint []byte
}

// ParseRootHashSignatureFile reads the content of a root hash signature
// file: DER PKCS#7 (starting with a SEQUENCE), or systemd's JSON (see
// ParseRootHashSignatureJSON).
func ParseRootHashSignatureFile(b []byte) (*RootHashSignatureFile, error) {
	if looksLikePKCS7(b) {
		return &RootHashSignatureFile{Format: SignatureFormatPKCS7, Signature: b}, nil
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' || looksLikeSignatureJSON(b) {
		j, err := ParseRootHashSignatureJSON(b)
		if err != nil {
			return nil, err
		}
		return &RootHashSignatureFile{Format: SignatureFormatJSON, Signature: j.Signature, RootHash: j.RootHash,
			CertificateFingerprint: j.CertificateFingerprint}, nil
	}
	hint := "give the DER signature (openssl smime -sign ... -outform der) or systemd's signature JSON"
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("-----BEGIN")) {
		hint = "it is PEM: convert it with openssl pkcs7 -inform pem -outform der, or sign with -outform der"
	}
	return nil, errorf(KindInput, hint, "the root hash signature is neither DER PKCS#7 nor systemd's signature JSON")
}

// Verify checks the signature over root against trusted (see
// VerifyRootHashSignature); a JSON's rootHash must be root, and its
// certificateFingerprint (if any) the signer's.
func (f *RootHashSignatureFile) Verify(root []byte, trusted []*x509.Certificate) (*RootHashSigner, error) {
	if f.RootHash != nil && !bytes.Equal(f.RootHash, root) {
		return nil, errorf(KindUntrusted, "check that the signature JSON belongs to this image",
			"the signature JSON is for root hash %x, not %x", f.RootHash, root)
	}
	s, err := VerifyRootHashSignature(root, f.Signature, trusted)
	if err != nil {
		return nil, err
	}
	if f.CertificateFingerprint != nil && !bytes.Equal(f.CertificateFingerprint, s.Fingerprint()) {
		return nil, errorf(KindUntrusted, "", "the signature JSON's certificateFingerprint %x is not that of the signer's certificate (%s, %x)",
			f.CertificateFingerprint, s.Certificate.Subject, s.Fingerprint())
	}
	return s, nil
}

// maxSignatureFile bounds what is read of a signature file: systemd's
// limit on a signature partition.
const maxSignatureFile = 4 << 20

// ReadRootHashSignatureFile reads a root hash signature file (DER or
// systemd's JSON, see ParseRootHashSignatureFile); path may be a pipe, and
// the wait for its writer ends with ctx. role names it in errors.
func ReadRootHashSignatureFile(ctx context.Context, role, path string) (*RootHashSignatureFile, error) {
	b, err := readSigningInput(ctx, role, path, maxSignatureFile)
	if err != nil {
		return nil, err
	}
	f, err := ParseRootHashSignatureFile(b)
	if err != nil {
		return nil, withHint(KindInput, fmt.Errorf("%s %s: %w", role, path, err), hintOf(err))
	}
	return f, nil
}

// readSigningInput reads a small input of the signatures (a key, a
// certificate, a signature): the one place they are read, at most limit
// bytes.
func readSigningInput(ctx context.Context, role, path string, limit int) ([]byte, error) {
	b, err := readSmallFile(ctx, role, path, limit)
	switch {
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, errorf(KindInput, "is it the right file?", "%s %s is larger than %d bytes", role, path, limit)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return nil, interrupted(err, "", "interrupted while waiting for %s %s; nothing was written", role, path)
	}
	return b, err
}

// looksLikePKCS7 reports whether b starts as a DER ContentInfo of a
// SignedData: a SEQUENCE, then the OID 1.2.840.113549.1.7.2.
func looksLikePKCS7(b []byte) bool {
	oid := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02}
	if len(b) < 2 || b[0] != 0x30 {
		return false
	}
	hl := 2
	if b[1] > 0x80 {
		hl += int(b[1] & 0x7f)
	}
	return len(b) >= hl+len(oid) && bytes.Equal(b[hl:hl+len(oid)], oid)
}

// RootHashSigning asks Format for signatures of the root hash it makes.
type RootHashSigning struct {
	// Signer signs (any crypto.Signer: a key in memory, an HSM, a KMS);
	// Certificate is its certificate.
	Signer      crypto.Signer
	Certificate *x509.Certificate
	SignOptions
	// SignatureFile, if not "", is where the signature goes, DER PKCS#7
	// (SignRootHash): what veritysetup open --root-hash-signature reads
	// and the kernel checks.
	SignatureFile string
	// JSONFile, if not "", is where systemd's verity signature JSON of
	// the same signature goes (RootHashSignatureJSON).
	JSONFile string
}

// check checks s (nil asks for nothing) before anything is opened; root
// is the root hash file's path.
func (s *RootHashSigning) check(rootFile string) error {
	if s == nil {
		return nil
	}
	switch {
	case s.Signer == nil || s.Certificate == nil:
		return paramErrorf("Sign", "set RootHashSigning.Signer and RootHashSigning.Certificate", "signing the root hash needs a key and its certificate")
	case s.SignatureFile == "" && s.JSONFile == "":
		return paramErrorf("Sign", "set RootHashSigning.SignatureFile or RootHashSigning.JSONFile", "a key to sign the root hash with, but no file to write the signature to")
	case s.SignatureFile != "" && s.SignatureFile == s.JSONFile:
		return paramErrorf("Sign", "name a file of its own for each", "RootHashSigning.SignatureFile and RootHashSigning.JSONFile are both %s", s.SignatureFile)
	case s.SignatureFile != "" && s.SignatureFile == rootFile:
		return paramErrorf("Sign", "name a file of its own for each", "RootHashSigning.SignatureFile %s is also FormatOptions.RootHashFile", s.SignatureFile)
	case s.JSONFile != "" && s.JSONFile == rootFile:
		return paramErrorf("Sign", "name a file of its own for each", "RootHashSigning.JSONFile %s is also FormatOptions.RootHashFile", s.JSONFile)
	}
	if s.Hash != 0 {
		if _, err := ParseSigningHash(pkcs7.HashName(s.Hash)); err != nil {
			return paramErrorf("Sign", hintOf(err), "%v", err)
		}
	}
	if err := pkcs7.CheckKey(s.Signer.Public()); err != nil {
		return paramErrorf("Sign", "", "%v", err)
	}
	if err := pkcs7.SameKey(s.Signer.Public(), s.Certificate); err != nil {
		return paramErrorf("Sign", "give the certificate made for the key", "%v", err)
	}
	return nil
}

// openOutputs opens the signature files before anything is hashed.
func (s *RootHashSigning) openOutputs(force bool, note func(string)) (sig, sigJSON *output, err error) {
	if s == nil {
		return nil, nil, nil
	}
	if s.SignatureFile != "" {
		sig, err = openSmallOutput(s.SignatureFile, "RootHashSigning.SignatureFile", "a root hash signature (DER PKCS#7)",
			foreignUnlessSized(looksLikePKCS7, pkcs7.MaxSize), force, note)
		if err != nil {
			return nil, nil, err
		}
	}
	if s.JSONFile != "" {
		sigJSON, err = openSmallOutput(s.JSONFile, "RootHashSigning.JSONFile", "a signature JSON",
			foreignUnlessSized(looksLikeSignatureJSON, maxSignatureFile), force, note)
		if err != nil {
			if sig != nil {
				sig.abort()
			}
			return nil, nil, err
		}
	}
	return sig, sigJSON, nil
}

// foreignUnlessSized is foreignUnless, and no file larger than max is
// ours.
func foreignUnlessSized(ours func([]byte) bool, max int64) func(string, fs.FileInfo) string {
	recognized := safefile.ForeignUnless(ours)
	return func(path string, info fs.FileInfo) string {
		if info.Size() > max {
			return fmt.Sprintf("%d bytes, more than any", info.Size())
		}
		return recognized(path, info)
	}
}

// writeRootOutputs writes what follows from the root hash once the tree
// is committed: the root hash file, then the signature s asks for (nil:
// none) and its files. It returns the signature, or what failed.
func (w *formatOutputs) writeRootOutputs(root []byte, s *RootHashSigning) (sig []byte, what string, err error) {
	if w.root != nil {
		if err := w.root.writeRootHash(hex.EncodeToString(root)); err != nil {
			return nil, "FormatOptions.RootHashFile", err
		}
	}
	if s == nil {
		return nil, "", nil
	}
	if sig, err = SignRootHash(root, s.Signer, s.Certificate, &s.SignOptions); err != nil {
		return nil, "signing the root hash", err
	}
	if w.sig != nil {
		if err := w.sig.writeAll(sig); err != nil {
			return nil, "RootHashSigning.SignatureFile", err
		}
	}
	if w.sigJSON != nil {
		if err := w.sigJSON.writeAll(RootHashSignatureJSON(root, sig, s.Certificate)); err != nil {
			return nil, "RootHashSigning.JSONFile", err
		}
	}
	return sig, "", nil
}
