package avb_test

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
)

// slotABSetsFile holds libavb's avb_slot_verify on the A/B device sets of
// abCases (testdata/libavb/record_slots.sh, which also makes the intact
// set with avbtool 1.3.0 and compares it with abSet's, file by file).
const slotABSetsFile = "testdata/libavb/slot_ab_sets.tsv"

// abSetOptions vary the A/B set: factory's and cust's persistent digests
// without the do-not-use-A/B flag (which libavb refuses with a suffix);
// boot's partition and the chained vbmeta_system named with 30 bytes
// (32 with the suffix, one more than libavb takes).
type abSetOptions struct {
	factoryAB, custAB   bool
	longBoot, longChain bool
	// trees more hashtree partitions with persistent root digests
	// (--do_not_use_ab), t00, t01..., in vbmeta_a.
	trees int
	// cmdline: kernel command-line descriptors in vbmeta_a (with every
	// variable libavb substitutes, and system's dm-verity setup) and in
	// vbmeta_system_a; topFlags are vbmeta_a's flags; topSHA512 signs it
	// with SHA512_RSA4096.
	cmdline   bool
	topFlags  uint32
	topSHA512 bool
	// chainedHash: a hash partition, dtbo_a, in vbmeta_system_a.
	chainedHash bool
}

// Names of 30 bytes.
var (
	abLongBoot  = "boot" + strings.Repeat("x", 26)
	abLongChain = "vbmeta_" + strings.Repeat("y", 23)
)

// abSet is an A/B device set, slot _a, made as record_slots.sh makes it
// with avbtool 1.3.0 (the same arguments): boot_a (hash footer), system_a
// (hashtree footer) in vbmeta_system_a (chained), vendor_boot (hash
// footer, --do_not_use_ab), factory (hash footer with a persistent digest,
// --do_not_use_ab), cust (hashtree footer with a persistent root digest,
// --do_not_use_ab) in vbmeta_vendor (chained with
// --chain_partition_do_not_use_ab), and vbmeta_a holding boot's,
// vendor_boot's and factory's descriptors. Values are the device's
// persistent digests of factory and cust.
type abSet struct {
	dir    string
	values map[string][]byte
}

func abInput(line string, n int) []byte { return bytes.Repeat([]byte(line), n) }

func buildABSet(t *testing.T, o abSetOptions) *abSet {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	key := func(name string) *avbKey { return loadKey(t, name) }
	salt := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(at(name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := &abSet{dir: dir, values: map[string][]byte{}}
	hashFooter := func(name, partition string, o *avb.HashFooterOptions) *avb.HashFooterResult {
		o.PartitionSize, o.PartitionName = 131072, partition
		r, err := avb.AddHashFooter(ctx, at(name), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	hashtreeFooter := func(name, partition string, o *avb.HashtreeFooterOptions) *avb.HashtreeFooterResult {
		o.PartitionName = partition
		r, err := avb.AddHashtreeFooter(ctx, at(name), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write("boot_a.img", abInput("a boot image\n", 1500))
	bootName, chainName := "boot", "vbmeta_system"
	if o.longBoot {
		bootName = abLongBoot
	}
	if o.longChain {
		chainName = abLongChain
	}
	hashFooter("boot_a.img", bootName, &avb.HashFooterOptions{Salt: salt("b0b0b0b0")})
	write("vendor_boot.img", abInput("vendor boot\n", 1000))
	hashFooter("vendor_boot.img", "vendor_boot", &avb.HashFooterOptions{Salt: salt("7e7e7e7e"), DoNotUseAB: true})
	write("factory.img", abInput("factory data\n", 800))
	r := hashFooter("factory.img", "factory", &avb.HashFooterOptions{UsePersistentDigest: true, DoNotUseAB: !o.factoryAB})
	set.values[avb.PersistentDigestPrefix+"factory"] = r.Digest
	write("system_a.img", abInput("system files 0\n", 16384))
	hashtreeFooter("system_a.img", "system", &avb.HashtreeFooterOptions{PartitionSize: 1 << 20, Salt: salt("5151")})
	write("cust.img", abInput("customizations\n", 4096))
	rt := hashtreeFooter("cust.img", "cust", &avb.HashtreeFooterOptions{PartitionSize: 512 << 10, Salt: salt("c0c0"), UsePersistentDigest: true, DoNotUseAB: !o.custAB})
	set.values[avb.PersistentDigestPrefix+"cust"] = rt.RootDigest
	var trees []string
	for i := range o.trees {
		name := fmt.Sprintf("t%02d", i)
		write(name+".img", abInput(fmt.Sprintf("tree %02d data...\n", i), 256))
		rt := hashtreeFooter(name+".img", name, &avb.HashtreeFooterOptions{Salt: salt("7070"), UsePersistentDigest: true, DoNotUseAB: true})
		set.values[avb.PersistentDigestPrefix+name] = rt.RootDigest
		trees = append(trees, at(name+".img"))
	}
	vbmeta := func(name string, k *avbKey, o *avb.VBMetaImageOptions) {
		o.Algorithm, o.Key, o.PaddingSize = k.alg, k.key, 4096
		if err := avb.MakeVBMetaImage(ctx, at(name), o); err != nil {
			t.Fatal(err)
		}
	}
	var sysCmdlines, topCmdlines []string
	rootfs := ""
	if o.cmdline {
		sysCmdlines = []string{"chained.snippet=$(ANDROID_SYSTEM_PARTUUID)"}
		topCmdlines = []string{"console=ttyS0 sys=$(ANDROID_SYSTEM_PARTUUID)",
			"bootp=$(ANDROID_BOOT_PARTUUID) vbm=$(ANDROID_VBMETA_PARTUUID) again=$(ANDROID_SYSTEM_PARTUUID)",
			"dm.mode=$(ANDROID_VERITY_MODE) t00=$(AVB_T00_ROOT_DIGEST) cust=$(AVB_CUST_ROOT_DIGEST)"}
		rootfs = at("system_a.img")
	}
	topKey := key("rsa4096")
	if o.topSHA512 {
		topKey.alg = "SHA512_RSA4096"
	}
	sysFrom := []string{at("system_a.img")}
	if o.chainedHash {
		write("dtbo_a.img", abInput("device tree overlays\n", 700))
		hashFooter("dtbo_a.img", "dtbo", &avb.HashFooterOptions{Salt: salt("d7d7")})
		sysFrom = append(sysFrom, at("dtbo_a.img"))
	}
	vbmeta("vbmeta_system_a.img", key("rsa2048"), &avb.VBMetaImageOptions{IncludeDescriptorsFrom: sysFrom, RollbackIndex: 4, RollbackIndexLocation: 1, KernelCmdlines: sysCmdlines})
	vbmeta("vbmeta_vendor.img", key("rsa2048"), &avb.VBMetaImageOptions{IncludeDescriptorsFrom: []string{at("cust.img")}, RollbackIndex: 2, RollbackIndexLocation: 2})
	pub := keyFile(t, "rsa2048.avbpubkey")
	vbmeta("vbmeta_a.img", topKey, &avb.VBMetaImageOptions{
		KernelCmdlines: topCmdlines, SetupRootfsFromKernel: rootfs, Flags: o.topFlags,
		IncludeDescriptorsFrom: append([]string{at("boot_a.img"), at("vendor_boot.img"), at("factory.img")}, trees...),
		ChainPartitions: []avb.ChainPartition{{Name: chainName, RollbackIndexLocation: 1, PublicKey: pub},
			{Name: "vbmeta_vendor", RollbackIndexLocation: 2, PublicKey: pub, DoNotUseAB: true}},
		RollbackIndex: 9})
	return set
}

type avbKey struct {
	alg string
	key *rsa.PrivateKey
}

func loadKey(t *testing.T, name string) *avbKey {
	t.Helper()
	k, err := avb.LoadPrivateKey(context.Background(), filepath.Join(vectorDir, "keys", name+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &avbKey{alg: "SHA256_" + strings.ToUpper(name), key: k}
}

// rename moves the set's file from to to.
func rename(t *testing.T, dir, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
		t.Fatal(err)
	}
}

const (
	pdFactory = avb.PersistentDigestPrefix + "factory"
	pdCust    = avb.PersistentDigestPrefix + "cust"
	pdBoot    = avb.PersistentDigestPrefix + "boot"
)

// bootTop makes the set one of a device without A/B slots and without a
// vbmeta partition: boot, with a hashtree footer whose root digest is
// persistent and which chains to vbmeta_system, is the top-level vbmeta
// (libavb's fallback); its hashtree descriptor comes before the chain
// descriptor, as avbtool puts a footer's own descriptor first.
func bootTop(t *testing.T, s *abSet) {
	t.Helper()
	for _, n := range []string{"vbmeta_system", "system"} {
		rename(t, s.dir, n+"_a.img", n+".img")
	}
	for _, n := range []string{"vbmeta_a.img", "boot_a.img"} {
		if err := os.Remove(filepath.Join(s.dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	boot := filepath.Join(s.dir, "boot.img")
	if err := os.WriteFile(boot, abInput("boot image 0123\n", 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	k := loadKey(t, "rsa4096")
	r, err := avb.AddHashtreeFooter(context.Background(), boot, &avb.HashtreeFooterOptions{PartitionName: "boot", PartitionSize: 1 << 20,
		Salt: []byte{0xb0, 0xb0}, UsePersistentDigest: true, DoNotUseAB: true, Algorithm: k.alg, Key: k.key,
		ChainPartitions: []avb.ChainPartition{{Name: "vbmeta_system", RollbackIndexLocation: 1, PublicKey: keyFile(t, "rsa2048.avbpubkey")}}})
	if err != nil {
		t.Fatal(err)
	}
	s.values[pdBoot] = r.RootDigest
}

// abCases: the A/B set, checked with suffix (libavb's ab_suffix) asking for
// requested, the device holding the set's persistent values changed by
// values; want is each vbmeta's and partition's verdict (verdicts).
var abCases = []struct {
	name      string
	set       abSetOptions
	damage    func(t *testing.T, s *abSet)
	suffix    string
	requested string
	want      string
}{
	{"ab-intact", abSetOptions{}, nil, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=OK vendor_boot=OK"},
	{"ab-boot-byte", abSetOptions{}, func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "boot_a.img"), 100) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=ERROR_VERIFICATION factory=OK vendor_boot=OK"},
	{"ab-vendor-boot-byte", abSetOptions{}, func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "vendor_boot.img"), 100) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=OK vendor_boot=ERROR_VERIFICATION"},
	{"ab-vendor-boot-suffixed", abSetOptions{}, func(t *testing.T, s *abSet) { rename(t, s.dir, "vendor_boot.img", "vendor_boot_a.img") }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=OK vendor_boot=ERROR_IO"},
	{"ab-chain-unsuffixed", abSetOptions{}, func(t *testing.T, s *abSet) { rename(t, s.dir, "vbmeta_system_a.img", "vbmeta_system.img") }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=ERROR_IO vbmeta:vbmeta_vendor=OK cust=OK boot_a=OK factory=OK vendor_boot=OK"},
	{"ab-chain-noab-suffixed", abSetOptions{}, func(t *testing.T, s *abSet) { rename(t, s.dir, "vbmeta_vendor.img", "vbmeta_vendor_a.img") }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=ERROR_IO system_a=OK boot_a=OK factory=OK vendor_boot=OK"},
	{"ab-system-data", abSetOptions{}, func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "system_a.img"), 5*4096+3) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=ERROR_VERIFICATION cust=OK boot_a=OK factory=OK vendor_boot=OK"},
	{"ab-suffix-b", abSetOptions{}, nil, "_b", "boot,vendor_boot,factory", "vbmeta:vbmeta_b=ERROR_IO"},
	{"noab-set", abSetOptions{}, func(t *testing.T, s *abSet) {
		for _, n := range []string{"vbmeta", "vbmeta_system", "boot", "system"} {
			rename(t, s.dir, n+"_a.img", n+".img")
		}
	}, "", "boot,vendor_boot,factory",
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK vbmeta:vbmeta_vendor=OK system=OK cust=OK boot=OK factory=OK vendor_boot=OK"},
	{"ab-factory-not-requested", abSetOptions{}, func(t *testing.T, s *abSet) { delete(s.values, pdFactory) }, "_a", "boot,vendor_boot",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=ERROR_VERIFICATION vendor_boot=OK"},
	{"pd-factory-missing", abSetOptions{}, func(t *testing.T, s *abSet) { delete(s.values, pdFactory) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=ERROR_VERIFICATION vendor_boot=OK"},
	{"pd-factory-empty", abSetOptions{}, func(t *testing.T, s *abSet) { s.values[pdFactory] = []byte{} }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=ERROR_VERIFICATION vendor_boot=OK"},
	{"pd-factory-wrong", abSetOptions{}, func(t *testing.T, s *abSet) { s.values[pdFactory] = flipped(s.values[pdFactory]) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=ERROR_VERIFICATION vendor_boot=OK"},
	{"pd-factory-short", abSetOptions{}, func(t *testing.T, s *abSet) { s.values[pdFactory] = s.values[pdFactory][:16] }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=ERROR_INVALID_METADATA vendor_boot=OK"},
	{"pd-factory-byte", abSetOptions{}, func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "factory.img"), 10) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=ERROR_VERIFICATION vendor_boot=OK"},
	{"pd-cust-missing", abSetOptions{}, func(t *testing.T, s *abSet) { delete(s.values, pdCust) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=ERROR_VERIFICATION boot_a=OK factory=OK vendor_boot=OK"},
	{"pd-cust-missing-no-image", abSetOptions{}, func(t *testing.T, s *abSet) {
		delete(s.values, pdCust)
		os.Remove(filepath.Join(s.dir, "cust.img"))
	}, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=ERROR_VERIFICATION boot_a=OK factory=OK vendor_boot=OK"},
	{"pd-cust-no-image", abSetOptions{}, func(t *testing.T, s *abSet) { os.Remove(filepath.Join(s.dir, "cust.img")) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=ERROR_IO boot_a=OK factory=OK vendor_boot=OK"},
	{"pd-cust-wrong", abSetOptions{}, func(t *testing.T, s *abSet) { s.values[pdCust] = flipped(s.values[pdCust]) }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=ERROR_VERIFICATION boot_a=OK factory=OK vendor_boot=OK"},
	{"pd-cust-short", abSetOptions{}, func(t *testing.T, s *abSet) { s.values[pdCust] = s.values[pdCust][:8] }, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=ERROR_INVALID_METADATA boot_a=OK factory=OK vendor_boot=OK"},
	{"pd-factory-ab", abSetOptions{factoryAB: true}, nil, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory_a=ERROR_INVALID_METADATA vendor_boot=OK"},
	{"pd-factory-ab-no-suffix", abSetOptions{factoryAB: true}, func(t *testing.T, s *abSet) {
		for _, n := range []string{"vbmeta", "vbmeta_system", "boot", "system"} {
			rename(t, s.dir, n+"_a.img", n+".img")
		}
	}, "", "boot,vendor_boot,factory",
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK vbmeta:vbmeta_vendor=OK system=OK cust=OK boot=OK factory=OK vendor_boot=OK"},
	{"ab-long-boot", abSetOptions{longBoot: true}, nil, "_a", abLongBoot + ",vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK " + abLongBoot + "_a=ERROR_INVALID_METADATA factory=OK vendor_boot=OK"},
	{"ab-long-boot-no-suffix", abSetOptions{longBoot: true}, func(t *testing.T, s *abSet) {
		for _, n := range []string{"vbmeta", "vbmeta_system", "system"} {
			rename(t, s.dir, n+"_a.img", n+".img")
		}
		rename(t, s.dir, "boot_a.img", abLongBoot+".img")
	}, "", abLongBoot + ",vendor_boot,factory",
		"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK vbmeta:vbmeta_vendor=OK system=OK cust=OK " + abLongBoot + "=OK factory=OK vendor_boot=OK"},
	{"ab-long-chain", abSetOptions{longChain: true}, nil, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:" + abLongChain + "_a=ERROR_INVALID_METADATA vbmeta:vbmeta_vendor=OK cust=OK boot_a=OK factory=OK vendor_boot=OK"},
	{"boot-top-persistent", abSetOptions{}, bootTop, "", "boot",
		"vbmeta:boot=OK vbmeta:vbmeta_system=OK boot=OK system=OK"},
	{"boot-top-persistent-missing", abSetOptions{}, func(t *testing.T, s *abSet) {
		bootTop(t, s)
		delete(s.values, pdBoot)
	}, "", "boot",
		"vbmeta:boot=OK vbmeta:vbmeta_system=OK boot=ERROR_VERIFICATION system=OK"},
	{"pd-10-top-trees", abSetOptions{trees: 10}, nil, "_a", "boot,vendor_boot,factory", "vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=OK vendor_boot=OK" + abTrees(10)},
	{"pd-11-top-trees", abSetOptions{trees: 11}, nil, "_a", "boot,vendor_boot,factory", "vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust=OK boot_a=OK factory=OK vendor_boot=OK" + abTrees(10) + " t10=ERROR_INVALID_METADATA"},
	{"pd-cust-ab", abSetOptions{custAB: true}, nil, "_a", "boot,vendor_boot,factory",
		"vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK vbmeta:vbmeta_vendor=OK system_a=OK cust_a=ERROR_INVALID_METADATA boot_a=OK factory=OK vendor_boot=OK"},
}

func flipped(b []byte) []byte {
	c := slices.Clone(b)
	c[len(c)-1] ^= 0xff
	return c
}

// abValues are the harness's NAME:HEX arguments for the device's values.
func abValues(values map[string][]byte) string {
	var w []string
	for name, v := range values {
		if len(v) > 0 {
			w = append(w, name+":"+hex.EncodeToString(v))
		}
	}
	sort.Strings(w)
	if len(w) == 0 {
		return "-"
	}
	return strings.Join(w, " ")
}

// abView is the slot's verdict on what libavb decides: the vbmetas, the
// hash descriptors of the requested partitions, and what libavb checks of
// hashtree descriptors (a persistent digest). initialized: the hash
// partitions a locked device initializes count as OK (its verdict).
func abView(r *avb.SlotResult, requested []string, locked bool) avb.SlotVerifyResult {
	worst := avb.SlotOK
	more := func(x avb.SlotVerifyResult) {
		if x != avb.SlotOK && (worst == avb.SlotOK || x.Fatal() && !worst.Fatal()) {
			worst = x
		}
	}
	skipped := map[string]bool{}
	for _, v := range r.VBMetas {
		if v.NotLoadedByLibavb {
			skipped[v.Partition] = true
			continue
		}
		more(v.Result)
	}
	for _, p := range r.Partitions {
		if skipped[p.VBMeta] {
			continue
		}
		switch d := p.Descriptor.(type) {
		case *avb.HashDescriptor:
			if slices.Contains(requested, d.PartitionName) && !(locked && p.PersistentInit != nil) {
				more(p.Libavb)
			}
		case *avb.HashtreeDescriptor:
			more(p.Libavb)
		}
	}
	return worst
}

// TestVerifySlotABIsLibavbs: on every set of abCases, VerifySlot with the
// A/B suffix and the device's persistent values decides as libavb: its
// verdict on what libavb reads is libavb's unlocked, and locked (but
// where a locked device initializes a missing persistent digest, and
// writes exactly the digest VerifySlot says), its androidboot.vbmeta.digest
// is libavb's, and a worse verdict is a hashtree partition's.
func TestVerifySlotABIsLibavbs(t *testing.T) {
	ctx := context.Background()
	if out := os.Getenv(recordSlotSets); out != "" {
		recordABSets(t, out)
		return
	}
	rows, err := avbvectors.ReadTSV(slotABSetsFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]string{}
	for _, row := range rows {
		if len(row) != 8 {
			t.Fatalf("%s: row %q", slotABSetsFile, row)
		}
		byName[row[0]] = row
	}
	for _, tc := range abCases {
		t.Run(tc.name, func(t *testing.T) {
			row := byName[tc.name]
			if row == nil {
				t.Fatalf("%s: no row for %s (run testdata/libavb/record_slots.sh)", slotABSetsFile, tc.name)
			}
			values, locked, unlocked, digest, written := row[3], row[4], row[5], row[6], row[7]
			s := buildABSet(t, tc.set)
			if tc.damage != nil {
				tc.damage(t, s)
			}
			if got := abValues(s.values); got != values {
				t.Fatalf("the device's values %s, recorded with %s", got, values)
			}
			requested := strings.Split(tc.requested, ",")
			// libavb's top-level vbmeta: the vbmeta partition's, else boot's.
			top := filepath.Join(s.dir, "vbmeta"+tc.suffix+".img")
			if _, err := os.Stat(top); err != nil {
				if boot := filepath.Join(s.dir, "boot"+tc.suffix+".img"); fileExists(boot) {
					top = boot
				}
			}
			r, err := avb.VerifySlot(ctx, top, &avb.SlotImages{Dir: s.dir},
				&avb.SlotOptions{ABSuffix: tc.suffix, PersistentValues: s.values})
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(r); got != tc.want {
				t.Errorf("verdicts %s\nwant     %s", got, tc.want)
			}
			if got := abView(r, requested, false).String(); got != unlocked {
				t.Errorf("libavb's part of the verdict %s, libavb unlocked: %s (%s)", got, unlocked, verdicts(r))
			}
			if got := abView(r, requested, true).String(); got != locked {
				t.Errorf("libavb's part of the verdict locked %s, libavb locked: %s (%s)", got, locked, verdicts(r))
			}
			var inits []string
			for _, p := range r.Partitions {
				if d, ok := p.Descriptor.(*avb.HashDescriptor); ok && p.PersistentInit != nil && slices.Contains(requested, d.PartitionName) {
					inits = append(inits, p.PersistentName+"="+hex.EncodeToString(p.PersistentInit))
				}
			}
			if got := strings.Join(inits, ","); got != strings.TrimPrefix(written, "-") {
				t.Errorf("a locked device writes %q; libavb wrote %q", got, written)
			}
			if got := hex.EncodeToString(r.VBMetaDigest); digest != "-" && got != digest {
				t.Errorf("androidboot.vbmeta.digest %s, libavb's %s", got, digest)
			}
			if view := abView(r, requested, false); r.Result != view && !libavbLeavesAlone(r, requested) {
				t.Errorf("slot %s, libavb's part %s, and no partition libavb leaves alone says why: %s", r.Result, view, verdicts(r))
			}
		})
	}
}

// recordABSets writes the sets of abCases into out for record_slots.sh:
// each set's files, and cases.tsv (name, suffix, requested partitions,
// the device's persistent values).
func recordABSets(t *testing.T, out string) {
	var lines []string
	for _, tc := range abCases {
		s := buildABSet(t, tc.set)
		if tc.name == "ab-intact" {
			// record_slots.sh compares avbtool's set with it.
			if err := os.CopyFS(filepath.Join(out, "ab-base"), os.DirFS(s.dir)); err != nil {
				t.Fatal(err)
			}
		}
		if tc.damage != nil {
			tc.damage(t, s)
		}
		if err := os.CopyFS(filepath.Join(out, "ab", tc.name), os.DirFS(s.dir)); err != nil {
			t.Fatal(err)
		}
		suffix := tc.suffix
		if suffix == "" {
			suffix = "-"
		}
		lines = append(lines, strings.Join([]string{tc.name, suffix, tc.requested, abValues(s.values)}, "\t"))
	}
	if err := os.WriteFile(filepath.Join(out, "ab", "cases.tsv"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// libavbLeavesAlone says whether the slot's verdict, worse than libavb's
// part of it, is a partition's that libavb does not check: a hashtree one,
// or a hash partition not requested.
func libavbLeavesAlone(r *avb.SlotResult, requested []string) bool {
	for _, p := range r.Partitions {
		_, tree := p.Descriptor.(*avb.HashtreeDescriptor)
		h, hash := p.Descriptor.(*avb.HashDescriptor)
		if p.Result == r.Result && (tree || hash && !slices.Contains(requested, h.PartitionName)) {
			return true
		}
	}
	return false
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// abTrees is the verdicts of abSet's t00... partitions: " t00=OK ...".
func abTrees(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " t%02d=OK", i)
	}
	return b.String()
}
