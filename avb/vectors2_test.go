package avb_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// The known answers of testdata/vectors2 (made with avbtool 1.3.0; see its
// README.md).
const vectors2Dir = "testdata/vectors2"

type vector2 struct {
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

func loadVectors2(t *testing.T) []vector2 {
	t.Helper()
	f, err := os.Open(filepath.Join(vectors2Dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cs []vector2
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c vector2
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cs) < 130 {
		t.Fatalf("%d cases in cases.jsonl, want at least 130", len(cs))
	}
	return cs
}

// blob returns a file stored in testdata/vectors2/blobs, checked against
// its name.
func blob(t *testing.T, sha string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(vectors2Dir, "blobs", sha+".gz"))
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

// setUpVector2 makes a directory as avbtool ran the case in (the inputs,
// keys/, props/) and makes it the working directory.
func setUpVector2(t *testing.T, c *vector2) string {
	t.Helper()
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, sub := range []string{"keys", "props"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(abs, vectorDir, sub))); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range c.Inputs {
		var b []byte
		switch {
		case strings.HasPrefix(src, "blob:"):
			b = blob(t, strings.TrimPrefix(src, "blob:"))
		case strings.HasPrefix(src, "spec:simg:"):
			b = sparseOf(t, strings.TrimPrefix(src, "spec:simg:"))
		case strings.HasPrefix(src, "spec:"):
			if b, err = avbvectors.Image(strings.TrimPrefix(src, "spec:")); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("input %s: unknown source %q", name, src)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

const vectorDir = "testdata/vectors"

// sparseOf returns what img2simg makes of the image spec gives, as the
// recorder made it.
func sparseOf(t *testing.T, spec string) []byte {
	t.Helper()
	raw, err := avbvectors.Image(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(testtool.Require(t, "img2simg"), in, out).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The subcommands replayed here (the footer verbs' are added in
// vectors2verbs_test.go); verify_image's cases are inputs of these only,
// until the package does it.
var replayed = map[string]func(ctx context.Context, args []string, stdout io.Writer) error{
	"make_vbmeta_image":       runMakeVBMetaImage,
	"calculate_vbmeta_digest": runCalculateVBMetaDigest,
	"print_partition_digests": runPrintPartitionDigests,
	"extract_vbmeta_image":    runExtractVBMetaImage,
	"info_image":              runInfoImage,
}

// TestVectors2 replays avbtool's answers: the files made, byte for byte
// (by sha256), the text printed, what a signing helper was given, and an
// error where avbtool failed.
func TestVectors2(t *testing.T) {
	ran := map[string]int{}
	for _, c := range loadVectors2(t) {
		run := replayed[c.Args[0]]
		if run == nil {
			continue
		}
		ran[c.Args[0]]++
		t.Run(c.Name, func(t *testing.T) {
			dir := setUpVector2(t, &c)
			log := filepath.Join(t.TempDir(), "helper.log")
			t.Setenv("HELPER_LOG", log)
			t.Setenv("HELPER_MODE", c.Env["HELPER_MODE"])
			var stdout bytes.Buffer
			err := run(t.Context(), c.Args[1:], &stdout)
			if why, ok := refusedOnPurpose[c.Name]; ok {
				if err == nil {
					t.Fatalf("no error; refused on purpose: %s", why)
				}
				t.Logf("refused on purpose (%s): %v", why, err)
				return
			}
			if c.Exit != 0 {
				if err == nil {
					t.Fatalf("no error; avbtool exited %d: %s", c.Exit, lastLine(c.Stderr))
				}
				t.Logf("%v (avbtool: %s)", err, lastLine(c.Stderr))
				switch {
				case strings.Contains(c.Stderr, "Error signing"):
					if !errors.Is(err, avb.ErrSigningHelper) {
						t.Errorf("not a signing helper's error: %v", err)
					}
				case c.Exit == 1 && !errors.Is(err, verity.ErrParam) && !errors.Is(err, verity.ErrInput):
					t.Errorf("neither an option's nor an input's error: %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if stdout.String() != c.Stdout {
					t.Errorf("stdout:\n%s\navbtool's:\n%s", stdout.String(), c.Stdout)
				}
				for name, want := range c.Outputs {
					b, err := os.ReadFile(filepath.Join(dir, name))
					if want.Size == 0 && errors.Is(err, fs.ErrNotExist) {
						// avbtool creates --output while it parses its
						// arguments, also when it then prints only; we
						// create no file we do not write.
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if got := sha256.Sum256(b); int64(len(b)) != want.Size || hex.EncodeToString(got[:]) != want.SHA256 {
						t.Errorf("%s: %d bytes, sha256 %x; avbtool's %d bytes, %s", name, len(b), got, want.Size, want.SHA256)
					}
				}
			}
			var lines []string
			if b, err := os.ReadFile(log); err == nil {
				lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			}
			if strings.Join(lines, "\n") != strings.Join(c.Helper, "\n") {
				t.Errorf("signing helper given:\n%s\navbtool gave it:\n%s", strings.Join(lines, "\n"), strings.Join(c.Helper, "\n"))
			}
		})
	}
	for _, sub := range []string{"make_vbmeta_image", "calculate_vbmeta_digest", "print_partition_digests", "extract_vbmeta_image", "info_image",
		"add_hash_footer", "add_hashtree_footer", "append_vbmeta_image", "resize_image", "zero_hashtree"} {
		if ran[sub] == 0 {
			t.Errorf("no %s case", sub)
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// argParser takes avbtool's arguments for one subcommand, as argparse
// does for the options the replay uses.
type argParser struct {
	args []string
	i    int
	err  error
}

func (p *argParser) next() (string, bool) {
	if p.err != nil || p.i >= len(p.args) {
		return "", false
	}
	p.i++
	return p.args[p.i-1], true
}

func (p *argParser) value(opt string) string {
	v, ok := p.next()
	if !ok && p.err == nil {
		p.err = fmt.Errorf("%s needs a value", opt)
	}
	return v
}

// number parses as argparse's parse_number (int(x, 0)).
func (p *argParser) number(opt string) uint64 {
	v := p.value(opt)
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("%s: invalid number %q", opt, v)
	}
	return n
}

// The test binary is the signing helper of the replay (see TestMain):
// helper.py's part, signing in Go.
const helperEnv = "AVB_TEST_SIGNING_HELPER"

func helperProgram(name string) string {
	if name != "./helper.py" {
		return name
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}

func runMakeVBMetaImage(ctx context.Context, args []string, stdout io.Writer) error {
	p := &argParser{args: args}
	var ca commonArgs
	var c avb.VBMetaCommonOptions
	var output string
	var padding uint64
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--output":
			output = p.value(a)
		case "--padding_size":
			padding = p.number(a)
		default:
			took, err := ca.take(ctx, p, a, &c)
			if err != nil {
				return err
			}
			if !took {
				return fmt.Errorf("option %s not replayed", a)
			}
		}
	}
	if p.err != nil {
		return p.err
	}
	if err := ca.finish(ctx, &c); err != nil {
		return err
	}
	o := &avb.VBMetaImageOptions{
		Algorithm: c.Algorithm, Key: c.Key, Signer: c.Signer, ChainPartitions: c.ChainPartitions, Properties: c.Properties,
		SetupRootfsFromKernel: c.SetupRootfsFromKernel, KernelCmdlines: c.KernelCmdlines, IncludeDescriptorsFrom: c.IncludeDescriptorsFrom,
		PublicKeyMetadata: c.PublicKeyMetadata, RollbackIndex: c.RollbackIndex, RollbackIndexLocation: c.RollbackIndexLocation,
		Flags: c.Flags, ReleaseString: c.ReleaseString, AppendToReleaseString: c.AppendToReleaseString, PaddingSize: padding,
	}
	if ca.printVersion {
		m, err := o.RequiredLibavbMinor()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "1.%d\n", m)
		return nil
	}
	if output == "" {
		return &verity.Error{Kind: verity.KindParam, Field: "output", Err: errors.New("no output file given")} // the front's check
	}
	return avb.MakeVBMetaImage(ctx, output, o)
}

func runCalculateVBMetaDigest(ctx context.Context, args []string, stdout io.Writer) error {
	p := &argParser{args: args}
	var image, hashName string
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--image":
			image = p.value(a)
		case "--hash_algorithm":
			hashName = p.value(a)
		default:
			return fmt.Errorf("option %s not replayed", a)
		}
	}
	if p.err != nil {
		return p.err
	}
	d, err := avb.CalculateVBMetaDigest(ctx, image, hashName)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%x\n", d)
	return nil
}

func runPrintPartitionDigests(ctx context.Context, args []string, stdout io.Writer) error {
	p := &argParser{args: args}
	var image string
	var asJSON bool
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--image":
			image = p.value(a)
		case "--json":
			asJSON = true
		default:
			return fmt.Errorf("option %s not replayed", a)
		}
	}
	if p.err != nil {
		return p.err
	}
	return avb.WritePartitionDigests(ctx, stdout, image, asJSON)
}

func runExtractVBMetaImage(ctx context.Context, args []string, _ io.Writer) error {
	p := &argParser{args: args}
	var image, output string
	var padding uint64
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--image":
			image = p.value(a)
		case "--output":
			output = p.value(a)
		case "--padding_size":
			padding = p.number(a)
		default:
			return fmt.Errorf("option %s not replayed", a)
		}
	}
	if p.err != nil {
		return p.err
	}
	return avb.ExtractVBMetaImage(ctx, image, output, padding)
}

func runInfoImage(_ context.Context, args []string, stdout io.Writer) error {
	if len(args) != 2 || args[0] != "--image" {
		return fmt.Errorf("arguments %q not replayed", args)
	}
	img, err := avb.ReadImage(args[1])
	if err != nil {
		return err
	}
	return img.WriteInfo(stdout)
}

// TestMain makes the test binary the signing helper of the replay when
// run as one: it logs what it was given as helper.py does, and signs with
// the private key.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "" {
		os.Setenv(helperEnv, "1") // for the helpers the tests run
		os.Exit(m.Run())
	}
	os.Exit(signingHelper(os.Args[1:]))
}

func signingHelper(args []string) int {
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
	alg, err := avb.AlgorithmByName(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keyPath := args[1]
	if strings.HasSuffix(keyPath, ".pub.pem") { // as helper.py: the private key beside it
		keyPath = strings.TrimSuffix(keyPath, ".pub.pem") + ".pem"
	}
	key, err := avb.LoadPrivateKey(context.Background(), keyPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig, err := rsa.SignPKCS1v15(nil, key, alg.Hash, block[len(block)-alg.HashSize:])
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

// A signing helper that does not answer is killed when ctx ends, and the
// run ends with ctx's error.
func TestHelperSignerInterrupted(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	if err := syscall.Mkfifo(log, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HELPER_LOG", log)
	t.Setenv("HELPER_MODE", "hang")
	key, err := avb.LoadPublicKey(t.Context(), "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// The helper has started once it writes its line.
		f, err := os.Open(log)
		if err == nil {
			bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		cancel()
	}()
	s := &avb.HelperSigner{Program: helperProgram("./helper.py"), KeyPath: "testdata/vectors/keys/rsa2048.pem", Public: key}
	_, err = avb.VBMetaImage(ctx, &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA2048", Signer: s})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

// A helper that fails is named, with its exit code and its stderr; one
// that cannot be run is an error of the option.
func TestHelperSignerErrors(t *testing.T) {
	key, err := avb.LoadPublicKey(t.Context(), "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HELPER_LOG", "")
	t.Setenv("HELPER_MODE", "fail")
	for _, files := range []bool{false, true} {
		s := &avb.HelperSigner{Program: helperProgram("./helper.py"), KeyPath: "testdata/vectors/keys/rsa2048.pem", Public: key, WithFiles: files}
		_, err = avb.VBMetaImage(t.Context(), &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA2048", Signer: s})
		var he *avb.HelperError
		if !errors.As(err, &he) || !errors.Is(err, avb.ErrSigningHelper) || !errors.Is(err, verity.ErrIO) ||
			he.ExitCode != 3 || string(he.Stderr) != "helper: no signing today\n" {
			t.Fatalf("with files %v: got %v (%+v)", files, err, he)
		}
	}
	s := &avb.HelperSigner{Program: filepath.Join(t.TempDir(), "none"), KeyPath: "k", Public: key}
	_, err = avb.VBMetaImage(t.Context(), &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA2048", Signer: s})
	if !errors.Is(err, avb.ErrSigningHelper) || !errors.Is(err, verity.ErrParam) || strings.Contains(err.Error(), "exec:") {
		t.Fatalf("a helper that does not exist: %v", err)
	}
	t.Log(err)
}
