package veritycheck

// Inputs that made veritycheck wait forever, read without bound or report
// an internal error (issue 12, items 6, 7 and 11): offsets checked before
// anything is read, special files refused, --root-hash-file read with a
// limit, every wait ended by SIGINT and SIGTERM.

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
)

// inTree writes data.img (64 blocks) and its tree with a superblock,
// data.img.verity, and root.hex into dir.
func inTree(t *testing.T, dir string) (data, hash, rootHex string) {
	t.Helper()
	data, hash = filepath.Join(dir, "data.img"), filepath.Join(dir, "data.img.verity")
	fronttest.Image(t, data, 64*4096, 7)
	alg, err := hashes.Lookup("sha256")
	if err != nil {
		t.Fatal(err)
	}
	g, err := merkle.NewGeometry(merkle.Params{Hash: alg, Salt: []byte{1, 2, 3}, DataBlockSize: 4096,
		HashBlockSize: 4096, DataBlocks: 64, Superblock: true})
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	hf, err := os.Create(hash)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	root, err := merkle.Build(context.Background(), g, df, hf, nil)
	if err != nil {
		t.Fatal(err)
	}
	rootHex = hex.EncodeToString(root)
	vcWrite(t, filepath.Join(dir, "root.hex"), []byte(rootHex))
	return data, hash, rootHex
}

// inRun runs veritycheck in-process and fails the test if it is still
// waiting after 30 s (it is then left behind).
func inRun(t *testing.T, args ...string) vcResult {
	t.Helper()
	done := make(chan vcResult, 1)
	go func() {
		var stdout, stderr, tty bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr, &tty)
		done <- vcResult{args: args, code: code, stdout: stdout.String(), stderr: stderr.String()}
	}()
	select {
	case r := <-done:
		t.Logf("%v", r)
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("veritycheck %s: still waiting after 30 s", strings.Join(args, " "))
		panic("unreachable")
	}
}

// TestOffsetsCheckedFirst: the commands of the issue, and the same class
// of offsets, fail with one line naming the flag, exit 2, before anything
// is read: the root hash file is a FIFO no one writes, which a read would
// wait on, and the tree is never verified.
func TestOffsetsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	data, hash, _ := inTree(t, dir)
	fifo := testtool.MkFIFO(t, dir, "root.fifo")
	rootFile := filepath.Join(dir, "root.hex")
	fecTooLarge := func(off string) string {
		return "veritycheck: error: --fec-offset " + off + " is too large: the parity would end past byte 9223372036854775807, the end of the largest possible file\n" +
			"veritycheck: hint: give the byte offset of the parity in the FEC device\n"
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hash-offset=18446744073709551104", "--root-hash-file=" + fifo, data},
			"veritycheck: error: --hash-offset 18446744073709551104 is too large: at most 9223372036854774784\n"},
		{[]string{"--dump", "--hash-offset=18446744073709551104", hash},
			"veritycheck: error: --hash-offset 18446744073709551104 is too large: at most 9223372036854774784\n"},
		{[]string{"--dump", "--hash-offset=9223372036854775296", hash},
			"veritycheck: error: --hash-offset 9223372036854775296 is too large: at most 9223372036854774784\n"},
		{[]string{"--no-superblock", "--salt=010203", "--hash-offset=18446744073709551104", "--root-hash-file=" + fifo, data, hash},
			"veritycheck: error: --hash-offset 18446744073709551104 is too large: at most 9223372036854771200\n"},
		{[]string{"--fec-device=" + hash, "--fec-offset=18446744073709547520", "--root-hash-file=" + fifo, data},
			fecTooLarge("18446744073709547520")},
		{[]string{"--fec-device=" + filepath.Join(dir, "none.fec"), "--fec-offset=18446744073709547520", "--root-hash-file=" + fifo, data},
			fecTooLarge("18446744073709547520")},
		// Below 2^63, but the parity would not fit: in HASH (covering HASH
		// up to the offset), in DATA, in a file of its own.
		{[]string{"--fec-device=" + hash, "--fec-offset=9223372036854771712", "--root-hash-file=" + rootFile, data},
			fecTooLarge("9223372036854771712")},
		{[]string{"--fec-device=" + data, "--fec-offset=9223372036854771712", "--root-hash-file=" + rootFile, data},
			fecTooLarge("9223372036854771712")},
		{[]string{"--fec-device=" + rootFile, "--fec-offset=9223372036854771712", "--root-hash-file=" + rootFile, data},
			fecTooLarge("9223372036854771712")},
		// The largest offset allowed: the superblock is simply not there.
		{[]string{"--hash-offset=9223372036854774784", "--root-hash-file=" + rootFile, data},
			"veritycheck: error: HASH " + hash + " ends before a superblock at byte 9223372036854774784\n" +
				"veritycheck: hint: if the tree has no superblock, add --no-superblock and its parameters\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			before := fronttest.ListingWithDir(t, dir)
			r := inRun(t, c.args...)
			if r.code != 2 || r.stderr != c.want || r.stdout != "" {
				t.Errorf("want exit 2 and stderr\n%s", c.want)
			}
			if strings.Contains(r.stderr, "negative") || strings.Contains(r.stderr, "-4096") {
				t.Error("a negative offset is printed")
			}
			fronttest.SameListing(t, before, fronttest.ListingWithDir(t, dir))
		})
	}
}

// TestRootHashFileLimit: --root-hash-file is read up to 4 KiB: /dev/zero or
// an image given by mistake is refused in one line instead of filling the
// memory; a pipe still works.
func TestRootHashFileLimit(t *testing.T) {
	dir := t.TempDir()
	data, _, rootHex := inTree(t, dir)
	for _, p := range []string{"/dev/zero", data} {
		r := inRun(t, "--root-hash-file="+p, data)
		want := "veritycheck: error: --root-hash-file " + p + " is larger than any root hash (more than 4096 bytes): is it the right file?\n" +
			"veritycheck: hint: the file holds the root hash in hex, as veritygen --root-hash-file writes it\n"
		if r.code != 2 || r.stderr != want {
			t.Errorf("want exit 2 and stderr\n%s", want)
		}
	}
	// As bash's --root-hash-file=<(cat root.hex) gives it: a pipe.
	fifo := testtool.MkFIFO(t, dir, "root.fifo")
	testtool.FeedFIFO(t, fifo, []byte(rootHex+"\n"))
	if r := inRun(t, "--root-hash-file="+fifo, data); r.code != 0 || !strings.HasPrefix(r.stdout, "verified: ") {
		t.Error("a root hash from a pipe: want exit 0, verified")
	}
}

// TestSpecialFilesRefused: DATA, HASH or the FEC device that cannot be
// read at an offset is refused at once, without waiting for a writer.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	data, hash, _ := inTree(t, dir)
	fifo := testtool.MkFIFO(t, dir, "fifo")
	root := "--root-hash-file=" + filepath.Join(dir, "root.hex")
	const is = " is a FIFO (named pipe): it must be a file or a block device, to be read at any offset\n" +
		"veritycheck: hint: write it to a file first, and give that file\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{root, fifo, hash}, "veritycheck: error: DATA " + fifo + is},
		{[]string{root, data, fifo}, "veritycheck: error: HASH " + fifo + is},
		{[]string{root, "--fec-device=" + fifo, data}, "veritycheck: error: FEC device " + fifo + is},
		{[]string{"--dump", fifo}, "veritycheck: error: HASH " + fifo + is},
		{[]string{root, "/dev/zero", hash}, "veritycheck: error: DATA /dev/zero is a character device: it must be a file or a block device, to be read at any offset\n" +
			"veritycheck: hint: write it to a file first, and give that file\n"},
	} {
		if r := inRun(t, c.args...); r.code != 2 || r.stderr != c.want {
			t.Errorf("want exit 2 and stderr\n%s", c.want)
		}
	}
}

// TestSignalEndsWait: the built command waiting for a writer on a FIFO
// given as --root-hash-file ends on SIGINT and on SIGTERM, with exit 2.
// It used to be killable only by SIGKILL.
func TestSignalEndsWait(t *testing.T) {
	bin := testtool.BuildCommand(t, t.TempDir(), "./cmd/veritycheck")
	dir := t.TempDir()
	data, _, _ := inTree(t, dir)
	fifo := testtool.MkFIFO(t, dir, "root.fifo")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "--root-hash-file="+fifo, data)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			ended := false
			defer func() {
				if !ended {
					cmd.Process.Kill()
					<-exited
				}
			}()
			waitForFIFOOpen(t, cmd.Process.Pid, fifo, exited, &ended)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
				ended = true
			case <-time.After(30 * time.Second):
				t.Fatalf("still running 30 s after %v", sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != 2 || stderr.String() != "veritycheck: error: interrupted\n" {
				t.Errorf("after %v: exit %d, stderr %q; want exit 2, \"veritycheck: error: interrupted\\n\"", sig, code, stderr.String())
			}
		})
	}
}

// waitForFIFOOpen waits until process pid waits for the writer of the
// FIFO at path: a thread sleeps in the kernel's wait in open(2)
// (wait_for_partner), or the FIFO is open and, with no writer, waited on
// in the poller; a signal then tests that wait.
func waitForFIFOOpen(t *testing.T, pid int, path string, exited <-chan error, ended *bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !waitsOnFIFO(pid, path) {
		select {
		case err := <-exited:
			*ended = true
			t.Fatalf("exited before waiting on the FIFO: %v", err)
		case <-deadline:
			t.Fatal("not waiting on the FIFO after 30 s")
		case <-time.After(10 * time.Millisecond): // polling /proc, not timing
		}
	}
}

func waitsOnFIFO(pid int, path string) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	tasks, _ := filepath.Glob(filepath.Join(proc, "task", "*", "wchan"))
	for _, w := range tasks {
		if b, err := os.ReadFile(w); err == nil && string(b) == "wait_for_partner" {
			return true
		}
	}
	fds, _ := filepath.Glob(filepath.Join(proc, "fd", "*"))
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			return true
		}
	}
	return false
}
