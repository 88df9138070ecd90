package testtool

import (
	"os/exec"
	"strings"
	"testing"
)

// LoopDevice attaches file to a free loop device and returns its path; the
// device is detached when the test ends. It skips the test when no loop
// device can be attached.
func LoopDevice(t testing.TB, file string, readOnly bool) string {
	t.Helper()
	losetup := Require(t, "losetup")
	args := []string{"--find", "--show"}
	if readOnly {
		args = append(args, "--read-only")
	}
	var stderr strings.Builder
	cmd := exec.Command(losetup, append(args, file)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("cannot attach a loop device here (root and the loop driver are needed): %v: %s", err, stderr.String())
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}
