package veritycheck

// veritycheck on the crafted images of internal/avbcraft decides as libavb
// does (the bootloader is the authority): its exit codes against
// avb_slot_verify's results on the same images, recorded from libavb
// (avb/testdata/libavb/slot_verify.tsv), and its messages.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/avbcraft"
	"github.com/veritytree/veritytree/internal/avbvectors"
)

const craftKeys = avbVectors + "/keys"

func craftImage(t *testing.T, name string) string {
	t.Helper()
	c := avbcraft.ByName(name)
	if c == nil {
		t.Fatalf("no crafted image %s", name)
	}
	path := filepath.Join(t.TempDir(), c.Partition+".img")
	if err := c.Make(path, craftKeys); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAVBCrafted: each crafted image, without and with --avb-key (the key
// that signed it), exits as the table says and says why.
func TestAVBCrafted(t *testing.T) {
	key := filepath.Join(craftKeys, avbcraft.PubKey)
	for _, c := range []struct {
		name        string
		code        int // without and with --avb-key
		keyCode     int
		want, wantK []string
	}{
		{"signed", 0, 0, []string{"verified: 256 data blocks", "the vbmeta signature verifies"}, []string{"made with the key of "}},
		{"unsigned", 1, 1, []string{"not signed: 256 data blocks", "libavb's verdict is OK_NOT_SIGNED"},
			[]string{"not signed (algorithm NONE), so not with the key given", "the tree was not checked"}},
		{"none-victim-key", 1, 1, []string{"the vbmeta is not signed (algorithm NONE)"},
			[]string{"not signed (algorithm NONE), so not with the key given", "the tree was not checked"}},
		{"tampered", 1, 1, []string{"does not match the stored hash", "the tree was not checked"}, nil},
		{"second-hashtree-wrong-root", 1, 1, []string{`hashtree descriptor 2 of partition "system" does not match the image: its root digest is `,
			"avb: check: hashtree descriptor 2: DOES NOT MATCH"}, nil},
		{"second-hashtree-same", 0, 0, []string{"avb: check: hashtree descriptor 2: matches (the same as the first", "the partition's 1 other hashtree descriptors match too"}, nil},
		{"dm-verity-0", 1, 1, []string{"the tree is not the one the hashtree descriptor's parameters give: its top block matches the root digest with --format=1",
			"the kernel, which sets the tree up from the descriptor, would refuse it"}, nil},
		{"required-2.0", 2, 2, []string{"requires libavb 2.0, libavb 1.3 (whose rules this check follows) refuses it"}, nil},
		{"required-1.99", 2, 2, []string{"requires libavb 1.99"}, nil},
		{"release-no-nul", 2, 2, []string{"release string does not end with a NUL byte"}, nil},
		{"rollback-location-32", 2, 2, []string{"rollback index location 32: libavb has locations 0 to 31"}, nil},
		{"bad-key-rr", 1, 1, []string{"R^2 mod n does not fit its modulus"}, nil},
		{"footer-orig-4096", 2, 2, []string{`the footer's original image size is 4096 bytes, but the hashtree descriptor of partition "system" covers 4194304 bytes of image data`,
			"erase_footer"}, nil},
		{"footer-orig-minus-100", 2, 2, []string{"original image size is 1048476 bytes, but the hashtree descriptor", "not zero padding"}, nil},
		{"footer-orig-unpadded", 0, 0, []string{"verified: "}, nil},
		{"vbmeta-size-over-64k", 2, 2, []string{"a vbmeta of 65600 bytes; libavb loads at most 65536"}, nil},
		{"hash", 0, 0, []string{`verified: the sha256 digest of the 100000 bytes of partition "boot" matches its hash descriptor`, "avb: check: hash descriptor 1: matches"}, nil},
		{"hash-wrong-digest", 1, 1, []string{`hash descriptor 1 of partition "boot" does not match the image: its sha256 digest is `}, nil},
		{"hash-orig-small", 2, 2, []string{`original image size is 4096 bytes, but the hash descriptor of partition "boot" covers 100000 bytes`}, nil},
		{"hash-sha1", 2, 2, []string{`hash algorithm "sha1": libavb checks sha256 and sha512 digests only`}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := craftImage(t, c.name)
			avbExpect(t, c.code, c.want, path)
			wantK := c.wantK
			if wantK == nil {
				wantK = c.want
			}
			avbExpect(t, c.keyCode, wantK, "--avb-key", key, path)
		})
	}
}

// veritycheckLibavb is the libavb result veritycheck's exit code stands
// for: 0 OK, 1 a verification error (a locked device does not boot it,
// an unlocked one does), 2 what no device boots.
var veritycheckLibavb = map[string]int{"OK": 0, "ERROR_VERIFICATION": 1, "ERROR_PUBLIC_KEY_REJECTED": 1,
	"ERROR_ROLLBACK_INDEX": 1, "ERROR_INVALID_METADATA": 2, "ERROR_UNSUPPORTED_VERSION": 2, "ERROR_IO": 2}

// stricterThanLibavb are the images veritycheck fails where libavb's
// avb_slot_verify passes: libavb reads neither the footer's original size
// nor the hashtree descriptors (the kernel checks the tree at run time,
// from the descriptor it is given: its dm-verity version is the table's
// format), and veritycheck checks them all.
var stricterThanLibavb = map[string]int{"footer-orig-4096": 2, "footer-orig-minus-100": 2, "hash-orig-small": 2,
	"second-hashtree-wrong-root": 1, "dm-verity-0": 1}

// TestAVBCraftedIsLibavbs: on every crafted image, with the key or
// trusting the embedded one, veritycheck's exit code is libavb's verdict
// on a locked device, but for the checks libavb leaves to others.
func TestAVBCraftedIsLibavbs(t *testing.T) {
	rows, err := avbvectors.ReadTSV("../../../avb/testdata/libavb/slot_verify.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(avbcraft.Cases) {
		t.Fatalf("%d rows for %d crafted images: run avb/testdata/libavb/record.sh", len(rows), len(avbcraft.Cases))
	}
	for _, row := range rows {
		name, sum, keyFile, locked := row[0], row[2], row[3], row[5]
		t.Run(name+"/"+filepath.Base(keyFile), func(t *testing.T) {
			path := craftImage(t, name)
			if got, _ := avbcraft.Sum(path); got != sum {
				t.Fatal("the crafted image is not the one libavb was run on")
			}
			want, ok := veritycheckLibavb[locked]
			if !ok {
				t.Fatalf("libavb result %s", locked)
			}
			if s, ok := stricterThanLibavb[name]; ok {
				if want != 0 {
					t.Fatalf("libavb fails %s too (%s): not stricter", name, locked)
				}
				want = s
			}
			args := []string{path}
			if keyFile != "-" {
				args = []string{"--avb-key", filepath.Join(avbVectors, keyFile), path}
			}
			if r := vcRun(args...); r.code != want {
				t.Errorf("exit %d; libavb says %s, so want %d:\n%v", r.code, locked, want, r)
			}
		})
	}
}

// The JSON report says signature_verified only when a signature was
// checked: never for an unsigned vbmeta embedding the key given.
func TestAVBCraftedJSON(t *testing.T) {
	key := filepath.Join(craftKeys, avbcraft.PubKey)
	type report struct {
		Verified bool `json:"verified"`
		AVB      struct {
			SignatureVerified  bool   `json:"signature_verified"`
			VBMetaVerifyResult string `json:"vbmeta_verify_result"`
			DescriptorChecks   []struct {
				Index   int    `json:"index"`
				Type    string `json:"type"`
				Matches bool   `json:"matches"`
			} `json:"descriptor_checks"`
		} `json:"avb"`
	}
	for _, c := range []struct {
		name           string
		args           []string
		code           int
		verified, sig  bool
		result, checks string
	}{
		{"none-victim-key", []string{"--avb-key", key}, 1, false, false, "OK_NOT_SIGNED", ""},
		{"unsigned", nil, 1, false, false, "OK_NOT_SIGNED", ""},
		{"signed", []string{"--avb-key", key}, 0, true, true, "OK", ""},
		{"second-hashtree-wrong-root", nil, 1, false, true, "OK", "hashtree 2 false"},
		{"hash", nil, 0, true, true, "OK", "hash 1 true"},
		{"hash-wrong-digest", nil, 1, false, true, "OK", "hash 1 false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := craftImage(t, c.name)
			r := vcRun(append(append([]string{"--json"}, c.args...), path)...)
			var j report
			if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != c.code {
				t.Fatalf("exit %d, %v:\n%v", r.code, err, r)
			}
			var checks []string
			for _, dc := range j.AVB.DescriptorChecks {
				checks = append(checks, dc.Type+" "+itoa(dc.Index)+" "+map[bool]string{true: "true", false: "false"}[dc.Matches])
			}
			if j.Verified != c.verified || j.AVB.SignatureVerified != c.sig || j.AVB.VBMetaVerifyResult != c.result || strings.Join(checks, ",") != c.checks {
				t.Errorf("verified %v, signature_verified %v, vbmeta_verify_result %s, checks %q:\n%s", j.Verified, j.AVB.SignatureVerified,
					j.AVB.VBMetaVerifyResult, checks, r.stdout)
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
