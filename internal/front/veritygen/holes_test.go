package veritygen

// Holes of raw files (SEEK_DATA/SEEK_HOLE) and the known runs veritygen
// hands to merkle.Build.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
	"github.com/veritytree/veritytree/verity"
)

// holeCapture runs veritygen and returns the known runs of the layout,
// which Format gives merkle.Build.
func holeCapture(t *testing.T, args ...string) (cliResult, []merkle.Run) {
	t.Helper()
	var runs []merkle.Run
	beforeHashing = func(l *verity.Layout) { runs = l.KnownRuns }
	defer func() { beforeHashing = nil }()
	return cliOK(t, args...), runs
}

// TestHolesTree: the tree of a mostly-hole file, built with its holes as
// known runs, is veritysetup's byte for byte, for several block sizes.
func TestHolesTree(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	dir := t.TempDir()
	data := filepath.Join(dir, "holes.img")
	testimages.Holes(t, data, 48<<20+512, []int64{4096, 3<<20 + 1, 20 << 20, 48<<20 - 70000}, 65536)
	for i, extra := range [][]string{nil, {"--data-block-size=512", "--hash-block-size=1024"}, {"--hash=sha1", "--format=0", "--no-superblock"}} {
		ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
		os.Remove(ours)
		os.Remove(theirs)
		args := append([]string{"--json", "--salt=" + cliSalt, "--uuid=" + cliUUID, fmt.Sprintf("--jobs=%d", 1+i)}, extra...)
		res, runs := holeCapture(t, append(args, data, ours)...)
		if len(runs) == 0 {
			t.Skip("this file system reports no holes (SEEK_HOLE)")
		}
		andrExec(t, vs, append(append([]string{"format", "--salt=" + cliSalt, "--uuid=" + cliUUID}, extra...), data, theirs)...)
		andrSameFiles(t, ours, theirs)
		if m := cliJSON(t, res.stdout); cliUint(t, m, "uncovered_bytes") != 512 && len(extra) == 0 {
			t.Errorf("uncovered_bytes = %d, want 512", cliUint(t, m, "uncovered_bytes"))
		}
	}
}

// TestHolesWiring: which runs each kind of DATA gets: a sparse image its
// FILL/DONT_CARE runs, a raw file its holes, --raw on a sparse image none
// of the sparse ones.
func TestHolesWiring(t *testing.T) {
	dir := t.TempDir()
	s := &andrSparse{bs: 4096}
	s.raw(make([]byte, 4096)).dontCare(10).fill(0xabcdef01, 5).raw(make([]byte, 8192))
	simg := filepath.Join(dir, "w.simg")
	if err := os.WriteFile(simg, s.bytes(0), 0o644); err != nil {
		t.Fatal(err)
	}
	_, runs := holeCapture(t, "--salt=-", simg, filepath.Join(dir, "a.verity"))
	want := []merkle.Run{{Start: 1, Count: 10}, {Start: 11, Count: 5, Pattern: []byte{1, 0xef, 0xcd, 0xab}}}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("sparse image: runs %v, want %v", runs, want)
	}
	_, runs = holeCapture(t, "--salt=-", "--raw", simg, filepath.Join(dir, "b.verity"))
	for _, r := range runs {
		if len(r.Pattern) != 0 {
			t.Errorf("--raw: pattern run %v from the sparse chunks", r)
		}
	}
	raw := filepath.Join(dir, "h.img")
	testimages.Holes(t, raw, 8<<20, []int64{1 << 20}, 4096)
	if _, runs = holeCapture(t, "--salt=-", raw, filepath.Join(dir, "c.verity")); len(runs) == 0 {
		t.Log("this file system reports no holes")
	}
}
