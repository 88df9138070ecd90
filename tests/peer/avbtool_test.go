package peer_test

// The avbtool front against avbtool 1.3.0. avbtool is not packaged, so
// CI cannot run it: its answers to the generated cases are recorded where
// it is at hand (-peer.record, AVBTOOL naming avbtool.py) in
// testdata/avbtool-seed<N>.jsonl, and the test replays each case through
// the front (a built binary, run as avbtool.py) on the same inputs,
// comparing every step: exit code, stdout, stderr's gist and every file
// the step made, changed or removed (size and SHA-256).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/internal/testtool"
)

var (
	flagRecord = flag.Bool("peer.record", false, "run avbtool ($AVBTOOL, default /tmp/avbtool/avbtool.py) on the avbtool cases and write testdata/avbtool-seed<N>.jsonl")
	flagKeep   = flag.String("peer.keep", "", "with -peer.case: leave the avbtool case's inputs and a script running its steps in this directory")
)

const (
	defaultAVBCases      = 2000
	defaultAVBShortCases = 300
	defaultAVBTool       = "/tmp/avbtool/avbtool.py"
)

// avbAnswer is what one step did: for a harness step, only its files.
type avbAnswer struct {
	Exit   int                `json:"exit"`
	Stdout string             `json:"stdout,omitempty"`
	Stderr string             `json:"stderr,omitempty"`
	Files  map[string]*string `json:"files,omitempty"` // made or changed: "SIZE SHA256" or "dir"; removed: null
}

// avbRecord is a line of avbtool-seed<N>.jsonl.
type avbRecord struct {
	Case    *avbCase     `json:"case"`
	Answers []*avbAnswer `json:"answers"`
}

func avbRecordFile(seed uint64) string {
	return filepath.Join("testdata", fmt.Sprintf("avbtool-seed%d.jsonl", seed))
}

func avbJobs() int {
	if *flagJobs > 0 {
		return *flagJobs
	}
	return max(4, 2*runtime.GOMAXPROCS(0))
}

// avbRunner runs a tool step in dir: avbtool's arguments, its outcome with
// the path of the program written "avbtool" and dir ".".
type avbRunner func(ctx context.Context, dir string, args []string) (*avbAnswer, error)

func execRunner(argv0 string, prefix ...string) avbRunner {
	return func(ctx context.Context, dir string, args []string) (*avbAnswer, error) {
		ctx, cancel := context.WithTimeout(ctx, commandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, prefix[0], append(prefix[1:], args...)...)
		cmd.Dir = dir
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "COLUMNS=") && !strings.HasPrefix(e, "LC_ALL=") {
				env = append(env, e)
			}
		}
		cmd.Env = append(env, "LC_ALL=C.UTF-8")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		norm := func(s string) string {
			return strings.ReplaceAll(strings.ReplaceAll(s, argv0, "avbtool"), dir, ".")
		}
		a := &avbAnswer{Stdout: norm(stdout.String()), Stderr: norm(stderr.String())}
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: no end after %v", shellLine(args), commandTimeout)
		case errors.As(err, &ee):
			a.Exit = ee.ExitCode()
		case err != nil:
			return nil, err
		}
		return a, nil
	}
}

// avbSnapshot is the state of every name under dir but keys/ and props/.
func avbSnapshot(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
			return nil
		case rel == "keys" || rel == "props":
			return nil
		case d.IsDir():
			out[rel] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("%d %s", len(b), hex.EncodeToString(sum[:]))
		default:
			out[rel] = d.Type().String()
		}
		return nil
	})
	return out, err
}

// delta is what changed from before to after.
func delta(before, after map[string]string) map[string]*string {
	d := map[string]*string{}
	for n, s := range after {
		if before[n] != s {
			d[n] = &s
		}
	}
	for n := range before {
		if _, ok := after[n]; !ok {
			d[n] = nil
		}
	}
	if len(d) == 0 {
		return nil
	}
	return d
}

// avbSetup makes the case's directory: keys/ and props/ of the vectors,
// the inputs.
func avbSetup(dir string, c *avbCase) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range []string{"keys", "props"} {
		if err := os.Symlink(filepath.Join(avbvectors.Dir, d), filepath.Join(dir, d)); err != nil {
			return err
		}
	}
	for name, src := range c.Inputs {
		p := filepath.Join(dir, name)
		if src == "dir" {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		b, err := avbvectors.InputBytes(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// harness runs a step of the harness's own ("@...") in dir.
func harness(dir string, step []string) error {
	p := filepath.Join(dir, step[1])
	switch step[0] {
	case "@simg":
		raw, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		bs, _ := strconv.Atoi(step[2])
		b, err := avbvectors.Img2simg(raw, bs)
		if err != nil {
			return err
		}
		return os.WriteFile(p, b, 0o644)
	case "@poke":
		off, _ := strconv.ParseInt(step[2], 10, 64)
		v, _ := hex.DecodeString(step[3])
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return nil // the preparation did not make it: nothing to damage
		}
		defer f.Close()
		_, err = f.WriteAt(v, off)
		return err
	case "@trunc":
		n, _ := strconv.ParseInt(step[2], 10, 64)
		if err := os.Truncate(p, n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown harness step %q", step[0])
}

// runAVBSteps runs the case's steps in dir, calling each(step, before,
// answer) after each; each returns false to stop.
func runAVBSteps(ctx context.Context, dir string, c *avbCase, tool avbRunner, each func(i int, before map[string]string, a *avbAnswer) bool) error {
	if err := avbSetup(dir, c); err != nil {
		return err
	}
	for i, step := range c.Steps {
		before, err := avbSnapshot(dir)
		if err != nil {
			return err
		}
		var a *avbAnswer
		if len(step) > 0 && strings.HasPrefix(step[0], "@") {
			if err := harness(dir, step); err != nil {
				return fmt.Errorf("step %d %v: %w", i, step, err)
			}
			a = &avbAnswer{}
		} else if a, err = tool(ctx, dir, step); err != nil {
			return err
		}
		after, err := avbSnapshot(dir)
		if err != nil {
			return err
		}
		a.Files = delta(before, after)
		if !each(i, before, a) {
			return nil
		}
	}
	return nil
}

// avbSide is one tool's outcome of a step.
type avbSide struct {
	code           int
	stdout, stderr string
	gist           string
	files          map[string]*string
}

func sideOf(a *avbAnswer) avbSide {
	return avbSide{code: a.Exit, stdout: a.Stdout, stderr: a.Stderr, gist: avbGist(a.Stderr), files: a.Files}
}

// avbResult is the first step of a case whose outcomes differ (or its
// last step).
type avbResult struct {
	c      *avbCase
	step   int
	args   []string
	before map[string]string // the directory before the step
	real   avbSide
	ours   avbSide
	diffs  []string // "code", "stdout", "gist", "files"
}

func (r *avbResult) differs(what string) bool {
	for _, d := range r.diffs {
		if d == what {
			return true
		}
	}
	return false
}

var avbPrefix = regexp.MustCompile(`^avbtool(\.py)?( [a-z_]+)?: (error: )?`)

// avbGist is the message of stderr: a Python traceback's last line,
// else the first line that is not argparse's usage, its prefix cut.
func avbGist(stderr string) string {
	if strings.Contains(stderr, "Traceback (most recent call last)") {
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		return "traceback: " + lines[len(lines)-1]
	}
	inUsage := false
	for l := range strings.Lines(stderr) {
		switch {
		case strings.HasPrefix(l, "The --generate_fec option is deprecated"):
			continue // a warning, then perhaps the message
		case strings.HasPrefix(l, "usage: "):
			inUsage = true
			continue
		case inUsage && strings.HasPrefix(l, " "):
			continue
		}
		inUsage = false
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		return avbPrefix.ReplaceAllString(l, "")
	}
	return ""
}

// filesText is a files delta for comparison and reports, sizes only when
// the step draws a random salt.
func filesText(f map[string]*string, sizesOnly bool) string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		s := "removed"
		if f[n] != nil {
			s = *f[n]
			if sizesOnly {
				s, _, _ = strings.Cut(s, " ")
			}
		}
		fmt.Fprintf(&b, "%s: %s; ", n, s)
	}
	return b.String()
}

// compareStep fills r's differences.
func (r *avbResult) compare() {
	r.diffs = nil
	if r.real.code != r.ours.code {
		r.diffs = append(r.diffs, "code")
	}
	if r.real.stdout != r.ours.stdout {
		r.diffs = append(r.diffs, "stdout")
	}
	if r.real.gist != r.ours.gist {
		r.diffs = append(r.diffs, "gist")
	}
	sizesOnly := r.c.RandomSalt && r.step == len(r.c.Steps)-1
	if filesText(r.real.files, sizesOnly) != filesText(r.ours.files, sizesOnly) {
		r.diffs = append(r.diffs, "files")
	}
}

// readAVBRecords reads the recorded cases of seed.
func readAVBRecords(seed uint64) ([]*avbRecord, error) {
	f, err := os.Open(avbRecordFile(seed))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*avbRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r avbRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", avbRecordFile(seed), err)
		}
		out = append(out, &r)
	}
	return out, sc.Err()
}

// avbSeed is the seed the run names (-peer.seed or PEER_SEED; else 1), and
// whether it names one (-peer.case alone names seed 1).
func avbSeed(t *testing.T) (seed uint64, chosen bool) {
	seed, _ = settings(t)
	return seed, *flagSeed != 0 || os.Getenv("PEER_SEED") != "" || *flagCase >= 0
}

// TestAvbtoolPeer replays avbtool's recorded answers through the front
// (or, with -peer.record, records them).
func TestAvbtoolPeer(t *testing.T) {
	if *flagRecord {
		recordAVB(t)
		return
	}
	seed, chosen := avbSeed(t)
	if chosen || testing.Short() {
		replayAVBSeed(t, seed)
		return
	}
	// The whole run replays every recorded seed: each one reaches
	// cases the others miss (seed 2 found two classes seed 1 had not).
	seeds, err := recordedAVBSeeds()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seeds {
		t.Run(fmt.Sprintf("seed%d", s), func(t *testing.T) { replayAVBSeed(t, s) })
	}
}

// recordedAVBSeeds lists the seeds that have recorded answers, in order.
func recordedAVBSeeds() ([]uint64, error) {
	names, err := filepath.Glob(filepath.Join("testdata", "avbtool-seed*.jsonl"))
	if err != nil {
		return nil, err
	}
	var seeds []uint64
	for _, name := range names {
		n := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "avbtool-seed"), ".jsonl")
		if s, err := strconv.ParseUint(n, 10, 64); err == nil {
			seeds = append(seeds, s)
		}
	}
	slices.Sort(seeds)
	if len(seeds) == 0 {
		return nil, fmt.Errorf("no testdata/avbtool-seed<N>.jsonl: record one with %s", recordCommand(1, defaultAVBCases))
	}
	return seeds, nil
}

// replayAVBSeed replays the recorded answers of one seed.
func replayAVBSeed(t *testing.T, seed uint64) {
	recs, err := readAVBRecords(seed)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no recorded avbtool answers for seed %d (%s): record them with %s", seed, avbRecordFile(seed), recordCommand(seed, defaultAVBCases))
	}
	if err != nil {
		t.Fatal(err)
	}
	todo := selectAVBRecords(t, recs)
	// The harness makes sparse images with img2simg, as the recorder did
	// (a missing one skips the test, fails it in CI).
	for _, rec := range todo {
		for _, s := range rec.Case.Steps {
			if len(s) > 0 && s[0] == "@simg" {
				testtool.Require(t, "img2simg")
			}
		}
	}
	bin := buildAVBFront(t)
	ours := execRunner(bin, bin)
	base := t.TempDir()
	ctx := t.Context()
	var (
		mu    sync.Mutex
		tally = newTally()
		shown int
		work  = make(chan *avbRecord)
		wg    sync.WaitGroup
	)
	for range avbJobs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rec := range work {
				c := genAVB(seed, rec.Case.Index)
				if !reflect.DeepEqual(c, rec.Case) {
					mu.Lock()
					want, _ := json.Marshal(c)
					got, _ := json.Marshal(rec.Case)
					t.Errorf("case %d: the generator draws\n  %s\nbut %s recorded\n  %s\nrecord the answers again: %s",
						c.Index, want, avbRecordFile(seed), got, recordCommand(seed, len(recs)))
					tally.failures++
					mu.Unlock()
					continue
				}
				dir := filepath.Join(base, strconv.Itoa(c.Index))
				var r *avbResult
				err := runAVBSteps(ctx, dir, c, ours, func(i int, before map[string]string, a *avbAnswer) bool {
					if i >= len(rec.Answers) {
						return false
					}
					r = &avbResult{c: c, step: i, args: c.Steps[i], before: before, real: sideOf(rec.Answers[i]), ours: sideOf(a)}
					r.compare()
					return len(r.diffs) == 0
				})
				os.RemoveAll(dir)
				mu.Lock()
				switch {
				case err != nil:
					t.Errorf("case %d: %v", c.Index, err)
					tally.failures++
				case r == nil:
					t.Errorf("case %d: no step", c.Index)
					tally.failures++
				default:
					verdict := tally.addAVB(r)
					switch {
					case verdict == "failure":
						if shown < *flagShow {
							t.Errorf("unaccepted difference:\n%s%s", r.report(), r.snippet(seed))
						}
						shown++
					case *flagCase >= 0 || *flagRule != "" && strings.Contains(verdict, *flagRule):
						t.Logf("%s\n%s%s", verdict, r.report(), r.snippet(seed))
					}
					if *flagCase >= 0 && *flagKeep != "" {
						if err := keepAVBCase(*flagKeep, c); err != nil {
							t.Error(err)
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, rec := range todo {
		select {
		case work <- rec:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if *flagExamples {
		tally.logExamples(t)
	}
	t.Logf("avbtool peer: seed %d: %s", seed, tally.summary())
	if shown > *flagShow {
		t.Errorf("%d more unaccepted differences not shown", shown-*flagShow)
	}
}

// selectAVBRecords picks the recorded cases a run replays: all of them,
// the first defaultAVBShortCases with -short, -peer.cases or PEER_CASES of
// them, or the one -peer.case names.
func selectAVBRecords(t *testing.T, recs []*avbRecord) []*avbRecord {
	n := len(recs)
	if testing.Short() {
		n = min(n, defaultAVBShortCases)
	}
	if *flagCases != 0 {
		n = min(n, *flagCases)
	}
	if v := os.Getenv("PEER_CASES"); v != "" && *flagCases == 0 {
		if k, err := strconv.Atoi(v); err == nil {
			n = min(n, k)
		}
	}
	todo := recs[:n]
	if *flagCase >= 0 {
		if *flagCase >= len(recs) {
			t.Fatalf("case %d: %d recorded", *flagCase, len(recs))
		}
		todo = recs[*flagCase : *flagCase+1]
	}
	return todo
}

func recordCommand(seed uint64, cases int) string {
	return fmt.Sprintf("AVBTOOL=/path/to/avbtool.py go test ./tests/peer -run TestAvbtoolPeer -timeout 0 -peer.record -peer.seed=%d -peer.cases=%d", seed, cases)
}

// buildAVBFront builds the avbtool front as avbtool.py: argparse's usage
// names the program by its base name, as for avbtool.
func buildAVBFront(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := testtool.BuildCommand(t, dir, "./cmd/avbtool")
	if err := testtool.TrackSources("./cmd/...", "./internal/front/..."); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "avbtool.py")
	if err := os.Rename(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// recordAVB runs avbtool on the cases of the seed and writes its answers.
func recordAVB(t *testing.T) {
	seed, cases := settings(t)
	if *flagCases == 0 && os.Getenv("PEER_CASES") == "" {
		cases = defaultAVBCases
	}
	avbtool := os.Getenv("AVBTOOL")
	if avbtool == "" {
		avbtool = defaultAVBTool
	}
	if out, err := exec.Command("python3", avbtool, "version").Output(); err != nil || strings.TrimSpace(string(out)) != "avbtool 1.3.0" {
		t.Fatalf("%s version: %q, %v; want avbtool 1.3.0", avbtool, out, err)
	}
	testtool.Require(t, "img2simg")
	base := t.TempDir()
	ctx := t.Context()
	recs := make([]*avbRecord, cases)
	// Keep the recorded cases the generator still draws (a run that
	// records more cases of the seed appends).
	kept := 0
	if old, err := readAVBRecords(seed); err == nil {
		for kept < min(len(old), cases) && reflect.DeepEqual(old[kept].Case, genAVB(seed, kept)) {
			recs[kept] = old[kept]
			kept++
		}
	}
	t.Logf("%d recorded cases kept", kept)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range avbJobs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			real, stop, err := serverRunner(avbtool)
			if err != nil {
				mu.Lock()
				t.Error(err)
				mu.Unlock()
				for range work {
				}
				return
			}
			defer stop()
			for i := range work {
				c := genAVB(seed, i)
				rec := &avbRecord{Case: c}
				dir := filepath.Join(base, strconv.Itoa(i))
				err := runAVBSteps(ctx, dir, c, real, func(_ int, _ map[string]string, a *avbAnswer) bool {
					rec.Answers = append(rec.Answers, a)
					return true
				})
				os.RemoveAll(dir)
				if err != nil {
					mu.Lock()
					t.Errorf("case %d: %v", i, err)
					mu.Unlock()
				}
				recs[i] = rec
			}
		}()
	}
	for i := kept; i < cases; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		return
	}
	var b bytes.Buffer
	for _, rec := range recs {
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(avbRecordFile(seed), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cases recorded in %s (%d bytes)", cases, avbRecordFile(seed), b.Len())
}

// serverRunner runs avbtool through testdata/avbtool_server.py, which
// pays Python's start and avbtool's imports once and forks a child per
// command line.
func serverRunner(avbtool string) (avbRunner, func(), error) {
	server, err := filepath.Abs(filepath.Join("testdata", "avbtool_server.py"))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("python3", server, avbtool)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "COLUMNS=") && !strings.HasPrefix(e, "LC_ALL=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "LC_ALL=C.UTF-8")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	out := bufio.NewReader(outPipe)
	tmp, err := os.MkdirTemp("", "avbserver")
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		in.Close()
		cmd.Wait()
		os.RemoveAll(tmp)
	}
	run := func(ctx context.Context, dir string, args []string) (*avbAnswer, error) {
		so, se := filepath.Join(tmp, "stdout"), filepath.Join(tmp, "stderr")
		req, _ := json.Marshal(map[string]any{"dir": dir, "args": args, "stdout": so, "stderr": se})
		if _, err := in.Write(append(req, '\n')); err != nil {
			return nil, err
		}
		line, err := out.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("avbtool_server.py: %w", err)
		}
		code, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			return nil, fmt.Errorf("avbtool_server.py answered %q", line)
		}
		stdout, err := os.ReadFile(so)
		if err != nil {
			return nil, err
		}
		stderr, err := os.ReadFile(se)
		if err != nil {
			return nil, err
		}
		if code == 125 {
			return nil, fmt.Errorf("avbtool_server.py failed to run %q: %s", args, stderr)
		}
		norm := func(s string) string {
			return strings.NewReplacer(server, "avbtool_server.py", avbtool, "avbtool", dir, ".").Replace(s)
		}
		return &avbAnswer{Exit: code, Stdout: norm(string(stdout)), Stderr: norm(string(stderr))}, nil
	}
	return run, stop, nil
}

// keepAVBCase writes the case's inputs into dir, with run.sh running its
// steps by $AVB.
func keepAVBCase(dir string, c *avbCase) error {
	if err := avbSetup(dir, c); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "run.sh"), []byte(stepsScript(c)), 0o755)
}

// stepsScript runs the case's steps, avbtool's by $AVB.
func stepsScript(c *avbCase) string {
	var b strings.Builder
	for _, s := range c.Steps {
		switch {
		case len(s) > 0 && s[0] == "@simg":
			fmt.Fprintf(&b, "  [ -e %[1]s ] && img2simg %[1]s %[1]s.simg %[2]s && mv %[1]s.simg %[1]s\n", shellQuote(s[1]), s[2])
		case len(s) > 0 && s[0] == "@poke":
			fmt.Fprintf(&b, "  [ -e %s ] && printf '\\x%s' | dd of=%s bs=1 seek=%s conv=notrunc status=none\n", shellQuote(s[1]), s[3], shellQuote(s[1]), s[2])
		case len(s) > 0 && s[0] == "@trunc":
			fmt.Fprintf(&b, "  [ -e %s ] && truncate -s %s %s\n", shellQuote(s[1]), s[2], shellQuote(s[1]))
		default:
			fmt.Fprintf(&b, "  $AVB %s; echo \"exit $?\"\n", shellLine(s))
		}
	}
	return b.String()
}

// inputScript makes the case's inputs in the shell.
func inputScript(c *avbCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  ln -s %s keys; ln -s %s props\n", filepath.Join(avbvectors.Dir, "keys"), filepath.Join(avbvectors.Dir, "props"))
	names := make([]string, 0, len(c.Inputs))
	for n := range c.Inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		src := c.Inputs[n]
		if src == "dir" {
			fmt.Fprintf(&b, "  mkdir %s\n", shellQuote(n))
			continue
		}
		b.WriteString("  {")
		for _, part := range strings.Split(strings.TrimPrefix(src, "spec:"), "+") {
			f := strings.Split(part, ":")
			switch f[0] {
			case "zero":
				fmt.Fprintf(&b, " head -c %s /dev/zero;", f[1])
			case "fill":
				v, _ := strconv.ParseUint(f[1], 16, 8)
				fmt.Fprintf(&b, " head -c %s /dev/zero | tr '\\000' '\\%03o';", f[2], v)
			case "blockbyte":
				fmt.Fprintf(&b, " for i in $(seq 0 $((%s-1))); do head -c %s /dev/zero | tr '\\000' \"\\\\$(printf %%03o $((i%%256)))\"; done;", f[2], f[1])
			}
		}
		fmt.Fprintf(&b, " } > %s\n", shellQuote(n))
	}
	return b.String()
}

// snippet reproduces the case with both tools, each in a fresh directory.
func (r *avbResult) snippet(seed uint64) string {
	c := r.c
	var b strings.Builder
	fmt.Fprintf(&b, "# case %d of seed %d (go test ./tests/peer -run TestAvbtoolPeer -v -peer.seed=%d -peer.case=%d [-peer.keep=DIR])\n",
		c.Index, seed, seed, c.Index)
	b.WriteString("# OURS: go build -o /tmp/avbfront/avbtool.py ./cmd/avbtool\n")
	b.WriteString("setup() {\n" + inputScript(c) + "}\nsteps() {\n" + stepsScript(c) + "  :\n}\n")
	b.WriteString("for AVB in \"python3 ${AVBTOOL:-/tmp/avbtool/avbtool.py}\" /tmp/avbfront/avbtool.py; do\n")
	b.WriteString("  d=$(mktemp -d) && (cd \"$d\" && setup && steps; ls -l; sha256sum -- * 2>/dev/null)\ndone\n")
	return b.String()
}

// report shows the two outcomes of the differing step.
func (r *avbResult) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %d (%s), step %d of %d: differs in %v\n", r.c.Index, r.c.Kind, r.step+1, len(r.c.Steps), r.diffs)
	for i, s := range r.c.Steps {
		mark := " "
		if i == r.step {
			mark = ">"
		}
		fmt.Fprintf(&b, "  %s avbtool %s\n", mark, shellLine(s))
	}
	for _, s := range []struct {
		name string
		o    *avbSide
	}{{"avbtool", &r.real}, {"ours", &r.ours}} {
		fmt.Fprintf(&b, "  %s: exit %d, gist %q\n", s.name, s.o.code, s.o.gist)
		if s.o.gist != strings.TrimSpace(s.o.stderr) && (r.differs("gist") || r.differs("code")) {
			fmt.Fprintf(&b, "  %s stderr: %q\n", s.name, strings.TrimSpace(s.o.stderr))
		}
		if r.differs("stdout") {
			fmt.Fprintf(&b, "  %s stdout: %q\n", s.name, s.o.stdout)
		}
		if r.differs("files") {
			fmt.Fprintf(&b, "  %s files: %s\n", s.name, filesText(s.o.files, false))
		}
	}
	if r.differs("files") {
		var before []string
		for n, s := range r.before {
			before = append(before, n+": "+s)
		}
		sort.Strings(before)
		fmt.Fprintf(&b, "  before: %s\n", strings.Join(before, "; "))
	}
	return b.String()
}
