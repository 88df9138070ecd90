package veritygen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestCLITreeOverData: `veritygen --hash-offset=N DATA DATA` without
// --data-blocks writes the tree only over bytes that are not the user's.
// The trust issue's command (2 MiB of random bytes, the offset inside
// them) exits 2, DATA unchanged, with one error line and the hints:
// --data-blocks=350, a --hash-offset past the end, --force; --json gives
// the error on stdout too. Each of the hints then works.
func TestCLITreeOverData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	img := fronttest.Image(t, data, 2<<20, 11)
	res := cliRun(t, context.Background(), "--json", "--salt="+cliSalt, "--hash-offset=1433600", data, data)
	if res.code != 2 {
		t.Fatalf("exit %d, want 2", res.code)
	}
	lines := strings.Split(strings.TrimRight(res.stderr, "\n"), "\n")
	want := []string{
		fmt.Sprintf("veritygen: error: DATA %s holds data from --hash-offset 1433600 on (a non-zero byte at 1433600, in no earlier tree of ours): "+
			"without --data-blocks the data is all of DATA, and the tree would be written over it", data),
		"veritygen: hint: to hash only the 350 whole blocks before the offset and write the tree over what follows, add --data-blocks=350",
		"veritygen: hint: to keep all of DATA, put the tree past its end: --hash-offset=2097152",
		"veritygen: hint: to write the tree there anyway, add --force",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", res.stderr, strings.Join(want, "\n"))
	}
	if m := cliJSON(t, res.stdout); !strings.Contains(fmt.Sprint(m["error"]), "holds data from --hash-offset") {
		t.Errorf("JSON %v", m)
	}
	if !bytes.Equal(fronttest.Read(t, data), img) {
		t.Fatal("DATA changed")
	}

	for _, c := range []struct {
		flag   string
		blocks uint64
	}{{"--hash-offset=2097152", 512}, {"--data-blocks=350", 350}, {"--force", 350}} {
		if err := os.WriteFile(data, img, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"--json", "--salt=" + cliSalt, "--hash-offset=1433600", c.flag, data, data}
		if c.flag == "--hash-offset=2097152" {
			args = append(args[:2], args[3:]...)
		}
		m := cliJSON(t, cliOK(t, args...).stdout)
		if got := cliUint(t, m, "data_blocks"); got != c.blocks {
			t.Errorf("%s: %d data blocks, want %d", c.flag, got, c.blocks)
		}
		after := fronttest.Read(t, data)
		if n := min(uint64(len(img)), cliUint(t, m, "hash_offset")); !bytes.Equal(after[:n], img[:n]) {
			t.Errorf("%s: the bytes before the tree changed", c.flag)
		}
	}
}
