package avb_test

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/verity"
)

// vectorDir holds the first vectors' keys/.
const vectorDir = "testdata/vectors"

// devSet writes the vectors' device set (made by avbtool 1.3.0: boot with
// a hash footer, system and vendor with hashtree footers, vbmeta_system
// chained with system's descriptors, the top-level vbmeta with boot's and
// vendor's) into a new directory, and returns it with the cases by name.
func devSet(t *testing.T) (string, map[string]*avbvectors.Case2) {
	t.Helper()
	dir := t.TempDir()
	cases := map[string]*avbvectors.Case2{}
	for _, c := range loadVectors2(t) {
		if !strings.HasPrefix(c.Name, "dev-") {
			continue
		}
		cases[c.Name] = &c
		switch c.Name {
		case "dev-boot", "dev-system", "dev-vendor", "dev-vbmeta-system", "dev-vbmeta":
			for name, out := range c.Outputs {
				b, err := avbvectors.Blob2(out.SHA256)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if len(cases) < 5 {
		t.Fatalf("%d dev-* cases", len(cases))
	}
	return dir, cases
}

// verdicts is the slot's results as "NAME=RESULT" words: the vbmetas
// first (vbmeta:NAME), then the partitions, in the order checked.
func verdicts(r *avb.SlotResult) string {
	var w []string
	for _, v := range r.VBMetas {
		w = append(w, "vbmeta:"+v.Partition+"="+v.Result.String())
	}
	for _, p := range r.Partitions {
		w = append(w, p.Partition+"="+p.Result.String())
	}
	return strings.Join(w, " ")
}

func TestVerifySlotDeviceSet(t *testing.T) {
	dir, cases := devSet(t)
	r, err := avb.VerifySlot(context.Background(), filepath.Join(dir, "vbmeta.img"), &avb.SlotImages{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK"
	if got := verdicts(r); got != want || r.Result != avb.SlotOK {
		t.Fatalf("%s (%s), want %s", got, r.Result, want)
	}
	for _, p := range r.Partitions {
		if !p.Checked || p.Err != nil {
			t.Errorf("%s: checked %v, %v", p.Partition, p.Checked, p.Err)
		}
	}
	// androidboot.vbmeta.digest is what avbtool calculate_vbmeta_digest
	// printed for the set.
	if got := hex.EncodeToString(r.VBMetaDigest); got+"\n" != cases["dev-digest"].Stdout || r.VBMetaHashAlg != "sha256" {
		t.Errorf("vbmeta digest %s %s, avbtool's %q", r.VBMetaHashAlg, got, cases["dev-digest"].Stdout)
	}
	// The partitions in avbtool print_partition_digests' order.
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(cases["dev-digests"].Stdout), "\n") {
		names = append(names, strings.Split(l, ":")[0])
	}
	var got []string
	for _, p := range r.Partitions {
		got = append(got, p.Partition)
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("partitions %v, avbtool's digests list %v", got, names)
	}
	if v := r.VBMetas[1]; !v.Chained || !v.KeyChecked || v.RollbackIndexLocation != 1 || r.VBMetas[0].KeyChecked {
		t.Errorf("vbmeta_system: chained %v, key checked %v, location %d; top key checked %v", v.Chained, v.KeyChecked, v.RollbackIndexLocation, r.VBMetas[0].KeyChecked)
	}
	if r.VBMetaSize != uint64(len(r.VBMetas[0].Image.VBMeta.Raw)+len(r.VBMetas[1].Image.VBMeta.Raw)) || r.VBMetaSize >= 8192 {
		t.Errorf("vbmeta size %d", r.VBMetaSize)
	}
}

// flip inverts the byte at off of the file.
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// descriptorOf returns the image's descriptor for partition (its own
// footer's vbmeta).
func hashtreeOf(t *testing.T, path string) *avb.HashtreeDescriptor {
	t.Helper()
	img, err := avb.ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	return img.VBMeta.FirstHashtree()
}

// slotOpts are a case's options: the trusted key (a file of the vectors'
// keys), stored rollback indexes as LOCATION=INDEX, AllowMissing.
type slotOpts struct {
	key          string
	rollback     []string
	allowMissing bool
}

func (o slotOpts) options(t *testing.T) *avb.SlotOptions {
	t.Helper()
	so := &avb.SlotOptions{AllowMissing: o.allowMissing}
	if o.key != "" {
		b, err := os.ReadFile(filepath.Join(vectorDir, "keys", o.key))
		if err != nil {
			t.Fatal(err)
		}
		so.Key = b
	}
	for _, r := range o.rollback {
		l, i, _ := strings.Cut(r, "=")
		loc, err1 := strconv.ParseUint(l, 10, 32)
		index, err2 := strconv.ParseUint(i, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("rollback %q", r)
		}
		if so.StoredRollbackIndexes == nil {
			so.StoredRollbackIndexes = map[uint32]uint64{}
		}
		so.StoredRollbackIndexes[uint32(loc)] = index
	}
	return so
}

// slotCases damage the vectors' device set one piece at a time; want is
// each vbmeta's and partition's verdict (verdicts), result the slot's.
var slotCases = []struct {
	name   string
	damage func(t *testing.T, dir string)
	opts   slotOpts
	want   string
	result avb.SlotVerifyResult
}{
	{"intact", nil, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotOK},
	{"boot-byte", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "boot.img"), 5000) }, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=ERROR_VERIFICATION vendor=OK", avb.SlotErrorVerification},
	{"boot-past-image", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "boot.img"), 22000) }, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotOK},
	{"system-data", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "system.img"), 3*4096+7) }, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=ERROR_VERIFICATION boot=OK vendor=OK", avb.SlotErrorVerification},
	{"vendor-tree", func(t *testing.T, dir string) {
		p := filepath.Join(dir, "vendor.img")
		flip(t, p, int64(hashtreeOf(t, p).TreeOffset)+40)
	}, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=ERROR_VERIFICATION", avb.SlotErrorVerification},
	{"chain-key-swapped", func(t *testing.T, dir string) {
		// vbmeta_system signed with the top-level key, not the chain
		// descriptor's.
		key, err := avb.LoadPrivateKey(context.Background(), filepath.Join(vectorDir, "keys", "rsa4096.pem"))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "vbmeta_system.img")
		os.Remove(out)
		if err := avb.MakeVBMetaImage(context.Background(), out, &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA4096", Key: key,
			IncludeDescriptorsFrom: []string{filepath.Join(dir, "system.img")}, RollbackIndex: 4, RollbackIndexLocation: 1, PaddingSize: 4096}); err != nil {
			t.Fatal(err)
		}
	}, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_PUBLIC_KEY_REJECTED system=OK boot=OK vendor=OK", avb.SlotErrorPublicKeyRejected},
	{"top-descriptor-digest", func(t *testing.T, dir string) {
		// A byte of boot's digest in the top-level vbmeta: its hash
		// no longer matches, and boot no longer matches its digest.
		p := filepath.Join(dir, "vbmeta.img")
		b, _ := os.ReadFile(p)
		d, _ := hex.DecodeString("a087580c09d3ddca0044d069651ea28bc75680a022df5bc34caeb36876f191c8")
		i := strings.Index(string(b), string(d))
		if i < 0 {
			t.Fatal("boot's digest not in vbmeta.img")
		}
		flip(t, p, int64(i+3))
	}, slotOpts{},
		"vbmeta:vbmeta=ERROR_VERIFICATION vbmeta:vbmeta_system=OK system=OK boot=ERROR_VERIFICATION vendor=OK", avb.SlotErrorVerification},
	{"chained-unsigned-part", func(t *testing.T, dir string) {
		// vbmeta_system's signature: its last byte.
		p := filepath.Join(dir, "vbmeta_system.img")
		img, err := avb.ReadImage(p)
		if err != nil {
			t.Fatal(err)
		}
		h := img.VBMeta.Header
		flip(t, p, int64(avb.HeaderSize+h.SignatureOffset+h.SignatureSize-1))
	}, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_VERIFICATION system=OK boot=OK vendor=OK", avb.SlotErrorVerification},
	{"top-key-given", nil, slotOpts{key: "rsa4096.avbpubkey"},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotOK},
	{"top-key-other", nil, slotOpts{key: "rsa2048.avbpubkey"},
		"vbmeta:vbmeta=ERROR_PUBLIC_KEY_REJECTED vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotErrorPublicKeyRejected},
	{"rollback-held", nil, slotOpts{rollback: []string{"0=9", "1=4"}},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotOK},
	{"rollback-top", nil, slotOpts{rollback: []string{"0=10"}},
		"vbmeta:vbmeta=ERROR_ROLLBACK_INDEX vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotErrorRollbackIndex},
	{"rollback-chained", nil, slotOpts{rollback: []string{"1=5"}},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_ROLLBACK_INDEX system=OK boot=OK vendor=OK", avb.SlotErrorRollbackIndex},
	{"system-missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "system.img")) }, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=ERROR_IO boot=OK vendor=OK", avb.SlotErrorIO},
	{"system-missing-allowed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "system.img")) }, slotOpts{allowMissing: true},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=ERROR_IO boot=OK vendor=OK", avb.SlotOK},
	{"chained-missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "vbmeta_system.img")) }, slotOpts{allowMissing: true},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_IO boot=OK vendor=OK", avb.SlotErrorIO},
	{"boot-truncated", func(t *testing.T, dir string) {
		// Shorter than boot's image_size: libavb's read fails when locked,
		// and what there is does not match when unlocked.
		if err := os.Truncate(filepath.Join(dir, "boot.img"), 16384); err != nil {
			t.Fatal(err)
		}
	}, slotOpts{}, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=ERROR_VERIFICATION vendor=OK", avb.SlotErrorVerification},
	{"chained-boot", func(t *testing.T, dir string) {
		// boot signs its own vbmeta (its footer's), which the top-level
		// vbmeta chains to, as many devices do.
		chainBoot(t, dir, "rsa4096.avbpubkey")
	}, slotOpts{}, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK vbmeta:boot=OK system=OK boot=OK vendor=OK", avb.SlotOK},
	{"chained-boot-other-key", func(t *testing.T, dir string) { chainBoot(t, dir, "rsa2048.avbpubkey") }, slotOpts{},
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK vbmeta:boot=ERROR_PUBLIC_KEY_REJECTED system=OK boot=OK vendor=OK", avb.SlotErrorPublicKeyRejected},
	{"chained-boot-byte", func(t *testing.T, dir string) {
		chainBoot(t, dir, "rsa4096.avbpubkey")
		flip(t, filepath.Join(dir, "boot.img"), 100)
	}, slotOpts{}, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK vbmeta:boot=OK system=OK boot=ERROR_VERIFICATION vendor=OK", avb.SlotErrorVerification},
	{"top-location-40", func(t *testing.T, dir string) {
		// libavb has 32 rollback index locations.
		remake(t, dir, "vbmeta.img", "rsa4096", &avb.VBMetaImageOptions{
			IncludeDescriptorsFrom: []string{filepath.Join(dir, "boot.img"), filepath.Join(dir, "vendor.img")},
			ChainPartitions:        []avb.ChainPartition{{Name: "vbmeta_system", RollbackIndexLocation: 1, PublicKey: keyFile(t, "rsa2048.avbpubkey")}},
			RollbackIndex:          9, RollbackIndexLocation: 40, PaddingSize: 4096})
	}, slotOpts{}, "vbmeta:vbmeta=ERROR_IO", avb.SlotErrorIO},
	{"verification-disabled", func(t *testing.T, dir string) {
		// The top-level vbmeta's flags disable verification: libavb
		// checks nothing more (boot's damage passes); this check does.
		remake(t, dir, "vbmeta.img", "rsa4096", &avb.VBMetaImageOptions{
			IncludeDescriptorsFrom: []string{filepath.Join(dir, "boot.img"), filepath.Join(dir, "vendor.img")},
			ChainPartitions:        []avb.ChainPartition{{Name: "vbmeta_system", RollbackIndexLocation: 1, PublicKey: keyFile(t, "rsa2048.avbpubkey")}},
			Flags:                  avb.FlagVerificationDisabled, RollbackIndex: 9, PaddingSize: 4096})
		flip(t, filepath.Join(dir, "boot.img"), 100)
	}, slotOpts{}, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=ERROR_VERIFICATION vendor=OK", avb.SlotErrorVerification},
	{"chained-chains", func(t *testing.T, dir string) {
		// libavb follows chain descriptors of the top-level vbmeta only.
		remake(t, dir, "vbmeta_system.img", "rsa2048", &avb.VBMetaImageOptions{IncludeDescriptorsFrom: []string{filepath.Join(dir, "system.img")},
			ChainPartitions: []avb.ChainPartition{{Name: "vbmeta", RollbackIndexLocation: 2, PublicKey: keyFile(t, "rsa4096.avbpubkey")}},
			RollbackIndex:   4, RollbackIndexLocation: 1, PaddingSize: 4096})
	}, slotOpts{}, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_INVALID_METADATA boot=OK vendor=OK", avb.SlotErrorInvalidMetadata},
	{"chained-flags", func(t *testing.T, dir string) {
		remake(t, dir, "vbmeta_system.img", "rsa2048", &avb.VBMetaImageOptions{IncludeDescriptorsFrom: []string{filepath.Join(dir, "system.img")},
			Flags: avb.FlagHashtreeDisabled, RollbackIndex: 4, RollbackIndexLocation: 1, PaddingSize: 4096})
	}, slotOpts{}, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_INVALID_METADATA boot=OK vendor=OK", avb.SlotErrorInvalidMetadata},
	{"top-unsigned", func(t *testing.T, dir string) {
		remake(t, dir, "vbmeta.img", "", &avb.VBMetaImageOptions{
			IncludeDescriptorsFrom: []string{filepath.Join(dir, "boot.img"), filepath.Join(dir, "vendor.img")},
			ChainPartitions:        []avb.ChainPartition{{Name: "vbmeta_system", RollbackIndexLocation: 1, PublicKey: keyFile(t, "rsa2048.avbpubkey")}},
			RollbackIndex:          9, PaddingSize: 4096})
	}, slotOpts{}, "vbmeta:vbmeta=ERROR_VERIFICATION vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK", avb.SlotErrorVerification},
}

// remake replaces the set's file name with a vbmeta image made with o,
// signed with the vectors' key (rsa2048, rsa4096; "" for none).
func remake(t *testing.T, dir, name, key string, o *avb.VBMetaImageOptions) {
	t.Helper()
	if key != "" {
		k, err := avb.LoadPrivateKey(context.Background(), filepath.Join(vectorDir, "keys", key+".pem"))
		if err != nil {
			t.Fatal(err)
		}
		o.Algorithm, o.Key = "SHA256_"+strings.ToUpper(key), k
	}
	out := filepath.Join(dir, name)
	os.Remove(out)
	if err := avb.MakeVBMetaImage(context.Background(), out, o); err != nil {
		t.Fatal(err)
	}
}

// chainBoot remakes the top-level vbmeta to chain to boot (with key, at
// rollback index location 2) instead of including its descriptors.
func chainBoot(t *testing.T, dir, key string) {
	t.Helper()
	remake(t, dir, "vbmeta.img", "rsa4096", &avb.VBMetaImageOptions{IncludeDescriptorsFrom: []string{filepath.Join(dir, "vendor.img")},
		ChainPartitions: []avb.ChainPartition{{Name: "vbmeta_system", RollbackIndexLocation: 1, PublicKey: keyFile(t, "rsa2048.avbpubkey")},
			{Name: "boot", RollbackIndexLocation: 2, PublicKey: keyFile(t, key)}},
		RollbackIndex: 9, PaddingSize: 4096})
}

func keyFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifySlotDamage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range slotCases {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := devSet(t)
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			r, err := avb.VerifySlot(ctx, filepath.Join(dir, "vbmeta.img"), &avb.SlotImages{Dir: dir}, tc.opts.options(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(r); got != tc.want || r.Result != tc.result {
				t.Errorf("%s (%s), want %s (%s)", got, r.Result, tc.want, tc.result)
			}
			for _, v := range r.VBMetas {
				if (v.Result == avb.SlotOK) != (v.Err == nil) {
					t.Errorf("vbmeta %s: %s with error %v", v.Partition, v.Result, v.Err)
				}
			}
			for _, p := range r.Partitions {
				if (p.Result == avb.SlotOK) != (p.Err == nil) {
					t.Errorf("%s: %s with error %v", p.Partition, p.Result, p.Err)
				}
			}
		})
	}
}

func TestVerifySlotTreeCounts(t *testing.T) {
	dir, _ := devSet(t)
	flip(t, filepath.Join(dir, "system.img"), 3*4096+7)
	flip(t, filepath.Join(dir, "system.img"), 9*4096)
	var seen []string
	r, err := avb.VerifySlot(context.Background(), filepath.Join(dir, "vbmeta.img"), &avb.SlotImages{Dir: dir}, &avb.SlotOptions{
		MaxProblems: -1,
		OnTree: func(p *avb.SlotPartition, res *verity.VerifyResult) error {
			for pr, err := range res.Problems() {
				if err != nil {
					return err
				}
				seen = append(seen, p.Partition+":"+strconv.FormatUint(pr.Index, 10))
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sys := r.Partitions[0]
	if sys.Partition != "system" || sys.Tree == nil || sys.Tree.CorruptDataBlocks != 2 || sys.Tree.CorruptHashBlocks != 0 {
		t.Fatalf("system: %+v", sys)
	}
	if strings.Join(seen, " ") != "system:3 system:9" {
		t.Errorf("problems seen %v", seen)
	}
}

// A vbmeta image alone: the vbmeta is checked, the partitions are missing.
func TestVerifySlotVBMetaAlone(t *testing.T) {
	dir, _ := devSet(t)
	top := filepath.Join(dir, "vbmeta.img")
	r, err := avb.VerifySlot(context.Background(), top, &avb.SlotImages{}, &avb.SlotOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_IO boot=ERROR_IO vendor=ERROR_IO"
	if got := verdicts(r); got != want || r.Result != avb.SlotErrorIO {
		t.Errorf("%s (%s), want %s", got, r.Result, want)
	}
	for _, p := range r.Partitions {
		if !p.Missing || !errors.Is(p.Err, avb.ErrNoImage) {
			t.Errorf("%s: missing %v, %v", p.Partition, p.Missing, p.Err)
		}
	}
	// boot.img as the top-level vbmeta (a device without a vbmeta
	// partition): its own hash descriptor is checked.
	r, err = avb.VerifySlot(context.Background(), filepath.Join(dir, "boot.img"), &avb.SlotImages{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(r); got != "vbmeta:boot=OK boot=OK" || r.Result != avb.SlotOK {
		t.Errorf("boot.img: %s (%s)", got, r.Result)
	}
	// system.img as the top-level vbmeta: unsigned.
	r, err = avb.VerifySlot(context.Background(), filepath.Join(dir, "system.img"), &avb.SlotImages{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(r); got != "vbmeta:system=ERROR_VERIFICATION system=OK" || !errors.Is(r.VBMetas[0].Err, avb.ErrNotSigned) {
		t.Errorf("system.img: %s (%v)", got, r.VBMetas[0].Err)
	}
}

// Crafted sets stay bounded: a vbmeta chaining to itself is refused once
// (a chained vbmeta may not chain), more vbmetas than libavb loads are
// ERROR_OOM, and a partition named by more descriptors than are checked
// is refused rather than hashed again and again.
func TestVerifySlotBounds(t *testing.T) {
	b := newSlotBounds(t)
	t.Run("self chain", b.selfChain)
	t.Run("40 chains", b.manyChains)
	t.Run("20 hash descriptors", b.manyHashDescriptors)
}

// slotBounds is what the cases of TestVerifySlotBounds share: a
// directory, the top-level key and its public key blob.
type slotBounds struct {
	ctx     context.Context
	dir     string
	topKey  *rsa.PrivateKey
	topBlob []byte
}

func newSlotBounds(t *testing.T) *slotBounds {
	ctx := context.Background()
	dir := t.TempDir()
	topKey, err := avb.LoadPrivateKey(ctx, filepath.Join(vectorDir, "keys", "rsa4096.pem"))
	if err != nil {
		t.Fatal(err)
	}
	topBlob, err := os.ReadFile(filepath.Join(vectorDir, "keys", "rsa4096.avbpubkey"))
	if err != nil {
		t.Fatal(err)
	}
	return &slotBounds{ctx: ctx, dir: dir, topKey: topKey, topBlob: topBlob}
}

func (b *slotBounds) verify(t *testing.T, top string) *avb.SlotResult {
	t.Helper()
	r, err := avb.VerifySlot(b.ctx, top, &avb.SlotImages{Dir: b.dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (b *slotBounds) selfChain(t *testing.T) {
	ctx, dir, topKey, topBlob := b.ctx, b.dir, b.topKey, b.topBlob
	self := filepath.Join(dir, "vbmeta.img")
	if err := avb.MakeVBMetaImage(ctx, self, &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA4096", Key: topKey,
		ChainPartitions: []avb.ChainPartition{{Name: "vbmeta", RollbackIndexLocation: 1, PublicKey: topBlob}}}); err != nil {
		t.Fatal(err)
	}
	r := b.verify(t, self)
	if got := verdicts(r); got != "vbmeta:vbmeta=OK vbmeta:vbmeta=ERROR_INVALID_METADATA" || r.Result != avb.SlotErrorInvalidMetadata {
		t.Errorf("self chain: %s", got)
	}
}

func (b *slotBounds) manyChains(t *testing.T) {
	ctx, dir, topKey, topBlob := b.ctx, b.dir, b.topKey, b.topBlob
	// 40 chains to signed vbmetas: libavb loads 32 vbmetas.
	chained := filepath.Join(dir, "c.img")
	if err := avb.MakeVBMetaImage(ctx, chained, &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA4096", Key: topKey, RollbackIndexLocation: 1}); err != nil {
		t.Fatal(err)
	}
	var chains []avb.Descriptor
	for i := range 40 {
		name := "vbmeta_c" + strconv.Itoa(i)
		if err := os.Link(chained, filepath.Join(dir, name+".img")); err != nil {
			t.Fatal(err)
		}
		// The same location each time: avbtool refuses that, libavb does
		// not look.
		chains = append(chains, &avb.ChainPartitionDescriptor{PartitionName: name, RollbackIndexLocation: 1, PublicKey: topBlob})
	}
	manyBlob, err := avb.MakeVBMeta(&avb.VBMetaOptions{Algorithm: "SHA256_RSA4096", Key: topKey, Descriptors: chains})
	if err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(dir, "many.img")
	if err := os.WriteFile(many, manyBlob, 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.verify(t, many)
	oom := 0
	for i, v := range r.VBMetas {
		switch {
		case i < 32 && v.Result != avb.SlotOK:
			t.Errorf("vbmeta %d %s: %s %v", i, v.Partition, v.Result, v.Err)
		case i >= 32 && v.Result == avb.SlotErrorOOM:
			oom++
		}
	}
	if len(r.VBMetas) != 41 || oom != 9 || r.Result != avb.SlotErrorOOM {
		t.Errorf("%d vbmetas, %d out of memory, %s", len(r.VBMetas), oom, r.Result)
	}
}

func (b *slotBounds) manyHashDescriptors(t *testing.T) {
	dir, topKey := b.dir, b.topKey
	// 20 hash descriptors of boot: 16 are checked.
	boot := filepath.Join(dir, "boot.img")
	if err := os.WriteFile(boot, []byte("boot"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("boot"))
	d := sum[:]
	var ds []avb.Descriptor
	for range 20 {
		ds = append(ds, &avb.HashDescriptor{PartitionName: "boot", HashAlgorithm: "sha256", ImageSize: 4, Digest: d})
	}
	blob, err := avb.MakeVBMeta(&avb.VBMetaOptions{Algorithm: "SHA256_RSA4096", Key: topKey, Descriptors: ds})
	if err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "dup.img")
	if err := os.WriteFile(dup, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.verify(t, dup)
	checked, refused := 0, 0
	for _, p := range r.Partitions {
		if p.Checked && p.Result == avb.SlotOK {
			checked++
		}
		if p.Result == avb.SlotErrorInvalidMetadata && !p.Checked {
			refused++
		}
	}
	if checked != 16 || refused != 4 || r.Result != avb.SlotErrorInvalidMetadata {
		t.Errorf("%d checked, %d refused, %s", checked, refused, r.Result)
	}
}
