package veritygen

// Issue 15: what a user porting veritysetup scripts types first.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestVeritysetupVerbs: "format DATA HASH" builds the same tree as "DATA
// HASH"; "format DATA" as "DATA" when no file is named format, and when one
// is, the error says what to type; verify and dump point at veritycheck.
func TestVeritysetupVerbs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	fronttest.Image(t, data, 8*4096, 1)
	want := filepath.Join(dir, "want.verity")
	cliOK(t, "--salt=00", "--uuid=a60c98d2-ae9b-4865-bfcb-b4e3ace11033", data, want)

	got := filepath.Join(dir, "got.verity")
	cliOK(t, "--salt=00", "--uuid=a60c98d2-ae9b-4865-bfcb-b4e3ace11033", "format", data, got)
	if !bytes.Equal(fronttest.Read(t, got), fronttest.Read(t, want)) {
		t.Error("format DATA HASH: not the tree of DATA HASH")
	}
	cliOK(t, "--salt=00", "--uuid=a60c98d2-ae9b-4865-bfcb-b4e3ace11033", "format", data)
	if !bytes.Equal(fronttest.Read(t, data+".verity"), fronttest.Read(t, want)) {
		t.Error("format DATA: not the tree of DATA in DATA.verity")
	}

	for _, c := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"verify", data, got, strings.Repeat("ab", 32)}, "verify is veritysetup's verb",
			"veritycheck does that: veritycheck verify " + data + " " + got + " " + strings.Repeat("ab", 32)},
		{[]string{"dump", got}, "dump is veritysetup's verb", "veritycheck does that: veritycheck dump " + got},
		{[]string{"open", data, "v", got, "00"}, "open is veritysetup's verb", "use veritysetup open"},
		{[]string{"format"}, "format: DATA missing", "veritygen [flags] DATA [HASH]"},
	} {
		before := fronttest.Listing(t, dir)
		r := cliRun(t, context.Background(), c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, "veritygen: error: "+c.err) || !strings.Contains(r.stderr, "veritygen: hint: "+c.hint) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2, error %q, hint %q", c.args, r.code, r.stderr, c.err, c.hint)
		}
		if after := fronttest.Listing(t, dir); !sameListing(before, after) {
			t.Errorf("%q changed the directory", c.args)
		}
	}

	// A file named format makes "format X" ambiguous: nothing is written,
	// and the hint says both ways.
	t.Chdir(dir)
	if err := os.WriteFile("format", make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, context.Background(), "format", "d.img")
	if r.code != 2 || !strings.Contains(r.stderr, "which is DATA?") || !strings.Contains(r.stderr, "veritygen d.img;") ||
		!strings.Contains(r.stderr, "./format") {
		t.Errorf("format with a file named format: exit %d\n%s", r.code, r.stderr)
	}
}

func sameListing(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestHashShorthand: -h is --hash and -s is --salt, as in veritysetup:
// "-h sha512" builds a sha512 tree (it printed help and exited 0 with
// nothing written); -h alone and --help still show the help.
func TestHashShorthand(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 8*4096, 1)
	long := filepath.Join(dir, "long.verity")
	cliOK(t, "--hash=sha512", "--salt=4f2a", "--uuid=a60c98d2-ae9b-4865-bfcb-b4e3ace11033", data, long)
	short := filepath.Join(dir, "short.verity")
	r := cliOK(t, "-h", "sha512", "-s", "4f2a", "--uuid=a60c98d2-ae9b-4865-bfcb-b4e3ace11033", data, short)
	if strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "sha512") {
		t.Errorf("-h sha512 printed:\n%s", r.stdout)
	}
	if !bytes.Equal(fronttest.Read(t, short), fronttest.Read(t, long)) {
		t.Error("-h sha512 -s 4f2a: not the tree of --hash=sha512 --salt=4f2a")
	}
	// -h with something that is no algorithm is an error naming -h's meaning.
	r = cliRun(t, context.Background(), "-h", data)
	if r.code != 2 || !strings.Contains(r.stderr, "unknown hash algorithm") || !strings.Contains(r.stderr, "-h, as in veritysetup") {
		t.Errorf("-h DATA: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		if r := cliOK(t, args...); !strings.Contains(r.stdout, "Usage: veritygen") || !strings.Contains(r.stdout, "-h, --hash") ||
			!strings.Contains(r.stdout, "-s, --salt") {
			t.Errorf("%q: no help, or -h and -s not shown", args)
		}
	}
}

// TestNoSuperblockSaltKept: a --no-superblock tree with a random salt is
// refused when stdout is a pipe or /dev/null, where the salt (printed
// nowhere else) would be lost; with --salt, or stdout a regular file, or
// --json into a pipe (jq reads the salt as well as the root hash), it is
// made.
func TestNoSuperblockSaltKept(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 8*4096, 1)
	hash := filepath.Join(dir, "tree.bin")
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for name, out := range map[string]*os.File{"/dev/null": devnull, "pipe": pw} {
		for _, extra := range [][]string{nil, {"--json"}} {
			if name == "pipe" && extra != nil {
				continue
			}
			var stderr bytes.Buffer
			args := append(append([]string{"--no-superblock"}, extra...), data, hash)
			code := run(context.Background(), args, out, &stderr, &bytes.Buffer{})
			if code != 2 || !strings.Contains(stderr.String(), "the salt, printed only there, would be lost") ||
				!strings.Contains(stderr.String(), "hint: give the salt: --salt=") {
				t.Errorf("%s %q: exit %d\n%s", name, extra, code, stderr.String())
			}
			if _, err := os.Stat(hash); !os.IsNotExist(err) {
				t.Fatalf("%s %q: HASH written", name, extra)
			}
		}
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"--no-superblock", "--salt=-", data, hash}, out, &stderr, &bytes.Buffer{}); code != 0 {
			t.Errorf("%s with --salt=-: exit %d\n%s", name, code, stderr.String())
		}
		os.Remove(hash)
	}
	// --json into a pipe: the salt is in what the reader gets.
	jr, jw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--no-superblock", "--json", data, hash}, jw, &stderr, &bytes.Buffer{})
	jw.Close()
	if code != 0 {
		t.Errorf("--json into a pipe: exit %d\n%s", code, stderr.String())
	}
	var got struct{ Salt string }
	if err := json.NewDecoder(jr).Decode(&got); err != nil || len(got.Salt) != 64 {
		t.Errorf("--json into a pipe: salt %q, %v", got.Salt, err)
	}
	os.Remove(hash)
	report, err := os.Create(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer report.Close()
	stderr.Reset()
	if code := run(context.Background(), []string{"--no-superblock", data, hash}, report, &stderr, &bytes.Buffer{}); code != 0 {
		t.Errorf("stdout a file: exit %d\n%s", code, stderr.String())
	}
	if b := fronttest.Read(t, report.Name()); !bytes.Contains(b, []byte("Salt:")) {
		t.Errorf("the report file lacks the salt:\n%s", b)
	}
}

// TestJSONFlagError: with --json, a bad flag is one JSON object on stdout
// even when --json comes after it (pflag stops at the bad flag).
func TestJSONFlagError(t *testing.T) {
	r := cliRun(t, context.Background(), "--frobnicate", "--json", "d.img")
	var got struct{ Error, Hint string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 2 || got.Error != "unknown flag: --frobnicate" {
		t.Errorf("exit %d, stdout %q: %v", r.code, r.stdout, err)
	}
}

// TestHelpFits: --help (and -h alone) keeps to 80 columns, one line a
// flag, in groups with the common ones first, with no "[=true|false]"
// and no default said twice (issue 21 item 18).
func TestHelpFits(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		out := cliOK(t, arg).stdout
		for i, l := range strings.Split(out, "\n") {
			if len(l) > cli.HelpWidth {
				t.Errorf("%s: line %d has %d columns: %q", arg, i+1, len(l), l)
			}
			if strings.Contains(l, "[=") || strings.Count(l, "(default") > 1 {
				t.Errorf("%s: line %d: %q", arg, i+1, l)
			}
		}
		var at []int
		for _, g := range helpGroups {
			i := strings.Index(out, "\n"+g.Title+":\n")
			if i < 0 {
				t.Errorf("%s: group %q missing", arg, g.Title)
			}
			at = append(at, i)
		}
		if !slices.IsSorted(at) || !strings.Contains(out, "Common flags:\n  -h, --hash ALGORITHM ") {
			t.Errorf("%s: groups out of order: %v", arg, at)
		}
		if strings.Contains(out, "Other options:") {
			t.Errorf("%s: a flag in no group", arg)
		}
	}
}
