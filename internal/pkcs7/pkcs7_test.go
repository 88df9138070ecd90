package pkcs7

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// update rewrites the recorded openssl outputs in testdata/openssl from
// openssl itself.
var update = flag.Bool("update", false, "record openssl's outputs in testdata/openssl")

// The contents signed: root hashes in hex as the kernel table holds them
// (sha256, sha1 and sha512 trees).
const (
	root256 = "4f3c8e0d9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5"
	root160 = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
	root512 = "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
)

func keyPath(name string) string { return filepath.Join("testdata", "keys", name) }

// loadSigner reads a test key (PKCS#8, PKCS#1 or SEC1 PEM).
func loadSigner(t testing.TB, name string) crypto.Signer {
	t.Helper()
	b, err := os.ReadFile(keyPath(name))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", name)
	}
	var k any
	switch blk.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k.(crypto.Signer)
}

func loadCert(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(keyPath(name))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", name)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openssl returns openssl's path: the test skips without it, but fails in
// CI (CI=true) and when recording.
func openssl(t *testing.T) string {
	t.Helper()
	if *update {
		p, err := exec.LookPath("openssl")
		if err != nil {
			t.Fatal("-update needs openssl")
		}
		return p
	}
	return testtool.Require(t, "openssl")
}

// runOpenSSL runs openssl with args in dir and returns its stdout.
func runOpenSSL(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(openssl(t), args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// opensslFails reports whether openssl with args exits non-zero.
func opensslFails(t *testing.T, dir string, args ...string) bool {
	t.Helper()
	cmd := exec.Command(openssl(t), args...)
	cmd.Dir = dir
	return cmd.Run() != nil
}

// workDir returns a temporary directory holding root.txt (content, no
// newline) and the test keys.
func workDir(t *testing.T, content string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "root.txt"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(keyPath(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(keyPath(e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// recorded compares got with testdata/openssl/name, or (with -update)
// writes it there.
func recorded(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "openssl", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: differs from the recorded openssl output (%d bytes, recorded %d)", name, len(got), len(want))
	}
}

func readRecorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openssl", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type rsaCase struct {
	key, cert, root string
	hash            crypto.Hash
	embed           bool
}

var rsaCases = []rsaCase{
	{"rsa2048.pem", "rsa2048.crt", root256, crypto.SHA256, false},
	{"rsa2048.pem", "rsa2048.crt", root256, crypto.SHA1, false},
	{"rsa2048.pem", "rsa2048.crt", root160, crypto.SHA384, false},
	{"rsa2048.pem", "rsa2048.crt", root512, crypto.SHA512, false},
	{"rsa2048.pem", "rsa2048.crt", root256, crypto.SHA256, true},
	{"rsa3072-pkcs1.pem", "rsa3072.crt", root256, crypto.SHA256, false}, // serial 128: 02 02 00 80
	{"rsa3072-pkcs1.pem", "rsa3072.crt", root512, crypto.SHA512, true},
	{"rsa4096.pem", "rsa4096.crt", root256, crypto.SHA256, false}, // a 20-byte serial
	{"rsa4096.pem", "rsa4096.crt", root160, crypto.SHA1, true},
}

func (c rsaCase) name() string {
	n := fmt.Sprintf("%s-%s-%d", strings.TrimSuffix(c.key, ".pem"), HashName(c.hash), len(c.root))
	if c.embed {
		n += "-certs"
	}
	return n + ".der"
}

// opensslSignArgs is the command line of the signature Sign makes.
func opensslSignArgs(key, cert string, h crypto.Hash, embed bool) []string {
	args := []string{"smime", "-sign", "-noattr", "-binary", "-outform", "der", "-in", "root.txt",
		"-signer", cert, "-inkey", key, "-md", HashName(h)}
	if !embed {
		args = append(args, "-nocerts")
	}
	return args
}

// TestSignIsOpenSSLs: for RSA keys our signature is byte for byte
// openssl smime's, for several keys (PKCS#8 and PKCS#1 PEM, serials that
// need a leading zero or take 20 bytes), digests and root hash lengths,
// with and without the certificate; against openssl run now and against
// its recorded outputs.
func TestSignIsOpenSSLs(t *testing.T) {
	for _, c := range rsaCases {
		t.Run(c.name(), func(t *testing.T) {
			got, err := Sign([]byte(c.root), loadSigner(t, c.key), loadCert(t, c.cert), &SignOptions{Hash: c.hash, EmbedCertificate: c.embed})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.LookPath("openssl"); err == nil || testtool.InCI() || *update {
				want := runOpenSSL(t, workDir(t, c.root), opensslSignArgs(c.key, c.cert, c.hash, c.embed)...)
				if !bytes.Equal(got, want) {
					t.Errorf("differs from openssl smime -sign's (%d bytes, openssl's %d)", len(got), len(want))
				}
				recorded(t, c.name(), want)
			}
			recorded(t, c.name(), got)
		})
	}
}

// structure dumps a DER tree as tags and primitive contents, each
// SignerInfo's signature value left out: what two ECDSA signatures of the
// same content by the same key share.
func structure(der []byte) string {
	var sb strings.Builder
	var walk func(b []byte, path string)
	walk = func(b []byte, path string) {
		for len(b) > 0 {
			tag := b[0]
			n, hl := 0, 2
			if len(b) < 2 {
				fmt.Fprintf(&sb, "%s! truncated\n", path)
				return
			}
			if l := int(b[1]); l < 0x80 {
				n = l
			} else {
				hl += l & 0x7f
				if len(b) < hl {
					fmt.Fprintf(&sb, "%s! truncated\n", path)
					return
				}
				for _, c := range b[2:hl] {
					n = n<<8 | int(c)
				}
			}
			if len(b) < hl+n {
				fmt.Fprintf(&sb, "%s! truncated\n", path)
				return
			}
			body, p := b[hl:hl+n], fmt.Sprintf("%s/%02x", path, tag)
			switch {
			case tag&0x20 != 0:
				fmt.Fprintf(&sb, "%s\n", p)
				walk(body, p)
			case p == "/30/a0/30/31/30/04":
				fmt.Fprintf(&sb, "%s <signature>\n", p)
			default:
				fmt.Fprintf(&sb, "%s %x\n", p, body)
			}
			b = b[hl+n:]
		}
	}
	walk(der, "")
	return sb.String()
}

type ecCase struct {
	key, cert string
	hash      crypto.Hash
	embed     bool
}

var ecCases = []ecCase{
	{"ec256.pem", "ec256.crt", crypto.SHA256, false},
	{"ec256-sec1.pem", "ec256.crt", crypto.SHA512, false},
	{"ec256.pem", "ec256.crt", crypto.SHA1, true},
	{"ec384.pem", "ec384.crt", crypto.SHA384, false},
	{"ec384.pem", "ec384.crt", crypto.SHA256, true},
}

// TestECDSASignatureLikeOpenSSLs: an ECDSA signature (random, so not
// byte-identical) has openssl's structure, and openssl smime and cms
// verify it, with -noverify and against the certificate as CA; and
// refuse it for other content.
func TestECDSASignatureLikeOpenSSLs(t *testing.T) {
	testtool.Long(t, "the ECDSA signatures against openssl's (tens of seconds of openssl runs)")
	for _, c := range ecCases {
		name := fmt.Sprintf("%s-%s%s.der", strings.TrimSuffix(c.key, ".pem"), HashName(c.hash), map[bool]string{true: "-certs"}[c.embed])
		t.Run(name, func(t *testing.T) {
			got, err := Sign([]byte(root256), loadSigner(t, c.key), loadCert(t, c.cert), &SignOptions{Hash: c.hash, EmbedCertificate: c.embed})
			if err != nil {
				t.Fatal(err)
			}
			d := workDir(t, root256)
			var want []byte
			if _, err := exec.LookPath("openssl"); err == nil || testtool.InCI() || *update {
				want = runOpenSSL(t, d, opensslSignArgs(c.key, c.cert, c.hash, c.embed)...)
				if *update {
					recorded(t, name, want)
				}
			} else {
				want = readRecorded(t, name)
			}
			if g, w := structure(got), structure(want); g != w {
				t.Errorf("structure differs from openssl's:\nours:\n%s\nopenssl's:\n%s", g, w)
			}
			if _, err := exec.LookPath("openssl"); err != nil && !testtool.InCI() {
				return
			}
			opensslAccepts(t, d, got, c.cert, c.cert)
		})
	}
}

// opensslAccepts checks that openssl smime -verify and cms -verify take
// sig as a signature of root.txt in d by cert (given with -certfile, as
// without -nocerts it is in sig), chained up to ca, and refuse it for
// other content: the same followed by a newline.
func opensslAccepts(t *testing.T, d string, sig []byte, cert, ca string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(d, "sig.der"), sig, 0o600); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(d, "root.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "other.txt"), append(content, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"smime", "cms"} {
		base := []string{tool, "-verify", "-inform", "der", "-in", "sig.der", "-binary", "-certfile", cert, "-out", "/dev/null"}
		runOpenSSL(t, d, append(base, "-content", "root.txt", "-noverify")...)
		runOpenSSL(t, d, append(base, "-content", "root.txt", "-CAfile", ca)...)
		if !opensslFails(t, d, append(base, "-content", "other.txt", "-noverify")...) {
			t.Errorf("openssl %s -verify accepts the signature for other content", tool)
		}
	}
}

// TestOpenSSLVerifiesRSA: openssl smime and cms verify our RSA signatures
// (they are openssl's own bytes; this checks the test's openssl command
// lines as much as us).
func TestOpenSSLVerifiesRSA(t *testing.T) {
	testtool.Long(t, "openssl's check of the RSA signatures (tens of seconds of openssl runs)")
	for _, c := range rsaCases[:5] {
		sig, err := Sign([]byte(c.root), loadSigner(t, c.key), loadCert(t, c.cert), &SignOptions{Hash: c.hash, EmbedCertificate: c.embed})
		if err != nil {
			t.Fatal(err)
		}
		opensslAccepts(t, workDir(t, c.root), sig, c.cert, c.cert)
	}
}

func TestSignRefuses(t *testing.T) {
	rsa := loadSigner(t, "rsa2048.pem")
	for _, c := range []struct {
		name   string
		signer crypto.Signer
		cert   string
		opts   *SignOptions
		want   string
	}{
		{"Ed25519", loadSigner(t, "ed25519.pem"), "ed25519.crt", nil, `Ed25519 key cannot sign.*openssl smime.*kernel`},
		{"P-521", loadSigner(t, "ec521.pem"), "ec521.crt", nil, `P-521: the kernel checks .* P-256 and P-384 only`},
		{"another key's certificate", rsa, "rsa3072.crt", nil, `not the key of the certificate \(CN=rsa3072`},
		{"md5", rsa, "rsa2048.crt", &SignOptions{Hash: crypto.MD5}, `digest MD5 is not one of sha1, sha256, sha384, sha512`},
		{"sha224", rsa, "rsa2048.crt", &SignOptions{Hash: crypto.SHA224}, `digest sha224 is not one of`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Sign([]byte(root256), c.signer, loadCert(t, c.cert), c.opts)
			if err == nil || !regexpMatch(c.want, err.Error()) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// faultySigner signs with another key than its public key says.
type faultySigner struct {
	crypto.Signer
	pub crypto.PublicKey
}

func (f faultySigner) Public() crypto.PublicKey { return f.pub }

// TestSignChecksTheSignature: a signer (an HSM, say) that signs with
// another key than it claims is caught before anything is returned.
func TestSignChecksTheSignature(t *testing.T) {
	cert := loadCert(t, "rsa2048.crt")
	s := faultySigner{Signer: loadSigner(t, "rsa4096.pem"), pub: cert.PublicKey}
	if _, err := Sign([]byte(root256), s, cert, nil); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("error %v, want the signature refused", err)
	}
}

func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
