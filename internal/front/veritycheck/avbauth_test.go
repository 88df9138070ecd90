package veritycheck

// veritycheck on the crafted images of internal/avbcraft decides as libavb
// does (the bootloader is the authority): its exit codes against
// avb_slot_verify's results on the same images, recorded from libavb
// (avb/testdata/libavb/slot_verify.tsv). Its messages on each are
// testdata/script/avb-crafted.txt.

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
