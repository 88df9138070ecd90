package veritycheck

// The whole-set check (--avb-slot): a device set built through the avbtool
// front (boot with a hash footer, system and vendor with hashtree footers
// and FEC, vbmeta_system chained with system's descriptors, the top-level
// vbmeta with boot's and vendor's, padded), intact, then damaged piece by
// piece; each partition's verdict asserted.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// avbtoolRun runs the avbtool front in dir (and comes back); it fails the test unless it
// exits 0, and returns its stdout.
func avbtoolRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	back, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(back)
	var stdout, stderr bytes.Buffer
	if code := avbtool.Main(context.Background(), "avbtool", args, &stdout, &stderr); code != 0 {
		t.Fatalf("avbtool %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// slotSet builds the device set in a new directory, with the keys beside
// it, and returns the directory.
func slotSet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	keys, err := filepath.Abs(filepath.Join(avbVectors, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(keys, filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	fronttest.Image(t, filepath.Join(dir, "boot.img"), 5*4096+1000, 1)
	fronttest.Image(t, filepath.Join(dir, "system.img"), 64*4096, 2)
	fronttest.Image(t, filepath.Join(dir, "vendor.img"), 24*4096, 3)
	salt := "5eedf00d0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4"
	avbtoolRun(t, dir, "add_hash_footer", "--image", "boot.img", "--partition_size", "131072", "--partition_name", "boot",
		"--salt", salt, "--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem")
	avbtoolRun(t, dir, "add_hashtree_footer", "--image", "system.img", "--partition_size", "524288", "--partition_name", "system",
		"--hash_algorithm", "sha256", "--salt", salt)
	avbtoolRun(t, dir, "add_hashtree_footer", "--image", "vendor.img", "--partition_size", "262144", "--partition_name", "vendor",
		"--hash_algorithm", "sha256", "--salt", salt)
	avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_system.img", "--include_descriptors_from_image", "system.img",
		"--rollback_index", "4", "--rollback_index_location", "1", "--padding_size", "4096", "--algorithm", "SHA256_RSA2048", "--key", "keys/rsa2048.pem")
	avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta.img", "--include_descriptors_from_image", "boot.img",
		"--include_descriptors_from_image", "vendor.img", "--chain_partition", "vbmeta_system:1:keys/rsa2048.avbpubkey",
		"--rollback_index", "9", "--padding_size", "4096", "--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem")
	return dir
}

// slotReport is the part of the --json report the tests look at.
type slotReport struct {
	Verified bool `json:"verified"`
	Slot     struct {
		Result       string `json:"result"`
		VBMetaDigest string `json:"vbmeta_digest"`
		VBMetas      []struct {
			Partition string `json:"partition"`
			Result    string `json:"result"`
			Error     string `json:"error"`
		} `json:"vbmetas"`
		Partitions []struct {
			Partition         string    `json:"partition"`
			Type              string    `json:"type"`
			Result            string    `json:"result"`
			Missing           bool      `json:"missing"`
			CorruptDataBlocks *uint64   `json:"corrupt_data_blocks"`
			CorruptHashBlocks *uint64   `json:"corrupt_hash_blocks"`
			Repairable        bool      `json:"repairable"`
			Repaired          bool      `json:"repaired"`
			Problems          []problem `json:"problems"`
			FEC               *struct {
				FECRoots        int  `json:"fec_roots"`
				Repairable      bool `json:"repairable"`
				RepairableCount int  `json:"repairable_count"`
			} `json:"fec"`
		} `json:"partitions"`
	} `json:"avb_slot"`
	Error string `json:"error"`
	Hint  string `json:"hint"`
}

// slotJSONRun runs veritycheck --json with args and decodes its one
// report strictly.
func slotJSONRun(t *testing.T, args ...string) (vcResult, *slotReport) {
	t.Helper()
	r := vcRun(append([]string{"--json"}, args...)...)
	var rep slotReport
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	var rest any
	if err := dec.Decode(&rest); err != nil || dec.More() {
		t.Fatalf("not one JSON object (%v):\n%v", err, r)
	}
	return r, &rep
}

// slotWords is the report's verdicts: "vbmeta:NAME=RESULT ... NAME=RESULT".
func (rep *slotReport) words() string {
	var w []string
	for _, v := range rep.Slot.VBMetas {
		w = append(w, "vbmeta:"+v.Partition+"="+v.Result)
	}
	for _, p := range rep.Slot.Partitions {
		w = append(w, p.Partition+"="+p.Result)
	}
	return strings.Join(w, " ")
}

func spoilByte(t *testing.T, path string, off int64) {
	t.Helper()
	b := fronttest.Read(t, path)
	b[off] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const slotAllOK = "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK"

func TestSlotIntact(t *testing.T) {
	dir := slotSet(t)
	top := filepath.Join(dir, "vbmeta.img")
	r := slotVerified(t, "--avb-slot", top)
	if !strings.Contains(r.stdout, "verified: 2 vbmetas and 3 partitions") || strings.Count(r.stdout, ": OK") != 5 {
		t.Errorf("report:\n%v", r)
	}
	// A vbmeta image given alone is the same check of the set beside it.
	if alone := vcRun(top); alone.code != 0 || alone.stdout != r.stdout {
		t.Errorf("alone:\n%v\nwith --avb-slot:\n%v", alone, r)
	}
	_, rep := slotJSONRun(t, "--avb-slot", "--avb-key", filepath.Join(avbVectors, "keys/rsa4096.pub.pem"), top, dir)
	if !rep.Verified || rep.Slot.Result != "OK" || rep.words() != slotAllOK {
		t.Fatalf("%+v", rep)
	}
	// androidboot.vbmeta.digest is avbtool calculate_vbmeta_digest's.
	want := strings.TrimSpace(avbtoolRun(t, dir, "calculate_vbmeta_digest", "--image", "vbmeta.img"))
	if rep.Slot.VBMetaDigest != want {
		t.Errorf("vbmeta digest %s, avbtool front's %s", rep.Slot.VBMetaDigest, want)
	}
	// Every tree was checked: each hashtree partition has its counts.
	for _, p := range rep.Slot.Partitions {
		if (p.Type == "hashtree") != (p.CorruptDataBlocks != nil) {
			t.Errorf("%s: %s with counts %v", p.Partition, p.Type, p.CorruptDataBlocks)
		}
	}
}

func TestSlotDamage(t *testing.T) {
	keys, err := filepath.Abs(filepath.Join(avbVectors, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	tree := func(t *testing.T, path string) *avb.HashtreeDescriptor {
		img, err := avb.ReadImage(path)
		if err != nil {
			t.Fatal(err)
		}
		return img.VBMeta.FirstHashtree()
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		args   []string
		code   int
		want   string
	}{
		{"boot-byte", func(t *testing.T, dir string) { spoilByte(t, filepath.Join(dir, "boot.img"), 4096+17) }, nil, 1,
			"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=ERROR_VERIFICATION vendor=OK"},
		{"system-data", func(t *testing.T, dir string) { spoilByte(t, filepath.Join(dir, "system.img"), 10*4096+1) }, nil, 1,
			"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=ERROR_VERIFICATION boot=OK vendor=OK"},
		{"vendor-tree", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "vendor.img")
			spoilByte(t, p, int64(tree(t, p).TreeOffset)+3)
		}, nil, 1, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=ERROR_VERIFICATION"},
		{"chain-key-swapped", func(t *testing.T, dir string) {
			avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_system.img", "--include_descriptors_from_image", "system.img",
				"--rollback_index", "4", "--rollback_index_location", "1", "--padding_size", "4096", "--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem")
		}, nil, 1, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_PUBLIC_KEY_REJECTED system=OK boot=OK vendor=OK"},
		{"descriptor-digest", func(t *testing.T, dir string) {
			// A byte of boot's digest where the top-level vbmeta holds it.
			img, err := avb.ReadImage(filepath.Join(dir, "boot.img"))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "vbmeta.img")
			i := bytes.Index(fronttest.Read(t, p), img.VBMeta.Partition().FirstHash.Digest)
			if i < 0 {
				t.Fatal("boot's digest is not in vbmeta.img")
			}
			spoilByte(t, p, int64(i))
		}, nil, 1, "vbmeta:vbmeta=ERROR_VERIFICATION vbmeta:vbmeta_system=OK system=OK boot=ERROR_VERIFICATION vendor=OK"},
		{"top-key-other", nil, []string{"--avb-key", filepath.Join(keys, "rsa2048.pem")}, 1,
			"vbmeta:vbmeta=ERROR_PUBLIC_KEY_REJECTED vbmeta:vbmeta_system=OK system=OK boot=OK vendor=OK"},
		{"rollback", nil, []string{"--rollback-index", "1=5", "--rollback-index", "0=9"}, 1,
			"vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_ROLLBACK_INDEX system=OK boot=OK vendor=OK"},
		{"vendor-missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "vendor.img")) }, nil, 2,
			"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=ERROR_IO"},
		{"vendor-missing-allowed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "vendor.img")) }, []string{"--allow-missing"}, 0,
			"vbmeta:vbmeta=OK vbmeta:vbmeta_system=OK system=OK boot=OK vendor=ERROR_IO"},
		{"vendor-elsewhere", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "vendor.img"), filepath.Join(dir, "v.bin")); err != nil {
				t.Fatal(err)
			}
		}, []string{"--partition", "vendor=v.bin"}, 0, slotAllOK},
		{"chained-chains", func(t *testing.T, dir string) {
			// libavb follows chain descriptors of the top-level vbmeta only.
			avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_system.img", "--include_descriptors_from_image", "system.img",
				"--chain_partition", "vbmeta:2:keys/rsa4096.avbpubkey",
				"--rollback_index", "4", "--rollback_index_location", "1", "--padding_size", "4096", "--algorithm", "SHA256_RSA2048", "--key", "keys/rsa2048.pem")
		}, nil, 2, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_INVALID_METADATA boot=OK vendor=OK"},
		{"chained-flags", func(t *testing.T, dir string) {
			avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_system.img", "--include_descriptors_from_image", "system.img",
				"--set_hashtree_disabled_flag",
				"--rollback_index", "4", "--rollback_index_location", "1", "--padding_size", "4096", "--algorithm", "SHA256_RSA2048", "--key", "keys/rsa2048.pem")
		}, nil, 2, "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_INVALID_METADATA boot=OK vendor=OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := slotSet(t)
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			t.Chdir(dir)
			args := append(append([]string{"--avb-slot"}, tc.args...), "vbmeta.img")
			r, rep := slotJSONRun(t, args...)
			if r.code != tc.code || rep.words() != tc.want || rep.Verified != (tc.code == 0) {
				t.Fatalf("exit %d, %s; want %d, %s\n%v", r.code, rep.words(), tc.code, tc.want, r)
			}
			if tc.code != 0 && (rep.Error == "" || !strings.Contains(r.stderr, rep.Error)) {
				t.Errorf("error %q, stderr %q", rep.Error, r.stderr)
			}
			// The text report says the same, a line for each.
			text := vcRun(args...)
			if text.code != tc.code {
				t.Errorf("text: exit %d\n%v", text.code, text)
			}
			for _, w := range strings.Fields(tc.want) {
				name, result, _ := strings.Cut(strings.TrimPrefix(w, "vbmeta:"), "=")
				kind := "partition"
				if strings.HasPrefix(w, "vbmeta:") {
					kind = "vbmeta"
				}
				if !strings.Contains(text.stdout, "avb-slot: "+kind+" \""+name+"\"") || !strings.Contains(text.stdout, ": "+result) {
					t.Errorf("text report lacks %s %s %s:\n%v", kind, name, result, text)
				}
			}
		})
	}
}

func TestSlotRepair(t *testing.T) {
	dir := slotSet(t)
	t.Chdir(dir)
	sys := filepath.Join(dir, "system.img")
	orig := fronttest.Read(t, sys)
	spoilByte(t, sys, 20*4096+9)
	ht := func() uint64 {
		img, err := avb.ReadImage(sys)
		if err != nil {
			t.Fatal(err)
		}
		return img.VBMeta.FirstHashtree().TreeOffset
	}()
	spoilByte(t, sys, int64(ht)+100)
	r, rep := slotJSONRun(t, "vbmeta.img")
	p := rep.Slot.Partitions[0]
	if r.code != 1 || p.Partition != "system" || !p.Repairable || p.Repaired || *p.CorruptDataBlocks != 1 || *p.CorruptHashBlocks != 1 || len(p.Problems) != 2 {
		t.Fatalf("%+v\n%v", p, r)
	}
	if p.FEC == nil || p.FEC.FECRoots != 2 || !p.FEC.Repairable || p.FEC.RepairableCount != 2 {
		t.Errorf("fec: %+v", p.FEC)
	}
	if !strings.Contains(rep.Hint, "--repair") {
		t.Errorf("hint %q", rep.Hint)
	}
	r = vcRun("--repair", "vbmeta.img")
	if r.code != 0 || !strings.Contains(r.stdout, "once repaired") {
		t.Fatalf("%v", r)
	}
	if !bytes.Equal(fronttest.Read(t, sys), orig) {
		t.Error("system.img is not as it was made")
	}
	slotVerified(t, "vbmeta.img")
}

// slotVerified runs veritycheck and fails the test unless it exits 0 and
// ends its report with "verified: ...".
func slotVerified(t *testing.T, args ...string) vcResult {
	t.Helper()
	r := vcRun(args...)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || !strings.HasPrefix(lines[len(lines)-1], "verified: ") || r.stderr != "" {
		t.Fatalf("want exit 0 and \"verified: ...\", got:\n%v", r)
	}
	return r
}

// A vbmeta image alone, without its partitions' images: the vbmeta is
// checked, each partition named, the missing ones exit 2 (or are only
// reported with --allow-missing).
func TestSlotVBMetaAlone(t *testing.T) {
	dir := slotSet(t)
	alone := t.TempDir()
	top := filepath.Join(alone, "vbmeta.img")
	if err := os.WriteFile(top, fronttest.Read(t, filepath.Join(dir, "vbmeta.img")), 0o644); err != nil {
		t.Fatal(err)
	}
	r, rep := slotJSONRun(t, top)
	const want = "vbmeta:vbmeta=OK vbmeta:vbmeta_system=ERROR_IO boot=ERROR_IO vendor=ERROR_IO"
	if r.code != 2 || rep.words() != want || !strings.Contains(rep.Hint, "--allow-missing") {
		t.Fatalf("%s\n%v", rep.words(), r)
	}
	r = vcRun("--allow-missing", top)
	// A chained vbmeta that is not there is still libavb's ERROR_IO.
	if r.code != 2 || !strings.Contains(r.stdout, "not checked, --allow-missing") {
		t.Errorf("%v", r)
	}
	// boot.img as the top-level vbmeta (a device without a vbmeta
	// partition) verifies; alone, it is still the one-image check.
	boot := filepath.Join(dir, "boot.img")
	if r := slotVerified(t, "--avb-slot", boot); !strings.Contains(r.stdout, `vbmeta "boot"`) {
		t.Errorf("%v", r)
	}
	if r := slotVerified(t, boot); !strings.Contains(r.stdout, "avb: check: hash descriptor 1: matches") {
		t.Errorf("%v", r)
	}
	// --repair over a set's images, one at a time: boot.img is checked
	// (it has no parity), vbmeta.img is the set's check.
	if r := vcRun("--repair", boot); r.code != 0 || !strings.Contains(r.stderr, "no parity to rebuild blocks from: it is only checked") {
		t.Errorf("%v", r)
	}
	if r := vcRun("--repair", filepath.Join(dir, "vbmeta.img")); r.code != 0 || !strings.Contains(r.stdout, "\nverified: 2 vbmetas and 3 partitions") {
		t.Errorf("%v", r)
	}
}

func TestSlotUsage(t *testing.T) {
	dir := slotSet(t)
	top := filepath.Join(dir, "vbmeta.img")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--avb-slot", "--partition", "system", top}, "is not NAME=PATH"},
		{[]string{"--avb-slot", "--partition", "a=1", "--partition", "a=2", top}, "twice"},
		{[]string{"--avb-slot", "--rollback-index", "40=1", top}, "locations 0 to 31"},
		{[]string{"--avb-slot", "--rollback-index", "x", top}, "is not LOCATION=INDEX"},
		{[]string{"--avb-slot", "--root-hash", strings.Repeat("ab", 32), top}, "--root-hash does not go with --avb-slot"},
		{[]string{"--avb-slot", top, top}, "is not a directory"},
		{[]string{"--avb-slot"}, "got 0 arguments"},
		{[]string{"--avb-slot", "--avb-key", filepath.Join(dir, "nothere.pem"), top}, "does not exist"},
	} {
		r := vcRun(tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("want exit 2 and %q:\n%v", tc.want, r)
		}
		// --json gives one object with the error.
		_, rep := slotJSONRun(t, tc.args...)
		if !strings.Contains(rep.Error, tc.want) {
			t.Errorf("--json: error %q", rep.Error)
		}
	}
	if h := vcRun("--help"); !strings.Contains(h.stdout, "--avb-slot VBMETA [DIR]") || !strings.Contains(h.stdout, "--rollback-index LOCATION=INDEX") {
		t.Errorf("--help does not describe --avb-slot")
	}
}

// The build's images are Android sparse by default: a sparse system.img
// in the set is checked through its expansion, and --repair does not
// write into it.
func TestSlotSparse(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	dir := slotSet(t)
	t.Chdir(dir)
	if out, err := exec.Command(img2simg, "system.img", "system.simg").CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	if err := os.Rename("system.simg", "system.img"); err != nil {
		t.Fatal(err)
	}
	// As for one image, stderr says what the sparse image expands to.
	if r := vcRun("vbmeta.img"); r.code != 0 || !strings.Contains(r.stdout, "\nverified: ") || !strings.Contains(r.stderr, "system.img is an Android sparse image") {
		t.Fatalf("%v", r)
	}
	b := fronttest.Read(t, "system.img")
	b[sparseOffset(t, b, 7*4096+5)] ^= 1
	if err := os.WriteFile("system.img", b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, rep := slotJSONRun(t, "--repair", "vbmeta.img")
	p := rep.Slot.Partitions[0]
	if r.code != 1 || p.Partition != "system" || p.Result != "ERROR_VERIFICATION" || p.Repaired || len(p.Problems) != 1 || p.Problems[0].Index != 7 {
		t.Fatalf("%+v\n%v", p, r)
	}
	if !bytes.Equal(fronttest.Read(t, "system.img"), b) {
		t.Error("the sparse system.img was written")
	}
}

// TestSlotMemoryCrafted: a set as large as libavb loads (a top-level
// vbmeta chaining to 31 vbmetas of 60 KiB, each naming 300 partitions of
// its own, none of whose images is there) is checked in bounded memory,
// text and JSON.
func TestSlotMemoryCrafted(t *testing.T) {
	testtool.Long(t, "veritycheck built and measured")
	const maxRSS = 64 << 20
	dir := t.TempDir()
	check := testtool.BuildCommand(t, dir, "./cmd/veritycheck")
	launcher := testtool.BuildLauncher(t, dir)
	set := filepath.Join(dir, "set")
	if err := os.Mkdir(set, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key, err := avb.LoadPrivateKey(ctx, filepath.Join(avbVectors, "keys/rsa4096.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pub := fronttest.Read(t, filepath.Join(avbVectors, "keys/rsa4096.avbpubkey"))
	var chains []avb.Descriptor
	named := 0
	for c := range 31 {
		var ds []avb.Descriptor
		size := 4096
		for i := 0; size < 60<<10; i++ {
			d := &avb.HashtreeDescriptor{PartitionName: "p" + strconv.Itoa(c) + "_" + strconv.Itoa(i), HashAlgorithm: "sha256",
				DataBlockSize: 4096, HashBlockSize: 4096, ImageSize: 4096, RootDigest: make([]byte, 32)}
			ds = append(ds, d)
			size += len(d.Encode())
		}
		named += len(ds)
		b, err := avb.MakeVBMeta(&avb.VBMetaOptions{Algorithm: "SHA256_RSA4096", Key: key, RollbackIndexLocation: 1, Descriptors: ds})
		if err != nil {
			t.Fatal(err)
		}
		name := "vbmeta_c" + strconv.Itoa(c)
		if err := os.WriteFile(filepath.Join(set, name+".img"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		chains = append(chains, &avb.ChainPartitionDescriptor{PartitionName: name, RollbackIndexLocation: 1, PublicKey: pub})
	}
	top, err := avb.MakeVBMeta(&avb.VBMetaOptions{Algorithm: "SHA256_RSA4096", Key: key, Descriptors: chains})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(set, "vbmeta.img"), top, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--allow-missing"}, {"--allow-missing", "--json"}} {
		var stdout, stderr bytes.Buffer
		code, rss := testtool.RunMeasured(t, launcher, &stdout, &stderr, check, append(append([]string{"--no-progress"}, args...), filepath.Join(set, "vbmeta.img"))...)
		if code != 0 || strings.Count(stdout.String(), "ERROR_IO") != named {
			t.Fatalf("%v: exit %d, %d partitions named, %d missing reported\n%s", args, code, named, strings.Count(stdout.String(), "ERROR_IO"), tail(stderr.String()))
		}
		if rss > maxRSS {
			t.Errorf("%v: peak RSS %d MiB, want < %d MiB", args, rss>>20, maxRSS>>20)
		} else {
			t.Logf("%v: %d partitions, peak RSS %.1f MiB", args, named, float64(rss)/(1<<20))
		}
	}
}
