package veritycheck

// veritycheck --root-hash-signature: signatures made by veritygen and by
// openssl (smime and cms, the usual mistakes too) are checked as the
// kernel would, against --sign-cert.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
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

// signedTree formats an image in d and signs its root hash with a new key
// of kind: it returns the root hash in hex and the key, certificate,
// signature and JSON paths.
func signedTree(t *testing.T, d, kind string) (root, key, cert, sig, js string) {
	t.Helper()
	data := filepath.Join(d, "d.img")
	fronttest.Image(t, data, 1<<20, 51)
	key, cert = testtool.WriteSigningKey(t, d, kind, kind)
	signer, c, err := verity.LoadSigningKey(context.Background(), key, cert)
	if err != nil {
		t.Fatal(err)
	}
	sig, js = filepath.Join(d, "root.p7s"), filepath.Join(d, "root.json")
	res, err := verity.Format(context.Background(), data, data+".verity", &verity.FormatOptions{
		Sign: &verity.RootHashSigning{Signer: signer, Certificate: c, SignatureFile: sig, JSONFile: js}})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(res.RootHash), key, cert, sig, js
}

// opensslSign signs content with `openssl TOOL -sign` (tool and extra
// flags in args) into out.
func opensslSign(t *testing.T, d, key, cert, content, out string, args ...string) {
	t.Helper()
	full := append([]string{args[0], "-sign", "-binary", "-outform", "der", "-signer", cert, "-inkey", key, "-out", out}, args[1:]...)
	cmd := exec.Command(testtool.Require(t, "openssl"), full...)
	cmd.Dir, cmd.Stdin = d, strings.NewReader(content)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
}

func TestCheckSignature(t *testing.T) {
	d := t.TempDir()
	root, key, cert, sig, js := signedTree(t, d, "ec256")
	data := filepath.Join(d, "d.img")
	_, otherCert := testtool.WriteSigningKey(t, d, "other", "rsa2048")

	if r := vcRun("--root-hash="+root, "--root-hash-signature="+sig, "--sign-cert="+cert, data); r.code != 0 || !strings.Contains(r.stdout, "\nverified: ") {
		t.Fatalf("%v", r)
	}
	// The JSON brings the root hash itself.
	r := vcRun("--root-hash-signature="+js, "--sign-cert="+otherCert, "--sign-cert="+cert, data)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "signature: root hash "+root+" signed by CN=ec256,O=veritytree tests (certificate sha256 ") {
		t.Fatalf("%v", r)
	}
	r = vcRun("--json", "--root-hash-signature="+js, "--sign-cert="+cert, data)
	var rep struct {
		Verified bool `json:"verified"`
		Sig      struct {
			Format, Signer, Digest string
			TrustedBy              string `json:"trusted_by"`
		} `json:"root_hash_signature"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.Verified || rep.Sig.Format != "systemd-json" || rep.Sig.Digest != "sha256" || rep.Sig.TrustedBy != "CN=ec256,O=veritytree tests" {
		t.Fatalf("%+v %v\n%v", rep, err, r)
	}

	other := strings.Repeat("0", len(root))
	opensslDir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string // the signature file is made by openssl with these if name starts with "openssl"
		sig  string
		code int
		want []string
	}{
		{"untrusted", []string{"--root-hash=" + root, "--root-hash-signature=" + sig, "--sign-cert=" + otherCert}, "", 1, []string{"the root hash signature is not trusted", "hint: give the certificate the kernel's keyring holds"}},
		{"another root hash", []string{"--root-hash=" + other, "--root-hash-signature=" + sig, "--sign-cert=" + cert}, "", 1, []string{"the root hash signature does not verify"}},
		{"JSON of another root hash", []string{"--root-hash=" + other, "--root-hash-signature=" + js, "--sign-cert=" + cert}, "", 1, []string{"the signature JSON is for root hash " + root + ", not " + other}},
		{"no trusted certificate", []string{"--root-hash=" + root, "--root-hash-signature=" + sig}, "", 2, []string{"needs --sign-cert: a signature checked against the certificate it carries itself proves nothing"}},
		{"certificate without signature", []string{"--root-hash=" + root, "--sign-cert=" + cert}, "", 2, []string{"--sign-cert needs --root-hash-signature"}},
		{"a DER signature and no root hash", []string{"--root-hash-signature=" + sig, "--sign-cert=" + cert}, "", 2, []string{"no root hash", "a DER signature holds no root hash"}},
		{"the key as certificate", []string{"--root-hash=" + root, "--root-hash-signature=" + sig, "--sign-cert=" + key}, "", 2, []string{"--sign-cert " + key + ": no certificate in it", "is it the key"}},
		{"the image as signature", []string{"--root-hash=" + root, "--root-hash-signature=" + data, "--sign-cert=" + cert}, "", 2, []string{"neither DER PKCS#7 nor systemd's signature JSON"}},
		{"with --avb", []string{"--avb", "--root-hash-signature=" + sig, "--sign-cert=" + cert}, "", 2, []string{"--root-hash-signature does not go with the AVB check"}},
		{"openssl: printf | smime -sign -nocerts -noattr", []string{"smime", "-nocerts", "-noattr"}, root, 0, nil},
		{"openssl: smime -sign -noattr, certificate carried", []string{"smime", "-noattr"}, root, 0, nil},
		{"openssl: cms -sign -nocerts -noattr -keyid", []string{"cms", "-nocerts", "-noattr", "-keyid"}, root, 0, nil},
		{"openssl: cms -sign -nosmimecap (signed attributes)", []string{"cms", "-nocerts", "-nosmimecap"}, root, 0, nil},
		{"openssl: echo | smime -sign (a newline)", []string{"smime", "-nocerts", "-noattr"}, root + "\n", 1, []string{"does not verify", "hint: it signs the root hash followed by a newline \\(as echo writes it\\)"}},
		{"openssl: smime -sign with attributes (S/MIME capabilities)", []string{"smime", "-nocerts"}, root, 1, []string{"S/MIME capabilities signed attribute, which the kernel refuses"}},
		{"openssl: upper case hex", []string{"smime", "-nocerts", "-noattr"}, strings.ToUpper(root), 1, []string{"it signs the root hash in upper case hex"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if strings.HasPrefix(c.name, "openssl") {
				out := filepath.Join(opensslDir, "sig.der")
				opensslSign(t, d, key, cert, c.sig, out, c.args...)
				args = []string{"--root-hash=" + root, "--root-hash-signature=" + out, "--sign-cert=" + cert}
			}
			r := vcRun(append(args, data)...)
			t.Logf("%v", r)
			if r.code != c.code {
				t.Errorf("exit %d, want %d", r.code, c.code)
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(r.stderr) {
					t.Errorf("stderr does not match %q", w)
				}
			}
			if c.code == 1 && strings.Contains(r.stdout, "verified") {
				t.Error("the tree was checked after the signature failed")
			}
		})
	}
}

// TestCheckSignatureJSONOnFailure: with --json a signature that does not
// verify is still a JSON object on stdout.
func TestCheckSignatureJSONOnFailure(t *testing.T) {
	d := t.TempDir()
	root, _, _, sig, _ := signedTree(t, d, "ec256")
	_, otherCert := testtool.WriteSigningKey(t, d, "other", "ec384")
	r := vcRun("--json", "--root-hash="+root, "--root-hash-signature="+sig, "--sign-cert="+otherCert, filepath.Join(d, "d.img"))
	var v struct{ Error, Hint string }
	if r.code != 1 || json.Unmarshal(bytes.TrimSpace([]byte(r.stdout)), &v) != nil || !strings.Contains(v.Error, "not trusted") {
		t.Fatalf("%v", r)
	}
	if _, err := os.Stat(sig); err != nil {
		t.Fatal(err)
	}
}
