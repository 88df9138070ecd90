package veritycheck

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestKernelRefusedFlags: --kernel refuses what the kernel does not do,
// before anything is opened.
func TestKernelRefusedFlags(t *testing.T) {
	for _, flag := range []string{"--repair", "--json", "--avb", "--root-hash-signature=x.sig"} {
		var out, errOut bytes.Buffer
		args := []string{"--kernel", flag, "--root-hash=" + strings.Repeat("00", 32), "--fec-device=/nonexistent", "/nonexistent/d", "/nonexistent/h"}
		code := Main(context.Background(), "veritycheck", args, &out, &errOut)
		name := strings.SplitN(strings.TrimPrefix(flag, "--"), "=", 2)[0]
		if code != 2 || !strings.Contains(errOut.String()+out.String(), "--"+name+" does not go with --kernel") {
			t.Errorf("%s: exit %d, %s%s", flag, code, out.String(), errOut.String())
		}
	}
}
