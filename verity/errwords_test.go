package verity

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/pkcs7"
	"github.com/veritytree/veritytree/internal/testtool"
)

// The errors about the FEC options speak Go: they name the option by its
// field (Field, and FormatOptions.X in the text), say in Requires what it
// needs, and name no flag (--x) and no command: the command lines spell
// them (internal/cli.Flags).
func TestFECErrorsSpeakGo(t *testing.T) {
	f := newFixture(t, 64, 4096, 2, 9)
	f.writeFiles(t)
	out := filepath.Join(f.dir, "out.verity")
	ctx := context.Background()
	for _, c := range []struct {
		name            string
		format          *FormatOptions
		verify          *VerifyOptions
		field, requires string
	}{
		{"format roots 30", &FormatOptions{FECDevice: out + ".fec", FECRoots: 30}, nil, "FECRoots", ""},
		{"format offset not a block", &FormatOptions{FECDevice: out + ".fec", FECOffset: 100}, nil, "FECOffset", ""},
		{"format offset without device", &FormatOptions{FECOffset: 4096}, nil, "FECOffset", "FECDevice"},
		{"format offset in the tree", &FormatOptions{FECDevice: out, FECOffset: 4096}, nil, "FECOffset", ""},
		{"format offset in the data", &FormatOptions{FECDevice: f.dataPath, FECOffset: 4096}, nil, "FECOffset", ""},
		{"format offset too large", &FormatOptions{FECDevice: out + ".fec", FECOffset: 1 << 63}, nil, "FECOffset", ""},
		{"format unequal blocks", &FormatOptions{FECDevice: out + ".fec", TreeOptions: TreeOptions{HashBlockSize: 1024}}, nil, "FECRoots", ""},
		{"format fec without append", &FormatOptions{AppendFEC: true}, nil, "AppendFEC", "Append"},
		{"verify roots 30", nil, &VerifyOptions{FECDevice: f.fecPath, FECRoots: 30}, "FECRoots", ""},
		{"verify offset not a block", nil, &VerifyOptions{FECDevice: f.fecPath, FECOffset: 100}, "FECOffset", ""},
		{"verify roots without device", nil, &VerifyOptions{FECRoots: 3}, "FECRoots", "FECDevice"},
		{"verify offset without device", nil, &VerifyOptions{FECOffset: 4096}, "FECOffset", "FECDevice"},
		{"verify repair without device", nil, &VerifyOptions{Repair: true}, "Repair", "FECDevice"},
		{"verify offset in the tree", nil, &VerifyOptions{FECDevice: f.hashPath}, "FECOffset", ""},
		{"verify offset too large", nil, &VerifyOptions{FECDevice: f.fecPath, FECOffset: 1<<64 - 4096}, "FECOffset", ""},
	} {
		var err error
		if c.format != nil {
			_, err = Format(ctx, f.dataPath, out, c.format)
		} else {
			_, err = Verify(ctx, f.dataPath, f.hashPath, f.root, c.verify)
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindParam || e.Field != c.field || e.Requires != c.requires {
			t.Errorf("%s: %v (%#v), want KindParam on %s requiring %q", c.name, err, e, c.field, c.requires)
			continue
		}
		// Unequal block sizes are about two options; FECRoots is what needs them equal.
		if !strings.Contains(e.Error(), "Options."+c.field) && c.name != "format unequal blocks" {
			t.Errorf("%s: %q does not name the option's field", c.name, e)
		}
		for _, s := range []string{e.Error(), hintOf(err)} {
			for _, bad := range []string{"--", "veritygen", "veritycheck", "veritysetup format"} {
				if strings.Contains(s, bad) {
					t.Errorf("%s: %q says %q", c.name, s, bad)
				}
			}
		}
	}
}

// flagSpelling is a command-line flag as a message would say it: --x.
var flagSpelling = regexp.MustCompile(`(^|[^-\w])--[a-z]`)

// speaksGo fails t if err's message or hint names a flag or a command:
// the library names options by their Go fields, the fronts say them as
// flags (internal/cli.Flags). want, some Go name the error must say in
// its message or hint, shows that the error is the one meant.
func speaksGo(t *testing.T, name string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	msg, hint := err.Error(), hintOf(err)
	if !strings.Contains(msg+"\n"+hint, want) {
		t.Errorf("%s: %q (hint %q) does not say %q", name, msg, hint, want)
	}
	for _, s := range []string{msg, hint} {
		if flagSpelling.MatchString(s) {
			t.Errorf("%s: %q names a flag", name, s)
		}
		for _, bad := range []string{"veritygen", "veritycheck"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s: %q says %q", name, s, bad)
			}
		}
	}
}

// The errors of the signature, overlap, superblock, table, diagnosis,
// activation and sparse code speak Go as the FEC ones do, driven through
// the API.
func TestErrorsSpeakGo(t *testing.T) {
	f := newFixture(t, 64, 4096, 2, 9)
	ctx := context.Background()
	dir := t.TempDir()
	format := func(data, hash string, o *FormatOptions) error {
		_, err := Format(ctx, data, hash, o)
		return err
	}
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		writeBytes(t, p, b)
		return p
	}
	out := filepath.Join(dir, "out.verity")

	// What Format refuses to write over.
	inData := file("in-data.img", randomBytes(64*4096, 1))
	err := format(inData, inData, &FormatOptions{TreeOptions: TreeOptions{HashOffset: 32 * 4096}, HashOffsetSet: true})
	speaksGo(t, "tree over the data", err, "holds data from TreeOptions.HashOffset")
	for _, h := range []string{"TreeOptions.DataBlocks=32", "TreeOptions.HashOffset=262144", "FormatOptions.Force"} {
		if !strings.Contains(hintOf(err), h) {
			t.Errorf("tree over the data: hint %q does not say %q", hintOf(err), h)
		}
	}
	speaksGo(t, "tree over the data without superblock", format(inData, inData,
		&FormatOptions{TreeOptions: TreeOptions{HashOffset: 32 * 4096, NoSuperblock: true, Salt: []byte{1}}, HashOffsetSet: true}), "with the TreeOptions.Salt")
	tail := file("tail.img", append(randomBytes(16*4096, 2), 1, 2, 3))
	speaksGo(t, "parity over the data", format(tail, out, &FormatOptions{FECDevice: tail, FECOffset: 16 * 4096}),
		"at or past FormatOptions.FECOffset 65536")
	small := file("small.img", randomBytes(16*4096, 3))
	kept := file("kept.fec", randomBytes(1<<20, 4))
	speaksGo(t, "parity over a kept FEC file", format(small, out, &FormatOptions{FECDevice: kept, FECOffset: 1<<20 - 8192}),
		"FormatOptions.FECDevice "+kept+" holds a non-zero byte")
	keptHash := file("kept.verity", randomBytes(1<<20, 5))
	speaksGo(t, "tree over a kept HASH", format(small, keptHash, &FormatOptions{TreeOptions: TreeOptions{HashOffset: 1<<20 - 4096, NoSuperblock: true, Salt: []byte{1}}}),
		"add FormatOptions.Force")

	// Superblocks.
	_, err = ReadSuperblock(f.hashPath, 100)
	speaksGo(t, "superblock offset", err, "TreeOptions.HashOffset 100")
	_, err = ReadSuperblock(file("nosb.verity", randomBytes(4096, 6)), 0)
	speaksGo(t, "no superblock", err, "add TreeOptions.NoSuperblock and its parameters (TreeOptions.Hash, TreeOptions.Salt, ...)")
	_, err = ReadSuperblock(f.hashPath, 1<<40)
	speaksGo(t, "superblock past the end", err, "add TreeOptions.NoSuperblock")
	_, err = Verify(ctx, f.dataPath, f.hashPath, f.root, &VerifyOptions{TreeOptions: TreeOptions{HashOffset: 100}})
	speaksGo(t, "verify offset", err, "TreeOptions.HashOffset 100")

	// The diagnosis of a tree checked with other parameters.
	for _, c := range []struct {
		name        string
		made, given TreeOptions
		want        string
	}{
		{"diagnosis", TreeOptions{Hash: "sha512", LegacyFormat: true, Salt: []byte{9}}, TreeOptions{Hash: "blake2b-512", Salt: []byte{9}},
			"TreeOptions.Hash=sha512 TreeOptions.LegacyFormat=true"},
		{"diagnosis of no salt", TreeOptions{Salt: []byte{}}, TreeOptions{Salt: []byte{9}}, "TreeOptions.Salt=[]byte{}"},
		{"no diagnosis", TreeOptions{Salt: []byte{1, 2}}, TreeOptions{Salt: []byte{9}}, "check TreeOptions.Hash, TreeOptions.Salt, TreeOptions.LegacyFormat"},
	} {
		ns := filepath.Join(t.TempDir(), "ns.verity")
		c.made.NoSuperblock, c.given.NoSuperblock = true, true
		fr, err := Format(ctx, f.dataPath, ns, &FormatOptions{TreeOptions: c.made})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Verify(ctx, f.dataPath, ns, fr.RootHash, &VerifyOptions{TreeOptions: c.given})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		d := res.RootDiagnosis
		res.Close()
		if d == nil {
			t.Errorf("%s: no diagnosis", c.name)
			continue
		}
		speaksGo(t, c.name, errors.New(strings.Join(d.Changed, " ")+"\n"+d.Hint), c.want)
	}

	// Boot parameters.
	for _, c := range []struct {
		name string
		o    TableOptions
		want string
	}{
		{"no data device", TableOptions{HashDevice: "/dev/b"}, "TableOptions.DataDevice=8:1"},
		{"a space in a device", TableOptions{DataDevice: "/dev/a b", HashDevice: "/dev/b"}, `TableOptions.DataDevice "/dev/a b"`},
		{"dm name", TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b", DMName: "a,b"}, "TableOptions.DMName=vroot"},
	} {
		_, err := Table(f.g, f.root, nil, &c.o)
		speaksGo(t, c.name, err, c.want)
	}

	// Signing and its files.
	key, cert := testtool.WriteSigningKey(t, dir, "a", "ec256")
	_, other := testtool.WriteSigningKey(t, dir, "b", "ec384")
	_, _, err = LoadSigningKey(ctx, key, other)
	speaksGo(t, "key of another certificate", err, "signing key "+key+" is not the key of certificate "+other)
	signer, c, err := LoadSigningKey(ctx, key, cert)
	if err != nil {
		t.Fatal(err)
	}
	sig := filepath.Join(dir, "root.p7s")
	for _, s := range []struct {
		name string
		sign *RootHashSigning
		root string
		want string
	}{
		{"no key", &RootHashSigning{SignatureFile: sig}, "", "RootHashSigning.Signer and RootHashSigning.Certificate"},
		{"no file", &RootHashSigning{Signer: signer, Certificate: c}, "", "RootHashSigning.SignatureFile or RootHashSigning.JSONFile"},
		{"one file for both", &RootHashSigning{Signer: signer, Certificate: c, SignatureFile: sig, JSONFile: sig}, "", "RootHashSigning.SignatureFile and RootHashSigning.JSONFile"},
		{"the root hash file", &RootHashSigning{Signer: signer, Certificate: c, SignatureFile: sig}, sig, "is also FormatOptions.RootHashFile"},
		{"a foreign signature file", &RootHashSigning{Signer: signer, Certificate: c, SignatureFile: file("foreign.p7s", randomBytes(100, 7))}, "",
			"add FormatOptions.Force"},
	} {
		speaksGo(t, s.name, format(f.dataPath, out, &FormatOptions{Sign: s.sign, RootHashFile: s.root}), s.want)
	}
	encrypted := []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n")
	_, err = ParseSigningKey(encrypted)
	if !errors.Is(err, ErrKeyEncrypted) {
		t.Errorf("encrypted key: %v is not ErrKeyEncrypted", err)
	}
	speaksGo(t, "encrypted key", err, "<(openssl pkey -in KEY.pem)")
	signed, err := SignRootHash(f.root, signer, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyRootHashSignature(f.root, signed, nil)
	speaksGo(t, "untrusted signature", err, "VerifyRootHashSignature.trusted")
	newline, err := pkcs7.Sign([]byte(hex.EncodeToString(f.root)+"\n"), signer, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyRootHashSignature(f.root, newline, []*x509.Certificate{c})
	speaksGo(t, "signature over a newline", err, "(or Format with FormatOptions.Sign)")
	_, err = ParseRootHashSignatureFile([]byte(`{"rootHash": 1}`))
	speaksGo(t, "signature JSON", err, "as Format with RootHashSigning.JSONFile writes it")

	// A file that starts as a sparse image but is not one.
	sparse := filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(sparse, append([]byte{0x3a, 0xff, 0x26, 0xed}, make([]byte, 100)...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenSource(sparse, nil)
	speaksGo(t, "malformed sparse image", err, "add SourceOptions.Raw")

	// Activation checks its files before it needs device-mapper.
	if runtime.GOOS == "linux" {
		_, err = Activate(ctx, "vt-words", f.dataPath, f.dataPath, f.root, nil)
		speaksGo(t, "activate in place", err, "no TreeOptions.HashOffset says where the tree is")
	}
}

// The errors of Format's and Verify's layout, of Append and of the files
// Format refuses to replace speak Go too, driven through the API: each
// names the option it is about as its field, and no flag or command.
func TestLayoutErrorsSpeakGo(t *testing.T) {
	f := newFixture(t, 64, 4096, 2, 9)
	ctx := context.Background()
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		writeBytes(t, p, b)
		return p
	}
	format := func(data, hash string, o *FormatOptions) error {
		_, err := Format(ctx, data, hash, o)
		return err
	}
	verify := func(data, hash string, o *VerifyOptions) error {
		_, err := Verify(ctx, data, hash, f.root, o)
		return err
	}
	size := func(n uint64) *uint64 { return &n }
	data := file("data.img", randomBytes(16*4096, 11))
	out := filepath.Join(dir, "out.verity")
	tree := filepath.Join(dir, "tree.verity")
	if err := format(data, tree, nil); err != nil {
		t.Fatal(err)
	}
	swapped := file("swapped.img", randomBytes(16*4096, 12))
	foreignFEC := file("foreign.fec", randomBytes(1<<16, 13))
	foreignRoot := file("foreign.roothash", randomBytes(100, 14))
	tiny := file("tiny.img", randomBytes(1000, 15))
	sparse := filepath.Join(dir, "sparse.img")
	writeSparse(t, sparse, randomBytes(16*4096, 16))

	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"in place without offset", format(data, data, nil), "no TreeOptions.HashOffset says where the tree goes"},
		{"in place, no data before the tree", format(data, data, &FormatOptions{HashOffsetSet: true}), "TreeOptions.HashOffset 0 leaves no whole"},
		{"in place over the data", format(data, data, &FormatOptions{TreeOptions: TreeOptions{HashOffset: 8 * 4096, DataBlocks: 12}}),
			"cover fewer blocks: TreeOptions.DataBlocks=8"},
		{"too many blocks", format(data, out, &FormatOptions{TreeOptions: TreeOptions{DataBlocks: 17}}), "TreeOptions.DataBlocks 17 needs"},
		{"less than a block", format(tiny, out, nil), "use a smaller TreeOptions.DataBlockSize"},
		{"unknown hash", format(data, out, &FormatOptions{TreeOptions: TreeOptions{Hash: "sha3-nope"}}), "TreeOptions.Hash=sha256"},
		{"offset not of a hash block", format(data, out, &FormatOptions{TreeOptions: TreeOptions{NoSuperblock: true, HashOffset: 512}}),
			"round it up: TreeOptions.HashOffset=4096"},
		{"sparse in place", format(sparse, sparse, &FormatOptions{TreeOptions: TreeOptions{HashOffset: 1 << 20}}), "write the tree to a file of its own"},
		{"sparse fec in data", format(sparse, out, &FormatOptions{FECDevice: sparse, FECOffset: 1 << 20}), "FormatOptions.FECDevice="},
		{"append with HASH", format(data, out, &FormatOptions{Append: true}), "FormatOptions.Append writes the tree into DATA"},
		{"append with offset", format(data, "", &FormatOptions{Append: true, TreeOptions: TreeOptions{HashOffset: 4096}}),
			"TreeOptions.HashOffset cannot be used with FormatOptions.Append"},
		{"append with FEC device", format(data, "", &FormatOptions{Append: true, FECDevice: out + ".fec"}), "FormatOptions.AppendFEC appends"},
		{"append in place", format(data, "", &FormatOptions{Append: true, InPlace: true}), "FormatOptions.Append cannot be used with FormatOptions.InPlace"},
		{"append size 0", format(data, "", &FormatOptions{Append: true, OriginalSize: size(0)}), "FormatOptions.OriginalSize must be at least 1"},
		{"append size past the end", format(data, "", &FormatOptions{Append: true, OriginalSize: size(1 << 30)}),
			"FormatOptions.OriginalSize 1073741824 is more than"},
		{"swapped", format(tree, swapped, nil), "did you mean Format of DATA " + swapped + " then HASH " + tree},
		{"foreign FEC", format(data, out, &FormatOptions{FECDevice: foreignFEC}), "FormatOptions.FECDevice " + foreignFEC + " is not error correction Format could have written"},
		{"FEC is the root hash file", format(data, out, &FormatOptions{FECDevice: out + ".x", RootHashFile: out + ".x"}),
			"FormatOptions.FECDevice and FormatOptions.RootHashFile are the same file"},
		{"foreign root hash file", format(data, out, &FormatOptions{RootHashFile: foreignRoot}), "FormatOptions.RootHashFile " + foreignRoot},
		{"root hash file a directory", format(data, out, &FormatOptions{RootHashFile: dir}), "FormatOptions.RootHashFile " + dir + " is a directory"},
		{"verify in place without offset", verify(f.dataPath, f.dataPath, nil), "no TreeOptions.HashOffset says where the tree is"},
		{"verify offset not of 512", verify(f.dataPath, f.hashPath, &VerifyOptions{TreeOptions: TreeOptions{HashOffset: 1000}}),
			"TreeOptions.HashOffset 1000 is not a multiple of 512"},
		{"verify no salt", verify(f.dataPath, f.hashPath, &VerifyOptions{TreeOptions: TreeOptions{NoSuperblock: true}}),
			"TreeOptions.NoSuperblock needs TreeOptions.Salt"},
		{"verify hash and superblock", verify(f.dataPath, f.hashPath, &VerifyOptions{TreeOptions: TreeOptions{UUID: &[16]byte{}}}),
			"leave TreeOptions.UUID out, or add TreeOptions.NoSuperblock"},
		{"verify repair of sparse", verify(sparse, f.hashPath, &VerifyOptions{Repair: true, FECDevice: f.fecPath}), "VerifyOptions.Repair cannot write into it"},
	} {
		speaksGo(t, c.name, c.err, c.want)
	}
	_, err := Open(f.dataPath, f.dataPath, f.root, nil)
	speaksGo(t, "open in place without offset", err, "give the tree's place in DATA with TreeOptions.HashOffset")
}
