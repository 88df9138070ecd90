package testtool

import "testing"

// Long skips t under -short. The README's quick command (go test -race
// -short ./...) leaves out what is slow for a reason other than what it
// proves: the qemu runs, the kernel boot, the long campaigns. CI (.ci/run)
// runs without -short, so all of them still run there.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short leaves out %s (.ci/run runs the tests without -short)", what)
	}
}
