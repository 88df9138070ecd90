package avb

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCase runs a vector case's add_hashtree_footer and returns the
// directory and image path.
func runCase(t *testing.T, name string) (dir, image string, o *HashtreeFooterOptions) {
	t.Helper()
	for _, c := range loadCases(t) {
		if c.name != name {
			continue
		}
		dir = setupCase(t, c)
		image, o, _, _, _ = avbtoolArgs(t, dir, c.args)
		if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
			t.Fatal(err)
		}
		return dir, image, o
	}
	t.Fatalf("no case %s", name)
	return
}

func TestInfoImageVectors(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(vectorDir, "info", "*.txt"))
	if len(files) != 50 {
		t.Fatalf("%d info files, want 50", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			_, image, o := runCase(t, name)
			path := image
			if o.DoNotAppendVBMeta {
				path = o.OutputVBMeta
			}
			img, err := ReadImage(path)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := img.WriteInfo(&b); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(f)
			if b.String() != string(want) {
				t.Fatalf("info differs:\n%s\navbtool:\n%s", b.String(), want)
			}
			if err := img.VBMeta.Verify(); err != nil {
				t.Fatalf("our own blob does not verify: %v", err)
			}
		})
	}
}

func TestCalculateKernelCmdlineVectors(t *testing.T) {
	for _, name := range []string{"rootfs", "rootfs-camo-sha1", "rootfs-psize", "kernel-cmdline"} {
		t.Run(name, func(t *testing.T) {
			_, image, _ := runCase(t, name)
			for _, disabled := range []bool{false, true} {
				file := name + ".txt"
				if disabled {
					file = name + ".hashtree_disabled.txt"
				}
				want, _ := os.ReadFile(filepath.Join(vectorDir, "cmdline", file))
				got, err := CalculateKernelCmdline(context.Background(), image, disabled)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Fatalf("%s:\n%q\navbtool:\n%q", file, got, want)
				}
			}
		})
	}
}

func TestEraseFooterVectors(t *testing.T) {
	for _, r := range readTSV(t, "erase_footer.tsv") {
		var args []string
		json.Unmarshal([]byte(r[1]), &args)
		keep := len(args) == 4
		t.Run(r[0]+"/keep="+strconv.FormatBool(keep), func(t *testing.T) {
			_, image, _ := runCase(t, r[0])
			if err := EraseFooter(image, keep); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(image)
			if strconv.Itoa(len(got)) != r[2] || sha256Hex(got) != r[3] {
				t.Fatalf("%d bytes %s; avbtool %s bytes %s", len(got), sha256Hex(got), r[2], r[3])
			}
		})
	}
}

func TestMaxImageSizeVectors(t *testing.T) {
	rows := readTSV(t, "calc_max_image_size.tsv")
	if len(rows) < 160 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		ps, _ := strconv.ParseUint(r[0], 10, 64)
		bs, _ := strconv.Atoi(r[2])
		roots, _ := strconv.Atoi(r[3])
		o := &HashtreeFooterOptions{PartitionSize: ps, HashAlgorithm: r[1], BlockSize: bs, FEC: roots > 0, FECRoots: roots, NoHashtree: r[4] == "yes"}
		got, err := MaxImageSize(o)
		if err != nil {
			t.Fatalf("%v: %v", r[:5], err)
		}
		if strconv.FormatInt(got, 10) != r[6] {
			t.Errorf("%v: %d, avbtool %s", r[:5], got, r[6])
		}
	}
}

func TestPublicKeyVectors(t *testing.T) {
	for _, r := range readTSV(t, "keys.tsv") {
		t.Run(r[0], func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(vectorDir, r[4]))
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{r[0], r[3]} { // private and public PEM
				pub, err := LoadPublicKey(context.Background(), filepath.Join(vectorDir, path))
				if err != nil {
					t.Fatal(err)
				}
				blob, err := EncodePublicKey(pub)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(blob, want) {
					t.Fatalf("%s: blob differs from avbtool's extract_public_key", path)
				}
				if s := sha1.Sum(blob); hex.EncodeToString(s[:]) != r[5] {
					t.Fatalf("sha1 %x, want %s", s, r[5])
				}
				back, err := DecodePublicKey(blob)
				if err != nil || back.N.Cmp(pub.N) != 0 || back.E != 65537 {
					t.Fatalf("decode: %v", err)
				}
			}
		})
	}
}

// The signatures Go makes are avbtool's: RSA over its padding table (00 01
// FF.. 00 DigestInfo) and the digest.
func TestSignatureIsAvbtoolPadding(t *testing.T) {
	key, err := LoadPrivateKey(context.Background(), filepath.Join(vectorDir, "keys/rsa4096.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"SHA256_RSA4096", "SHA512_RSA4096"} {
		blob, err := MakeVBMeta(&VBMetaOptions{Algorithm: name, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		v, err := ParseVBMeta(blob)
		if err != nil {
			t.Fatal(err)
		}
		em := new(big.Int).Exp(new(big.Int).SetBytes(v.Signature), big.NewInt(65537), key.N).FillBytes(make([]byte, 512))
		want := append(v.Algorithm.padding(), v.Hash...)
		if !bytes.Equal(em, want) {
			t.Fatalf("%s: the signed message is not avbtool's padding and digest", name)
		}
		if err := v.Verify(); err != nil {
			t.Fatal(err)
		}
		// One bit off anywhere in the signed bytes: ErrSignature.
		bad := append([]byte{}, blob...)
		bad[len(bad)-1] ^= 1
		vb, _ := ParseVBMeta(bad)
		if err := vb.Verify(); err == nil {
			t.Fatal("a changed blob verifies")
		}
	}
}

func TestExtractPublicKeyPKCS8(t *testing.T) {
	got, err := ExtractPublicKey(context.Background(), filepath.Join(vectorDir, "keys/rsa8192.pem"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(vectorDir, "keys/rsa8192.avbpubkey"))
	if !bytes.Equal(got, want) {
		t.Fatal("blob differs")
	}
}

// TestInfoReleaseStringAfterNUL: avbtool's info_image prints the release
// string field (47 bytes) with only its trailing NULs cut
// (release_string.rstrip(b'\0')): a byte after a NUL is printed, the NULs
// before it too (seed 1 case 75 of tests/peer: byte 154 set to 0x1a).
func TestInfoReleaseStringAfterNUL(t *testing.T) {
	for _, c := range []struct {
		name string
		at   int
		b    byte
		want string
	}{
		{"byte after the NULs", 154, 0x1a, "avbtool 1.3.0" + strings.Repeat("\x00", 154-128-13) + "\x1a"},
		{"the field's last byte", 128 + 46, 'x', "avbtool 1.3.0" + strings.Repeat("\x00", 46-13) + "x"},
		{"the string's end moved", 128 + 13, 'y', "avbtool 1.3.0y"},
		{"the reserved NUL after the field", 128 + 47, 'z', "avbtool 1.3.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := testBlob(nil)
			b[c.at] = c.b
			v, err := ParseVBMeta(b)
			if err != nil {
				t.Fatal(err)
			}
			var info bytes.Buffer
			if err := (&Image{VBMeta: v}).WriteInfo(&info); err != nil {
				t.Fatal(err)
			}
			want := "Release String:           '" + c.want + "'\n"
			if !strings.Contains(info.String(), want) {
				t.Fatalf("info:\n%q\nwant the line %q", info.String(), want)
			}
		})
	}
}
