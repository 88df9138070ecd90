package peer_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// The run's size and seed: flags, or the environment (PEER_SEED,
// PEER_CASES) for a run through go test ./... .
var (
	flagSeed     = flag.Uint64("peer.seed", 0, "seed of the generated cases (default: $PEER_SEED, else 1)")
	flagCases    = flag.Int("peer.cases", 0, "number of cases (default: $PEER_CASES, else 40 with -short, 2000 without)")
	flagCase     = flag.Int("peer.case", -1, "run only this case of the seed")
	flagJobs     = flag.Int("peer.jobs", 0, "cases run at once (default: 4 per CPU, at least 8: the tools mostly wait)")
	flagShow     = flag.Int("peer.show", 15, "unaccepted differences shown in full (the rest are counted)")
	flagExamples = flag.Bool("peer.examples", false, "show the first case each rule matched")
	flagRule     = flag.String("peer.rule", "", "show every case whose verdict names a rule containing this text")
	flagTweak    = flag.String("peer.tweak", "", "run only the cases (of the first -peer.cases) with a tweak containing this text")
)

const (
	defaultSeed       = 1
	defaultCases      = 2000
	defaultShortCases = 40
)

func settings(t *testing.T) (seed uint64, cases int) {
	seed, cases = defaultSeed, defaultCases
	if testing.Short() {
		cases = defaultShortCases
	}
	if v := os.Getenv("PEER_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("PEER_SEED=%q: %v", v, err)
		}
		seed = n
	}
	if v := os.Getenv("PEER_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("PEER_CASES=%q: not a count", v)
		}
		cases = n
	}
	if *flagSeed != 0 {
		seed = *flagSeed
	}
	if *flagCases != 0 {
		cases = *flagCases
	}
	return seed, cases
}

// build builds veritygen and links it as veritysetup, as installed.
func build(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := testtool.BuildCommand(t, dir, "./cmd/veritygen")
	// The front's code may live in internal/front; go list -deps of the
	// command covers it, this keeps the cache keyed on it either way.
	pkgs := []string{"./cmd/..."}
	if _, err := os.Stat(filepath.Join(testtool.ModuleRoot(t), "internal", "front")); err == nil {
		pkgs = append(pkgs, "./internal/front/...")
	}
	if err := testtool.TrackSources(pkgs...); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "veritysetup")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// TestVeritysetupPeer runs the generated cases through veritysetup and the
// front and fails on any difference that is neither an accepted rule nor a
// known divergence.
func TestVeritysetupPeer(t *testing.T) {
	real := testtool.Require(t, "veritysetup")
	tl := tools{real: real, ours: build(t)}
	seed, cases := settings(t)
	indexes := make([]int, 0, cases)
	if *flagCase >= 0 {
		indexes = append(indexes, *flagCase)
	} else {
		for i := range cases {
			if *flagTweak == "" || slices.ContainsFunc(generate(seed, i).tweaks, func(tw string) bool {
				return strings.Contains(tw, *flagTweak)
			}) {
				indexes = append(indexes, i)
			}
		}
	}
	jobs := *flagJobs
	if jobs <= 0 {
		jobs = max(8, 4*runtime.GOMAXPROCS(0))
	}
	maxShown := *flagShow
	base := t.TempDir()
	ctx := t.Context()
	var (
		mu       sync.Mutex
		tally    = newTally()
		shown    int
		work     = make(chan int)
		wg       sync.WaitGroup
		oneShown = *flagCase >= 0
	)
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c := generate(seed, i)
				dir := filepath.Join(base, strconv.Itoa(i))
				r, err := runCase(ctx, tl, dir, c)
				os.RemoveAll(dir)
				mu.Lock()
				if err != nil {
					t.Errorf("%s: %v", c.describe(), err)
					tally.failures++
					mu.Unlock()
					continue
				}
				verdict := tally.add(r)
				if verdict == "failure" {
					if shown < maxShown {
						t.Errorf("unaccepted difference:\n%s%s", r.report(), r.snippet(tl, seed))
					}
					shown++
				} else if oneShown || *flagRule != "" && strings.Contains(verdict, *flagRule) {
					t.Logf("%s\n%s%s", verdict, r.report(), r.snippet(tl, seed))
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range indexes {
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if *flagExamples {
		tally.logExamples(t)
	}
	t.Logf("peer: seed %d: %s", seed, tally.summary())
	if shown > maxShown {
		t.Errorf("%d more unaccepted differences not shown", shown-maxShown)
	}
}

// tally counts the verdicts of a run.
type tally struct {
	cases, exact, failures    int
	acceptedCases, knownCases int
	exactStderr               int // whole stderr the same, not only its gist
	accepted, known           map[string]int
	examples                  map[string]string // rule -> the first case it matched (its report)
}

func newTally() *tally {
	return &tally{accepted: map[string]int{}, known: map[string]int{}, examples: map[string]string{}}
}

// compared is what a tally needs of a case compared with its peer,
// veritysetup's (*result) or avbtool's (*avbResult).
type compared interface {
	differs(aspect string) bool
	report() string
}

// add counts r and returns its verdict: "exact", "accepted: RULES",
// "known: RULES" (a known divergence among the rules that explain it) or
// "failure".
func (t *tally) add(r *result) string {
	return addCase(t, r, r.diffs, r.real.stderr == r.ours.stderr, acceptedRules, knownDivergences)
}

// addCase counts a case whose aspects diffs differ (none: an exact match)
// against the rules, and returns its verdict as tally.add does.
func addCase[R compared](t *tally, r R, diffs []string, sameStderr bool, acceptedRules, knownRules []peerRule[R]) string {
	t.cases++
	if len(diffs) == 0 {
		t.exact++
		if sameStderr {
			t.exactStderr++
		}
		return "exact"
	}
	explained := map[string]bool{}
	var accepted, known []string
	// A rule counts for a case when it explains one of its differences.
	relevant := func(ru peerRule[R]) bool {
		for _, c := range ru.covers {
			if r.differs(c) {
				return true
			}
		}
		return false
	}
	for _, a := range acceptedRules {
		if relevant(a) && a.match(r) {
			accepted = append(accepted, a.name)
			for _, c := range a.covers {
				explained[c] = true
			}
		}
	}
	for _, k := range knownRules {
		if relevant(k) && k.match(r) {
			known = append(known, "item "+k.item+": "+k.name)
			for _, c := range k.covers {
				explained[c] = true
			}
		}
	}
	for _, d := range diffs {
		if !explained[d] {
			t.failures++
			return "failure"
		}
	}
	example := func(rule string) {
		if _, ok := t.examples[rule]; !ok {
			t.examples[rule] = r.report()
		}
	}
	for _, a := range accepted {
		t.accepted[a]++
		example(a)
	}
	for _, k := range known {
		t.known[k]++
		example(k)
	}
	if len(known) > 0 {
		t.knownCases++
		return "known: " + strings.Join(append(known, accepted...), "; ")
	}
	t.acceptedCases++
	return "accepted: " + strings.Join(accepted, "; ")
}

// logExamples logs the first case each rule matched (-peer.examples).
func (t *tally) logExamples(tb testing.TB) {
	names := make([]string, 0, len(t.examples))
	for n := range t.examples {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		tb.Logf("first case of %s:\n%s", n, t.examples[n])
	}
}

func (t *tally) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases, %d exact matches (%d with the same whole stderr), %d accepted differences, %d known divergences, %d failures (a case may match several rules)",
		t.cases, t.exact, t.exactStderr, t.acceptedCases, t.knownCases, t.failures)
	for _, m := range []struct {
		title string
		m     map[string]int
	}{{"cases per accepted rule", t.accepted}, {"cases per known divergence (bugs to fix)", t.known}} {
		if len(m.m) == 0 {
			continue
		}
		keys := make([]string, 0, len(m.m))
		for k := range m.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n  %s:", m.title)
		for _, k := range keys {
			fmt.Fprintf(&b, "\n    %4d  %s", m.m[k], k)
		}
	}
	return b.String()
}
