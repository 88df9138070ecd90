package veritygen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/avbvectors/signhelper"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

func TestMain(m *testing.M) {
	signhelper.Main() // the cases' ./helper.py
	os.Exit(m.Run())
}

// nativeNames are veritygen's names of avbtool's options where they are
// not avbtool's with dashes.
var nativeNames = map[string]string{
	"algorithm": "avb-algorithm", "key": "avb-key", "hash_algorithm": "hash", "flags": "vbmeta-flags",
	"internal_release_string": "release-string", "block_size": "data-block-size", "generate_dm_verity_cmdline_from_hashtree": "setup-rootfs-from-kernel",
	"fec_num_roots": "fec-roots",
}

// fromAvbtoolArgs turns an avbtool add_hash_footer or make_vbmeta_image command
// line into veritygen's, and names the file it writes; ok is false for
// one that only prints (or writes to stdout), which --avb=hash and
// --avb=vbmeta do not take the same way.
func fromAvbtoolArgs(args []string) (out []string, target string, ok bool) {
	switch args[0] {
	case "add_hash_footer":
		out = []string{"--append", "--avb=hash"}
	case "make_vbmeta_image":
		out = []string{"--avb=vbmeta"}
	case "add_hashtree_footer":
		// avbtool's defaults where veritygen's differ: sha1, FEC.
		out = []string{"--append", "--avb", "--hash=sha1"}
		if !slices.Contains(args, "--do_not_generate_fec") {
			out = append(out, "--fec")
		}
	default:
		return nil, "", false
	}
	for i := 1; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			return nil, "", false
		}
		// --name=value: the value is taken as if it came next.
		if n, v, isPair := strings.Cut(name, "="); isPair {
			args = slices.Insert(slices.Clone(args), i+1, v)
			name = n
		}
		switch name {
		case "print_required_libavb_version", "calc_max_image_size":
			return nil, "", false
		case "do_not_generate_fec":
			continue
		case "dynamic_partition_size", "do_not_append_vbmeta_image", "use_persistent_digest", "do_not_use_ab",
			"set_hashtree_disabled_flag", "check_at_most_once", "setup_as_rootfs_from_kernel", "no_hashtree":
			out = append(out, "--"+strings.ReplaceAll(name, "_", "-"))
			continue
		}
		i++
		value := args[i]
		switch {
		case name == "image" || name == "output":
			if value == "-" {
				return nil, "", false
			}
			target = value
			continue
		case name == "fec_num_roots" && !slices.Contains([]string{"2", "8", "24"}, value):
			// veritygen's --fec-roots takes the kernel's 2 to 24 (0 is its
			// default); avbtool hands any number to AOSP's fec, which
			// refuses 0 and makes 1 to 254 (the vectors hold 0, 1, 25
			// besides 2, 8 and 24).
			return nil, "", false
		}
		if n, ok := nativeNames[name]; ok {
			name = n
		}
		out = append(out, "--"+strings.ReplaceAll(name, "_", "-")+"="+value)
	}
	return append(out, target), target, target != ""
}

// TestNativeAVBMatchesAvbtool replays avbtool 1.3.0's recorded
// add_hash_footer, make_vbmeta_image and add_hashtree_footer runs
// (avb/testdata/vectors2) through --avb=hash, --avb=vbmeta and --avb with
// the same options, veritygen's
// spelling: the same exit (0 or not) and, when avbtool succeeded, every
// file byte for byte.
func TestNativeAVBMatchesAvbtool(t *testing.T) {
	ran := map[string]int{}
	cases, err := avbvectors.Cases2()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		args, target, ok := fromAvbtoolArgs(c.Args)
		if !ok {
			continue
		}
		// -short: of the signing helper's cases (each runs the test binary
		// again as the helper, and the avbtool front replays them all
		// through the same signer), one through stdin, one with files, one
		// that fails.
		if testing.Short() && strings.HasPrefix(c.Name, "sh-") && !slices.Contains([]string{"sh-stdin", "sh-files", "sh-fail"}, c.Name) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			avbvectors.WorkDir2(t, &c)
			for k, v := range c.Env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), args, &stdout, &stderr, &stderr)
			if (code == 0) != (c.Exit == 0) {
				t.Fatalf("veritygen %s: exit %d, avbtool %d\nstderr: %s\navbtool's: %s", strings.Join(args, " "), code, c.Exit, stderr.String(), c.Stderr)
			}
			if c.Exit != 0 {
				return
			}
			for name, want := range c.Outputs {
				b, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				if got := hex.EncodeToString(sum[:]); got != want.SHA256 || int64(len(b)) != want.Size {
					t.Errorf("%s: %d bytes, sha256 %s; avbtool wrote %d bytes, %s", name, len(b), got, want.Size, want.SHA256)
				}
			}
			if _, ok := c.Outputs[target]; !ok && c.Exit == 0 && c.Args[0] == "make_vbmeta_image" {
				t.Errorf("the case records no %s", target)
			}
		})
		ran[c.Args[0]]++
		if slices.Contains(args, "--fec") {
			ran["add_hashtree_footer with FEC"]++
		}
	}
	// The vectors hold dozens of each: a change that made fromAvbtoolArgs skip
	// them all must fail.
	for verb, least := range map[string]int{"add_hash_footer": 20, "make_vbmeta_image": 20, "add_hashtree_footer": 15,
		"add_hashtree_footer with FEC": 10} {
		if ran[verb] < least {
			t.Errorf("only %d %s cases replayed", ran[verb], verb)
		}
	}
}

// TestNativeAVBReport: the reports say what was written, in text and in
// JSON, for --avb=hash and --avb=vbmeta.
func TestNativeAVBReport(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	boot := filepath.Join(dir, "boot.img")
	if err := os.WriteFile(boot, bytes.Repeat([]byte{7}, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(fronttest.AVBVectors, "keys")
	var stdout, stderr bytes.Buffer
	args := []string{"--append", "--avb=hash", "--json", "--partition-size=131072", "--partition-name=boot", "--salt=00",
		"--avb-algorithm=SHA256_RSA2048", "--avb-key=" + keys + "/rsa2048.pem", "boot.img"}
	if code := run(t.Context(), args, &stdout, &stderr, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var hr hashFooterResult
	if err := json.Unmarshal(stdout.Bytes(), &hr); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(append([]byte{0}, bytes.Repeat([]byte{7}, 10000)...))
	if hr.Digest != hex.EncodeToString(want[:]) || hr.OriginalSize != 10000 || hr.ImageSize != 131072 ||
		hr.PartitionName != "boot" || hr.VBMeta.Algorithm != "SHA256_RSA2048" || hr.Footer == nil {
		t.Errorf("report %+v: want digest sha256(salt+image) %x of 10000 bytes in 131072", hr, want)
	}
	stdout.Reset()
	args = []string{"--avb=vbmeta", "--json", "--include-descriptors-from-image=boot.img", "--padding-size=4096", "vbmeta.img"}
	if code := run(t.Context(), args, &stdout, &stderr, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var vr vbmetaResult
	if err := json.Unmarshal(stdout.Bytes(), &vr); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile("vbmeta.img")
	if err != nil {
		t.Fatal(err)
	}
	blob := img[:vr.VBMeta.Size]
	sum := sha256.Sum256(blob)
	if vr.ImageSize != 4096 || len(img) != 4096 || vr.VBMeta.Descriptors != 1 || vr.VBMetaDigest != hex.EncodeToString(sum[:]) {
		t.Errorf("report %+v of a %d-byte vbmeta.img", vr, len(img))
	}
}

// TestNativeAVBRefusals: what --avb=hash and --avb=vbmeta refuse exits 2
// with one line naming the mistake, nothing written.
func TestNativeAVBRefusals(t *testing.T) {
	keys := filepath.Join(fronttest.AVBVectors, "keys")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown kind", []string{"--avb=hashes", "x.img"}, "--avb=hashes: not a kind"},
		{"hash without append", []string{"--avb=hash", "--partition-size=131072", "x.img"}, "it needs --append"},
		{"hash without size", []string{"--append", "--avb=hash", "x.img"}, "needs the partition's size"},
		{"fec with hash", []string{"--append", "--avb=hash", "--fec", "--partition-size=131072", "x.img"}, "--fec does not apply to --avb=hash"},
		{"vbmeta with append", []string{"--append", "--avb=vbmeta", "x.img"}, "--avb=vbmeta writes a new vbmeta image"},
		{"vbmeta with partition size", []string{"--avb=vbmeta", "--partition-size=131072", "x.img"}, "--partition-size does not apply to --avb=vbmeta"},
		{"padding with hashtree", []string{"--append", "--avb", "--padding-size=4096", "x.img"}, "--padding-size does not apply to --avb=hashtree"},
		{"two chains, one location", []string{"--avb=vbmeta", "--chain-partition=a:1:" + keys + "/rsa2048.avbpubkey",
			"--chain-partition=b:1:" + keys + "/rsa2048.avbpubkey", "x.img"}, "rollback index location 1 is already that of a:1:"},
		{"chain at location 0", []string{"--avb=vbmeta", "--chain-partition=a:0:" + keys + "/rsa2048.avbpubkey", "x.img"}, "location 0 is the top-level vbmeta's"},
		{"helper without key", []string{"--avb=vbmeta", "--avb-algorithm=SHA256_RSA2048", "--signing-helper=/bin/false", "x.img"}, "a signing helper needs --avb-key"},
		{"helper without algorithm", []string{"--avb=vbmeta", "--signing-helper=/bin/false", "x.img"}, "without --avb-algorithm"},
		{"root hash file", []string{"--avb=vbmeta", "--root-hash-file=r", "x.img"}, "--root-hash-file does not apply to --avb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), c.args, &stdout, &stderr, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if code != 2 || !strings.Contains(first, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), c.want)
			}
			if entries, _ := os.ReadDir("."); len(entries) != 0 {
				t.Errorf("left %v behind", entries)
			}
		})
	}
}
