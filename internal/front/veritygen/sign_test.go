package veritygen

// veritygen --root-hash-signature and --root-hash-signature-json: the
// signature is openssl smime's (byte for byte with an RSA key), openssl
// smime and cms verify it, the JSON is systemd-repart's; bad keys and
// outputs that are not ours are refused with nothing written.

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// opensslIn runs openssl with args in dir, stdin from in, and returns its
// stdout; it fails the test on a non-zero exit.
func opensslIn(t *testing.T, dir string, in []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(testtool.Require(t, "openssl"), args...)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestCLISignMatchesOpenSSL: veritygen's signature of the root hash it
// prints is what `printf %s ROOT | openssl smime -sign -nocerts -noattr
// -binary -outform der` makes, with each digest and with the certificate
// embedded; openssl smime and cms -verify take it and our ECDSA
// signatures; the JSON is systemd-repart's form.
func TestCLISignMatchesOpenSSL(t *testing.T) {
	d := t.TempDir()
	data := filepath.Join(d, "d.img")
	fronttest.Image(t, data, 1<<20, 41)
	for _, c := range []struct {
		kind, digest string
		embed        bool
	}{
		{"rsa2048", "sha256", false}, {"rsa2048", "sha512", false}, {"rsa2048", "sha1", true}, {"rsa4096", "sha384", false},
		{"ec256", "sha256", false}, {"ec384", "sha384", true},
	} {
		t.Run(c.kind+"-"+c.digest, func(t *testing.T) {
			key, cert := testtool.WriteSigningKey(t, d, c.kind, c.kind)
			sig, js := filepath.Join(d, c.kind+".p7s"), filepath.Join(d, c.kind+".json")
			args := []string{"--json", "--root-hash-signature=" + sig, "--root-hash-signature-json=" + js,
				"--sign-key=" + key, "--sign-cert=" + cert, "--sign-digest=" + c.digest, data, filepath.Join(d, "h")}
			if c.embed {
				args = append(args, "--sign-embed-cert")
			}
			rep := cliJSON(t, cliOK(t, args...).stdout)
			root := cliString(t, rep, "root_hash")
			got := fronttest.Read(t, sig)
			if s := rep["root_hash_signature"].(map[string]any); s["file"] != sig || s["json_file"] != js || s["digest"] != c.digest || s["signer"] != "CN="+c.kind+",O=veritytree tests" {
				t.Errorf("report %v", s)
			}
			if err := os.WriteFile(filepath.Join(d, "root.txt"), []byte(root), 0o600); err != nil {
				t.Fatal(err)
			}
			signArgs := []string{"smime", "-sign", "-noattr", "-binary", "-outform", "der", "-signer", cert, "-inkey", key, "-md", c.digest}
			if !c.embed {
				signArgs = append(signArgs, "-nocerts")
			}
			want := opensslIn(t, d, []byte(root), signArgs...)
			if strings.HasPrefix(c.kind, "rsa") && !bytes.Equal(got, want) {
				t.Errorf("differs from openssl smime -sign's signature of %s", root)
			}
			for _, tool := range []string{"smime", "cms"} {
				opensslIn(t, d, nil, tool, "-verify", "-inform", "der", "-in", sig, "-content", "root.txt", "-binary", "-certfile", cert, "-CAfile", cert, "-out", "/dev/null")
			}
			b, _ := pem.Decode(fronttest.Read(t, cert))
			fp := sha256.Sum256(b.Bytes)
			wantJSON := `{"rootHash":"` + root + `","certificateFingerprint":"` + hex.EncodeToString(fp[:]) + `","signature":"` + base64.StdEncoding.EncodeToString(got) + `"}`
			if j := string(fronttest.Read(t, js)); j != wantJSON {
				t.Errorf("JSON %s\nwant %s", j, wantJSON)
			}
		})
	}
}

// TestCLISignRefuses: what veritygen refuses, each before anything is
// written.
func TestCLISignRefuses(t *testing.T) {
	d := t.TempDir()
	data := filepath.Join(d, "d.img")
	fronttest.Image(t, data, 1<<16, 42)
	key, cert := testtool.WriteSigningKey(t, d, "k", "ec256")
	_, otherCert := testtool.WriteSigningKey(t, d, "o", "ec384")
	edKey, edCert := testtool.WriteSigningKey(t, d, "ed", "ed25519")
	enc := filepath.Join(d, "enc.pem")
	if err := os.WriteFile(enc, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{0x30, 0}}), 0o600); err != nil {
		t.Fatal(err)
	}
	precious := filepath.Join(d, "notes.txt")
	if err := os.WriteFile(precious, []byte("do not lose this\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sig := filepath.Join(d, "s.p7s")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no key", []string{"--root-hash-signature=" + sig}, []string{"needs --sign-key and --sign-cert"}},
		{"no output", []string{"--sign-key=" + key, "--sign-cert=" + cert}, []string{"need --root-hash-signature or --root-hash-signature-json"}},
		{"mismatched certificate", []string{"--root-hash-signature=" + sig, "--sign-key=" + key, "--sign-cert=" + otherCert}, []string{"--sign-key " + key + " is not the key of --sign-cert " + otherCert, "hint: give the certificate made for this key"}},
		{"encrypted key", []string{"--root-hash-signature=" + sig, "--sign-key=" + enc, "--sign-cert=" + cert}, []string{"--sign-key " + enc + ": the private key is encrypted", `hint: decrypt it into a pipe, which keeps it off the disk: --sign-key=<\(openssl pkey -in KEY.pem\)`}},
		{"garbage key", []string{"--root-hash-signature=" + sig, "--sign-key=" + data, "--sign-cert=" + cert}, []string{"no PEM private key in it"}},
		{"Ed25519", []string{"--root-hash-signature=" + sig, "--sign-key=" + edKey, "--sign-cert=" + edCert}, []string{"Ed25519 key cannot sign a root hash"}},
		{"bad digest", []string{"--root-hash-signature=" + sig, "--sign-key=" + key, "--sign-cert=" + cert, "--sign-digest=md5"}, []string{`--sign-digest: digest "md5" is not one of`}},
		{"an output that is not ours", []string{"--root-hash-signature=" + precious, "--sign-key=" + key, "--sign-cert=" + cert}, []string{"--root-hash-signature " + precious + " is not a root hash signature", "--force"}},
		{"a JSON output that is not ours", []string{"--root-hash-signature-json=" + precious, "--sign-key=" + key, "--sign-cert=" + cert}, []string{"--root-hash-signature-json " + precious + " is not a signature JSON"}},
		{"with --avb", []string{"--append", "--avb", "--root-hash-signature=" + sig, "--sign-key=" + key, "--sign-cert=" + cert}, []string{"do not go with --avb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := fronttest.Listing(t, d)
			r := cliRun(t, t.Context(), append(c.args, data, filepath.Join(d, "h"))...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2", r.code)
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(r.stderr) {
					t.Errorf("stderr does not match %q", w)
				}
			}
			if strings.Contains(r.stderr, "asn1") || strings.Contains(r.stderr, "x509:") {
				t.Errorf("Go-internal error text: %s", r.stderr)
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, d))
		})
	}
}

// TestCLISignReplacesOwn: a second run replaces the signature files it
// wrote (ours); --force replaces any file; the outputs can be pipes.
func TestCLISignReplacesOwn(t *testing.T) {
	d := t.TempDir()
	data := filepath.Join(d, "d.img")
	fronttest.Image(t, data, 1<<16, 43)
	key, cert := testtool.WriteSigningKey(t, d, "k", "rsa2048")
	sig, js := filepath.Join(d, "s.p7s"), filepath.Join(d, "s.json")
	args := []string{"--root-hash-signature=" + sig, "--root-hash-signature-json=" + js, "--sign-key=" + key, "--sign-cert=" + cert, data, filepath.Join(d, "h")}
	cliOK(t, args...)
	cliOK(t, append([]string{"--salt=ab"}, args...)...)
	c, _ := verity.LoadCertificates(t.Context(), "cert", cert)
	f, err := verity.ParseRootHashSignatureFile(fronttest.Read(t, js))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Verify(f.RootHash, []*x509.Certificate{c[0]}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sig, []byte("anything"), 0o600); err != nil {
		t.Fatal(err)
	}
	cliOK(t, append([]string{"--force"}, args...)...)
	if f, err := verity.ParseRootHashSignatureFile(fronttest.Read(t, sig)); err != nil || f.Format != verity.SignatureFormatPKCS7 {
		t.Errorf("after --force: %v", err)
	}
	cliOK(t, "--root-hash-signature=/dev/null", "--sign-key="+key, "--sign-cert="+cert, data, filepath.Join(d, "h"))
}
