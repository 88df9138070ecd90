package veritycheck

// Fuzzing of what veritycheck parses from files, through run, the
// command's whole path: the root hash file and the superblock of --dump.

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// checkMessages fails unless stderr is veritycheck's usual one error line
// (with hints) or nothing, and holds no trace of a crash.
func checkMessages(t *testing.T, code int, stderr string) {
	t.Helper()
	for _, bad := range []string{"panic", "goroutine", "negative", "runtime error"} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("stderr mentions %q:\n%s", bad, stderr)
		}
	}
	errs := 0
	for _, line := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		switch {
		case line == "" && stderr == "":
		case strings.HasPrefix(line, "veritycheck: error: "):
			errs++
		case strings.HasPrefix(line, "veritycheck: hint: "), strings.HasPrefix(line, "veritycheck: warning: "):
		default:
			t.Fatalf("stderr line %q is not an error, hint or warning", line)
		}
	}
	if (code != 0) != (errs == 1) || errs > 1 {
		t.Fatalf("exit %d with %d error lines:\n%s", code, errs, stderr)
	}
}

// fuzzImage writes a small image and its tree (sha256, salt, superblock)
// in dir and returns the root hash.
func fuzzImage(f *testing.F, dir string) []byte {
	a, err := hashes.Lookup("sha256")
	if err != nil {
		f.Fatal(err)
	}
	g, err := merkle.NewGeometry(merkle.Params{Hash: a, Salt: []byte{0xfe, 0xed}, DataBlockSize: 4096, HashBlockSize: 4096,
		DataBlocks: 8, Superblock: true})
	if err != nil {
		f.Fatal(err)
	}
	data := make([]byte, g.DataSize())
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "d.img"), data, 0o644); err != nil {
		f.Fatal(err)
	}
	hash, err := os.Create(filepath.Join(dir, "d.img.verity"))
	if err != nil {
		f.Fatal(err)
	}
	defer hash.Close()
	root, err := merkle.Build(context.Background(), g, bytes.NewReader(data), hash, &merkle.BuildOptions{Jobs: 1})
	if err != nil {
		f.Fatal(err)
	}
	return root
}

var hexOnly = regexp.MustCompile(`^[0-9a-fA-F]*$`)

// FuzzRootHashFile: whatever --root-hash-file holds, veritycheck verifies
// (exit 0) only when it holds this tree's root hash, always does so when
// the file is the root hash in hex with or without a final newline, says
// "not this tree's" (exit 1) only for a well-formed hash of the right size,
// and otherwise fails with one error line (exit 2).
func FuzzRootHashFile(f *testing.F) {
	dir := f.TempDir()
	root := fuzzImage(f, dir)
	rootHex := hex.EncodeToString(root)
	for _, s := range []string{rootHex, rootHex + "\n", strings.ToUpper(rootHex), " " + rootHex + "\r\n", rootHex[:62],
		rootHex + "00", strings.Repeat("0", 64), "", "\n", "zz" + rootHex[2:], rootHex + "\x00", rootHex + "\nsecond line\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		rhf := filepath.Join(t.TempDir(), "root.hex")
		if err := os.WriteFile(rhf, content, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--root-hash-file=" + rhf, "--jobs=1",
			filepath.Join(dir, "d.img")}, &stdout, &stderr, &bytes.Buffer{})
		checkMessages(t, code, stderr.String())
		text := strings.TrimSpace(string(content))
		decoded, derr := hex.DecodeString(text)
		switch code {
		case 0:
			if derr != nil || !bytes.Equal(decoded, root) {
				t.Fatalf("verified with a root hash file holding %q", content)
			}
		case 1:
			if !hexOnly.MatchString(text) || len(text) != 2*len(root) {
				t.Fatalf("exit 1 (wrong root) for %q, which is no %d-byte hash", content, len(root))
			}
		case 2:
		default:
			t.Fatalf("exit %d", code)
		}
		if s := string(content); (s == rootHex || s == rootHex+"\n") && code != 0 {
			t.Fatalf("the root hash file %q is refused: exit %d\n%s", s, code, stderr.String())
		}
	})
}

// FuzzDump: --dump of any file exits 0 only for a superblock that
// decodes (and always for a strictly valid one describing a possible
// tree), and otherwise fails with one error line.
func FuzzDump(f *testing.F) {
	dir := f.TempDir()
	fuzzImage(f, dir)
	sb, err := os.ReadFile(filepath.Join(dir, "d.img.verity"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sb[:512])
	f.Add([]byte("verity\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h := filepath.Join(t.TempDir(), "h")
		if err := os.WriteFile(h, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--dump", h}, &stdout, &stderr, &bytes.Buffer{})
		checkMessages(t, code, stderr.String())
		_, derr := merkle.DecodeSuperblock(b)
		switch {
		case code == 0 && derr != nil:
			t.Fatalf("--dump accepted a superblock DecodeSuperblock refuses: %v", derr)
		case code != 0 && code != 2:
			t.Fatalf("exit %d", code)
		}
		if p, err := merkle.ParseSuperblock(b); err == nil {
			if _, gerr := merkle.NewGeometry(p); gerr == nil && code != 0 {
				t.Fatalf("--dump refused a valid superblock: %s", stderr.String())
			}
		}
	})
}
