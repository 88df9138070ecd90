package avb_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/avbvectors/signhelper"
	"github.com/veritytree/veritytree/verity"
)

// loadVectors2 reads testdata/vectors2's cases (made with avbtool 1.3.0;
// see its README.md).
func loadVectors2(t *testing.T) []avbvectors.Case2 {
	t.Helper()
	cs, err := avbvectors.Cases2()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 130 {
		t.Fatalf("%d cases in cases.jsonl, want at least 130", len(cs))
	}
	return cs
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
// error where avbtool failed. -short replays the failures only (and one
// success of each subcommand): the avbtool front's TestAvbtoolFrontVectors2
// replays every case through this package and checks the same of a success
// and more, but not which kind of error a failure is.
func TestVectors2(t *testing.T) {
	ran, succeeded := map[string]int{}, map[string]bool{}
	for _, c := range loadVectors2(t) {
		run := replayed[c.Args[0]]
		if run == nil {
			continue
		}
		if c.Exit == 0 {
			if testing.Short() && succeeded[c.Args[0]] {
				continue
			}
			succeeded[c.Args[0]] = true
		}
		ran[c.Args[0]]++
		t.Run(c.Name, func(t *testing.T) {
			dir := avbvectors.WorkDir2(t, &c)
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

// next returns the next option; argparse's --option=value is taken as
// --option and then value.
func (p *argParser) next() (string, bool) {
	a, ok := p.raw()
	if name, v, isPair := strings.Cut(a, "="); ok && isPair && strings.HasPrefix(a, "--") {
		p.args = slices.Insert(slices.Clone(p.args), p.i, v)
		return name, true
	}
	return a, ok
}

func (p *argParser) raw() (string, bool) {
	if p.err != nil || p.i >= len(p.args) {
		return "", false
	}
	p.i++
	return p.args[p.i-1], true
}

func (p *argParser) value(opt string) string {
	v, ok := p.raw()
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
// run as one (see package signhelper).
func TestMain(m *testing.M) {
	signhelper.Main()
	os.Exit(m.Run())
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
	s := &avb.HelperSigner{Program: signhelper.Program("./helper.py"), KeyPath: "testdata/vectors/keys/rsa2048.pem", Public: key}
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
		s := &avb.HelperSigner{Program: signhelper.Program("./helper.py"), KeyPath: "testdata/vectors/keys/rsa2048.pem", Public: key, WithFiles: files}
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
