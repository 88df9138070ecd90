package veritycheck

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/loop"
	"github.com/veritytree/veritytree/verity"
)

// TestKernelCheck runs veritycheck --kernel where there is a kernel with
// device-mapper (tests/kernel's guest, VERITYTREE_KERNEL_TESTS): an intact
// image verifies; a spoiled block is named, exit 1; FEC corrects a few
// bytes; an interrupted check and a refused one leave nothing.
func TestKernelCheck(t *testing.T) {
	if os.Getenv("VERITYTREE_KERNEL_TESTS") == "" {
		t.Skip("opens devices in this machine's device-mapper: tests/kernel runs it in a guest")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	b := make([]byte, 300*4096)
	rand.NewChaCha8([32]byte{7}).Read(b)
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fecPath := filepath.Join(dir, "data.fec")
	res, err := verity.Format(context.Background(), data, data+".verity", &verity.FormatOptions{FECDevice: fecPath, FECRoots: 2})
	if err != nil {
		t.Fatal(err)
	}
	root := "--root-hash=" + hex.EncodeToString(res.RootHash)
	run := func(ctx context.Context, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Main(ctx, "veritycheck", args, &out, &errOut)
		if l, _ := loop.Find(data); len(l) > 0 {
			t.Errorf("%v: %v still attached", args, l)
		}
		if m, _ := filepath.Glob("/dev/mapper/veritycheck-*"); len(m) > 0 {
			t.Errorf("%v: %v left", args, m)
		}
		return code, out.String() + errOut.String()
	}
	ctx := context.Background()
	if code, out := run(ctx, "--kernel", root, data); code != 0 || !strings.Contains(out, "verified by the kernel: 300 data blocks") {
		t.Errorf("intact: exit %d: %s", code, out)
	}
	f, err := os.OpenFile(data, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{1, 2, 3}, 123*4096+9)
	f.Close()
	if code, out := run(ctx, "--kernel", root, data); code != 1 || !strings.Contains(out, "data block 123 (offset 503808): the kernel fails its read (EIO)") {
		t.Errorf("spoiled: exit %d: %s", code, out)
	}
	if code, out := run(ctx, "--kernel", "--fec-device="+fecPath, "--fec-roots=2", root, data); code != 0 {
		t.Errorf("spoiled, with FEC: exit %d: %s", code, out)
	} else {
		t.Logf("spoiled, with FEC: %s", out)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if code, out := run(cancelled, "--kernel", root, data); code != 2 {
		t.Errorf("interrupted: exit %d: %s", code, out)
	}
	// A wrong root: the kernel fails every read.
	if code, out := run(ctx, "--kernel", "--root-hash="+strings.Repeat("0", 63)+"1", data); code != 1 ||
		!strings.Contains(out, "data block 0 (offset 0): the kernel fails its read (EIO)") || !strings.Contains(out, "... and 280 more (300 in all") {
		t.Errorf("wrong root: exit %d: %s", code, out)
	}
}
