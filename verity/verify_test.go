package verity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
)

// listProblems returns the problems of res as lines "level index".
func listProblems(t testing.TB, res *VerifyResult) []string {
	t.Helper()
	var out []string
	for p, err := range res.Problems() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v %d %d %s", p.Level, p.Index, p.Offset, p.Reason))
	}
	return out
}

func TestVerifyIntactAndCorrupted(t *testing.T) {
	f := newFixture(t, 520, 512, 2, 1)
	ctx := context.Background()
	res, err := Verify(ctx, f.dataPath, f.hashPath, f.root, nil)
	if err != nil || !res.Verified || res.Repair != nil || res.FEC != nil || res.Geometry.DataBlocks != 520 || res.DataFormat != "raw" {
		t.Fatalf("intact: %+v, %v", res, err)
	}
	res.Close()

	f.corrupt(merkle.DataLevel, 7, 3)
	f.corrupt(merkle.DataLevel, 515, 0)
	f.corrupt(1, 1, 0)
	f.writeFiles(t)
	var streamed int
	res, err = Verify(ctx, f.dataPath, f.hashPath, f.root, &VerifyOptions{Jobs: 1, MaxProblems: 2,
		OnProblem: func(*merkle.CorruptionError) { streamed++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	rep := res.Report
	if res.Verified || rep.CorruptDataBlocks != 2 || rep.CorruptHashBlocks != 1 || rep.UncheckedDataBlocks != 256 || !rep.Truncated || streamed != 3 {
		t.Errorf("report %+v, %d streamed", rep, streamed)
	}
	want := []string{"level 1 1 " + fmt.Sprint(f.g.BlockOffset(1, 1)) + " digest mismatch", "data 7 3584 digest mismatch"}
	if got := listProblems(t, res); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// TestVerifyProblemListSpills: the problem list is the same whether it is
// kept in memory or spilled to a temporary file past one problem, with and
// without a repair plan (whose problems found under a rebuilt hash block
// are merged in, in report order). It was TestProblemListSpills of
// cmd/veritycheck.
func TestVerifyProblemListSpills(t *testing.T) {
	f := newFixture(t, 520, 512, 2, 71)
	// Level-0 block 0 and data blocks 3 and 9 under it (found once it is
	// rebuilt), and data blocks elsewhere.
	f.corrupt(0, 0, 5)
	for _, b := range []uint64{3, 9, 200, 300, 301} {
		f.corrupt(merkle.DataLevel, b, 1)
	}
	f.writeFiles(t)
	list := func(opts VerifyOptions) []string {
		res, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &opts)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		return listProblems(t, res)
	}
	for _, opts := range []VerifyOptions{
		{MaxProblems: -1, FECDevice: f.fecPath}, {MaxProblems: 2, FECDevice: f.fecPath}, {MaxProblems: 4, FECDevice: f.fecPath},
		{MaxProblems: 1, FECDevice: f.fecPath}, {MaxProblems: -1}, {MaxProblems: 3},
	} {
		want := list(opts)
		saved := spoolMemory
		spoolMemory = 1
		got := list(opts)
		spoolMemory = saved
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: spilled after 1 problem:\n%q\nin memory:\n%q", opts, got, want)
		}
	}
	got := list(VerifyOptions{MaxProblems: -1, FECDevice: f.fecPath})
	order := []string{"level 0 0 ", "data 3 ", "data 9 ", "data 200 ", "data 300 ", "data 301 "}
	if len(got) != len(order) {
		t.Fatalf("want %d problems: %q", len(order), got)
	}
	for i, w := range order {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d is %q, want %q", i, got[i], w)
		}
	}
}

// TestVerifyChecksOptionsFirst: bad options fail with a KindParam error
// naming the field, before anything is read or verified. It was the part
// of cmd/veritycheck's TestOffsetsCheckedFirst that watched Verify.
func TestVerifyChecksOptionsFirst(t *testing.T) {
	f := newFixture(t, 16, 4096, 2, 2)
	saved := verifyTree
	t.Cleanup(func() { verifyTree = saved })
	verifyTree = func(ctx context.Context, g *merkle.Geometry, data, hash io.ReaderAt, root []byte, opts *merkle.VerifyOptions) (*merkle.VerifyReport, error) {
		t.Error("the tree was verified before the options were checked")
		return saved(ctx, g, data, hash, root, opts)
	}
	for _, c := range []struct {
		opts  VerifyOptions
		field string
		msg   string
	}{
		{VerifyOptions{TreeOptions: TreeOptions{HashOffset: 18446744073709551104}}, "HashOffset", "TreeOptions.HashOffset 18446744073709551104 is too large: at most 9223372036854774784"},
		{VerifyOptions{TreeOptions: TreeOptions{HashOffset: 100}}, "HashOffset", "TreeOptions.HashOffset 100 is not a multiple of 512"},
		{VerifyOptions{TreeOptions: TreeOptions{NoSuperblock: true, Salt: []byte{1}, HashOffset: 18446744073709551104}}, "HashOffset", "at most 9223372036854771200"},
		{VerifyOptions{TreeOptions: TreeOptions{NoSuperblock: true}}, "Salt", "TreeOptions.NoSuperblock needs TreeOptions.Salt"},
		{VerifyOptions{TreeOptions: TreeOptions{Hash: "sha1"}}, "Hash", "TreeOptions.Hash given, but the parameters come from HASH's superblock"},
		{VerifyOptions{FECDevice: f.hashPath, FECOffset: 18446744073709547520}, "FECOffset", "VerifyOptions.FECOffset 18446744073709547520 is too large"},
		{VerifyOptions{FECDevice: f.hashPath, FECRoots: 30}, "FECRoots", "VerifyOptions.FECRoots 30 is not from 2 to 24"},
		{VerifyOptions{Repair: true}, "Repair", "VerifyOptions.Repair needs VerifyOptions.FECDevice"},
		{VerifyOptions{FECDevice: f.hashPath, FECOffset: 100}, "FECOffset", "VerifyOptions.FECOffset 100 is not a multiple of the block size 4096"},
		{VerifyOptions{FECDevice: f.hashPath, FECOffset: 4096}, "FECOffset", "is inside the tree"},
	} {
		res, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &c.opts)
		var e *Error
		if res != nil || !errors.As(err, &e) || e.Kind != KindParam || e.Field != c.field || !errors.Is(err, ErrParam) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: got %v (%+v), want a KindParam error on %s with %q", c.opts, err, e, c.field, c.msg)
		}
	}
	_, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root[:5], nil)
	if !errors.Is(err, ErrParam) || !strings.Contains(err.Error(), "the root hash is 5 bytes, but sha256 digests are 32 bytes") {
		t.Errorf("short root: %v", err)
	}
}

// TestVerifyDataShrinks: DATA cut short while it is read: the message gives
// the size it shrank to, not the offset of the read that failed. It was
// cmd/veritycheck's TestDataShrinks.
func TestVerifyDataShrinks(t *testing.T) {
	f := newFixture(t, 64, 4096, 2, 3)
	saved := verifyTree
	t.Cleanup(func() { verifyTree = saved })
	verifyTree = func(ctx context.Context, g *merkle.Geometry, d, h io.ReaderAt, root []byte, opts *merkle.VerifyOptions) (*merkle.VerifyReport, error) {
		if err := os.Truncate(f.dataPath, 10000); err != nil {
			t.Fatal(err)
		}
		return saved(ctx, g, d, h, root, opts)
	}
	_, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &VerifyOptions{Jobs: 1})
	want := "DATA " + f.dataPath + " shrank to 10000 bytes while being read (it was 262144 bytes): is another program writing it?"
	var e *Error
	if !errors.As(err, &e) || !strings.HasSuffix(err.Error(), want) || !errors.Is(err, ErrInput) {
		t.Errorf("got %v, want a KindInput error ending in\n%s", err, want)
	}
}

// runsCapture runs Verify with verifyTree wrapped and returns the runs
// merkle.Verify was given first.
func runsCapture(t *testing.T, dataPath, hashPath string, root []byte) (*VerifyResult, []merkle.Run) {
	t.Helper()
	var runs []merkle.Run
	seen := false
	orig := verifyTree
	verifyTree = func(ctx context.Context, g *merkle.Geometry, data, hash io.ReaderAt, root []byte, opts *merkle.VerifyOptions) (*merkle.VerifyReport, error) {
		if !seen {
			runs, seen = opts.Runs, true
		}
		return orig(ctx, g, data, hash, root, opts)
	}
	defer func() { verifyTree = orig }()
	res, err := Verify(context.Background(), dataPath, hashPath, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return res, runs
}

func runsCover(runs []merkle.Run, block uint64) bool {
	for _, r := range runs {
		if block >= r.Start && block < r.Start+r.Count {
			return true
		}
	}
	return false
}

// buildTestTree writes the tree of the file at dataPath (SHA-256, 4 KiB
// blocks, salt 0102) with a superblock to hashPath and returns the root.
func buildTestTree(t *testing.T, dataPath, hashPath string) []byte {
	t.Helper()
	info, err := os.Stat(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := merkle.NewGeometry(merkle.Params{Hash: hashes.SHA256, Salt: []byte{1, 2}, DataBlockSize: 4096, HashBlockSize: 4096,
		DataBlocks: uint64(info.Size()) / 4096, Superblock: true})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.Open(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	hash, err := os.Create(hashPath)
	if err != nil {
		t.Fatal(err)
	}
	defer hash.Close()
	root, err := merkle.Build(context.Background(), g, data, hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func xorByte(t *testing.T, path string, off int64, x byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= x
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyHoles: on a mostly-hole image, the holes go to merkle.Verify as
// runs and the image verifies; data written into a hole, data corrupted
// outside the holes, and data punched out into a new hole are each
// reported at the right block. It was cmd/veritycheck's TestHolesChecked
// (there with a tree by veritysetup, which merkle's vectors match).
func TestVerifyHoles(t *testing.T) {
	dir := t.TempDir()
	data, hash := filepath.Join(dir, "holes.img"), filepath.Join(dir, "holes.verity")
	const bs = 4096
	const dataAt = 20 << 20 // one of the data stretches
	testimages.Holes(t, data, 32<<20, []int64{4096, 3<<20 + 1, dataAt, 32<<20 - 70000}, 65536)
	root := buildTestTree(t, data, hash)
	if off, err := holeAt(data); err != nil || off < 0 {
		t.Skip("this file system reports no holes (SEEK_HOLE)")
	}
	res, runs := runsCapture(t, data, hash, root)
	if !res.Verified {
		t.Fatalf("intact holey image: %+v", res.Report)
	}
	var covered uint64
	for _, r := range runs {
		covered += r.Count
	}
	if covered < (32<<20)/bs*9/10 {
		t.Errorf("holes cover %d of %d blocks; the file is mostly hole", covered, (32<<20)/bs)
	}
	expectOne := func(what string, block uint64) []merkle.Run {
		t.Helper()
		res, runs := runsCapture(t, data, hash, root)
		got := listProblems(t, res)
		if res.Verified || res.Report.CorruptDataBlocks != 1 || len(got) != 1 || !strings.HasPrefix(got[0], fmt.Sprintf("data %d ", block)) {
			t.Errorf("%s: want data block %d alone reported, got %q", what, block, got)
		}
		return runs
	}
	// Data outside the holes is still read and checked.
	xorByte(t, data, dataAt+5000, 0x40)
	expectOne("a flipped byte in a data stretch", (dataAt+5000)/bs)
	xorByte(t, data, dataAt+5000, 0x40)
	// A byte written into a hole makes that block data again.
	hole := uint64(10 << 20 / bs)
	if !runsCover(runs, hole) {
		t.Fatalf("block %d should be in a hole: runs %v", hole, runs)
	}
	xorByte(t, data, int64(hole*bs)+7, 0x01)
	expectOne("a byte written into a hole", hole)
	xorByte(t, data, int64(hole*bs)+7, 0x01) // zero again, but now allocated
	// A data block punched out reads as zeros: it is in a hole now,
	// checked without being read, and does not match the tree.
	punched := uint64(dataAt/bs + 2)
	fd, err := os.OpenFile(data, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Fallocate(int(fd.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(punched*bs), bs)
	fd.Close()
	if err != nil {
		t.Fatalf("punching a hole: %v", err)
	}
	if runs := expectOne("a punched-out data block", punched); !runsCover(runs, punched) {
		t.Errorf("the punched block %d is not in the runs %v", punched, runs)
	}
}

// holeAt returns the offset of the first hole of the file before its end,
// or -1.
func holeAt(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
	if err != nil || off >= info.Size() {
		return -1, err
	}
	return off, nil
}

// TestVerifySparseRuns: the img2simg conversion of an image verifies
// against the image's tree, and its FILL and DONT_CARE blocks go to
// merkle.Verify as runs, each of zeros in the raw image. It was the part of
// cmd/veritycheck's TestSparseChecked that watched Verify.
func TestVerifySparseRuns(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	dir := t.TempDir()
	raw, simg, hash := filepath.Join(dir, "system.raw"), filepath.Join(dir, "system.img"), filepath.Join(dir, "system.verity")
	if err := testimages.WriteFile(raw, func(w io.Writer) error { return testimages.Sample(w, 24<<20, 3) }); err != nil {
		t.Fatal(err)
	}
	rawBytes, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img2simg, raw, simg).CombinedOutput(); err != nil {
		t.Fatalf("img2simg: %v\n%s", err, out)
	}
	root := buildTestTree(t, raw, hash)
	res, runs := runsCapture(t, simg, hash, root)
	if !res.Verified || res.DataFormat != "android-sparse" {
		t.Fatalf("sparse image of an intact tree: %+v, %s", res.Report, res.DataFormat)
	}
	if len(runs) == 0 {
		t.Errorf("no FILL or DONT_CARE runs given to Verify")
	}
	for _, r := range runs {
		for b := r.Start; b < r.Start+r.Count; b++ {
			if blk := rawBytes[b*4096 : (b+1)*4096]; !bytes.Equal(blk, make([]byte, 4096)) {
				t.Fatalf("run %v: block %d is not zeros in the raw image", r, b)
			}
		}
	}
}

// TestVerifyRepairSpills: with a budget of one block in memory, the
// rebuilt blocks go to a temporary file and are written back from it; the
// repair is the same. It was cmd/veritycheck's TestFECRepairSpills.
func TestVerifyRepairSpills(t *testing.T) {
	saved := rebuildBudget
	defer func() { rebuildBudget = saved }()
	for _, budget := range []int{saved, 512} {
		rebuildBudget = budget
		orig := newFixture(t, 520, 512, 2, 81)
		f := orig.clone()
		for _, b := range []struct {
			level merkle.Level
			index uint64
		}{{merkle.DataLevel, 1}, {merkle.DataLevel, 2}, {merkle.DataLevel, 99}, {0, 4}, {1, 2}} { // at most 2 per round
			f.corrupt(b.level, b.index, 9)
		}
		f.hash[100] ^= 1 // a reserved byte of the superblock
		f.writeFiles(t)
		res, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &VerifyOptions{FECDevice: f.fecPath, Repair: true, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Verified || !res.Repaired || res.AfterRepair == nil || !res.AfterRepair.OK() || res.Repair.RebuiltCount() != 5 || res.Repair.SuperblockBytes() != 1 {
			t.Errorf("budget %d: %+v, plan %+v", budget, res, res.Repair)
		}
		res.Close()
		for path, want := range map[string][]byte{f.dataPath: orig.data, f.hashPath: orig.hash} {
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
				t.Errorf("budget %d: %s is not restored", budget, path)
			}
		}
	}
}

// TestVerifyRepairProgress: a repair reports its stages in order, each
// from 0 to its total and as it goes (issue 15: only their start and end
// were): the check, planning the repair (blocks rebuilt as rounds are
// decoded; the total grows with the corrupted blocks found under a
// rebuilt hash block), writing it, and reading it back.
func TestVerifyRepairProgress(t *testing.T) {
	f := newFixture(t, 520, 512, 8, 91)
	rounds := f.p.Rounds()
	for r := range rounds {
		f.corrupt(merkle.DataLevel, f.inRound(r, 1)[0], 9)
	}
	// Level 0's block 2 and a data block under it that the check cannot
	// see: found once the hash block is rebuilt.
	f.corrupt(0, 2, 7)
	f.corrupt(merkle.DataLevel, 2*16+5, 9)
	f.writeFiles(t)
	type step struct {
		s           Stage
		done, total uint64
	}
	var got []step
	res, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &VerifyOptions{FECDevice: f.fecPath, FECRoots: f.roots, Repair: true, Jobs: 2,
		Progress: func(s Stage, done, total uint64) { got = append(got, step{s, done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if !res.Repaired || !res.Verified {
		t.Fatalf("not repaired: %+v %+v", res.Report, res.Repair.Lost())
	}
	t.Logf("%d rounds, progress %v", rounds, got)
	bs := uint64(512)
	initial, fixed := (rounds+1)*bs, (rounds+2)*bs
	var stages []Stage
	for i, st := range got {
		first := i == 0 || got[i-1].s != st.s
		last := i == len(got)-1 || got[i+1].s != st.s
		if first {
			stages = append(stages, st.s)
			if st.done != 0 {
				t.Errorf("%v starts at %d", st.s, st.done)
			}
		} else if st.done < got[i-1].done || st.total < got[i-1].total {
			t.Errorf("%v goes back: %v after %v", st.s, st, got[i-1])
		}
		if st.done > st.total || last != (st.done == st.total) {
			t.Errorf("%v: %d of %d (last %v)", st.s, st.done, st.total, last)
		}
		switch {
		case st.s == StageRepairing && first && st.total != initial,
			st.s == StageRepairing && last && st.total != fixed,
			(st.s == StageWriting || st.s == StageVerifying) && st.total != fixed:
			t.Errorf("%v: total %d, want %d (first) or %d", st.s, st.total, initial, fixed)
		}
	}
	if fmt.Sprint(stages) != fmt.Sprint([]Stage{StageHashing, StageRepairing, StageWriting, StageVerifying}) {
		t.Errorf("stages %v", stages)
	}
	// Each repair stage went through steps between its start and end.
	for _, s := range stages[1:] {
		between := 0
		for _, st := range got {
			if st.s == s && st.done > 0 && st.done < st.total {
				between++
			}
		}
		if between == 0 {
			t.Errorf("%v: nothing reported between its start and end", s)
		}
	}
}
