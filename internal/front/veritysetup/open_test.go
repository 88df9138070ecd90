package veritysetup

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

// TestOpenReachesDeviceMapper: open's checks are verify's (the root hash
// file read as verify reads it, sha256sum's "ROOT  FILE" too), then
// device-mapper must answer: without root, veritysetup's two lines and
// exit 1, before any loop device is attached.
func TestOpenReachesDeviceMapper(t *testing.T) {
	dir := t.TempDir()
	data, hash := filepath.Join(dir, "d.img"), filepath.Join(dir, "h.img")
	if err := os.WriteFile(data, bytes.Repeat([]byte{7}, 16*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := verity.Format(context.Background(), data, hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := hex.EncodeToString(res.RootHash)
	sums := filepath.Join(dir, "root.sha256")
	if err := os.WriteFile(sums, []byte(root+"  d.img\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	(&fakeControl{fail: true}).use(t, true)
	const refused = "Cannot initialize device-mapper, running as non-root user.\nCannot use device vx, name is invalid or still in use.\n"
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"open", data, "vx", hash, root}, 1, refused},
		{[]string{"open", "--root-hash-file=" + sums, data, "vx", hash}, 1, refused},
		{[]string{"open", "--root-hash-file=" + sums, data, "vx", hash, "00"}, 1, refused},
		{[]string{"open", data, "vx", hash, root[:62]}, 1, "Invalid root hash string specified.\n"},
		{[]string{"open", "--no-superblock", "--salt=" + hex.EncodeToString(res.Layout.Geometry.Salt), data, "vx", hash, root + "00"}, 1,
			"Invalid root hash string specified.\n"},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), "veritysetup", c.args, &out, &errOut)
		if code != c.code || out.String() != "" || errOut.String() != c.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q", c.args, code, out.String(), errOut.String(), c.code, c.stderr)
		}
	}
}
