package fronttest

// Command-line tests as script files, one format for the four fronts. A
// script runs commands in-process through a front's Main, in a directory of
// its own, and checks their exit code, output and the files they leave. With
// a peer (the real veritysetup or avbtool), every command of the peer's name
// runs through both, each in a directory of its own holding the same files,
// and the outcomes are compared: exit code, stdout, stderr, files.
//
// Script lines (# starts a comment; $DIR is the case's directory, $ROOT the
// root hash the last command printed on a "Root hash:" line, $NAME
// Scripts.Vars[NAME]; a TEXT that ends in a space or starts with a quote is
// written as a Go string literal):
//
//	case NAME                 a new case, in a fresh directory; the lines
//	                          before the first case are in every case (run
//	                          once, and the directory they made copied into
//	                          each case's, when they only make files: data,
//	                          zeros, poke, fill, mkdir, symlink, write, copy,
//	                          truncate, rm, exec, flip, avbimage, craft,
//	                          unsparse, and name no $DIR)
//	skipifroot REASON         skip the case when running as root
//	env NAME VALUE            set the environment variable for the rest of
//	                          the case (e.g. for a signing helper)
//	interrupt SIGNAL          the next command runs as one SIGINT or SIGTERM
//	                          ended before it began: its context canceled
//	data NAME SIZE [MODE]     a file of SIZE pseudo-random bytes (the same
//	                          in both directories), mode 0644 by default
//	zeros NAME SIZE           a file of SIZE zeros
//	poke NAME OFFSET HEX      write the bytes HEX at OFFSET of NAME
//	fill NAME OFFSET COUNT    write COUNT bytes 0x5a at OFFSET of NAME
//	truncate NAME SIZE        cut (or extend with zeros) NAME to SIZE bytes
//	mkdir NAME                a directory
//	chmod MODE NAME           change NAME's mode (octal)
//	link NAME TARGET          a hard link NAME to TARGET
//	symlink NAME TARGET       a symbolic link NAME to TARGET
//	write NAME TEXT           a file holding TEXT
//	copy FROM TO [OFFSET]     TO a copy of FROM (which may be an absolute
//	                          path, e.g. under $AVB); with OFFSET, FROM's
//	                          bytes written into TO at OFFSET
//	flip NAME OFFSET          flip bit 0x40 of the byte at OFFSET of NAME
//	avbimage NAME SPEC        an image of avbvectors' notation (e.g.
//	                          blockbyte:4096:64, avb/testdata/vectors/README.md)
//	craft NAME CASE           the crafted image CASE of internal/avbcraft,
//	                          made with the keys of the AVB vectors
//	unsparse FROM TO          TO what the Android sparse image FROM expands to
//	truncate NAME SIZE        cut or extend NAME to SIZE bytes
//	rm NAME                   remove NAME
//	exec PROGRAM ARGS...      run the installed PROGRAM (e.g. veritysetup
//	                          format, to make a tree with the real tool;
//	                          missing: skips, fails in CI) in
//	                          the case's directories; it must exit 0; its
//	                          "Root hash:" line sets $ROOT
//	loop NAME FILE [ALIAS]    a loop device over FILE, as the block device
//	                          node NAME (and ALIAS, a second node of it);
//	                          skips the case where none can be attached
//	TOOL ARGS...              run the front TOOL (veritygen, veritycheck,
//	                          veritysetup, avbtool) with ARGS; with a peer of
//	                          that name, the peer too
//	front TOOL ARGS...        run only the front (what the peer cannot do
//	                          here, e.g. open without device-mapper)
//	code N                    it exited N (both, with a peer)
//	contains TEXT             the front's stderr contains TEXT
//	outcontains TEXT          the front's stdout contains TEXT
//	nostdout                  the front's stdout is empty
//	oneerror                  the front's stderr is one "TOOL: error: " line
//	                          first, then only "TOOL: hint: " lines
//	error TEXT                the error line contains TEXT
//	errorline TEXT            the error line is TEXT, the only one, first
//	hint TEXT, nohint TEXT    a hint line contains TEXT; none does
//	hintline TEXT             the one hint line is TEXT
//	nohints                   no hint lines
//	maxhints N                at most N hint lines
//	unchanged                 the directory is as before the command: names,
//	                          types, sizes, modes, mtimes and content, and
//	                          its own mode and mtime (nothing made and
//	                          removed again)
//	unchangedfiles            the same but for the directory's own mtime
//	                          (a temporary file made and removed again)
//	stdout TEXT, stderr TEXT  the front's stdout (stderr) is exactly TEXT
//	                          (a Go string literal where it ends in "\n")
//	stdoutis NAME             the front's stdout is exactly NAME's content
//	lastline TEXT             the last line of the front's stderr is TEXT
//	                          ("" when stderr is empty)
//	sha256 NAME HEX           NAME's content has this SHA-256
//	same NAME OTHER           the two files have the same content
//	size NAME N               NAME is N bytes
//	prefix NAME HEX           NAME's content starts with the bytes HEX
//	islink NAME               NAME is a symbolic link (not replaced by a file)
//	absent NAME               the front left no file NAME
//	peer stdout MODE          with a peer, how the outputs compare: exact
//	peer stderr MODE          (the default), last (the last line), prefix
//	                          (the front's starts with the peer's), none
//	files [NAMES...]          with a peer, the files are the same in both
//	                          directories (all files without NAMES): present
//	                          or not, content, mode
//
// Outputs are compared with the peer's when the next command starts or the
// case ends. Every command needs a code line. The front's stdout and
// stderr never hold any of Scripts.Never's texts.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/avbcraft"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// Scripts says how to run a set of script files.
type Scripts struct {
	// Fronts are the commands a script may run, by name.
	Fronts map[string]Main
	// Peer, when set, names the real program (e.g. "veritysetup") run next
	// to the front of the same name; a missing peer skips the test (fails
	// it in CI).
	Peer string
	// Never are texts no front may print, e.g. Go's own error words.
	Never []string
	// Vars are more variables for the scripts: $NAME stands for
	// Vars[NAME] (e.g. a directory of the repository's test data).
	Vars map[string]string
}

// Run runs every script file matching glob, each case a subtest, and
// returns how many cases there were.
func (s Scripts) Run(t *testing.T, glob string) int {
	t.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts match %s (%v)", glob, err)
	}
	var peer string
	if s.Peer != "" {
		peer = testtool.Require(t, s.Peer)
		// veritysetup creates its files 0600 whatever the umask allows;
		// the comparison of modes needs the same umask for both.
		old := syscall.Umask(0o022)
		t.Cleanup(func() { syscall.Umask(old) })
	}
	n := 0
	for _, path := range paths {
		file := strings.TrimSuffix(filepath.Base(path), ".txt")
		prelude, cases := parseScript(t, path)
		t.Run(file, func(t *testing.T) {
			var tmpl *template
			if cases[0].name != "" && onlyMakesFiles(prelude) {
				tmpl = s.makeTemplate(t, file, prelude)
				prelude = nil
			}
			for _, c := range cases {
				n++
				run := func(t *testing.T) {
					sc := &scriptCase{t: t, file: file, s: s, peer: peer}
					sc.run(tmpl, append(slices.Clone(prelude), c.lines...))
				}
				if c.name == "" {
					run(t)
				} else {
					t.Run(c.name, run)
				}
			}
		})
	}
	return n
}

type scriptLine struct {
	n    int
	text string
}

type parsedCase struct {
	name  string
	lines []scriptLine
}

// parseScript splits a script into the lines before the first case and
// its cases (a file without cases is one unnamed case).
func parseScript(t *testing.T, path string) (prelude []scriptLine, cases []parsedCase) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if name, ok := strings.CutPrefix(line, "case "); ok {
			cases = append(cases, parsedCase{name: strings.TrimSpace(name)})
			continue
		}
		if len(cases) == 0 {
			prelude = append(prelude, scriptLine{n, line})
		} else {
			cases[len(cases)-1].lines = append(cases[len(cases)-1].lines, scriptLine{n, line})
		}
	}
	if len(cases) == 0 {
		return nil, []parsedCase{{lines: prelude}}
	}
	return prelude, cases
}

// fileVerbs are the script verbs that only make or change files (not
// chmod, whose unreadable files a copy cannot take, nor link, whose hard
// links a copy would break).
var fileVerbs = map[string]bool{"data": true, "zeros": true, "poke": true, "fill": true, "mkdir": true, "symlink": true,
	"write": true, "copy": true, "truncate": true, "rm": true, "exec": true, "flip": true, "avbimage": true, "craft": true,
	"unsparse": true}

// onlyMakesFiles reports whether lines only make files, in the case's
// directory whatever it is: then one run serves every case.
func onlyMakesFiles(lines []scriptLine) bool {
	for _, l := range lines {
		verb, _, _ := strings.Cut(l.text, " ")
		if !fileVerbs[verb] || strings.Contains(l.text, "$DIR") {
			return false
		}
	}
	return len(lines) > 0
}

// template is a directory the lines before a script's first case made,
// and the $ROOT they set.
type template struct {
	dir, root string
}

// makeTemplate runs the lines before a script's first case once.
func (s Scripts) makeTemplate(t *testing.T, file string, lines []scriptLine) *template {
	c := &scriptCase{t: t, file: file, s: s}
	c.dirs[1] = t.TempDir()
	for _, l := range lines {
		c.line = l.n
		c.step(l.text)
	}
	return &template{dir: c.dirs[1], root: c.root}
}

// copyTemplate copies the template's files into dir.
func (c *scriptCase) copyTemplate(tmpl *template, dir string) {
	err := filepath.WalkDir(tmpl.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == tmpl.dir {
			return err
		}
		rel, _ := filepath.Rel(tmpl.dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dir, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chmod(to, info.Mode().Perm())
	})
	if err != nil {
		c.fatalf("copying the files the lines before the first case made: %v", err)
	}
}

// outcome is one command's outcome.
type outcome struct {
	code           int
	stdout, stderr string
}

type scriptCase struct {
	t        *testing.T
	file     string
	s        Scripts
	peer     string    // the peer's path, "" without one
	dirs     [2]string // the peer's and the front's
	last     [2]*outcome
	tool     string
	args     []string
	withPeer bool
	outMode  string
	errMode  string
	codeSeen bool
	root     string
	before   map[string]string
	line     int
	// interrupt, when set, is the signal the next command's context is
	// canceled by before it begins.
	interrupt syscall.Signal
}

func (c *scriptCase) run(tmpl *template, lines []scriptLine) {
	t := c.t
	c.dirs[1] = t.TempDir()
	if c.peer != "" {
		c.dirs[0] = t.TempDir()
	}
	if tmpl != nil {
		c.each(func(dir string) error { c.copyTemplate(tmpl, dir); return nil })
		c.root = tmpl.root
	}
	// The front runs in-process: its relative paths are relative to the
	// case's directory, as the peer's are.
	t.Chdir(c.dirs[1])
	for _, l := range lines {
		c.line = l.n
		c.step(l.text)
	}
	c.finish()
}

func (c *scriptCase) step(line string) {
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(c.expand(rest))
	fields := strings.Fields(rest)
	if _, ok := c.s.Fronts[verb]; ok {
		c.finish()
		c.start(verb, fields, c.peer != "" && verb == c.s.Peer)
		return
	}
	if c.fileStep(verb, rest, fields) {
		return
	}
	switch verb {
	case "env":
		c.need(verb, fields, 1)
		c.t.Setenv(fields[0], c.unquote(strings.TrimSpace(strings.TrimPrefix(rest, fields[0]))))
	case "interrupt":
		sig, ok := map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM}[rest]
		if !ok {
			c.fatalf("interrupt %q: want SIGINT or SIGTERM", rest)
		}
		c.interrupt = sig
	case "skipifroot":
		if os.Geteuid() == 0 {
			c.t.Skipf("skipped: running as root: %s", rest)
		}
	case "chmod":
		mode := c.mode(fields[0])
		c.each(func(dir string) error { return os.Chmod(filepath.Join(dir, fields[1]), mode) })
		c.t.Cleanup(func() { c.each(func(dir string) error { return os.Chmod(filepath.Join(dir, fields[1]), 0o755) }) })
	case "link":
		c.each(func(dir string) error { return os.Link(filepath.Join(dir, fields[1]), filepath.Join(dir, fields[0])) })
	case "loop":
		c.each(func(dir string) error { return c.loop(dir, fields) })
	case "front":
		if len(fields) == 0 || c.s.Fronts[fields[0]] == nil {
			c.fatalf("front names no front: %q", rest)
		}
		c.finish()
		c.start(fields[0], fields[1:], false)
	default:
		c.check(verb, c.unquote(rest), fields)
	}
}

// fileStep runs a line of one of the fileVerbs, and reports whether it
// was one.
func (c *scriptCase) fileStep(verb, rest string, fields []string) bool {
	if !fileVerbs[verb] {
		return false
	}
	c.need(verb, fields, map[string]int{"data": 2, "zeros": 2, "poke": 3, "fill": 3, "mkdir": 1, "symlink": 2,
		"write": 1, "copy": 2, "truncate": 2, "rm": 1, "exec": 1, "flip": 2, "avbimage": 2, "craft": 2, "unsparse": 2}[verb])
	switch verb {
	case "data", "zeros", "poke", "fill":
		c.writeFile(verb, fields)
	case "mkdir":
		c.each(func(dir string) error { return os.Mkdir(filepath.Join(dir, rest), 0o755) })
	case "symlink":
		c.each(func(dir string) error { return os.Symlink(fields[1], filepath.Join(dir, fields[0])) })
	case "write":
		text := c.unquote(strings.TrimSpace(strings.TrimPrefix(rest, fields[0])))
		c.each(func(dir string) error { return os.WriteFile(filepath.Join(dir, fields[0]), []byte(text), 0o644) })
	case "copy":
		c.each(func(dir string) error { return c.copyFile(dir, fields) })
	case "truncate":
		size := c.atoi(fields[1])
		c.each(func(dir string) error { return os.Truncate(filepath.Join(dir, fields[0]), int64(size)) })
	case "rm":
		c.each(func(dir string) error { return os.Remove(filepath.Join(dir, rest)) })
	case "exec":
		c.each(func(dir string) error { return c.exec(dir, fields) })
	case "flip", "avbimage", "craft", "unsparse":
		c.each(func(dir string) error { return c.avbFile(dir, verb, fields) })
	}
	return true
}

// need fails the case unless a line of verb has at least n fields.
func (c *scriptCase) need(verb string, fields []string, n int) {
	if len(fields) < n {
		c.fatalf("%s needs %d arguments, got %q", verb, n, fields)
	}
}

// copyFile runs a copy line in dir: FROM TO [OFFSET].
func (c *scriptCase) copyFile(dir string, fields []string) error {
	from := fields[0]
	if !filepath.IsAbs(from) {
		from = filepath.Join(dir, from)
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	to := filepath.Join(dir, fields[1])
	if len(fields) < 3 {
		return os.WriteFile(to, b, 0o644)
	}
	f, err := os.OpenFile(to, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt(b, int64(c.atoi(fields[2])))
	return err
}

// exec runs an exec line in dir: the installed program fields[0] with the
// rest as its arguments.
func (c *scriptCase) exec(dir string, fields []string) error {
	cmd := exec.CommandContext(c.t.Context(), testtool.Require(c.t, fields[0]), fields[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(fields, " "), err, out)
	}
	if m := rootLine.FindStringSubmatch(string(out)); m != nil {
		c.root = m[1]
	}
	return nil
}

// unquote reads TEXT written as a Go string literal: a text that ends in a
// space or starts with a quote.
func (c *scriptCase) unquote(text string) string {
	if !strings.HasPrefix(text, `"`) {
		return text
	}
	s, err := strconv.Unquote(text)
	if err != nil {
		c.fatalf("bad quoted text %s", text)
	}
	return s
}

// check runs an assertion about the last command.
func (c *scriptCase) check(verb, rest string, fields []string) {
	if !fileChecks[verb] && c.last[1] == nil {
		c.fatalf("%s before any command", verb)
	}
	switch verb {
	case "code":
		want := c.atoi(rest)
		c.codeSeen = true
		for i, r := range c.last {
			if r != nil && r.code != want {
				c.errorf("%s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", c.who(i), r.code, want, r.stdout, r.stderr)
			}
		}
	case "contains", "outcontains", "nostdout", "oneerror", "error", "errorline", "hint", "nohint", "hintline", "nohints", "maxhints":
		c.checkOutput(verb, rest)
	case "unchanged":
		SameListing(c.t, c.before, ListingWithDir(c.t, c.dirs[1]))
	case "unchangedfiles":
		before, after := maps.Clone(c.before), ListingWithDir(c.t, c.dirs[1])
		delete(before, ".")
		delete(after, ".")
		SameListing(c.t, before, after)
	case "stdout", "stderr", "stdoutis", "lastline":
		c.checkExact(verb, rest)
	case "same", "size", "prefix", "islink":
		c.checkFile(verb, fields)
	case "sha256":
		if got := fmt.Sprintf("%x", Sum(c.t, filepath.Join(c.dirs[1], fields[0]))); got != fields[1] {
			c.errorf("%s has sha256 %s, want %s", fields[0], got, fields[1])
		}
	case "absent":
		if _, err := os.Lstat(filepath.Join(c.dirs[1], rest)); err == nil {
			c.errorf("the front left %s behind", rest)
		}
	case "peer":
		c.needPeer(verb)
		switch fields[0] {
		case "stdout":
			c.outMode = fields[1]
		case "stderr":
			c.errMode = fields[1]
		default:
			c.fatalf("peer %s: want stdout or stderr", fields[0])
		}
	case "files":
		if c.peer == "" {
			c.fatalf("files without a peer")
		}
		c.compareFiles(fields)
	default:
		c.fatalf("unknown script verb %q", verb)
	}
}

// fileChecks are the assertions about files, which may come before any
// command.
var fileChecks = map[string]bool{"sha256": true, "absent": true, "same": true, "size": true, "prefix": true, "islink": true}

// checkExact compares the front's whole stdout or stderr with what is
// expected: a text, or a file's content.
func (c *scriptCase) checkExact(verb, rest string) {
	got, want, what := c.last[1].stdout, rest, "stdout"
	switch verb {
	case "stderr":
		got, what = c.last[1].stderr, "stderr"
	case "stdoutis":
		want = string(Read(c.t, filepath.Join(c.dirs[1], rest)))
	case "lastline":
		got, what = lastLine(c.last[1].stderr), "stderr's last line"
	}
	if got != want {
		c.errorf("the front's %s is\n%q\nwant\n%q", what, got, want)
	}
}

// checkFile runs an assertion about a file of the front's directory.
func (c *scriptCase) checkFile(verb string, fields []string) {
	c.need(verb, fields, map[string]int{"same": 2, "size": 2, "prefix": 2, "islink": 1}[verb])
	path := filepath.Join(c.dirs[1], fields[0])
	if verb == "islink" {
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			c.errorf("%s is not a symbolic link (%v)", fields[0], err)
		}
		return
	}
	b := Read(c.t, path)
	switch verb {
	case "same":
		if other := Read(c.t, filepath.Join(c.dirs[1], fields[1])); !bytes.Equal(b, other) {
			c.errorf("%s (%d bytes) and %s (%d bytes) differ", fields[0], len(b), fields[1], len(other))
		}
	case "size":
		if len(b) != c.atoi(fields[1]) {
			c.errorf("%s is %d bytes, want %s", fields[0], len(b), fields[1])
		}
	case "prefix":
		var want []byte
		if _, err := fmt.Sscanf(fields[1], "%x", &want); err != nil {
			c.fatalf("bad hex %q", fields[1])
		}
		if !bytes.HasPrefix(b, want) {
			c.errorf("%s starts with %x, want %x", fields[0], b[:min(len(b), len(want))], want)
		}
	}
}

// checkOutput runs an assertion about the front's output.
func (c *scriptCase) checkOutput(verb, rest string) {
	ours := c.last[1]
	switch verb {
	case "contains", "outcontains":
		out, what := ours.stderr, "stderr"
		if verb == "outcontains" {
			out, what = ours.stdout, "stdout"
		}
		if !strings.Contains(out, rest) {
			c.errorf("the front's %s does not contain %q:\n%s", what, rest, out)
		}
	case "nostdout":
		if ours.stdout != "" {
			c.errorf("stdout is not empty:\n%s", ours.stdout)
		}
	case "oneerror":
		errs, _ := c.errorLines()
		if len(errs) != 1 {
			c.fatalf("got %d error lines, want 1:\n%s", len(errs), ours.stderr)
		}
		if !strings.HasPrefix(ours.stderr, c.tool+": error: ") {
			c.errorf("the error line is not first:\n%s", ours.stderr)
		}
	case "error":
		errs, _ := c.errorLines()
		if len(errs) == 0 || !strings.Contains(errs[0], rest) {
			c.errorf("error %q does not say %q", strings.Join(errs, "\n"), rest)
		}
	case "errorline":
		errs, _ := c.errorLines()
		if len(errs) != 1 || errs[0] != rest || !strings.HasPrefix(ours.stderr, c.tool+": error: ") {
			c.errorf("stderr:\n%s\nwant the one error line, first: %q", ours.stderr, rest)
		}
	case "hint", "nohint", "hintline", "nohints", "maxhints":
		c.checkHints(verb, rest)
	}
}

// checkHints runs an assertion about the front's hint lines.
func (c *scriptCase) checkHints(verb, rest string) {
	_, hints := c.errorLines()
	switch verb {
	case "hint", "nohint":
		if has := strings.Contains(strings.Join(hints, "\n"), rest); has != (verb == "hint") {
			if has {
				c.errorf("a hint says %q:\n%s", rest, c.last[1].stderr)
			} else {
				c.errorf("no hint saying %q in:\n%s", rest, c.last[1].stderr)
			}
		}
	case "hintline", "nohints", "maxhints":
		if verb == "nohints" && len(hints) != 0 || verb == "hintline" && !slices.Equal(hints, []string{rest}) ||
			verb == "maxhints" && len(hints) > c.atoi(rest) {
			c.errorf("hints %q; want %s %q", hints, verb, rest)
		}
	}
}

func (c *scriptCase) needPeer(verb string) {
	if !c.withPeer {
		c.fatalf("%s after a command without a peer", verb)
	}
}

// errorLines splits the front's stderr into its error and hint lines,
// failing on any other line.
func (c *scriptCase) errorLines() (errs, hints []string) {
	stderr := c.last[1].stderr
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if e, ok := strings.CutPrefix(l, c.tool+": error: "); ok {
			errs = append(errs, e)
		} else if h, ok := strings.CutPrefix(l, c.tool+": hint: "); ok {
			hints = append(hints, h)
		} else {
			c.errorf("stderr line is neither an error nor a hint: %q", l)
		}
	}
	return errs, hints
}

func (c *scriptCase) expand(s string) string {
	pairs := []string{"$DIR", c.dirs[1], "$ROOT", c.root}
	// Longer names first: the replacer takes the first that matches.
	for _, name := range slices.SortedFunc(maps.Keys(c.s.Vars), func(a, b string) int { return len(b) - len(a) }) {
		pairs = append([]string{"$" + name, c.s.Vars[name]}, pairs...)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// writeFile runs a script line that writes a file in each directory: data
// or zeros (a new file), poke or fill (bytes into one).
func (c *scriptCase) writeFile(verb string, fields []string) {
	switch verb {
	case "data", "zeros":
		size := c.atoi(fields[1])
		mode := fs.FileMode(0o644)
		if len(fields) > 2 {
			mode = c.mode(fields[2])
		}
		b := make([]byte, size)
		if verb == "data" {
			r := rand.New(rand.NewPCG(uint64(size), uint64(len(fields[0]))))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
		}
		c.each(func(dir string) error {
			p := filepath.Join(dir, fields[0])
			if err := os.WriteFile(p, b, mode); err != nil {
				return err
			}
			return os.Chmod(p, mode)
		})
	case "poke", "fill":
		off := c.atoi(fields[1])
		var b []byte
		if verb == "poke" {
			if _, err := fmt.Sscanf(fields[2], "%x", &b); err != nil {
				c.fatalf("bad hex %q", fields[2])
			}
		} else {
			b = bytes.Repeat([]byte{0x5a}, c.atoi(fields[2]))
		}
		c.each(func(dir string) error {
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
func (c *scriptCase) loop(dir string, fields []string) error {
	dev := testtool.LoopDevice(c.t, filepath.Join(dir, fields[1]), false)
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

func (c *scriptCase) atoi(text string) int {
	n, err := strconv.Atoi(text)
	if err != nil {
		c.fatalf("bad number %q", text)
	}
	return n
}

func (c *scriptCase) mode(text string) fs.FileMode {
	m, err := strconv.ParseUint(text, 8, 32)
	if err != nil {
		c.fatalf("bad mode %q", text)
	}
	return fs.FileMode(m)
}

func (c *scriptCase) who(i int) string {
	cmd := c.tool + " " + strings.Join(c.args, " ")
	if i == 0 {
		return "the peer, " + cmd
	}
	return "the front, " + cmd
}

func (c *scriptCase) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s line %d: %s", c.file, c.line, fmt.Sprintf(format, args...))
}

func (c *scriptCase) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s line %d: %s", c.file, c.line, fmt.Sprintf(format, args...))
}

// each runs fn in the case's directories.
func (c *scriptCase) each(fn func(dir string) error) {
	for _, dir := range c.dirs {
		if dir == "" {
			continue
		}
		if err := fn(dir); err != nil {
			c.fatalf("%v", err)
		}
	}
}

var rootLine = regexp.MustCompile(`(?m)^Root hash:\s+([0-9a-f]+)$`)

func (c *scriptCase) start(tool string, args []string, withPeer bool) {
	c.tool, c.args, c.withPeer = tool, args, withPeer
	c.outMode, c.errMode, c.codeSeen = "exact", "exact", false
	c.last = [2]*outcome{}
	c.before = ListingWithDir(c.t, c.dirs[1])
	if withPeer {
		cmd := exec.CommandContext(c.t.Context(), c.peer, args...)
		// Both invoked by the same name: usage errors start with it.
		cmd.Args[0] = tool
		cmd.Dir = c.dirs[0]
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := &outcome{stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			c.fatalf("running %s: %v", c.peer, err)
		}
		c.last[0] = r
	}
	ctx, cancel := context.WithCancelCause(c.t.Context())
	defer cancel(nil)
	if c.interrupt != 0 {
		cancel(&cli.Interrupted{Signal: c.interrupt})
		c.interrupt = 0
	}
	var stdout, stderr bytes.Buffer
	code := c.s.Fronts[tool](ctx, tool, args, &stdout, &stderr)
	c.last[1] = &outcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
	c.t.Logf("%s line %d: %s %q -> exit %d\nstdout:\n%s\nstderr:\n%s", c.file, c.line, tool, args, code, stdout.String(), stderr.String())
	for _, never := range c.s.Never {
		if strings.Contains(stdout.String(), never) || strings.Contains(stderr.String(), never) {
			c.errorf("%s %q printed %q", tool, args, never)
		}
	}
	if m := rootLine.FindStringSubmatch(c.last[1].stdout); m != nil {
		c.root = m[1]
	}
}

// finish checks that the last command had a code line and compares its
// outputs with the peer's.
func (c *scriptCase) finish() {
	if c.last[1] == nil {
		return
	}
	if !c.codeSeen {
		c.fatalf("%s %v has no code line", c.tool, c.args)
	}
	if !c.withPeer {
		return
	}
	real, ours := c.last[0], c.last[1]
	if real.code != ours.code {
		c.errorf("%s %s: the peer exited %d, the front %d", c.tool, strings.Join(c.args, " "), real.code, ours.code)
	}
	c.compare("stdout", c.outMode, real.stdout, ours.stdout)
	c.compare("stderr", c.errMode, real.stderr, ours.stderr)
}

func (c *scriptCase) compare(what, mode, real, ours string) {
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
		c.fatalf("bad compare mode %q", mode)
	}
	if !ok {
		c.errorf("%s %s: %s differs (%s)\nthe peer:\n%s\nthe front:\n%s", c.tool, strings.Join(c.args, " "), what, mode, real, ours)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// compareFiles compares the named files (all files when none are named) of
// the two directories: present or not, content and mode.
func (c *scriptCase) compareFiles(names []string) {
	if len(names) == 0 {
		set := map[string]bool{}
		for _, dir := range c.dirs {
			entries, err := os.ReadDir(dir)
			if err != nil {
				c.fatalf("%v", err)
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
		for i, dir := range c.dirs {
			b, err := os.ReadFile(filepath.Join(dir, n))
			info, serr := os.Stat(filepath.Join(dir, n))
			if err != nil || serr != nil {
				desc[i] = "absent"
			} else {
				desc[i] = fmt.Sprintf("%d bytes, sha256 %x, mode %v", len(b), sha256.Sum256(b), info.Mode().Perm())
			}
		}
		if desc[0] != desc[1] {
			c.errorf("after %s %s: %s is %s; the front's is %s", c.tool, strings.Join(c.args, " "), n, desc[0], desc[1])
		}
	}
}

// avbFile runs a line of flip, avbimage, craft or unsparse in dir.
func (c *scriptCase) avbFile(dir, verb string, fields []string) error {
	path := filepath.Join(dir, fields[0])
	switch verb {
	case "flip":
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		b, off := []byte{0}, int64(c.atoi(fields[1]))
		if _, err := f.ReadAt(b, off); err != nil {
			return err
		}
		b[0] ^= 0x40
		_, err = f.WriteAt(b, off)
		return err
	case "avbimage":
		return os.WriteFile(path, AVBImageBytes(c.t, fields[1]), 0o644)
	case "craft":
		cc := avbcraft.ByName(fields[1])
		if cc == nil {
			c.fatalf("no crafted image %q", fields[1])
		}
		return cc.Make(path, filepath.Join(AVBVectors, "keys"))
	}
	// unsparse: what the reader of every verb sees.
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	b := make([]byte, src.Size())
	if n, err := src.ReadAt(b, 0); n != len(b) {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fields[1]), b, 0o644)
}
