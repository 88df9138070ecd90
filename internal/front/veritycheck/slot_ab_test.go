package veritycheck

// The whole-set check of one slot of an A/B device (--ab-suffix) and of
// persistent digests (--persistent-digest): an A/B set built through the
// avbtool front; libavb's own verdicts on such sets are avb's
// TestVerifySlotABIsLibavbs.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// slotABSet builds slot _a of an A/B device in a new directory: boot_a
// (hash footer), system_a (hashtree footer) in vbmeta_system_a (chained),
// vendor_boot (hash footer, --do_not_use_ab) and factory (a persistent
// digest, --do_not_use_ab) in vbmeta_a. It returns the directory and
// factory's digest, as the device would hold it.
func slotABSet(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	keys, err := filepath.Abs(filepath.Join(avbVectors, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(keys, filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	fronttest.Image(t, filepath.Join(dir, "boot_a.img"), 5*4096+1000, 1)
	fronttest.Image(t, filepath.Join(dir, "vendor_boot.img"), 3*4096, 2)
	fronttest.Image(t, filepath.Join(dir, "factory.img"), 2*4096+7, 3)
	fronttest.Image(t, filepath.Join(dir, "system_a.img"), 32*4096, 4)
	factory := fronttest.Read(t, filepath.Join(dir, "factory.img"))
	digest := sha256.Sum256(factory) // no salt with a persistent digest
	salt := "5eedf00d"
	avbtoolRun(t, dir, "add_hash_footer", "--image", "boot_a.img", "--partition_size", "131072", "--partition_name", "boot", "--salt", salt)
	avbtoolRun(t, dir, "add_hash_footer", "--image", "vendor_boot.img", "--partition_size", "131072", "--partition_name", "vendor_boot",
		"--salt", salt, "--do_not_use_ab")
	avbtoolRun(t, dir, "add_hash_footer", "--image", "factory.img", "--partition_size", "131072", "--partition_name", "factory",
		"--use_persistent_digest", "--do_not_use_ab")
	avbtoolRun(t, dir, "add_hashtree_footer", "--image", "system_a.img", "--partition_size", "524288", "--partition_name", "system",
		"--salt", salt, "--do_not_generate_fec")
	avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_system_a.img", "--include_descriptors_from_image", "system_a.img",
		"--rollback_index_location", "1", "--algorithm", "SHA256_RSA2048", "--key", "keys/rsa2048.pem")
	avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_a.img", "--include_descriptors_from_image", "boot_a.img",
		"--include_descriptors_from_image", "vendor_boot.img", "--include_descriptors_from_image", "factory.img",
		"--chain_partition", "vbmeta_system:1:keys/rsa2048.avbpubkey", "--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem")
	return dir, hex.EncodeToString(digest[:])
}

// slotABPartition is what the tests read of a partition's JSON.
type slotABPartition struct {
	Partition       string `json:"partition"`
	Result          string `json:"result"`
	Error           string `json:"error"`
	PersistentValue string `json:"persistent_value"`
	PersistentInit  string `json:"persistent_initial_digest"`
}

// slotABPartitions decodes the report's partitions, by name.
func slotABPartitions(t *testing.T, r vcResult) map[string]slotABPartition {
	t.Helper()
	var rep struct {
		Slot struct {
			ABSuffix   string            `json:"ab_suffix"`
			Partitions []slotABPartition `json:"partitions"`
		} `json:"avb_slot"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	ps := map[string]slotABPartition{}
	for _, p := range rep.Slot.Partitions {
		ps[p.Partition] = p
	}
	return ps
}

const slotABAllOK = "vbmeta:vbmeta_a=OK vbmeta:vbmeta_system_a=OK system_a=OK boot_a=OK factory=OK vendor_boot=OK"

func TestSlotABSuffix(t *testing.T) {
	dir, _ := slotABSet(t)
	top := filepath.Join(dir, "vbmeta_a.img")
	r := slotVerified(t, "--avb-slot", "--ab-suffix=_a", top)
	for _, want := range []string{`vbmeta "vbmeta_system_a" (` + filepath.Join(dir, "vbmeta_system_a.img") + `)`,
		`partition "boot_a" (` + filepath.Join(dir, "boot_a.img") + `)`, `partition "vendor_boot" (` + filepath.Join(dir, "vendor_boot.img") + `)`,
		`partition "factory"`, "persistent digest"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in:\n%v", want, r)
		}
	}
	r2, rep := slotJSONRun(t, "--avb-slot", "--ab-suffix", "_a", top)
	if r2.code != 0 || rep.words() != slotABAllOK || !strings.Contains(r2.stdout, `"ab_suffix": "_a"`) {
		t.Fatalf("%s\n%v", rep.words(), r2)
	}

	// Without the suffix, the chained vbmeta is vbmeta_system.img, which
	// is not there (libavb: ERROR_IO); the hint names --ab-suffix.
	r2, rep = slotJSONRun(t, "--avb-slot", top)
	if r2.code != 2 || !strings.HasPrefix(rep.words(), "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_IO") || !strings.Contains(rep.Hint, "--ab-suffix=_a") {
		t.Errorf("%s\n%v", rep.words(), r2)
	}

	// A partition named on the command line takes the name libavb reads.
	moved := filepath.Join(t.TempDir(), "kernel.img")
	if err := os.Rename(filepath.Join(dir, "boot_a.img"), moved); err != nil {
		t.Fatal(err)
	}
	slotVerified(t, "--avb-slot", "--ab-suffix=_a", "--partition", "boot_a="+moved, top)
	r2, rep = slotJSONRun(t, "--avb-slot", "--ab-suffix=_a", "--partition", "boot="+moved, top)
	if r2.code != 2 || !strings.Contains(rep.words(), "boot_a=ERROR_IO") {
		t.Errorf("%s\n%v", rep.words(), r2)
	}
	if err := os.Rename(moved, filepath.Join(dir, "boot_a.img")); err != nil {
		t.Fatal(err)
	}

	// --do_not_use_ab: vendor_boot is read without the suffix, whatever
	// the slot.
	if err := os.Rename(filepath.Join(dir, "vendor_boot.img"), filepath.Join(dir, "vendor_boot_a.img")); err != nil {
		t.Fatal(err)
	}
	r2, rep = slotJSONRun(t, "--avb-slot", "--ab-suffix=_a", top)
	if r2.code != 2 || !strings.Contains(rep.words(), "vendor_boot=ERROR_IO") {
		t.Errorf("%s\n%v", rep.words(), r2)
	}

	for _, bad := range [][]string{{"--ab-suffix="}, {"--ab-suffix=_a/b"}, {"--persistent-digest", "factory"},
		{"--persistent-digest", "factory=xyz"}, {"--persistent-digest", "=00"}, {"--persistent-digest", "f=00", "--persistent-digest", "f=01"}} {
		r := vcRun(append(append([]string{"--avb-slot"}, bad...), top)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "veritycheck: ") {
			t.Errorf("%v: %v", bad, r)
		}
	}
}

func TestSlotPersistentDigest(t *testing.T) {
	dir, digest := slotABSet(t)
	top := filepath.Join(dir, "vbmeta_a.img")
	run := func(value string) (vcResult, slotABPartition) {
		r := vcRun("--json", "--avb-slot", "--ab-suffix=_a", "--persistent-digest", "factory="+value, top)
		return r, slotABPartitions(t, r)["factory"]
	}
	// The device's value is the image's digest.
	r, p := run(digest)
	if r.code != 0 || p.Result != "OK" || p.PersistentValue != avb.PersistentDigestPrefix+"factory" || p.PersistentInit != "" {
		t.Errorf("%+v\n%v", p, r)
	}
	// None held: an unlocked device refuses it, a locked one writes the
	// image's digest there (the report says which).
	r, p = run("")
	if r.code != 1 || p.Result != "ERROR_VERIFICATION" || p.PersistentInit != digest || !strings.Contains(p.Error, "holds no persistent value avb.persistent_digest.factory") {
		t.Errorf("%+v\n%v", p, r)
	}
	// Another value.
	wrong := "0" + digest[1:]
	if wrong == digest {
		wrong = "1" + digest[1:]
	}
	r, p = run(wrong)
	if r.code != 1 || p.Result != "ERROR_VERIFICATION" || p.PersistentInit != "" || !strings.Contains(p.Error, digest) {
		t.Errorf("%+v\n%v", p, r)
	}
	// The value's own name is taken too.
	r = vcRun("--json", "--avb-slot", "--ab-suffix=_a", "--persistent-digest", avb.PersistentDigestPrefix+"factory="+digest, top)
	if p := slotABPartitions(t, r)["factory"]; r.code != 0 || p.Result != "OK" {
		t.Errorf("%+v\n%v", p, r)
	}
	// A value of another size than the digest's.
	r, p = run(digest[:32])
	if r.code != 2 || p.Result != "ERROR_INVALID_METADATA" {
		t.Errorf("%+v\n%v", p, r)
	}
	// The image's data damaged, the value the device's.
	spoilByte(t, filepath.Join(dir, "factory.img"), 100)
	r, p = run(digest)
	if r.code != 1 || p.Result != "ERROR_VERIFICATION" {
		t.Errorf("%+v\n%v", p, r)
	}
	// Without --persistent-digest the value is not known: not decided.
	if r := vcRun("--avb-slot", "--ab-suffix=_a", top); r.code != 0 || !strings.Contains(r.stdout, "persistent digest: the device holds it") {
		t.Errorf("%v", r)
	}
}
