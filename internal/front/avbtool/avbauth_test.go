package avbtool

// The avbtool front on the crafted images of internal/avbcraft (a footer
// that lies about the original size, an unsigned vbmeta embedding a
// victim's key, a second descriptor, a vbmeta for libavb 2.0...), against
// avbtool 1.3.0's answers on the same images, recorded in
// testdata/avbauth.tsv by testdata/record-avbauth.sh.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/avbcraft"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// cuts are the runs where avbtool cuts image data the partition's
// signed descriptor covers, trusting the footer's (unsigned) original
// size: the front refuses them, image unchanged.
var cuts = map[string]bool{
	"footer-orig-4096/erase": true, "footer-orig-4096/rerun": true,
	"footer-orig-minus-100/erase": true, "footer-orig-minus-100/rerun": true,
	"hash-orig-small/erase": true,
}

// TestAvbtoolFrontCrafted: verify_image answers as avbtool does, byte for
// byte and exit code (scripts depend on it, even where veritycheck, which
// decides as libavb does, answers otherwise); erase_footer and a rerun of
// add_hashtree_footer leave avbtool's file, except where avbtool cuts
// signed image data: there the front exits 1 with one error line and the
// image as it was.
func TestAvbtoolFrontCrafted(t *testing.T) {
	rows := fronttest.AVBTSV(t, filepath.Join(avbVerifyDir, "avbauth.tsv"))
	if len(rows) < 70 {
		t.Fatalf("%d rows in avbauth.tsv", len(rows))
	}
	made := map[string]bool{}
	for _, row := range rows {
		name, image, sum, rc, output, size, after := row[0], row[1], row[2], row[4], row[5], row[6], row[7]
		var args []string
		if err := json.Unmarshal([]byte(row[3]), &args); err != nil {
			t.Fatal(err)
		}
		label := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(output), name+"."), ".txt")
		made[name] = true
		t.Run(name+"/"+label, func(t *testing.T) {
			c := avbcraft.ByName(name)
			if c == nil {
				t.Fatalf("no crafted image %q", name)
			}
			dir := t.TempDir()
			if err := os.Symlink(filepath.Join(fronttest.AVBVectors, "keys"), filepath.Join(dir, "keys")); err != nil {
				t.Fatal(err)
			}
			if err := c.Make(filepath.Join(dir, image), filepath.Join(fronttest.AVBVectors, "keys")); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			beforeSize, beforeSum := fronttest.AVBFileSum(t, image)
			if beforeSum != sum {
				t.Fatalf("the crafted %s is not the image avbtool was run on (sha256 %s, recorded %s)", image, beforeSum, sum)
			}
			want, err := os.ReadFile(filepath.Join(avbVerifyDir, output))
			if err != nil {
				t.Fatal(err)
			}
			wantCode, _ := strconv.Atoi(rc)
			r := run(t, args...)
			gotSize, gotSum := fronttest.AVBFileSum(t, image)
			if cuts[name+"/"+label] {
				if wantCode != 0 || after == beforeSum {
					t.Fatalf("avbtool left the image as it was (exit %d): the case is not what it was", wantCode)
				}
				if r.code != exitFailed || !strings.Contains(r.stderr, "would cut the image to ") || strings.Count(r.stderr, "\n") > 2 {
					t.Errorf("exit %d, stderr %q: want exit 1 and the refusal", r.code, r.stderr)
				}
				if gotSize != beforeSize || gotSum != beforeSum {
					t.Errorf("the image changed: %d bytes, want %d", gotSize, beforeSize)
				}
				return
			}
			if r.code != wantCode || r.stdout+r.stderr != string(want) {
				t.Errorf("exit %d, output:\n%s\nwant exit %d, output:\n%s", r.code, r.stdout+r.stderr, wantCode, want)
			}
			if strconv.FormatInt(gotSize, 10) != size || gotSum != after {
				t.Errorf("the image after: %d bytes, sha256 %s; avbtool left %s bytes, %s", gotSize, gotSum, size, after)
			}
		})
	}
	for _, c := range avbcraft.Cases {
		if !made[c.Name] {
			t.Errorf("crafted image %s has no recording: run testdata/record-avbauth.sh", c.Name)
		}
	}
}
