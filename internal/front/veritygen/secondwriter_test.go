package veritygen

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// TestSecondWriterOfANewOutput: two real veritygen runs writing the same
// output that does not exist yet. The first is held once its temporary
// file is created and locked (at its note on the stale temporary file it
// removed, on a full stderr pipe); the second fails at once, saying the
// output is being written, writes nothing and leaves no file; the first
// then completes. Before, the second (short) run succeeded and the first
// failed at its end ("another process replaced it while this run was
// writing").
func TestSecondWriterOfANewOutput(t *testing.T) {
	bin := testtool.BuildCommand(t, t.TempDir(), "./cmd/veritygen")
	for _, c := range []struct {
		name, output, role string
		first, second      []string
	}{
		{"HASH", "h.verity", "HASH", []string{"d.img", "h.verity"}, []string{"e.img", "h.verity"}},
		{"--fec-device", "p.fec", "FEC device", []string{"--fec-device=p.fec", "d.img", "h1"}, []string{"--fec-device=p.fec", "e.img", "h2"}},
		{"--root-hash-file", "r.hex", "--root-hash-file", []string{"--root-hash-file=r.hex", "d.img", "h1"}, []string{"--root-hash-file=r.hex", "e.img", "h2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fronttest.Image(t, filepath.Join(dir, "d.img"), 64*4096, 11)
			fronttest.Image(t, filepath.Join(dir, "e.img"), 64*4096, 12)
			stale := "." + c.output + ".tmp0123456789ab"
			if err := os.WriteFile(filepath.Join(dir, stale), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			first := testtool.StartHeld(t, dir, stale, bin, append([]string{"--json"}, c.first...)...)
			before := fronttest.Listing(t, dir)

			t.Chdir(dir)
			r := cliRun(t, context.Background(), c.second...)
			want := "veritygen: error: " + c.role + " " + c.output + " is locked by another process, which is writing it (its temporary file ." + c.output + ".tmp"
			if r.code != 2 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("the second run: exit %d, stderr %q; want exit 2 and one line %q...", r.code, r.stderr, want)
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, dir))

			code, stdout, stderr := first.Release()
			if code != 0 || stderr != "veritygen: removed 1 stale temporary file left by an interrupted run: "+stale+"\n" {
				t.Fatalf("the first run: exit %d, stderr %q; want 0 and its note", code, stderr)
			}
			var rep struct {
				RootHash string `json:"root_hash"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			root, _ := hex.DecodeString(rep.RootHash)
			hash := "h.verity"
			if c.name != "HASH" {
				hash = "h1"
			}
			vo := &verity.VerifyOptions{}
			if c.name == "--fec-device" {
				vo.FECDevice = "p.fec"
			}
			res, err := verity.Verify(context.Background(), "d.img", hash, root, vo)
			if err != nil || !res.Verified {
				t.Fatalf("the first run's output does not verify: %v", err)
			}
			res.Close()
			if c.name == "--root-hash-file" {
				if b, _ := os.ReadFile("r.hex"); string(b) != rep.RootHash {
					t.Errorf("r.hex holds %q, want the first run's %s", b, rep.RootHash)
				}
			}
			for _, leftover := range []string{"h2", stale} {
				if _, err := os.Lstat(leftover); err == nil {
					t.Errorf("%s is there", leftover)
				}
			}
		})
	}
}
