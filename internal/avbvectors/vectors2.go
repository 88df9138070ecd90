package avbvectors

// avbtool 1.3.0's answers for its subcommands besides add_hashtree_footer
// (avb/testdata/vectors2; see its README.md), for the tests of package avb
// and of the avbtool front.

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// Dir and Dir2 are the directories of the two sets of avbtool's answers
// (avb/testdata/vectors and vectors2), absolute: the tests change into
// work directories.
var Dir, Dir2 = func() (string, string) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("avbvectors: no source path")
	}
	testdata := filepath.Join(filepath.Dir(file), "..", "..", "avb", "testdata")
	return filepath.Join(testdata, "vectors"), filepath.Join(testdata, "vectors2")
}()

// Case2 is one case of vectors2's cases.jsonl: avbtool's arguments, its
// environment and input files, and what it did (exit code, output, the
// files it wrote by size and SHA-256, the lines the signing helper logged).
type Case2 struct {
	Name    string            `json:"name"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Inputs  map[string]string `json:"inputs"`
	Exit    int               `json:"exit"`
	Stdout  string            `json:"stdout"`
	Stderr  string            `json:"stderr"`
	Outputs map[string]*struct {
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"outputs"`
	Helper []string `json:"helper"`
}

// Cases2 reads cases.jsonl, every case in its order.
func Cases2() ([]Case2, error) {
	f, err := os.Open(filepath.Join(Dir2, "cases.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cs []Case2
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c Case2
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("cases.jsonl: %w", err)
		}
		cs = append(cs, c)
	}
	return cs, sc.Err()
}

// Blob2 returns a file of vectors2's blobs/ by its SHA-256, checked
// against it.
func Blob2(sha string) ([]byte, error) {
	f, err := os.Open(filepath.Join(Dir2, "blobs", sha+".gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", sha, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", sha, err)
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sha {
		return nil, fmt.Errorf("blob %s has sha256 %x", sha, got)
	}
	return b, nil
}

// Input2 is the content of an input of a case: "blob:SHA256" (a stored
// file), "spec:SPEC" (Image's notation) or "spec:simg:SPEC" (what img2simg,
// which the recorder ran, makes of it; a test without img2simg is skipped,
// failed in CI).
func Input2(t testing.TB, src string) []byte {
	t.Helper()
	if strings.HasPrefix(src, "spec:simg:") {
		testtool.Require(t, "img2simg")
	}
	b, err := InputBytes(src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// InputBytes is Input2 for callers without a testing.TB (a worker
// goroutine): an error where Input2 fails the test (img2simg missing
// too).
func InputBytes(src string) ([]byte, error) {
	switch {
	case strings.HasPrefix(src, "blob:"):
		return Blob2(strings.TrimPrefix(src, "blob:"))
	case strings.HasPrefix(src, "spec:simg:"):
		raw, err := InputBytes("spec:" + strings.TrimPrefix(src, "spec:simg:"))
		if err != nil {
			return nil, err
		}
		return Img2simg(raw, 0)
	case strings.HasPrefix(src, "spec:"):
		return Image(strings.TrimPrefix(src, "spec:"))
	}
	return nil, fmt.Errorf("unknown input source %q", src)
}

// Img2simg is what img2simg makes of raw, in blocks of blockSize bytes
// (0: img2simg's default, 4096).
func Img2simg(raw []byte, blockSize int) ([]byte, error) {
	tool, err := exec.LookPath("img2simg")
	if err != nil {
		return nil, fmt.Errorf("img2simg: %w", err)
	}
	dir, err := os.MkdirTemp("", "avbvectors-simg")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		return nil, err
	}
	args := []string{in, out}
	if blockSize > 0 {
		args = append(args, fmt.Sprint(blockSize))
	}
	if b, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("img2simg: %v: %s", err, b)
	}
	return os.ReadFile(out)
}

// WorkDir2 makes a directory as the one avbtool ran the case in (its
// inputs; keys/ and props/ of the first vectors as absolute symbolic
// links; helper.py, a link to the test binary, which a TestMain makes the
// signing helper: see package signhelper), changes into it and returns it.
func WorkDir2(t testing.TB, c *Case2) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"keys", "props"} {
		if err := os.Symlink(filepath.Join(Dir, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "helper.py")); err != nil {
		t.Fatal(err)
	}
	for name, src := range c.Inputs {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, Input2(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}
