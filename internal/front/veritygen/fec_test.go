package veritygen

// Error correction against veritysetup: `veritygen --fec-device` must write
// the same parity as `veritysetup format --fec-device` (and the same tree,
// and leave every other byte of the files as veritysetup does) for several
// sizes and roots, with the parity in its own file, in HASH past the tree,
// in the image with the tree, and in DATA beside a separate tree; print the
// same report; and `veritysetup verify --fec-device` must accept our
// parity, and use it as it documents ("use forward error correction to
// recover from corruption if hash verification fails").

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/testimages"
)

const (
	fecTestSalt = "fec0112233445566778899aabbccddeeff00112233445566778899aabbccddee"
	fecTestUUID = "a60c98d2-ae9b-4865-bfcb-b4e3ace11033"
)

// fecGenCase is one veritygen/veritysetup format run with --fec-device.
type fecGenCase struct {
	name   string
	alg    string
	format int
	bs     int
	blocks int
	tail   int // bytes of DATA past the last whole block
	roots  int // 0: leave --fec-roots out (the default, 2)
	// layout: "separate" (the parity in DATA.fec at fecOffset), "in-hash"
	// (in HASH, gap blocks past the tree), "in-image" (tree and parity in
	// DATA: --hash-offset past the data, the parity gap blocks past the
	// tree), "in-data" (the parity in DATA, gap blocks past the data, the
	// tree in its own file).
	layout    string
	fecOffset uint64
	gap       uint64
	noSB      bool
}

var fecGenCases = []fecGenCase{
	{name: "separate-r2-default", alg: "sha256", format: 1, bs: 4096, blocks: 300, layout: "separate"},
	{name: "separate-r3-one-block", alg: "sha256", format: 1, bs: 4096, blocks: 1, roots: 3, layout: "separate"},
	{name: "separate-r8-offset-tail", alg: "sha1", format: 0, bs: 1024, blocks: 1500, tail: 100, roots: 8, layout: "separate",
		fecOffset: 3072},
	{name: "separate-r24-nosb", alg: "sha512", format: 1, bs: 512, blocks: 2000, roots: 24, layout: "separate", noSB: true},
	{name: "separate-r24-4096", alg: "sha256", format: 1, bs: 4096, blocks: 260, roots: 24, layout: "separate"},
	{name: "in-hash-r8", alg: "sha256", format: 1, bs: 1024, blocks: 1000, roots: 8, layout: "in-hash", gap: 2},
	{name: "in-hash-r2-no-gap", alg: "sha256", format: 1, bs: 4096, blocks: 129, roots: 2, layout: "in-hash"},
	{name: "in-hash-r24-nosb", alg: "sha1", format: 1, bs: 512, blocks: 700, roots: 24, layout: "in-hash", gap: 1, noSB: true},
	{name: "in-image-r3", alg: "sha256", format: 1, bs: 512, blocks: 600, roots: 3, layout: "in-image", gap: 3},
	{name: "in-image-r24-no-gap", alg: "sha256", format: 1, bs: 4096, blocks: 200, roots: 24, layout: "in-image"},
	{name: "in-data-r8", alg: "sha256", format: 1, bs: 4096, blocks: 100, roots: 8, layout: "in-data", gap: 1},
}

func (c *fecGenCase) effRoots() int {
	if c.roots == 0 {
		return 2
	}
	return c.roots
}

// fecGenRun runs veritygen in-process.
func fecGenRun(args ...string) (code int, stdout, stderr string) {
	var out, errOut, tty bytes.Buffer
	code = run(context.Background(), args, &out, &errOut, &tty)
	return code, out.String(), errOut.String()
}

// fecVS runs veritysetup and returns its exit code, stdout and stderr.
func fecVS(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(testtool.Require(t, "veritysetup"), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// fecGenData writes the case's DATA (deterministic) to path.
func fecGenData(t *testing.T, path string, size int64, seed uint64) {
	t.Helper()
	var b bytes.Buffer
	if err := testimages.Random(&b, size, seed); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fecGenPaths are a run's files in dir.
type fecGenPaths struct{ data, hash, fec string }

func (c *fecGenCase) paths(dir string) fecGenPaths {
	p := fecGenPaths{data: filepath.Join(dir, "data.img"), hash: filepath.Join(dir, "data.img.verity"), fec: filepath.Join(dir, "data.img.fec")}
	switch c.layout {
	case "in-hash":
		p.fec = p.hash
	case "in-image":
		p.hash, p.fec = p.data, p.data
	case "in-data":
		p.fec = p.data
	}
	return p
}

// Shape of the case, computed here from the format's rules, not by the
// package under test.
func (c *fecGenCase) hpb() int {
	size := map[string]int{"sha1": 20, "sha256": 32, "sha512": 64}[c.alg]
	n := 1
	for 2*n <= c.bs/size {
		n *= 2
	}
	return n
}

func (c *fecGenCase) treeBlocks() uint64 {
	var total uint64
	for n := uint64(c.blocks); n > 1; {
		n = (n + uint64(c.hpb()) - 1) / uint64(c.hpb())
		total += n
	}
	return total
}

func (c *fecGenCase) hashOffset() uint64 {
	if c.layout == "in-image" {
		return uint64(c.blocks * c.bs)
	}
	return 0
}

func (c *fecGenCase) hashStartBlock() uint64 {
	bs := uint64(c.bs)
	if c.noSB {
		return c.hashOffset() / bs
	}
	return (c.hashOffset() + 512 + bs - 1) / bs
}

func (c *fecGenCase) hashEnd() uint64 {
	return (c.hashStartBlock() + c.treeBlocks()) * uint64(c.bs)
}

// parityOffset is --fec-offset.
func (c *fecGenCase) parityOffset() uint64 {
	switch c.layout {
	case "in-hash", "in-image":
		return c.hashEnd() + c.gap*uint64(c.bs)
	case "in-data":
		return uint64(c.blocks*c.bs) + c.gap*uint64(c.bs)
	}
	return c.fecOffset
}

// messageBlocks is fec_blocks, and parityBlocks what veritysetup prints as
// "FEC blocks".
func (c *fecGenCase) messageBlocks() uint64 {
	end := c.hashEnd() // the tree's own file: nothing after it
	if c.layout == "in-hash" || c.layout == "in-image" {
		end = c.parityOffset()
	}
	return uint64(c.blocks) + end/uint64(c.bs) - c.hashStartBlock()
}

func (c *fecGenCase) parityBlocks() uint64 {
	k := uint64(255 - c.effRoots())
	return (c.messageBlocks() + k - 1) / k * uint64(c.effRoots())
}

// args are the flags veritysetup format and veritygen share.
func (c *fecGenCase) args(p fecGenPaths) []string {
	a := []string{"--hash=" + c.alg, fmt.Sprintf("--format=%d", c.format), "--salt=" + fecTestSalt,
		fmt.Sprintf("--data-block-size=%d", c.bs), fmt.Sprintf("--hash-block-size=%d", c.bs), "--fec-device=" + p.fec}
	if c.noSB {
		a = append(a, "--no-superblock")
	} else {
		a = append(a, "--uuid="+fecTestUUID)
	}
	if c.roots != 0 {
		a = append(a, fmt.Sprintf("--fec-roots=%d", c.roots))
	}
	if off := c.parityOffset(); off != 0 {
		a = append(a, fmt.Sprintf("--fec-offset=%d", off))
	}
	if c.layout == "in-image" {
		a = append(a, fmt.Sprintf("--hash-offset=%d", c.hashOffset()), fmt.Sprintf("--data-blocks=%d", c.blocks))
	}
	if c.layout == "in-data" {
		a = append(a, fmt.Sprintf("--data-blocks=%d", c.blocks))
	}
	return a
}

// verifyArgs are veritysetup verify's, with the parity at p.fec.
func (c *fecGenCase) verifyArgs(p fecGenPaths, root string) []string {
	a := []string{"verify", "--fec-device=" + p.fec, fmt.Sprintf("--fec-roots=%d", c.effRoots())}
	if off := c.parityOffset(); off != 0 {
		a = append(a, fmt.Sprintf("--fec-offset=%d", off))
	}
	if c.hashOffset() != 0 {
		a = append(a, fmt.Sprintf("--hash-offset=%d", c.hashOffset()))
	}
	if c.noSB {
		a = append(a, "--no-superblock", "--hash="+c.alg, fmt.Sprintf("--format=%d", c.format), "--salt="+fecTestSalt,
			fmt.Sprintf("--data-block-size=%d", c.bs), fmt.Sprintf("--hash-block-size=%d", c.bs), fmt.Sprintf("--data-blocks=%d", c.blocks))
	}
	return append(a, p.data, p.hash, root)
}

// fecRootOf returns the "Root hash" line's value.
func fecRootOf(t *testing.T, report string) string {
	t.Helper()
	for _, line := range strings.Split(report, "\n") {
		if v, ok := strings.CutPrefix(line, "Root hash:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no root hash in\n%s", report)
	return ""
}

// fecSameFiles fails unless dirs a and b hold the same names with the same
// bytes.
func fecSameFiles(t *testing.T, a, b string) {
	t.Helper()
	list := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = data
		}
		return m
	}
	fa, fb := list(a), list(b)
	if !slices.Equal(slices.Sorted(maps.Keys(fa)), slices.Sorted(maps.Keys(fb))) {
		t.Fatalf("files differ: %v vs %v", slices.Sorted(maps.Keys(fa)), slices.Sorted(maps.Keys(fb)))
	}
	for name, x := range fa {
		y := fb[name]
		if bytes.Equal(x, y) {
			continue
		}
		i := 0
		for i < min(len(x), len(y)) && x[i] == y[i] {
			i++
		}
		t.Errorf("%s: %d and %d bytes, first difference at byte %d", name, len(x), len(y), i)
	}
}

// fecGenMake runs veritysetup format in dir/vs and veritygen in dir/ours on
// the same DATA and checks that every file and the report are the same. It
// returns our paths, root hash and report.
func fecGenMake(t *testing.T, c *fecGenCase, seed uint64) (fecGenPaths, string, string) {
	t.Helper()
	dir := t.TempDir()
	vsDir, ourDir := filepath.Join(dir, "vs"), filepath.Join(dir, "ours")
	vp, op := c.paths(vsDir), c.paths(ourDir)
	for _, d := range []string{vsDir, ourDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fecGenData(t, vp.data, int64(c.blocks*c.bs+c.tail), seed)
	fecGenData(t, op.data, int64(c.blocks*c.bs+c.tail), seed)
	if (c.layout == "in-image" || c.layout == "in-hash") && c.gap > 0 {
		// veritysetup reads the message up to the parity, gap included,
		// and fails ("Failed to read RS block") when the file does not
		// reach that far yet: unless parity it has already written made
		// it longer, it does not for a gap block in an early round. So
		// its file is made that long first, with zeros, which it keeps;
		// veritygen extends the file itself.
		f, err := os.OpenFile(vp.hash, os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = f.Truncate(int64(c.parityOffset()))
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	code, theirs, errOut := fecVS(t, append(append([]string{"format"}, c.args(vp)...), vp.data, vp.hash)...)
	if code != 0 {
		t.Fatalf("veritysetup format: exit %d\n%s%s", code, theirs, errOut)
	}
	code, ours, errOut := fecGenRun(append(c.args(op), op.data, op.hash)...)
	if code != 0 {
		t.Fatalf("veritygen %v: exit %d\n%s", append(c.args(op), op.data, op.hash), code, errOut)
	}
	if c.tail == 0 && errOut != "" {
		t.Errorf("veritygen warned: %s", errOut)
	}
	_, theirBody, _ := strings.Cut(theirs, "\n")
	_, ourBody, _ := strings.Cut(asVeritysetupReport(ours), "\n")
	if ourBody != theirBody {
		t.Errorf("report differs from veritysetup's (after the first line)\nveritysetup:\n%s\nveritygen:\n%s", theirs, ours)
	}
	fecSameFiles(t, vsDir, ourDir)
	return op, fecRootOf(t, ours), ours
}

// TestFECMatchesVeritysetup: same files and report as veritysetup format,
// the JSON report's FEC fields, and veritysetup verify accepts our parity.
func TestFECMatchesVeritysetup(t *testing.T) {
	for i := range fecGenCases {
		c := &fecGenCases[i]
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, root, report := fecGenMake(t, c, uint64(100+i))
			if want := fmt.Sprintf("FEC RS roots:   \t%d\nFEC blocks:     \t%d\n", c.effRoots(), c.parityBlocks()); !strings.Contains(report, want) {
				t.Errorf("the report lacks %q:\n%s", want, report)
			}
			if code, out, errOut := fecVS(t, c.verifyArgs(p, root)...); code != 0 || errOut != "" {
				t.Errorf("veritysetup verify with our parity: exit %d\n%s%s", code, out, errOut)
			}

			// The JSON report, from a second run on a copy of DATA.
			dir := t.TempDir()
			jp := c.paths(dir)
			fecGenData(t, jp.data, int64(c.blocks*c.bs+c.tail), uint64(100+i))
			code, out, errOut := fecGenRun(append(append([]string{"--json"}, c.args(jp)...), jp.data, jp.hash)...)
			if code != 0 {
				t.Fatalf("--json: exit %d\n%s", code, errOut)
			}
			var j map[string]any
			dec := json.NewDecoder(strings.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&j); err != nil || dec.More() {
				t.Fatalf("--json output is not one JSON object (%v):\n%s", err, out)
			}
			bs := uint64(c.bs)
			want := map[string]string{
				"fec_device":        jp.fec,
				"fec_roots":         strconv.Itoa(c.effRoots()),
				"fec_blocks":        fmt.Sprint(c.messageBlocks()),
				"fec_parity_blocks": fmt.Sprint(c.parityBlocks()),
				"fec_offset":        fmt.Sprint(c.parityOffset()),
				"fec_start":         fmt.Sprint(c.parityOffset() / bs),
				"fec_size":          fmt.Sprint(c.parityBlocks() * bs),
				"root_hash":         root,
			}
			for k, v := range want {
				if got := fmt.Sprint(j[k]); got != v {
					t.Errorf("--json %s = %s, want %s", k, got, v)
				}
			}
		})
	}
}

// TestFECVeritysetupVerifyUsesOurs: on corrupted images, veritysetup
// verify with our parity does what it documents: hash verification fails,
// the errors are found repairable ("Found N repairable errors with FEC
// device", exit 0; it writes nothing) within the code's capacity for
// errors at unknown places, and not beyond.
func TestFECVeritysetupVerifyUsesOurs(t *testing.T) {
	for _, name := range []string{"separate-r2-default", "in-hash-r8"} {
		var c *fecGenCase
		for i := range fecGenCases {
			if fecGenCases[i].name == name {
				c = &fecGenCases[i]
			}
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := c.paths(dir)
			fecGenData(t, p.data, int64(c.blocks*c.bs), 7)
			code, out, errOut := fecGenRun(append(c.args(p), p.data, p.hash)...)
			if code != 0 {
				t.Fatalf("veritygen: exit %d\n%s", code, errOut)
			}
			root := fecRootOf(t, out)
			orig, err := os.ReadFile(p.data)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			corrupt := func(name string, block int, n int) {
				b := bytes.Clone(orig)
				for _, i := range rng.Perm(c.bs)[:n] {
					b[block*c.bs+i] ^= byte(1 + rng.IntN(255))
				}
				if err := os.WriteFile(p.data, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Five bytes of data block 3.
			corrupt("five bytes", 3, 5)
			if code, _, _ := fecVS(t, "verify", p.data, p.hash, root); code == 0 {
				t.Errorf("veritysetup verify without FEC accepts a corrupted block")
			}
			code, vout, verr := fecVS(t, c.verifyArgs(p, root)...)
			if code != 0 || !strings.Contains(verr, "Verification of data area failed.") ||
				!strings.Contains(verr, "Found 5 repairable errors with FEC device.") {
				t.Errorf("five changed bytes: want exit 0 and 5 repairable errors\nexit %d\n%s%s", code, vout, verr)
			}
			if b, _ := os.ReadFile(p.data); bytes.Equal(b, orig) {
				t.Errorf("veritysetup verify wrote the correction")
			}
			// Two whole blocks of one round: two errors in every codeword,
			// more than roots 2 correct at unknown places.
			if c.effRoots() == 2 {
				rounds := (c.messageBlocks() + 252) / 253
				b := bytes.Clone(orig)
				for _, blk := range []uint64{0, rounds} {
					for i := range c.bs {
						b[blk*uint64(c.bs)+uint64(i)] ^= byte(1 + rng.IntN(255))
					}
				}
				if err := os.WriteFile(p.data, b, 0o644); err != nil {
					t.Fatal(err)
				}
				code, vout, verr := fecVS(t, c.verifyArgs(p, root)...)
				if code == 0 || !strings.Contains(verr, "Errors cannot be repaired with FEC device.") {
					t.Errorf("two whole blocks in one round: want a failure\nexit %d\n%s%s", code, vout, verr)
				}
			}
			// A wrong --fec-roots finds nothing repairable.
			corrupt("one byte", 5, 1)
			args := c.verifyArgs(p, root)
			for i, a := range args {
				if strings.HasPrefix(a, "--fec-roots=") {
					args[i] = fmt.Sprintf("--fec-roots=%d", c.effRoots()+1)
				}
			}
			if code, vout, verr := fecVS(t, args...); code == 0 {
				t.Errorf("a wrong --fec-roots: veritysetup verify succeeds\n%s%s", vout, verr)
			}
		})
	}
}
