package veritygen

import (
	"bytes"
	"context"
	"encoding/hex"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/verity"
)

// goInternals are texts of Go's packages and runtime that must never reach
// the user: each error gets a sentence of ours.
var goInternals = []string{"asn1:", "x509:", "pkcs1", "pkcs8", "encoding/hex", "strconv.", "readat", "unexpected EOF",
	"invalid byte: U+", "odd length hex", "*rsa.", "*ecdsa.", "panic", "goroutine"}

// TestMessagesInOurWords: each case of the trust issue's item 13 that
// reaches veritygen or its fronts, through the command: the message says
// what is wrong in our words, with the right numbers (a size given once,
// as given; no hint that is refused in turn), and no Go-internal text;
// nothing is written.
func TestMessagesInOurWords(t *testing.T) {
	t.Chdir(t.TempDir())
	for name, typ := range map[string]string{"k1.pem": "RSA PRIVATE KEY", "k8.pem": "PRIVATE KEY", "pub.pem": "PUBLIC KEY", "rpub.pem": "RSA PUBLIC KEY"} {
		if err := os.WriteFile(name, []byte("-----BEGIN "+typ+"-----\nZ2FyYmFnZQ==\n-----END "+typ+"-----\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fronttest.Image(t, "x.img", 1<<20, 21)
	const sign = "--algorithm=SHA256_RSA2048"
	for _, c := range []struct {
		name   string
		front  string // "avbtool", or "" for veritygen
		args   []string
		code   int
		stderr string // the first line, after "PROG: error: "
		hint   string // the hint's line, "" for none
	}{
		{"garbage PKCS#1 key", "avbtool", []string{"add_hashtree_footer", "--image=x.img", sign, "--key=k1.pem"}, 1,
			`key k1.pem: its "RSA PRIVATE KEY" block does not hold a valid PKCS#1 RSA private key`, "give an RSA private key in PEM, e.g. made by openssl genrsa -out key.pem 4096"},
		{"garbage PKCS#8 key", "avbtool", []string{"add_hashtree_footer", "--image=x.img", sign, "--key=k8.pem"}, 1,
			`key k8.pem: its "PRIVATE KEY" block does not hold a valid PKCS#8 private key`, "give an RSA private key in PEM, e.g. made by openssl genrsa -out key.pem 4096"},
		{"garbage key, native", "", []string{"--append", "--avb", "--avb-algorithm=SHA256_RSA2048", "--avb-key=k1.pem", "x.img"}, 2,
			`key k1.pem: its "RSA PRIVATE KEY" block does not hold a valid PKCS#1 RSA private key`, "give an RSA private key in PEM, e.g. made by openssl genrsa -out key.pem 4096"},
		{"garbage public key", "avbtool", []string{"extract_public_key", "--key=pub.pem", "--output=o.bin"}, 1,
			`key pub.pem: its "PUBLIC KEY" block does not hold a valid public key (SubjectPublicKeyInfo)`, "give an RSA key in PEM, public (openssl rsa -pubout) or private"},
		{"garbage PKCS#1 public key", "avbtool", []string{"extract_public_key", "--key=rpub.pem", "--output=o.bin"}, 1,
			`key rpub.pem: its "RSA PUBLIC KEY" block does not hold a valid PKCS#1 RSA public key`, "give an RSA key in PEM, public (openssl rsa -pubout) or private"},
		{"--salt of odd length", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--salt=abc"}, 1,
			`Adding hashtree_footer failed: --salt "abc" has an odd number of hex digits.`, ""},
		{"--salt not hex", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--salt=zz"}, 1,
			`Adding hashtree_footer failed: --salt "zz" is not hexadecimal: bad character 'z'.`, ""},
		{"--block_size 2^32", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--block_size=4294967296", "--do_not_generate_fec"}, 1,
			"block size 4294967296: must be a power of two from 512 to 524288", "e.g. --block_size 4096"},
		{"--block_size 2^32, with FEC", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--block_size=4294967296"}, 1,
			"block size 4294967296: must be a power of two from 512 to 524288", "e.g. --block_size 4096"},
		{"--block_size 2^40, max size", "avbtool", []string{"add_hashtree_footer", "--calc_max_image_size", "--partition_size=1048576", "--block_size=1099511627776"}, 1,
			"block size 1099511627776: must be a power of two from 512 to 524288", "e.g. --block_size 4096"},
		{"--block_size 3000", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--block_size=3000", "--do_not_generate_fec"}, 1,
			"block size 3000: must be a power of two from 512 to 524288", "e.g. 4096"},
		{"--data-block-size 2^32, native", "", []string{"--append", "--avb", "--data-block-size=4294967296", "x.img"}, 2,
			"block size 4294967296: must be a power of two from 512 to 524288", "e.g. 4096"},
		{"--fec_num_roots 2^32", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--fec_num_roots=4294967296"}, 1,
			"FEC roots 4294967296: a Reed-Solomon codeword has 255 bytes", "2 (the default) to 24"},
		{"a partition too small for any image", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--partition_size=4096"}, 1,
			"a partition size of 4096 leaves no room for any image: the tree, FEC and metadata reserved for it take 81920 bytes or more", "give a larger partition size"},
		{"a partition too small for this image", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--partition_size=1048576"}, 1,
			"image size of 1048576 exceeds maximum image size of 946176 in order to fit in a partition size of 1048576", "a partition of 1048576 bytes takes an image of at most 946176 bytes"},
		// The hint once suggested 2^63, which was then refused as too large.
		{"partition size 2^63-1", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--partition_size=9223372036854775807"}, 1,
			"partition size 9223372036854775807 is too large", "at most 4611686018427387904 (2^62)"},
		{"partition size 2^64-1", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--partition_size=18446744073709551615"}, 1,
			"partition size 18446744073709551615 is too large", "at most 4611686018427387904 (2^62)"},
		{"partition size 2^62-1", "avbtool", []string{"add_hashtree_footer", "--image=x.img", "--partition_size=4611686018427387903"}, 1,
			"partition size of 4611686018427387903 is not a multiple of the image block size 4096", "round it up: 4611686018427387904"},
		// pflag says "must be an integer" of one too large for its flag.
		{"--data-block-size past 2^64", "", []string{"--data-block-size=99999999999999999999", "x.img"}, 2,
			"--data-block-size 99999999999999999999 is out of range", "see veritygen --help"},
		{"--data-block-size not a number", "", []string{"--data-block-size=4k", "x.img"}, 2,
			`invalid argument "4k" for "--data-block-size" flag: must be an integer`, "see veritygen --help"},
		// A negative count is not "out of range": pflag's words say what it must be.
		{"--data-blocks negative", "", []string{"--data-blocks=-1", "x.img"}, 2,
			`invalid argument "-1" for "--data-blocks" flag: must be a non-negative integer`, "see veritygen --help"},
		{"--data-blocks past 2^64", "", []string{"--data-blocks=0x1ffffffffffffffff", "x.img"}, 2,
			"--data-blocks 0x1ffffffffffffffff is out of range", "see veritygen --help"},
		{"partition size 2^63-1, native", "", []string{"--append", "--avb", "--partition-size=9223372036854775807", "x.img"}, 2,
			"partition size 9223372036854775807 is too large", "at most 4611686018427387904 (2^62)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := fronttest.Listing(t, ".")
			var stdout, stderr bytes.Buffer
			prog := "veritygen"
			var code int
			if c.front == "avbtool" {
				prog = "avbtool"
				code = avbtool.Main(context.Background(), prog, c.args, &stdout, &stderr)
			} else {
				code = run(context.Background(), c.args, &stdout, &stderr, &stderr)
			}
			want := prog + ": error: " + c.stderr + "\n"
			if c.hint != "" {
				want += prog + ": hint: " + c.hint + "\n"
			}
			if code != c.code || stderr.String() != want {
				t.Errorf("%s %q: exit %d, stderr:\n%s\nwant exit %d and\n%s", prog, c.args, code, stderr.String(), c.code, want)
			}
			for _, bad := range append(goInternals, "9223372036854775808", "round it up: 0") {
				if strings.Contains(stderr.String(), bad) {
					t.Errorf("%q on stderr", bad)
				}
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, "."))
		})
	}
}

// fullStdout fails every write as a full disk does through os.Stdout.
type fullStdout struct{}

func (fullStdout) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
}

// TestReportWriteFails: a report that cannot be written (stdout full, a
// closed pipe) fails the run (exit 2) with the root hash in the message,
// in our words: the tree is written, and the report may be the only place
// its root hash was going to. Before, the text report's failure was
// ignored (exit 0, the root hash lost) and --json's said "write
// /dev/stdout: ...".
func TestReportWriteFails(t *testing.T) {
	t.Chdir(t.TempDir())
	fronttest.Image(t, "d.img", 1<<20, 22)
	fronttest.Image(t, "a.img", 1<<20, 22)
	for _, args := range [][]string{{"d.img"}, {"--json", "d.img"}, {"--append", "--avb", "a.img"}, {"--append", "--avb", "--json", "a.img"}} {
		var stderr bytes.Buffer
		code := run(context.Background(), args, fullStdout{}, &stderr, &stderr)
		root, hash := "", "d.img.verity"
		if args[0] == "--append" {
			hash = "a.img"
		}
		if m := regexp.MustCompile(`root hash ([0-9a-f]{64});`).FindStringSubmatch(stderr.String()); m != nil {
			root = m[1]
		}
		want := "veritygen: error: the new tree is in " + hash + ", root hash " + root + "; writing the report on stdout: no space left on device\n"
		if code != 2 || root == "" || stderr.String() != want {
			t.Errorf("veritygen %q: exit %d, stderr %q; want exit 2 and %q", args, code, stderr.String(), want)
			continue
		}
		if hash == "d.img.verity" { // the root hash given is the tree's
			b, _ := hex.DecodeString(root)
			res, err := verity.Verify(context.Background(), "d.img", hash, b, nil)
			if err != nil || !res.Verified {
				t.Errorf("the root hash in the message does not verify the tree: %v", err)
			} else {
				res.Close()
			}
		}
	}
}
