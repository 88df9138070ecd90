package verity

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/veritytree/veritytree/merkle"
)

// Problems gives what EachProblem gives, in memory or spilled, with and
// without a repair plan; a loop can stop early, and range again from the
// start.
func TestProblemsIterator(t *testing.T) {
	f := newFixture(t, 520, 512, 2, 72)
	f.corrupt(0, 0, 5)
	for _, b := range []uint64{3, 9, 200, 300, 301} {
		f.corrupt(merkle.DataLevel, b, 1)
	}
	f.writeFiles(t)
	saved := spoolMemory
	t.Cleanup(func() { spoolMemory = saved })
	for _, mem := range []int{saved, 1} {
		spoolMemory = mem
		for _, opts := range []VerifyOptions{{MaxProblems: -1, FECDevice: f.fecPath}, {MaxProblems: 3, FECDevice: f.fecPath}, {MaxProblems: -1}, {MaxProblems: 2}} {
			res, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &opts)
			if err != nil {
				t.Fatal(err)
			}
			var each []string
			if err := res.EachProblem(func(p *merkle.CorruptionError) bool {
				each = append(each, p.Error())
				return true
			}); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("in memory up to %d, %+v", mem, opts)
			for round := range 2 {
				var got []string
				for p, err := range res.Problems() {
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					got = append(got, p.Error())
				}
				if fmt.Sprint(got) != fmt.Sprint(each) || len(got) == 0 {
					t.Errorf("%s, round %d: Problems gave\n%q\nEachProblem\n%q", name, round, got, each)
				}
			}
			n := 0
			for range res.Problems() {
				if n++; n == 2 {
					break // a yield after this would panic
				}
			}
			if n != 2 {
				t.Errorf("%s: the loop ran %d times before its break", name, n)
			}
			res.Close()
		}
	}
}

// A list that cannot be read back from its temporary file ends with the
// error, as the last pair, with a nil problem.
func TestProblemsReadBackError(t *testing.T) {
	f := newFixture(t, 64, 512, 2, 73)
	for _, b := range []uint64{1, 2, 3, 4} {
		f.corrupt(merkle.DataLevel, b, 0)
	}
	f.writeFiles(t)
	saved := spoolMemory
	t.Cleanup(func() { spoolMemory = saved })
	spoolMemory = 1
	res, err := Verify(context.Background(), f.dataPath, f.hashPath, f.root, &VerifyOptions{MaxProblems: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	res.spool.file.Close() // the disk behind the temporary file fails
	var got []*merkle.CorruptionError
	var errs []error
	for p, err := range res.Problems() {
		got = append(got, p)
		errs = append(errs, err)
	}
	if len(got) == 0 || got[len(got)-1] != nil || !errors.Is(errs[len(errs)-1], ErrIO) {
		t.Fatalf("the last pair is %v, %v; want nil and an I/O error", got, errs)
	}
	for i := range len(got) - 1 {
		if got[i] == nil || errs[i] != nil {
			t.Errorf("pair %d: %v, %v", i, got[i], errs[i])
		}
	}
}
