package veritycheck

// An Android sparse DATA is checked as the image it expands to.

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/testimages"
)

// TestSparseChecked: a tree veritysetup made of a raw image verifies
// against the img2simg conversion of that image; FILL and DONT_CARE blocks
// go to Verify as runs; a byte flipped inside a RAW chunk is reported at its
// block of the expanded image; --raw reads the sparse file as it is (too
// short for the tree); --repair is refused with nothing written; a tree
// inside the sparse file is looked for in its expansion.
func TestSparseChecked(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	vsPath(t)
	dir := t.TempDir()
	raw, simg, hash := filepath.Join(dir, "system.raw"), filepath.Join(dir, "system.img"), filepath.Join(dir, "system.verity")
	if err := testimages.WriteFile(raw, func(w io.Writer) error { return testimages.Sample(w, 24<<20, 3) }); err != nil {
		t.Fatal(err)
	}
	rawBytes := fronttest.Read(t, raw)
	if out, err := exec.Command(img2simg, raw, simg).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	root := vsFormat(t, "--salt=abcd", raw, hash).root

	res := vcRun("--json", "--root-hash="+root, simg, hash)
	j := vcDecode(t, res)
	if res.code != 0 || !j.Verified || !strings.Contains(res.stdout, `"data_format": "android-sparse"`) {
		t.Fatalf("sparse image of an intact tree:\n%v", res)
	}
	// Flip a byte of random data: find its bytes in the sparse file.
	var at int64 = -1
	for off := int64(1 << 20); off < int64(len(rawBytes)); off += 4096 {
		if !bytes.Equal(rawBytes[off:off+4096], make([]byte, 4096)) {
			at = off + 1234
			break
		}
	}
	sb := fronttest.Read(t, simg)
	pos := bytes.Index(sb, rawBytes[at:at+64])
	if at < 0 || pos < 0 {
		t.Fatalf("no data block found in the sparse file")
	}
	vcXorByte(t, simg, int64(pos), 0x20)
	res = vcRun("--json", "--root-hash="+root, simg, hash)
	if j := vcDecode(t, res); res.code != 1 || j.CorruptDataBlocks != 1 || j.Problems[0].Index != uint64(at/4096) {
		t.Errorf("byte flipped in a RAW chunk: want data block %d reported, got:\n%v", at/4096, res)
	}
	vcXorByte(t, simg, int64(pos), 0x20)

	// With --raw the sparse file is the image: shorter than the tree covers.
	before := fronttest.ListingWithDir(t, dir)
	if res := vcRun("--raw", "--root-hash="+root, simg, hash); res.code != 2 || !strings.Contains(res.stderr, "shorter than") {
		t.Errorf("--raw on the sparse file: want exit 2, too short, got:\n%v", res)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--repair", "--fec-device=" + hash, "--root-hash=" + root, simg, hash}, "--repair cannot write into it"},
	} {
		res := vcRun(tc.args...)
		if res.code != 2 || !strings.Contains(res.stderr, tc.want) || !strings.Contains(res.stderr, "simg2img") {
			t.Errorf("want exit 2 with %q and a hint, got:\n%v", tc.want, res)
		}
		fronttest.SameListing(t, before, fronttest.ListingWithDir(t, dir))
	}
	// A tree inside the sparse file is looked for in its expansion (this
	// one has none there).
	if res := vcRun("--hash-offset=4096", "--root-hash="+root, simg, simg); res.code != 2 || !strings.Contains(res.stderr, "no valid verity superblock at byte 4096") {
		t.Errorf("--hash-offset into the sparse DATA: want exit 2, no superblock there, got:\n%v", res)
	}
}
