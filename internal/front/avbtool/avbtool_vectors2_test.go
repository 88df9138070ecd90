package avbtool

// The avbtool front against avbtool 1.3.0's answers for the rest of its
// subcommands (avb/testdata/vectors2): every case of a subcommand the
// front takes, run through Main with avbtool's own arguments, in the
// files avbtool had.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/avbvectors/signhelper"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

func TestMain(m *testing.M) {
	signhelper.Main()
	os.Exit(m.Run())
}

// loadCases2 reads the cases of avb/testdata/vectors2.
func loadCases2(t *testing.T) []avbvectors.Case2 {
	t.Helper()
	cs, err := avbvectors.Cases2()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// pendingAVB are the subcommands of the vectors the front does not take
// yet, and why: their cases check that the front refuses them (exit 2,
// named) so that a wrapper runs the real avbtool.
var pendingAVB = map[string]string{}

// deviationsAVB are the cases the front answers otherwise than avbtool on
// purpose, and why: it refuses (exit 1, one line in our words) with every
// file as it was.
var deviationsAVB = map[string]string{
	"av-err-too-small": "avbtool exits 0 with a broken 16384-byte file, which cannot hold the 16484-byte image, its vbmeta and " +
		"its footer: the front refuses a partition too small for them",
	"fec-roots1":  "AOSP's fec makes parity of 1 root; the kernel's dm-verity takes 2 to 24 (as veritygen --fec-roots): the front refuses the others",
	"fec-roots25": "AOSP's fec makes parity of 25 roots; the kernel's dm-verity takes 2 to 24 (as veritygen --fec-roots): the front refuses the others",
}

// vectors2Argv0 is the name the front runs under: messages carry it where
// avbtool's carry its path (written "avbtool" in the vectors), argparse's
// usage its base name, as there.
const vectors2Argv0 = "/opt/avbtool-front/avbtool.py"

// TestAvbtoolFrontVectors2: each case gives avbtool's exit code and
// stdout, its stderr where avbtool wrote its own message (where it died of
// a Python traceback, one line in our words, exit 1), avbtool's files (size
// and SHA-256), the signing helper the same inputs; nothing else changes.
// avbtool creates or empties an --output file while it parses its
// arguments, even when it then fails or only prints: the front leaves such
// a file as it was (or absent). With -short, as the avb package's replay
// of the same cases, one success and one failure of each subcommand: the
// whole replay takes minutes under -race (RSA-8192 signing among them).
func TestAvbtoolFrontVectors2(t *testing.T) {
	cases := loadCases2(t)
	if len(cases) != 227 {
		t.Fatalf("%d cases in cases.jsonl, want 227", len(cases))
	}
	replayed, deviating, pending, skipped := 0, 0, 0, 0
	type kind struct {
		sub string
		ok  bool
	}
	seen := map[kind]bool{}
	for _, c := range cases {
		if reason, ok := pendingAVB[c.Args[0]]; ok {
			pending++
			t.Run(c.Name, func(t *testing.T) { checkPending(t, &c, reason) })
			continue
		}
		if reason, ok := deviationsAVB[c.Name]; ok {
			deviating++
			t.Run(c.Name, func(t *testing.T) { checkDeviation(t, &c, reason) })
			continue
		}
		k := kind{c.Args[0], c.Exit == 0}
		if testing.Short() && seen[k] {
			skipped++
			continue
		}
		seen[k] = true
		replayed++
		t.Run(c.Name, func(t *testing.T) { replayVector2(t, &c) })
	}
	t.Logf("%d cases replayed through the front, %d deliberately answered otherwise, %d pending, %d left out (-short)", replayed, deviating, pending, skipped)
	if replayed+skipped < 174 {
		t.Errorf("%d cases replayed, want at least 174", replayed)
	}
}

// checkPending: the front refuses a subcommand it does not take, naming
// it, with nothing written.
func checkPending(t *testing.T, c *avbvectors.Case2, reason string) {
	dir := avbvectors.WorkDir2(t, c)
	before := fronttest.Listing(t, dir)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), vectors2Argv0, c.Args, &stdout, &stderr)
	if code != exitUnsupported || !strings.Contains(stderr.String(), c.Args[0]+" is not one of") {
		t.Fatalf("exit %d, %q: the front takes %s now; replay its cases (remove it from pendingAVB)", code, stderr.String(), c.Args[0])
	}
	fronttest.SameListing(t, before, fronttest.Listing(t, dir))
	t.Logf("pending: %s", reason)
}

// checkDeviation: the front refuses the case, exit 1, one line in our
// words, nothing changed.
func checkDeviation(t *testing.T, c *avbvectors.Case2, reason string) {
	dir := avbvectors.WorkDir2(t, c)
	before := fronttest.Listing(t, dir)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), vectors2Argv0, c.Args, &stdout, &stderr)
	if code != exitFailed || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), vectors2Argv0+": error: ") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and our refusal (avbtool exited %d)", code, stdout.String(), stderr.String(), c.Exit)
	}
	fronttest.SameListing(t, before, fronttest.Listing(t, dir))
	t.Logf("deliberate difference: %s", reason)
}

func replayVector2(t *testing.T, c *avbvectors.Case2) {
	dir := avbvectors.WorkDir2(t, c)
	log := filepath.Join(t.TempDir(), "helper.log")
	t.Setenv("HELPER_LOG", log)
	t.Setenv("HELPER_MODE", c.Env["HELPER_MODE"])
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), vectors2Argv0, c.Args, &stdout, &stderr)
	gotErr := strings.ReplaceAll(strings.ReplaceAll(stderr.String(), vectors2Argv0, "avbtool"), dir, ".")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), gotErr)
	if code != c.Exit {
		t.Errorf("exit %d, avbtool's %d", code, c.Exit)
	}
	if stdout.String() != c.Stdout {
		t.Errorf("stdout:\n%q\navbtool's:\n%q", stdout.String(), c.Stdout)
	}
	switch {
	case strings.Contains(c.Stderr, "Traceback (most recent call last)"):
		// avbtool died of a Python exception: ours says it in one line.
		if !strings.HasPrefix(gotErr, "avbtool: error: ") {
			t.Errorf("stderr %q: want one error line in our words", gotErr)
		}
	case gotErr != c.Stderr:
		t.Errorf("stderr:\n%s\navbtool's:\n%s", gotErr, c.Stderr)
	}
	checkVector2Files(t, c, dir)
	var lines []string
	if b, err := os.ReadFile(log); err == nil {
		lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	if !slices.Equal(lines, c.Helper) {
		t.Errorf("signing helper given:\n%s\navbtool gave it:\n%s", strings.Join(lines, "\n"), strings.Join(c.Helper, "\n"))
	}
}

// checkVector2Files checks every file of the work directory: each output
// as avbtool left it, every other file as it was, nothing new.
func checkVector2Files(t *testing.T, c *avbvectors.Case2, dir string) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		if _, isOutput := c.Outputs[name]; !isOutput && c.Inputs[name] == "" && name != "keys" && name != "props" && name != "helper.py" {
			t.Errorf("%s was made; avbtool made no such file", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range c.Inputs {
		if _, isOutput := c.Outputs[name]; isOutput {
			continue
		}
		if b, err := os.ReadFile(name); err != nil || !bytes.Equal(b, avbvectors.Input2(t, src)) {
			t.Errorf("%s changed (%v); avbtool left it", name, err)
		}
	}
	for name, want := range c.Outputs {
		b, err := os.ReadFile(name)
		switch {
		case want == nil:
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s is still there (%v); avbtool removed it", name, err)
			}
			continue
		case want.Size == 0 && c.Inputs[name] == "" && errors.Is(err, fs.ErrNotExist):
			continue // avbtool made it while parsing; we make nothing we do not write
		case want.Size == 0 && c.Inputs[name] != "" && err == nil && bytes.Equal(b, avbvectors.Input2(t, c.Inputs[name])):
			continue // avbtool emptied it while parsing; we leave it
		case err != nil:
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := sha256.Sum256(b); int64(len(b)) != want.Size || hex.EncodeToString(got[:]) != want.SHA256 {
			t.Errorf("%s: %d bytes, sha256 %x; avbtool's %d bytes, %s", name, len(b), got, want.Size, want.SHA256)
		}
	}
}

// TestAvbtoolFrontDeviceSet: the vectors' device set (boot with a hash
// footer, system and vendor with hashtree footers, vbmeta_system including
// system's descriptors, the top-level vbmeta including boot's and vendor's
// and chaining to vbmeta_system, both padded), made only through the
// front from the raw partition contents, one dev-* case after the other
// in one directory: every file each step reads is the front's own earlier
// output and is avbtool's, byte for byte, and every answer is avbtool's
// (digests, info_image, verify_image, zero_hashtree and the checks after);
// at the end, dev/ holds avbtool's files and no other.
func TestAvbtoolFrontDeviceSet(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"keys", "props"} {
		if err := os.Symlink(filepath.Join(fronttest.AVBVectors, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	steps := 0
	// known is each dev/ file's sha256 as avbtool's directory holds it
	// after the steps so far: what the whole directory is checked
	// against at the end.
	known := map[string]string{}
	for _, c := range loadCases2(t) {
		if !strings.HasPrefix(c.Name, "dev-") {
			continue
		}
		steps++
		for name, src := range c.Inputs {
			switch {
			case !strings.HasPrefix(name, "dev/"):
			case strings.HasPrefix(src, "spec:"):
				// A partition's raw content: the only input not made here.
				b := avbvectors.Input2(t, src)
				if err := os.WriteFile(name, b, 0o644); err != nil {
					t.Fatal(err)
				}
				known[name] = fmt.Sprintf("%x", sha256.Sum256(b))
			default:
				if got := fmt.Sprintf("%x", fronttest.Sum(t, name)); "blob:"+got != src {
					t.Fatalf("%s: before %s, %s is %s, not avbtool's %s", c.Name, c.Name, name, got, src)
				}
				known[name] = strings.TrimPrefix(src, "blob:")
			}
		}
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), vectors2Argv0, c.Args, &stdout, &stderr)
		gotErr := strings.ReplaceAll(stderr.String(), vectors2Argv0, "avbtool")
		if code != c.Exit || stdout.String() != c.Stdout || gotErr != c.Stderr {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; avbtool: %d, %q, %q", c.Name, code, stdout.String(), gotErr, c.Exit, c.Stdout, c.Stderr)
		}
		for name, want := range c.Outputs {
			if size, sum := fronttest.AVBFileSum(t, name); size != want.Size || sum != want.SHA256 {
				t.Fatalf("%s: %s is %d bytes, sha256 %s; avbtool's %d, %s", c.Name, name, size, sum, want.Size, want.SHA256)
			}
			known[name] = want.SHA256
		}
	}
	if steps < 16 {
		t.Fatalf("%d dev-* cases, want 16", steps)
	}
	// After the last step, the whole set file by file: each as avbtool
	// left it, and no file avbtool did not make.
	entries, err := os.ReadDir("dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := filepath.Join("dev", e.Name())
		want, ok := known[name]
		if !ok {
			t.Errorf("%s was made; avbtool's device set has no such file", name)
			continue
		}
		if got := fmt.Sprintf("%x", fronttest.Sum(t, name)); got != want {
			t.Errorf("%s is %s at the end, not avbtool's %s", name, got, want)
		}
		delete(known, name)
	}
	for name := range known {
		t.Errorf("%s is missing at the end; avbtool's device set has it", name)
	}
}
