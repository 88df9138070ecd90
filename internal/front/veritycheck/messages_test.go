package veritycheck

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
)

// goInternals are texts of Go's packages and runtime that must never reach
// the user: each error gets a sentence of ours.
var goInternals = []string{"asn1:", "x509:", "pkcs1", "pkcs8", "encoding/hex", "strconv.", "readat", "unexpected EOF",
	"invalid byte: U+", "odd length hex", "*rsa.", "*ecdsa.", "panic", "goroutine"}

// noGoInternals fails the test for any Go-internal text in s.
func noGoInternals(t *testing.T, s string) {
	t.Helper()
	for _, bad := range goInternals {
		if strings.Contains(s, bad) {
			t.Errorf("Go's own text %q reaches the user:\n%s", bad, s)
		}
	}
}

// patchHashtree returns an unsigned AVB image whose hashtree descriptor
// has the 32-bit field at off (from its dm-verity version field: 28 the
// data block size, 32 the hash block size, 36 the FEC roots) or the 64-bit
// image size (off 4) set to v.
func patchHashtree(t *testing.T, off int, v uint64) string {
	t.Helper()
	m := avbMake(t, 64, true, func(o *avb.HashtreeFooterOptions) { o.Algorithm, o.Key = "NONE", nil })
	b := bytes.Clone(m.orig)
	ht := m.res.Descriptor
	// The descriptor's fixed fields from dm_verity_version: 1, image size,
	// tree offset.
	pat := binary.BigEndian.AppendUint32(nil, 1)
	pat = binary.BigEndian.AppendUint64(pat, ht.ImageSize)
	pat = binary.BigEndian.AppendUint64(pat, ht.TreeOffset)
	at := bytes.LastIndex(b, pat)
	if at < 0 {
		t.Fatal("no hashtree descriptor found")
	}
	if off == 4 {
		binary.BigEndian.PutUint64(b[at+off:], v)
	} else {
		binary.BigEndian.PutUint32(b[at+off:], uint32(v))
	}
	vcWrite(t, m.path, b)
	return m.path
}

// TestMessagesInOurWords: each case of the trust issue's item 13 that
// reaches veritycheck, through the command: the message says what is wrong
// in our words, with the right numbers, and no Go-internal text.
func TestMessagesInOurWords(t *testing.T) {
	dir := t.TempDir()
	pem := func(name, typ string) string {
		p := filepath.Join(dir, name)
		vcWrite(t, p, []byte("-----BEGIN "+typ+"-----\nZ2FyYmFnZQ==\n-----END "+typ+"-----\n"))
		return p
	}
	empty := filepath.Join(dir, "empty.img")
	vcWrite(t, empty, nil)
	img := avbMake(t, 64, true, nil).path
	roots255 := patchHashtree(t, 36, 255)
	for _, c := range []struct {
		name string
		args []string
		want string // the whole first line
	}{
		{"garbage PKCS#1 key", []string{"--avb-key=" + pem("k1.pem", "RSA PRIVATE KEY"), img},
			`--avb-key ` + dir + `/k1.pem: its "RSA PRIVATE KEY" block does not hold a valid PKCS#1 RSA private key`},
		{"garbage PKCS#8 key", []string{"--avb-key=" + pem("k8.pem", "PRIVATE KEY"), img},
			`--avb-key ` + dir + `/k8.pem: its "PRIVATE KEY" block does not hold a valid PKCS#8 private key`},
		{"garbage public key", []string{"--avb-key=" + pem("pub.pem", "PUBLIC KEY"), img},
			`--avb-key ` + dir + `/pub.pem: its "PUBLIC KEY" block does not hold a valid public key (SubjectPublicKeyInfo)`},
		{"garbage PKCS#1 public key", []string{"--avb-key=" + pem("rpub.pem", "RSA PUBLIC KEY"), img},
			`--avb-key ` + dir + `/rpub.pem: its "RSA PUBLIC KEY" block does not hold a valid PKCS#1 RSA public key`},
		{"--avb-key missing", []string{"--avb-key=" + dir + "/none.pem", img}, "--avb-key " + dir + "/none.pem does not exist"},
		{"--avb-key a directory", []string{"--avb-key=" + dir, img}, "--avb-key " + dir + ": is a directory, not a file"},
		// A property of the image is an error about the image, not a flag.
		{"FEC roots 255 in the descriptor", []string{roots255},
			roots255 + ": malformed AVB data: hashtree descriptor: FEC with 255 roots, where dm-verity takes 2 to 24"},
		{"FEC roots 1 in the descriptor", []string{patchHashtree(t, 36, 1)}, "hashtree descriptor: FEC with 1 roots, where dm-verity takes 2 to 24"},
		// 4194404 fits before the vbmeta; it is not a whole number of blocks.
		{"image size not a multiple", []string{patchHashtree(t, 4, 4194404)}, "hashtree descriptor: an image size of 4194404 bytes, not a multiple of its block size 4096"},
		{"image size 0", []string{patchHashtree(t, 4, 0)}, "hashtree descriptor: an image size of 0 bytes: there is no data for a tree"},
		{"image size too large", []string{patchHashtree(t, 4, 1<<40)}, "hashtree descriptor: an image size of 1099511627776 bytes, more than the 274432 bytes before the vbmeta"},
		{"block size 3000", []string{patchHashtree(t, 28, 3000)}, "hashtree descriptor: data block size 3000: must be a power of two from 512 to 524288"},
		{"--avb on an empty file", []string{"--avb", empty}, empty + ": the file is empty: no AVB footer, no vbmeta blob"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := vcRun(c.args...)
			first, _, _ := strings.Cut(r.stderr, "\n")
			if r.code != 2 || !strings.HasSuffix(first, c.want) {
				t.Errorf("want exit 2 and a line ending in %q:\n%v", c.want, r)
			}
			if strings.Contains(r.stderr, "--fec-roots") {
				t.Errorf("a flag nobody gave is named:\n%v", r)
			}
			noGoInternals(t, r.stderr)
		})
	}
}
