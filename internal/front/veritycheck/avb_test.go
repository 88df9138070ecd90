package veritycheck

// The AVB check: images with an AVB footer, from the avbtool vectors and
// made with avb.AddHashtreeFooter, intact, spoiled, repaired, signed with
// another key, with a tampered vbmeta or a malformed footer.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/testimages"
)

const avbVectors = "../../../avb/testdata/vectors"

// avbMade is an AVB partition image and what AddHashtreeFooter said.
type avbMade struct {
	path string
	res  *avb.HashtreeFooterResult
	orig []byte // the whole file as made
}

// avbMake writes a sample image of blocks 4096-byte blocks and adds a
// hashtree footer signed with SHA256_RSA4096 (keys/rsa4096.pem); fec adds
// the parity.
func avbMake(t testing.TB, blocks int, fec bool, tweak func(*avb.HashtreeFooterOptions)) *avbMade {
	t.Helper()
	path := filepath.Join(t.TempDir(), "system.img")
	if err := testimages.WriteFile(path, func(w io.Writer) error { return testimages.Sample(w, int64(blocks)*4096, 14) }); err != nil {
		t.Fatal(err)
	}
	key, err := avb.LoadPrivateKey(context.Background(), filepath.Join(avbVectors, "keys/rsa4096.pem"))
	if err != nil {
		t.Fatal(err)
	}
	o := &avb.HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256", Salt: bytes.Repeat([]byte{0xa5}, 32),
		Algorithm: "SHA256_RSA4096", Key: key, FEC: fec, Properties: []avb.Property{{Key: "com.example.build", Value: []byte("14")}},
		SetupAsRootfsFromKernel: true}
	if tweak != nil {
		tweak(o)
	}
	res, err := avb.AddHashtreeFooter(context.Background(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &avbMade{path: path, res: res, orig: b}
}

func (m *avbMade) spoil(t *testing.T, off int64) {
	t.Helper()
	f, err := os.OpenFile(m.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x41
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func (m *avbMade) restore(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(m.path, m.orig, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *avbMade) unchanged(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(m.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, m.orig) {
		t.Errorf("%s is not as made", m.path)
	}
}

// avbExpect runs veritycheck and requires the exit code and every
// substring in stdout+stderr.
func avbExpect(t *testing.T, code int, want []string, args ...string) vcResult {
	t.Helper()
	r := vcRun(args...)
	t.Logf("%v", r)
	if r.code != code {
		t.Fatalf("want exit %d, got:\n%v", code, r)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("want %q in the output, got:\n%v", w, r)
		}
	}
	if strings.Contains(r.stderr, "panic") {
		t.Errorf("panic:\n%v", r)
	}
	return r
}

// The small avbtool outputs of the vectors verify from the image alone.
func TestAVBVectors(t *testing.T) {
	for _, name := range []string{"one-block", "two-blocks"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(avbVectors, "full", name+".img")
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), name+".img")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			img, err := avb.ReadImage(path)
			if err != nil {
				t.Fatal(err)
			}
			root := img.VBMeta.FirstHashtree().RootDigest
			// Unsigned: checked through, then exit 1, as libavb's
			// OK_NOT_SIGNED is a verification error.
			r := avbExpect(t, 1, []string{"avb: vbmeta: algorithm NONE", "avb: descriptor: hashtree: ", "the vbmeta is not signed",
				"libavb's verdict is OK_NOT_SIGNED"}, path)
			if !strings.Contains(r.stdout, "not signed: ") || !strings.Contains(r.stdout, "match the root digest "+hexs(root)) {
				t.Errorf("want the not-signed line with the descriptor's root digest:\n%v", r)
			}
			// An unsigned vbmeta is not signed with any key.
			avbExpect(t, 1, []string{"not signed (algorithm NONE)", "the tree was not checked"},
				"--avb-key", filepath.Join(avbVectors, "keys/rsa2048.pub.pem"), path)
			// Spoiled data, listed.
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte{0xff, 0xfe}, 100)
			f.Close()
			avbExpect(t, 1, []string{"corrupted: data block 0 (byte 0 of " + path, "verification failed: 1 corrupted data block"}, path)
		})
	}
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	var s strings.Builder
	for _, c := range b {
		s.WriteByte(digits[c>>4])
		s.WriteByte(digits[c&15])
	}
	return s.String()
}

func TestAVBSignedWithFEC(t *testing.T) {
	m := avbMake(t, 300, true, nil)
	d := m.res.Descriptor
	if d.FECNumRoots == 0 || d.FECSize == 0 {
		t.Fatalf("no FEC in the descriptor: %+v", d)
	}
	keySHA1 := "070d9856cefac0085e814eb66d0dcc68f99f1b0b" // keys.tsv
	pem := filepath.Join(avbVectors, "keys/rsa4096.pub.pem")
	blob := filepath.Join(avbVectors, "keys/rsa4096.avbpubkey")
	private := filepath.Join(avbVectors, "keys/rsa4096.pem")
	wrong := filepath.Join(avbVectors, "keys/rsa2048.pub.pem")

	t.Run("verified", func(t *testing.T) {
		for _, args := range [][]string{{m.path}, {"--avb", m.path}, {"--avb-key", pem, m.path}, {"--avb-key", blob, m.path}, {"--avb-key", private, m.path}} {
			r := avbExpect(t, 0, []string{"algorithm SHA256_RSA4096, public key (sha1) " + keySHA1,
				`avb: descriptor: hashtree: partition "system", sha256`, "FEC 2 roots at byte",
				"avb: descriptor: property: com.example.build = '14'", `avb: descriptor: kernel cmdline: flags 1: dm="1 vroot none ro 1,0 `,
				"avb: descriptor: kernel cmdline: flags 2: root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)",
				"match the root digest " + hexs(m.res.RootDigest), "the vbmeta signature verifies"}, args...)
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
		}
		r := avbExpect(t, 0, nil, "--json", "--avb-key", pem, m.path)
		var j struct {
			vcJSON
			AVB avbJSON `json:"avb"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		if !j.Verified || j.RootHash != hexs(m.res.RootDigest) || !j.AVB.SignatureVerified || !j.AVB.Signed || !j.AVB.KeyGiven ||
			j.AVB.PublicKeySHA1 != keySHA1 || j.AVB.Algorithm != "SHA256_RSA4096" || j.AVB.PartitionName != "system" || len(j.AVB.Descriptors) != 4 {
			t.Errorf("JSON report: %+v", j)
		}
		m.unchanged(t)
	})

	t.Run("wrong-key", func(t *testing.T) {
		avbExpect(t, 1, []string{"the embedded public key is not the key given", "the tree was not checked",
			"public key (sha1) " + keySHA1}, "--avb-key", wrong, m.path)
		r := avbExpect(t, 1, nil, "--json", "--avb-key", wrong, m.path)
		var j struct {
			Verified bool    `json:"verified"`
			AVB      avbJSON `json:"avb"`
			Error    string  `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		if j.Verified || j.AVB.SignatureVerified || !strings.Contains(j.Error, "not the key given") {
			t.Errorf("JSON report: %+v", j)
		}
	})

	t.Run("tampered-vbmeta", func(t *testing.T) {
		defer m.restore(t)
		at := bytes.Index(m.orig[m.res.Footer.VBMetaOffset:], m.res.RootDigest)
		if at < 0 {
			t.Fatal("root digest not in the vbmeta")
		}
		m.spoil(t, int64(m.res.Footer.VBMetaOffset)+int64(at))
		avbExpect(t, 1, []string{"vbmeta signature does not verify", "does not match the stored hash", "the tree was not checked"}, m.path)
		// The signature itself.
		m.restore(t)
		m.spoil(t, int64(m.res.Footer.VBMetaOffset)+avb.HeaderSize+32+10)
		avbExpect(t, 1, []string{"signature does not verify with the embedded key"}, m.path)
	})

	t.Run("corrupted-data", func(t *testing.T) {
		defer m.restore(t)
		m.spoil(t, 7*4096+5)
		m.spoil(t, 250*4096)
		avbExpect(t, 1, []string{"corrupted: data block 7 (byte 28672 of " + m.path, "corrupted: data block 250 (byte 1024000 of ",
			"verification failed: 2 corrupted data blocks", "--repair can fix all of it", "run again with --repair"}, m.path)
		r := avbExpect(t, 1, nil, "--json", m.path)
		var j vcJSON
		if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		if j.CorruptDataBlocks != 2 || len(j.Problems) != 2 || j.Problems[0].Index != 7 || j.Problems[1].Index != 250 {
			t.Errorf("JSON report: %+v", j)
		}
	})

	t.Run("corrupted-tree", func(t *testing.T) {
		defer m.restore(t)
		m.spoil(t, int64(d.TreeOffset)+100)
		avbExpect(t, 1, []string{"corrupted: hash block 0 of level ", "corrupted hash block"}, m.path)
	})

	t.Run("repaired", func(t *testing.T) {
		defer m.restore(t)
		m.spoil(t, 3*4096)
		m.spoil(t, 299*4096+4095)
		m.spoil(t, int64(d.TreeOffset)+4096+7)
		avbExpect(t, 0, []string{"corrupted: data block 3 ", "corrupted: data block 299 ", "verified: "}, "--repair", m.path)
		m.unchanged(t)
	})

	t.Run("beyond-repair", func(t *testing.T) {
		defer m.restore(t)
		// Three whole blocks of one FEC round: more than 2 roots rebuild.
		// The parity covers the data and the tree, 253 blocks a codeword.
		rounds := int((d.TreeOffset+d.TreeSize)/4096+252) / 253
		junk := bytes.Repeat([]byte{0x77}, 4096)
		f, err := os.OpenFile(m.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			f.WriteAt(junk, int64(1+i*rounds)*4096)
		}
		f.Close()
		spoiled, _ := os.ReadFile(m.path)
		avbExpect(t, 1, []string{"cannot recover", "nothing was written"}, "--repair", m.path)
		now, _ := os.ReadFile(m.path)
		if !bytes.Equal(now, spoiled) {
			t.Errorf("a refused repair wrote into %s", m.path)
		}
	})
}

func TestAVBNoFEC(t *testing.T) {
	m := avbMake(t, 40, false, func(o *avb.HashtreeFooterOptions) { o.Algorithm, o.Key = "", nil })
	avbExpect(t, 1, []string{"no FEC", "not signed: 40 data blocks"}, m.path)
	avbExpect(t, 2, []string{"--repair: the hashtree descriptor of " + m.path + " points at no FEC parity", "--do_not_generate_fec"}, "--repair", m.path)
	m.unchanged(t)
}

func TestAVBPersistentDigest(t *testing.T) {
	m := avbMake(t, 20, false, func(o *avb.HashtreeFooterOptions) { o.UsePersistentDigest, o.Salt = true, nil })
	avbExpect(t, 0, []string{"root digest none (persistent digest)", "match the tree's own root"}, m.path)
	m.spoil(t, 4096*int64(m.res.Descriptor.TreeOffset/4096)+10)
	avbExpect(t, 1, []string{"corrupted: hash block 0 of level 0"}, m.path)
}

// A malformed footer or vbmeta is exit 2 with what is wrong; nothing is
// allocated from its sizes.
func TestAVBMalformed(t *testing.T) {
	m := avbMake(t, 16, false, nil)
	end := int64(len(m.orig))
	put := func(off int64, v uint64) {
		f, err := os.OpenFile(m.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v)
		if _, err := f.WriteAt(b[:], off); err != nil {
			t.Fatal(err)
		}
	}
	footer := end - avb.FooterSize
	vbmeta := int64(m.res.Footer.VBMetaOffset)
	for _, c := range []struct {
		name string
		off  int64
		v    uint64
	}{
		{"vbmeta-size-huge", footer + 28, 1 << 62},
		{"vbmeta-offset-past-end", footer + 20, uint64(end) + 4096},
		{"original-size-past-vbmeta", footer + 12, uint64(end)},
		{"auxiliary-block-huge", vbmeta + 20, 1 << 60},
		{"descriptors-size-overflows", vbmeta + 104, ^uint64(0) - 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer m.restore(t)
			put(c.off, c.v)
			r := avbExpect(t, 2, []string{"veritycheck: error: " + m.path}, m.path)
			if strings.Contains(r.stdout, "verified") {
				t.Errorf("verified a malformed image:\n%v", r)
			}
			r = avbExpect(t, 2, nil, "--json", m.path)
			var j struct{ Error string }
			if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || !strings.Contains(j.Error, "malformed AVB data") {
				t.Errorf("want {\"error\": \"...malformed AVB data...\"} on stdout, got %q (%v)", r.stdout, err)
			}
		})
	}
}

func TestAVBUsage(t *testing.T) {
	m := avbMake(t, 16, false, nil)
	plain := filepath.Join(t.TempDir(), "plain.img")
	os.WriteFile(plain, make([]byte, 8192), 0o644)
	badKey := filepath.Join(t.TempDir(), "bad.key")
	os.WriteFile(badKey, []byte("not a key"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--avb", "--root-hash", strings.Repeat("00", 32), m.path}, "--root-hash does not go with the AVB check"},
		{[]string{"--avb", "--fec-device", m.path, m.path}, "--fec-device does not go with the AVB check"},
		{[]string{"--avb-key", badKey, m.path}, "neither PEM nor an AVB public key"},
		{[]string{"--avb", m.path, m.path}, "the AVB check takes one argument"},
		{[]string{"--avb", plain}, "no AVB footer and no vbmeta blob"},
		{[]string{"--dump", "--avb", m.path}, "--avb does not go with --dump"},
		// Without a footer and a root hash, the plain check's error.
		{[]string{plain}, "no root hash"},
	} {
		avbExpect(t, 2, []string{c.want}, c.args...)
	}
	// With a root hash, an AVB image is checked as any other tree.
	hexRoot := hexs(m.res.RootDigest)
	r := avbExpect(t, 0, nil, "--root-hash", hexRoot, "--no-superblock", "--hash", "sha256", "--salt", strings.Repeat("a5", 32),
		"--data-blocks", "16", "--hash-offset", "65536", m.path, m.path)
	if strings.Contains(r.stdout, "avb:") {
		t.Errorf("the AVB check ran with a root hash given:\n%v", r)
	}
}

// FuzzAVBCheck runs the AVB check on an image whose metadata (the vbmeta
// blob and the footer's block, the seed being a signed image's) is the
// fuzzer's: whatever it holds, one error line and exit 1 or 2, or a
// verified image; never a panic or a huge allocation.
func FuzzAVBCheck(f *testing.F) {
	m := avbMake(f, 8, true, nil)
	at := int(m.res.Footer.VBMetaOffset)
	head, tail := m.orig[:at], m.orig[at:]
	f.Add(tail)
	for _, off := range []int{len(tail) - 64 + 12, len(tail) - 64 + 20, len(tail) - 64 + 28, 12, 20, 96, 104} {
		b := bytes.Clone(tail)
		binary.BigEndian.PutUint64(b[off:], 1<<63+uint64(off))
		f.Add(b)
	}
	f.Add(tail[:len(tail)-1])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, meta []byte) {
		path := filepath.Join(dir, "fuzz.img")
		if err := os.WriteFile(path, append(bytes.Clone(head), meta...), 0o644); err != nil {
			t.Fatal(err)
		}
		r := vcRun("--avb", path)
		checkMessages(t, r.code, r.stderr)
		if r.code != 0 && r.code != 1 && r.code != 2 {
			t.Fatalf("exit %d:\n%v", r.code, r)
		}
	})
}

// The text report names every descriptor: chained partitions too, which
// are not checked (their vbmeta is elsewhere).
func TestAVBChainShown(t *testing.T) {
	m := avbMake(t, 16, false, func(o *avb.HashtreeFooterOptions) {
		ch, err := avb.ParseChainPartition(context.Background(), "boot:2:"+filepath.Join(avbVectors, "keys/rsa2048.avbpubkey"), false)
		if err != nil {
			t.Fatal(err)
		}
		o.ChainPartitions, o.SetupAsRootfsFromKernel, o.KernelCmdlines = []avb.ChainPartition{ch}, false, []string{"quiet"}
	})
	avbExpect(t, 0, []string{`avb: descriptor: chain partition: partition "boot", rollback index location 2, public key (sha1) dbb4d6516f8603217ae6d8c6d048bbdc04393557`,
		"avb: descriptor: kernel cmdline: flags 0: quiet", "verified: 16 data blocks"}, m.path)
}

// TestAVBInterrupted: what an add_hashtree_footer killed in its middle
// leaves of a raw image (its provisional footer past a half-written tree)
// is not checked but named, with what to do: exit 2. Before, there was no
// footer and the image was checked as a plain one, or, with a provisional
// footer, "no hashtree descriptor".
func TestAVBInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "system.img")
	const orig = 64 * 4096
	vb, err := avb.MakeVBMeta(&avb.VBMetaOptions{Descriptors: []avb.Descriptor{
		&avb.PropertyDescriptor{Key: "veritytree.interrupted", Value: []byte("add_hashtree_footer was interrupted")}}})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, orig+8*4096)
	for i := range orig {
		b[i] = byte(i / 4096)
	}
	at := len(b) - 4096
	copy(b[at:], vb)
	copy(b[len(b)-avb.FooterSize:], avb.NewFooter(orig, uint64(at), uint64(len(vb))).Encode())
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	avbExpect(t, 2, []string{"an interrupted add_hashtree_footer", "its first 262144 bytes", "run the same command again", "erase_footer --image " + path}, path)
}
