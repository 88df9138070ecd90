package avbtool

// Exit codes of refusals that no recorded avbtool case covers (avbtool
// died of a Python exception there, or the case needs no image of the
// vectors): argparse's errors exit 2, avbtool's own failures 1, and a
// refused run changes no file.

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

func TestAvbtoolFrontExitCodes(t *testing.T) {
	hf := []string{"add_hash_footer", "--image", "d.img", "--partition_size", "131072"}
	ht := []string{"add_hashtree_footer", "--image", "d.img", "--partition_size", "262144", "--partition_name", "system"}
	mv := []string{"make_vbmeta_image", "--output", "o.img"}
	cases := []struct {
		name string
		args []string
		code int
		// stderr holds this.
		says string
	}{
		// avbtool: ZeroDivisionError; the library's 0 would be 4096.
		{"block-size-0", append(ht, "--do_not_generate_fec", "--block_size", "0"), exitFailed, "block size 0"},
		// avbtool hands 0 to fec, which refuses it; the library's 0 would be 2.
		{"fec-roots-0", append(ht, "--fec_num_roots", "0"), exitFailed, "FEC roots 0"},
		// avbtool: 'NoneType' object has no attribute 'encode', image as it was.
		{"hash-footer-no-name", hf, exitFailed, "Adding hash_footer failed: --partition_name is required."},
		{"hash-footer-empty-name", append(hf, "--partition_name", ""), exitOK, ""},
		// Python reads them; avbtool fails packing them (struct.error).
		{"rollback-index-negative", append(mv, "--rollback_index", "-1"), exitFailed, "--rollback_index -1: a number from 0 to"},
		{"rollback-index-2^64", append(mv, "--rollback_index", "18446744073709551616"), exitFailed, "a number from 0 to"},
		{"location-negative", append(mv, "--rollback_index_location", "-1"), exitFailed, "a number from 0 to"},
		// argparse's usage errors come first.
		{"negative-then-unknown", append(mv, "--rollback_index", "-1", "--nope"), exitUsage, "unrecognized arguments: --nope"},
		// argparse takes these for options, not values.
		{"value-like-option-hex", append(mv, "--rollback_index", "-0x10"), exitUsage, "argument --rollback_index: expected one argument"},
		{"value-like-option-double-dash", append(mv, "--rollback_index", "--5"), exitUsage, "argument --rollback_index: expected one argument"},
		{"value-like-option-string", append(mv, "--prop", "-x"), exitUsage, "argument --prop: expected one argument"},
		{"value-with-space", append(mv, "--kernel_cmdline", "-x y"), exitOK, ""},
		{"value-dash", append(mv, "--kernel_cmdline", "-"), exitOK, ""},
		{"value-negative-fraction", append(mv, "--rollback_index", "-.5"), exitUsage, "invalid parse_number value: '-.5'"},
		// libavb verifies exponent 65537 only (avbtool signs with 3):
		// refused as such, not as a key of the wrong size.
		{"key-exponent-3", append(mv, "--algorithm", "SHA256_RSA2048", "--key", "key3.pub.pem"), exitFailed, "RSA public exponent 3"},
		// avbtool's message for a file with no vbmeta where it looks,
		// whichever subcommand reads it.
		{"verify-raw", []string{"verify_image", "--image", "d.img"}, exitFailed, "avbtool: Given image does not look like a vbmeta image.\n"},
		{"info-raw", []string{"info_image", "--image", "d.img"}, exitFailed, "avbtool: Given image does not look like a vbmeta image.\n"},
		{"include-raw", append(mv, "--include_descriptors_from_image", "d.img"), exitFailed, "avbtool: Given image does not look like a vbmeta image.\n"},
		{"append-raw-vbmeta", []string{"append_vbmeta_image", "--image", "d.img", "--partition_size", "131072", "--vbmeta_image", "d.img"},
			exitFailed, "avbtool: Appending VBMeta image failed: Given image does not look like a vbmeta image..\n"},
		{"verify-chain-malformed", []string{"verify_image", "--image", "d.img", "--expected_chain_partition", "boot:1"},
			exitFailed, "avbtool: Malformed chained partition \"boot:1\".\n"},
	}
	key3 := exponent3Key(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if err := os.WriteFile("key3.pub.pem", key3, 0o644); err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte{0x5a}, 5*4096)
			if err := os.WriteFile("d.img", data, 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), "avbtool", c.args, &stdout, &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.says) {
				t.Fatalf("exit %d, stderr %q; want %d and a line with %q", code, stderr.String(), c.code, c.says)
			}
			switch {
			case code == exitUsage && !strings.HasPrefix(stderr.String(), "usage: avbtool"):
				t.Errorf("no usage before argparse's error: %q", stderr.String())
			case code == exitFailed && !strings.HasPrefix(stderr.String(), "avbtool: "):
				t.Errorf("not avbtool's argv0: message line: %q", stderr.String())
			}
			if code == exitOK {
				return
			}
			if b, err := os.ReadFile("d.img"); err != nil || !bytes.Equal(b, data) {
				t.Errorf("d.img changed (%v)", err)
			}
			if _, err := os.Stat("o.img"); err == nil {
				t.Errorf("o.img was made")
			}
		})
	}
}

// exponent3Key is the vectors' 2048-bit public key with exponent 3, in
// PEM: what an RSA key made with openssl genrsa -3 holds.
func exponent3Key(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join(fronttest.AVBVectors, "keys", "rsa2048.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("rsa2048.pub.pem: no PEM block")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub := *k.(*rsa.PublicKey)
	pub.E = 3
	der, err := x509.MarshalPKIXPublicKey(&pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestAvbtoolFrontNoHashtree: an image with a hash footer only, where a
// hashtree descriptor is needed, is refused in avbtool's words, exit 1,
// nothing changed.
func TestAvbtoolFrontNoHashtree(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("boot.img", bytes.Repeat([]byte{0x5a}, 5*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := Main(context.Background(), "avbtool", []string{"add_hash_footer", "--image", "boot.img", "--partition_size", "131072",
		"--partition_name", "boot", "--salt", "00"}, &out, &out); code != exitOK {
		t.Fatalf("add_hash_footer: exit %d: %s", code, out.String())
	}
	before, err := os.ReadFile("boot.img")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"erase_footer", "--image", "boot.img", "--keep_hashtree"}, "avbtool: Requested to keep hashtree but no hashtree descriptor was found.\n"},
		{[]string{"make_vbmeta_image", "--output", "o.img", "--setup_rootfs_from_kernel", "boot.img"}, "avbtool: No hashtree descriptor in given image\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), "avbtool", c.args, &stdout, &stderr); code != exitFailed || stderr.String() != c.want {
			t.Errorf("%s: exit %d, stderr %q; want 1, %q", c.args[0], code, stderr.String(), c.want)
		}
		if b, err := os.ReadFile("boot.img"); err != nil || !bytes.Equal(b, before) {
			t.Errorf("%s: boot.img changed (%v)", c.args[0], err)
		}
		if _, err := os.Stat("o.img"); err == nil {
			t.Errorf("%s: o.img was made", c.args[0])
		}
	}
}
