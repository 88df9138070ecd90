package fronttest

// avbtool 1.3.0's answers for its subcommands besides add_hashtree_footer
// (avb/testdata/vectors2; see its README.md), and the test signing helper
// the cases name (./helper.py): the test binary, run again.

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/testtool"
)

// AVBVectors2 is the directory of the second set of avbtool's answers,
// absolute.
var AVBVectors2 = filepath.Join(filepath.Dir(AVBVectors), "vectors2")

// AVBCase2 is one case of vectors2's cases.jsonl.
type AVBCase2 struct {
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

// AVBCases2 reads cases.jsonl, every case in its order.
func AVBCases2(t *testing.T) []AVBCase2 {
	t.Helper()
	f, err := os.Open(filepath.Join(AVBVectors2, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cs []AVBCase2
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c AVBCase2
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cs
}

// AVBBlob2 returns a file of vectors2's blobs/, checked against its name.
func AVBBlob2(t *testing.T, sha string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(AVBVectors2, "blobs", sha+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sha {
		t.Fatalf("blob %s has sha256 %x", sha, got)
	}
	return b
}

// AVBInput2 is the content of an input of a case (spec: or blob:).
func AVBInput2(t *testing.T, src string) []byte {
	t.Helper()
	switch {
	case strings.HasPrefix(src, "blob:"):
		return AVBBlob2(t, strings.TrimPrefix(src, "blob:"))
	case strings.HasPrefix(src, "spec:simg:"):
		return img2simg(t, AVBInput2(t, "spec:"+strings.TrimPrefix(src, "spec:simg:")))
	case strings.HasPrefix(src, "spec:"):
		b, err := avbvectors.Image(strings.TrimPrefix(src, "spec:"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("unknown input source %q", src)
	return nil
}

// img2simg is what img2simg (the tool the vectors were made with) makes of
// raw.
func img2simg(t *testing.T, raw []byte) []byte {
	t.Helper()
	tool := testtool.Require(t, "img2simg")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, in, out).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, b)
	}
	return Read(t, out)
}

// AVBWorkDir2 makes the directory a case ran in (its inputs; keys/ and
// props/ of the first vectors as absolute symbolic links; helper.py, the
// test binary) and changes into it.
func AVBWorkDir2(t *testing.T, c *AVBCase2) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"keys", "props"} {
		if err := os.Symlink(filepath.Join(AVBVectors, d), filepath.Join(dir, d)); err != nil {
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
		if err := os.WriteFile(p, AVBInput2(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

// signingHelperEnv, set, makes the test binary the signing helper.
const signingHelperEnv = "VERITYTREE_TEST_SIGNING_HELPER"

// SigningHelperMain is for a TestMain whose tests run the cases with a
// signing helper: run as the helper (the cases' ./helper.py is a link to
// the test binary), it does what helper.py does and exits; else it makes
// the programs the tests start know that they are the helper.
func SigningHelperMain() {
	if os.Getenv(signingHelperEnv) == "" {
		os.Setenv(signingHelperEnv, "1")
		return
	}
	os.Exit(signingHelper(os.Args[1:]))
}

// signingHelper is helper.py of vectors2 in Go: it logs what it was given
// to $HELPER_LOG, fails or gives a signature a byte short or long as
// $HELPER_MODE says (hang: waits to be killed), else signs the block with the private key KEY names
// (KEY.pub.pem stands for KEY.pem).
func signingHelper(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "helper: ALGORITHM KEY [FILE]")
		return 2
	}
	var block []byte
	var err error
	via := "stdin"
	if len(args) == 3 {
		via = "file"
		block, err = os.ReadFile(args[2])
	} else {
		block, err = io.ReadAll(os.Stdin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if log := os.Getenv("HELPER_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(f, "argc=%d alg=%s key=%s via=%s in=%d:%x\n", len(args), args[0], args[1], via, len(block), sha256.Sum256(block))
		f.Close()
	}
	mode := os.Getenv("HELPER_MODE")
	if mode == "hang" { // until killed
		time.Sleep(time.Hour)
	}
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "helper: no signing today")
		return 3
	}
	sig, err := helperSign(args[0], args[1], block)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "short":
		sig = sig[:len(sig)-1]
	case "long":
		sig = append(sig, 0)
	}
	if via == "file" {
		err = os.WriteFile(args[2], sig, 0o600)
	} else {
		_, err = os.Stdout.Write(sig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func helperSign(algName, keyPath string, block []byte) ([]byte, error) {
	alg, err := avb.AlgorithmByName(algName)
	if err != nil {
		return nil, err
	}
	keyPath, _ = strings.CutSuffix(keyPath, ".pub.pem")
	keyPath = strings.TrimSuffix(keyPath, ".pem") + ".pem"
	key, err := avb.LoadPrivateKey(context.Background(), keyPath)
	if err != nil {
		return nil, err
	}
	if len(block) < alg.HashSize {
		return nil, fmt.Errorf("helper: a block of %d bytes", len(block))
	}
	return rsa.SignPKCS1v15(nil, key, alg.Hash, block[len(block)-alg.HashSize:])
}
