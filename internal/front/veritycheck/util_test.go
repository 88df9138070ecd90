package veritycheck

// Helpers shared by veritycheck's tests: running the command in-process,
// running veritysetup. Those all the fronts' tests share (images, snapshots
// of a directory) are in internal/front/fronttest.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// vcResult is what one run of veritycheck gave.
type vcResult struct {
	args   []string
	code   int
	stdout string
	stderr string
}

func (r vcResult) String() string {
	return fmt.Sprintf("veritycheck %s\n-> exit %d\nstdout:\n%s\nstderr:\n%s",
		strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// vcRun runs veritycheck in-process with args. It does not log: the
// campaign runs it hundreds of times; callers log what they assert on.
func vcRun(args ...string) vcResult {
	var stdout, stderr, tty bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, &tty)
	return vcResult{args: args, code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// vcVerified runs veritycheck and fails the test unless it exits 0 and
// says so on stdout.
func vcVerified(t *testing.T, args ...string) vcResult {
	t.Helper()
	r := vcRun(args...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "verified: ") || r.stderr != "" {
		t.Fatalf("want exit 0 and \"verified: ...\", got:\n%v", r)
	}
	return r
}

// vcJSON is the part of veritycheck's --json report the tests look at.
type vcJSON struct {
	Verified           bool   `json:"verified"`
	HashAlgorithm      string `json:"hash_algorithm"`
	DataBlocks         uint64 `json:"data_blocks"`
	HashBlocks         uint64 `json:"hash_blocks"`
	RootHash           string `json:"root_hash"`
	RootMismatch       bool   `json:"root_mismatch"`
	CorruptDataBlocks  uint64 `json:"corrupt_data_blocks"`
	CorruptHashBlocks  uint64 `json:"corrupt_hash_blocks"`
	CorruptHeaderBytes uint64 `json:"corrupt_superblock_bytes"`
	Problems           []struct {
		Where  string `json:"where"`
		Level  *int   `json:"level"`
		Index  uint64 `json:"index"`
		Offset uint64 `json:"offset"`
		Reason string `json:"reason"`
	} `json:"problems"`
	ProblemsTruncated bool `json:"problems_truncated"`
}

// vcDecode decodes a --json report, strictly: one object, nothing after.
func vcDecode(t *testing.T, r vcResult) *vcJSON {
	t.Helper()
	var v vcJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%v", err, r)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value\n%v", r)
	}
	return &v
}

// vsPath returns veritysetup's path, or skips the test (fails it in CI).
func vsPath(t *testing.T) string {
	t.Helper()
	return testtool.Require(t, "veritysetup")
}

// vsRun runs veritysetup and returns its exit code, stdout and stderr.
func vsRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(vsPath(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stdout.String(), stderr.String()
		}
		t.Fatalf("veritysetup %s: %v", strings.Join(args, " "), err)
	}
	return 0, stdout.String(), stderr.String()
}

// vsTree is what veritysetup format reported.
type vsTree struct {
	root       string // hex
	hashBlocks uint64
	dataBlocks uint64
	out        string
}

// vsFormat runs veritysetup format with args and fails the test unless it
// succeeds; it returns the root hash and sizes it printed.
func vsFormat(t *testing.T, args ...string) vsTree {
	t.Helper()
	code, out, errOut := vsRun(t, append([]string{"format"}, args...)...)
	if code != 0 {
		t.Fatalf("veritysetup format %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	tr := vsTree{out: out}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "Root hash":
			tr.root = val
		case "Hash blocks":
			tr.hashBlocks, _ = strconv.ParseUint(val, 10, 64)
		case "Data blocks":
			tr.dataBlocks, _ = strconv.ParseUint(val, 10, 64)
		}
	}
	if tr.root == "" || tr.dataBlocks == 0 {
		t.Fatalf("veritysetup format %s: no root hash or data blocks in its output:\n%s", strings.Join(args, " "), out)
	}
	return tr
}

// vcWrite writes a file or fails the test.
func vcWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// vcXorByte xors the byte at off of the file at path with x, in place
// (so xoring again restores it).
func vcXorByte(t *testing.T, path string, off int64, x byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatalf("reading byte %d of %s: %v", off, path, err)
	}
	b[0] ^= x
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}
