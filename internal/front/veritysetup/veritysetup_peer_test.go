package veritysetup

// The veritysetup front against the real veritysetup: each script in
// testdata runs its commands through both, each in a directory
// of its own holding the same files, and compares the exit codes, stdout,
// stderr and the files left (sha256 and mode).
//
// Script lines (# starts a comment):
//
//	data NAME SIZE [MODE]     a file of SIZE pseudo-random bytes (the same
//	                          in both directories), mode 0644 by default
//	zeros NAME SIZE           a file of SIZE zeros
//	poke NAME OFFSET HEX      write the bytes HEX at OFFSET of NAME
//	fill NAME OFFSET COUNT    write COUNT bytes 0x5a at OFFSET of NAME
//	link NAME TARGET          a hard link NAME to TARGET
//	symlink NAME TARGET       a symbolic link NAME to TARGET
//	loop NAME FILE [ALIAS]    a loop device over FILE, as the block device
//	                          node NAME (and ALIAS, a second node of it);
//	                          skips the scenario where none can be attached
//	run ARGS...               run veritysetup ARGS in both directories; $ROOT
//	                          is the root hash the last format printed
//	front ARGS...             run only the front (what veritysetup cannot
//	                          do here, e.g. open without device-mapper)
//	code N                    both exited N
//	stdout MODE, stderr MODE  compare: exact (the default), last (the last
//	                          line), prefix (the front's output starts with
//	                          veritysetup's), none
//	contains TEXT             the front's stderr contains TEXT
//	outcontains TEXT          the front's stdout contains TEXT
//	files [NAMES...]          the files are the same (all files without
//	                          NAMES): present or not, content and mode
//	absent NAME               the front left no file NAME
//
// Outputs are compared when the next run starts or the script ends.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// outcome is one command's outcome.
type outcome struct {
	code           int
	stdout, stderr string
}

type script struct {
	t          *testing.T
	name       string
	real, ours string // the two tools
	dirs       [2]string
	last       [2]*outcome
	args       []string
	frontOnly  bool
	outMode    string
	errMode    string
	codeSeen   bool
	root       string
	line       int
}

func TestVeritysetupFront(t *testing.T) {
	real := testtool.Require(t, "veritysetup")
	bin := testtool.BuildCommand(t, t.TempDir(), "./cmd/veritygen")
	ours := filepath.Join(filepath.Dir(bin), "veritysetup")
	if err := os.Symlink(bin, ours); err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(scripts) < 25 {
		t.Fatalf("want at least 25 scenarios in testdata, got %d (%v)", len(scripts), err)
	}
	// veritysetup creates its files 0600 whatever the umask allows; the
	// comparison of modes needs the same umask for both.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, path := range scripts {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			s := &script{t: t, name: name, real: real, ours: ours, dirs: [2]string{t.TempDir(), t.TempDir()}}
			s.runFile(path)
		})
	}
}

func (s *script) runFile(path string) {
	t := s.t
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s.line++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		fields := strings.Fields(rest)
		switch verb {
		case "data", "zeros", "poke", "fill":
			s.writeFile(verb, fields)
		case "link", "symlink":
			s.each(func(dir string) error {
				if verb == "link" {
					return os.Link(filepath.Join(dir, fields[1]), filepath.Join(dir, fields[0]))
				}
				return os.Symlink(fields[1], filepath.Join(dir, fields[0]))
			})
		case "loop":
			s.each(func(dir string) error { return s.loop(dir, fields) })
		case "run", "front":
			s.finish()
			s.start(fields, verb == "front")
		case "code":
			want := s.atoi(rest)
			s.codeSeen = true
			for i, r := range s.last {
				if r != nil && r.code != want {
					s.errorf("%s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", s.who(i), r.code, want, r.stdout, r.stderr)
				}
			}
		case "stdout":
			s.outMode = rest
		case "stderr":
			s.errMode = rest
		case "contains", "outcontains":
			out := s.last[1].stderr
			if verb == "outcontains" {
				out = s.last[1].stdout
			}
			if !strings.Contains(out, rest) {
				s.errorf("the front's %s does not contain %q:\n%s", strings.TrimSuffix(verb, "contains")+"output", rest, out)
			}
		case "files":
			s.compareFiles(fields)
		case "absent":
			if _, err := os.Lstat(filepath.Join(s.dirs[1], rest)); err == nil {
				s.errorf("the front left %s behind", rest)
			}
		default:
			s.fatalf("unknown script verb %q", verb)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	s.finish()
}

// writeFile runs a script line that writes a file in each directory: data
// or zeros (a new file), poke or fill (bytes into one).
func (s *script) writeFile(verb string, fields []string) {
	switch verb {
	case "data", "zeros":
		size := s.atoi(fields[1])
		mode := fs.FileMode(0o644)
		if len(fields) > 2 {
			m, err := strconv.ParseUint(fields[2], 8, 32)
			if err != nil {
				s.fatalf("bad mode %q", fields[2])
			}
			mode = fs.FileMode(m)
		}
		b := make([]byte, size)
		if verb == "data" {
			r := rand.New(rand.NewPCG(uint64(size), uint64(len(fields[0]))))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
		}
		s.each(func(dir string) error {
			p := filepath.Join(dir, fields[0])
			if err := os.WriteFile(p, b, mode); err != nil {
				return err
			}
			return os.Chmod(p, mode)
		})
	case "poke", "fill":
		off := s.atoi(fields[1])
		var b []byte
		if verb == "poke" {
			if _, err := fmt.Sscanf(fields[2], "%x", &b); err != nil {
				s.fatalf("bad hex %q", fields[2])
			}
		} else {
			b = bytes.Repeat([]byte{0x5a}, s.atoi(fields[2]))
		}
		s.each(func(dir string) error {
			f, err := os.OpenFile(filepath.Join(dir, fields[0]), os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(b, int64(off))
			return err
		})
	}
}

// loop attaches dir/FILE to a loop device and makes the block device nodes
// dir/NAME (and dir/ALIAS) of it: the paths a script names, in its own
// directory, one device per directory.
func (s *script) loop(dir string, fields []string) error {
	dev := testtool.LoopDevice(s.t, filepath.Join(dir, fields[1]), false)
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		return err
	}
	for _, name := range append([]string{fields[0]}, fields[2:]...) {
		if err := syscall.Mknod(filepath.Join(dir, name), syscall.S_IFBLK|0o600, int(st.Rdev)); err != nil {
			return err
		}
	}
	return nil
}

func (s *script) atoi(text string) int {
	n, err := strconv.Atoi(text)
	if err != nil {
		s.fatalf("bad number %q", text)
	}
	return n
}

func (s *script) who(i int) string {
	if i == 0 {
		return "veritysetup " + strings.Join(s.args, " ")
	}
	return "the front, veritysetup " + strings.Join(s.args, " ")
}

func (s *script) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s line %d: %s", s.name, s.line, fmt.Sprintf(format, args...))
}

func (s *script) errorf(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf("%s line %d: %s", s.name, s.line, fmt.Sprintf(format, args...))
}

// each runs fn in both directories (only the front's for a front step).
func (s *script) each(fn func(dir string) error) {
	for _, dir := range s.dirs {
		if err := fn(dir); err != nil {
			s.fatalf("%v", err)
		}
	}
}

var rootLine = regexp.MustCompile(`(?m)^Root hash:\s+([0-9a-f]+)$`)

func (s *script) start(args []string, frontOnly bool) {
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "$ROOT", s.root)
	}
	s.args, s.frontOnly, s.outMode, s.errMode, s.codeSeen = args, frontOnly, "exact", "exact", false
	s.last = [2]*outcome{}
	for i, tool := range []string{s.real, s.ours} {
		if frontOnly && i == 0 {
			continue
		}
		cmd := exec.CommandContext(s.t.Context(), tool, args...)
		// Both invoked by the same name: veritysetup's usage errors
		// start with it.
		cmd.Args[0] = "veritysetup"
		cmd.Dir = s.dirs[i]
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := &outcome{stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			s.fatalf("running %s: %v", tool, err)
		}
		s.last[i] = r
	}
	if m := rootLine.FindStringSubmatch(s.last[1].stdout); m != nil {
		s.root = m[1]
	}
}

// finish compares the outputs of the last run.
func (s *script) finish() {
	if s.last[1] == nil {
		return
	}
	if !s.codeSeen {
		s.fatalf("run %v has no code line", s.args)
	}
	if s.frontOnly {
		return
	}
	real, ours := s.last[0], s.last[1]
	if real.code != ours.code {
		s.errorf("veritysetup %s: exit %d, the front's %d", strings.Join(s.args, " "), real.code, ours.code)
	}
	s.compare("stdout", s.outMode, real.stdout, ours.stdout)
	s.compare("stderr", s.errMode, real.stderr, ours.stderr)
}

func (s *script) compare(what, mode, real, ours string) {
	ok := true
	switch mode {
	case "exact":
		ok = real == ours
	case "last":
		ok = lastLine(real) == lastLine(ours)
	case "prefix":
		ok = strings.HasPrefix(ours, real)
	case "none":
	default:
		s.fatalf("bad compare mode %q", mode)
	}
	if !ok {
		s.errorf("veritysetup %s: %s differs (%s)\nveritysetup:\n%s\nthe front:\n%s", strings.Join(s.args, " "), what, mode, real, ours)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// compareFiles compares the named files (all files when none are named) of
// the two directories: present or not, content and mode.
func (s *script) compareFiles(names []string) {
	if len(names) == 0 {
		set := map[string]bool{}
		for _, dir := range s.dirs {
			entries, err := os.ReadDir(dir)
			if err != nil {
				s.fatalf("%v", err)
			}
			for _, e := range entries {
				set[e.Name()] = true
			}
		}
		for n := range set {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		var desc [2]string
		for i, dir := range s.dirs {
			b, err := os.ReadFile(filepath.Join(dir, n))
			info, serr := os.Stat(filepath.Join(dir, n))
			switch {
			case err != nil || serr != nil:
				desc[i] = "absent"
			default:
				desc[i] = fmt.Sprintf("%d bytes, sha256 %x, mode %v", len(b), sha256.Sum256(b), info.Mode().Perm())
			}
		}
		if desc[0] != desc[1] {
			s.errorf("after veritysetup %s: %s is %s; the front's is %s", strings.Join(s.args, " "), n, desc[0], desc[1])
		}
	}
}
