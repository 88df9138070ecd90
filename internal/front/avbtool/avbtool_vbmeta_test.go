package avbtool

// make_vbmeta_image interrupted while its signing helper runs: the
// helper's start is a FIFO the test waits on, which a script cannot say.
// The other command-line cases are script files (testdata/script).

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// TestAvbtoolFrontSigningInterrupted: make_vbmeta_image ended by SIGINT
// while a signing helper that does not answer runs exits 130, saying so,
// with the helper killed and nothing written.
func TestAvbtoolFrontSigningInterrupted(t *testing.T) {
	c := avbvectors.Case2{Inputs: map[string]string{}}
	dir := avbvectors.WorkDir2(t, &c)
	log := testtool.MkFIFO(t, t.TempDir(), "helper.log")
	t.Setenv("HELPER_LOG", log)
	t.Setenv("HELPER_MODE", "hang")
	before := fronttest.Listing(t, dir)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		// The helper has started once it writes its line.
		if f, err := os.Open(log); err == nil {
			bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		cancel(&cli.Interrupted{Signal: syscall.SIGINT})
	}()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, "avbtool", []string{"make_vbmeta_image", "--output", "vbmeta.img", "--algorithm", "SHA256_RSA2048",
		"--key", "keys/rsa2048.pem", "--signing_helper", "./helper.py"}, &stdout, &stderr)
	if code != 130 || stderr.String() != "avbtool: interrupted by SIGINT\n" {
		t.Errorf("exit %d, %q; want 130, interrupted by SIGINT", code, stderr.String())
	}
	fronttest.SameListing(t, before, fronttest.Listing(t, dir))
}
