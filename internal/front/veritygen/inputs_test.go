package veritygen

// Inputs that made veritygen wait forever or report an internal error
// after hashing (issue 12, items 7 and 11): offsets checked before anything
// is read or written, special files refused at once.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// inRun runs veritygen in-process and fails the test if it is still
// waiting after 30 s (it is then left behind).
func inRun(t *testing.T, args ...string) cliResult {
	t.Helper()
	done := make(chan cliResult, 1)
	go func() {
		var stdout, stderr, tty bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr, &tty)
		done <- cliResult{code: code, stdout: stdout.String(), stderr: stderr.String(), tty: tty.String()}
	}()
	select {
	case r := <-done:
		t.Logf("veritygen %s\n-> exit %d\nstderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("veritygen %s: still waiting after 30 s", strings.Join(args, " "))
		panic("unreachable")
	}
}

// noBuild fails the test if the tree is built (hashed) at all.
func noBuild(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { beforeHashing = nil })
	beforeHashing = func(*verity.Layout) {
		t.Error("the tree was built before the flags were checked")
	}
}

// TestFECOffsetCheckedFirst: the issue's --fec-offset, and the others past
// which the parity cannot fit in a file, fail in one line before anything
// is hashed or written; no negative offset is printed.
func TestFECOffsetCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 64*4096, 3)
	hash := filepath.Join(dir, "tree.verity")
	tooLarge := func(off string) string {
		return "veritygen: error: --fec-offset " + off + " is too large: the parity would end past byte 9223372036854775807, the end of the largest possible file\n" +
			"veritygen: hint: give the byte offset of the parity in the FEC device\n"
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fec-device=" + filepath.Join(dir, "x.fec"), "--fec-offset=18446744073709547520", data, hash}, tooLarge("18446744073709547520")},
		{[]string{"--fec-device=" + hash, "--fec-offset=18446744073709547520", data, hash}, tooLarge("18446744073709547520")},
		// Below 2^63, but the parity (in HASH: covering HASH up to
		// itself) would end past it.
		{[]string{"--fec-device=" + hash, "--fec-offset=9223372036854771712", data, hash}, tooLarge("9223372036854771712")},
		{[]string{"--fec-device=" + data, "--fec-offset=9223372036854771712", data, hash}, tooLarge("9223372036854771712")},
		{[]string{"--fec-device=" + filepath.Join(dir, "x.fec"), "--fec-offset=9223372036854771712", data, hash}, tooLarge("9223372036854771712")},
		// Not a multiple of the block size, and rounding it up would wrap.
		{[]string{"--fec-device=" + filepath.Join(dir, "x.fec"), "--fec-offset=18446744073709551615", data, hash}, tooLarge("18446744073709551615")},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			noBuild(t)
			before := fronttest.Listing(t, dir)
			r := inRun(t, c.args...)
			if r.code != 2 || r.stderr != c.want || r.stdout != "" {
				t.Errorf("want exit 2 and stderr\n%s", c.want)
			}
			if strings.Contains(r.stderr, "-4096") || strings.Contains(r.stderr, "negative") {
				t.Error("a negative offset is printed")
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, dir))
		})
	}
}

// TestSpecialFilesRefused: a DATA that cannot be read at an offset, or a
// HASH or FEC device that cannot be written at one, is refused at once:
// a FIFO as DATA made veritygen wait forever in open, deaf to Ctrl-C, and
// one as HASH gave "write ...: illegal seek" after hashing.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 64*4096, 3)
	fifo := testtool.MkFIFO(t, dir, "fifo")
	const written = " is a FIFO (named pipe): it must be a file or a block device, to be written at any offset\n" +
		"veritygen: hint: name a file or a block device\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{fifo, filepath.Join(dir, "tree.verity")}, "veritygen: error: DATA " + fifo +
			" is a FIFO (named pipe): it must be a file or a block device, to be read at any offset\n" +
			"veritygen: hint: write it to a file first, and give that file\n"},
		{[]string{"/dev/zero", filepath.Join(dir, "tree.verity")}, "veritygen: error: DATA /dev/zero" +
			" is a character device: it must be a file or a block device, to be read at any offset\n" +
			"veritygen: hint: write it to a file first, and give that file\n"},
		{[]string{data, fifo}, "veritygen: error: HASH " + fifo + written},
		{[]string{"--fec-device=" + fifo, data, filepath.Join(dir, "tree.verity")}, "veritygen: error: FEC device " + fifo + written},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			noBuild(t)
			before := fronttest.Listing(t, dir)
			if r := inRun(t, c.args...); r.code != 2 || r.stderr != c.want {
				t.Errorf("want exit 2 and stderr\n%s", c.want)
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, dir))
		})
	}
}

// TestDataShrinks: DATA cut short while it is hashed: the message gives
// the size it shrank to, not the offset of the read that failed, and no
// HASH appears.
func TestDataShrinks(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 64*4096, 3)
	t.Cleanup(func() { beforeHashing = nil })
	beforeHashing = func(*verity.Layout) {
		if err := os.Truncate(data, 10000); err != nil {
			t.Fatal(err)
		}
	}
	r := inRun(t, "--jobs=1", data, filepath.Join(dir, "tree.verity"))
	want := "DATA " + data + " shrank to 10000 bytes while being read (it was 262144 bytes): is another program writing it?\n"
	if r.code != 2 || !strings.HasPrefix(r.stderr, "veritygen: error: ") || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("want exit 2 and an error ending in\n%s", want)
	}
	if _, err := os.Stat(filepath.Join(dir, "tree.verity")); err == nil {
		t.Error("HASH was written")
	}
}

// TestBuiltFIFOData: the built command given a FIFO without a writer as
// DATA exits 2 at once; it used to wait in open until SIGKILL.
func TestBuiltFIFOData(t *testing.T) {
	bin := testtool.BuildCommand(t, t.TempDir(), "./cmd/veritygen")
	dir := t.TempDir()
	fifo := testtool.MkFIFO(t, dir, "data.fifo")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, fifo, filepath.Join(dir, "tree.verity"))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		// Waiting: Ctrl-C must end it at least.
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
			t.Errorf("waited on the FIFO until SIGINT")
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Fatal("waited on the FIFO, and SIGINT did not end it")
		}
	}
	want := "veritygen: error: DATA " + fifo + " is a FIFO (named pipe): it must be a file or a block device, to be read at any offset\n" +
		"veritygen: hint: write it to a file first, and give that file\n"
	if code := cmd.ProcessState.ExitCode(); code != 2 || stderr.String() != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and\n%s", code, stderr.String(), want)
	}
}
