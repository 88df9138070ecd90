package safety_test

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSIGKILLLeavesOldOrNewHash kills veritygen at random moments while it
// replaces a tree: HASH must then hold the old tree or the complete new
// one, never anything else; and a later run leaves no temporary file of
// the killed ones behind (item 12).
func TestSIGKILLLeavesOldOrNewHash(t *testing.T) {
	d := t.TempDir()
	randomFile(t, d, "d.img", 32*mib, 40)
	newArgs := []string{"--salt=" + salt, "--uuid=" + uuid, "--jobs=1", "d.img", "h"}
	run(t, d, "veritygen", "--salt=-", "--uuid="+uuid, "d.img", "h")
	copyFile(t, d, "h", "old.verity")
	oldSum := sha256File(t, filepath.Join(d, "h"))

	start := time.Now()
	run(t, d, "veritygen", newArgs...)
	full := time.Since(start)
	newSum := sha256File(t, filepath.Join(d, "h"))
	if newSum == oldSum {
		t.Fatal("the old and new trees are the same")
	}

	rng := rand.New(rand.NewPCG(41, 42))
	const runs = 30
	var killed int
	for i := range runs {
		copyFile(t, d, "old.verity", "h")
		cmd := exec.Command(bins["veritygen"], newArgs...)
		cmd.Dir = d
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Anywhere from the start to a little past the end of a run.
		at := time.Duration(rng.Int64N(int64(full) * 6 / 5))
		timer := time.AfterFunc(at, func() { cmd.Process.Kill() })
		err := cmd.Wait()
		timer.Stop()
		if err != nil {
			killed++
		}
		switch sha256File(t, filepath.Join(d, "h")) {
		case oldSum, newSum:
		default:
			t.Fatalf("run %d, killed after %v: HASH is neither the old tree nor the new one", i, at)
		}
	}
	t.Logf("%d of %d runs killed (a full run takes %v)", killed, runs, full.Round(time.Millisecond))

	run(t, d, "veritygen", newArgs...)
	left, err := filepath.Glob(filepath.Join(d, ".h.tmp*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("after a complete run, %d temporary files of the killed runs are left, e.g. %s", len(left), filepath.Base(left[0]))
	}
}
