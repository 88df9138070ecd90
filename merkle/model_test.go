package merkle_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
)

// peerModelMaxBytes bounds the images given to the Python model, which
// hashes slowly; the larger level-fill sizes are left to the peer tests.
const peerModelMaxBytes = 9 << 20

// peerHPB is FORMAT.md's digests per hash block, computed here rather than
// taken from Geometry so that the sizes do not depend on the code tested.
func peerHPB(hbs, ds int) int { return 1 << (bits.Len(uint(hbs/ds)) - 1) }

// peerModelCase is one tree built both by the Python model and by Build.
type peerModelCase struct {
	name      string
	p         merkle.Params
	data      string // image path
	modelTree string // where the model writes its tree
	root      string // the model's root
}

func TestPythonModel(t *testing.T) {
	py := peerPython(t, testtool.Require(t, "python3"))
	model, err := filepath.Abs(filepath.Join("testdata", "verity_model.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	images := &testimages.Cache{Dir: dir}
	rng := rand.New(rand.NewPCG(1, 2))
	salts := map[int][]byte{}
	for _, n := range []int{0, 1, 32, 256} {
		salts[n] = make([]byte, n)
		for i := range salts[n] {
			salts[n][i] = byte(rng.Uint32())
		}
	}
	type bsPair struct{ dbs, hbs int }
	pairs := []bsPair{{512, 512}, {4096, 4096}, {1024, 4096}, {4096, 512}}
	// blake2b-256 over every salt size; blake2b-160 and blake2b-384, which
	// veritysetup lacks too, and sha256 (checked against veritysetup
	// elsewhere, to test the model) with one salt per case.
	algs := []struct {
		alg   *hashes.Algorithm
		salts []int
	}{
		{hashes.BLAKE2b256, []int{0, 1, 32, 256}},
		{hashes.BLAKE2b160, nil},
		{hashes.BLAKE2b384, nil},
		{hashes.SHA256, nil},
	}
	var cases []*peerModelCase
	for _, a := range algs {
		for _, format := range []int{0, 1} {
			for _, bs := range pairs {
				hpb := peerHPB(bs.hbs, a.alg.Size())
				for si, blocks := range []int{1, 2, hpb, hpb + 1, hpb * hpb, hpb*hpb + 1} {
					if blocks*bs.dbs > peerModelMaxBytes {
						continue
					}
					saltSizes := a.salts
					if saltSizes == nil {
						saltSizes = []int{[]int{0, 1, 32, 256}[(si+format)%4]}
					}
					for _, ss := range saltSizes {
						c := &peerModelCase{
							name: fmt.Sprintf("%s/v%d/%d-%d/blocks=%d/salt=%d", a.alg.Name(), format, bs.dbs, bs.hbs, blocks, ss),
							p: merkle.Params{
								Hash: a.alg, LegacyFormat: format == 0, Salt: salts[ss],
								DataBlockSize: bs.dbs, HashBlockSize: bs.hbs, DataBlocks: uint64(blocks),
							},
							// Partial trailing bytes, which neither side covers.
							data:      images.Random(t, int64(blocks*bs.dbs)+int64(blocks%3)*100),
							modelTree: filepath.Join(dir, fmt.Sprintf("model-%d.tree", len(cases))),
						}
						cases = append(cases, c)
					}
				}
			}
		}
	}
	if len(cases) < 100 {
		t.Fatalf("only %d cases", len(cases)) // guards against the size cap eating the matrix
	}
	peerRunModel(t, py, model, cases)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			peerCompareModel(t, c)
		})
	}
}

// peerPython returns the interpreter behind python3: launchers such as
// pyenv's shim cost a second per run, the interpreter itself 40 ms.
func peerPython(t *testing.T, py string) string {
	t.Helper()
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	if exe := strings.TrimSpace(string(out)); exe != "" {
		return exe
	}
	return py
}

func peerModelArgs(c *peerModelCase) []string {
	salt := "-"
	if len(c.p.Salt) > 0 {
		salt = hex.EncodeToString(c.p.Salt)
	}
	return []string{c.data, c.p.Hash.Name(), fmt.Sprint(c.p.Format()),
		fmt.Sprint(c.p.DataBlockSize), fmt.Sprint(c.p.HashBlockSize), salt, c.modelTree}
}

// peerRunModel fills in the model's roots: the first case through the
// command line, the rest in two --batch processes (one per core), since
// starting the interpreter costs more than most trees.
func peerRunModel(t *testing.T, py, model string, cases []*peerModelCase) {
	t.Helper()
	run := func(stdin string, args ...string) ([]string, error) {
		cmd := exec.CommandContext(t.Context(), py, append([]string{"-I", "-S", model}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%v: %v\n%s", cmd.Args, err, stderr.Bytes())
		}
		return strings.Fields(string(out)), nil
	}
	roots, err := run("", peerModelArgs(cases[0])...)
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) != 1 {
		t.Fatalf("model printed %q, want one root", roots)
	}
	cases[0].root = roots[0]

	rest := cases[1:]
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for part := range 2 {
		wg.Go(func() {
			var in strings.Builder
			var mine []*peerModelCase
			for i := part; i < len(rest); i += 2 {
				mine = append(mine, rest[i])
				in.WriteString(strings.Join(peerModelArgs(rest[i]), "\t") + "\n")
			}
			roots, err := run(in.String(), "--batch")
			if err == nil && len(roots) != len(mine) {
				err = fmt.Errorf("model printed %d roots for %d jobs", len(roots), len(mine))
			}
			if err != nil {
				errs[part] = err
				return
			}
			for i, c := range mine {
				c.root = roots[i]
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func peerCompareModel(t *testing.T, c *peerModelCase) {
	g, err := merkle.NewGeometry(c.p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.Open(c.data)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	ourPath := filepath.Join(t.TempDir(), "our.tree")
	hf, err := os.Create(ourPath)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	root, err := merkle.Build(context.Background(), g, data, hf, &merkle.BuildOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(root); got != c.root {
		t.Errorf("root %s, model says %s", got, c.root)
	}
	ours, err := os.ReadFile(ourPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(c.modelTree)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(want)) != g.HashEnd() {
		t.Errorf("model tree is %d bytes, HashEnd is %d", len(want), g.HashEnd())
	}
	if !bytes.Equal(ours, want) {
		t.Errorf("tree differs from the model's: %d vs %d bytes, first difference at byte %d",
			len(ours), len(want), peerFirstDiff(ours, want))
	}
}

// peerFirstDiff returns the first index where a and b differ.
func peerFirstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
