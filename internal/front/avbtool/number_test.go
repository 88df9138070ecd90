package avbtool

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pyIntCases are the numbers of issue 21 item 9 and their neighbours.
var pyIntCases = []struct {
	in   string
	want uint64
	ok   bool
}{
	{"16", 16, true}, {"0x10", 16, true}, {"0X10", 16, true}, {"0o10", 8, true}, {"0b10", 2, true},
	{"1_000", 1000, true}, {"0x_1f", 31, true}, {"+1048576", 1048576, true}, {"-0", 0, true}, {" 7 ", 7, true},
	{"0", 0, true}, {"00", 0, true}, {"0_0", 0, true},
	{"010", 0, false}, {"04000000", 0, false}, {"0_10", 0, false}, {"1__0", 0, false}, {"_1", 0, false},
	{"1_", 0, false}, {"0x", 0, false}, {"", 0, false}, {"+-1", 0, false}, {"1e3", 0, false}, {"-5", 0, false},
	// Unicode decimal digits (Arabic-Indic, fullwidth, Devanagari, mathematical bold), as int reads them.
	{"١٢٣", 123, true}, {"１２", 12, true}, {"१०", 10, true}, {"𝟏𝟐", 12, true},
}

func TestPyInt(t *testing.T) {
	for _, c := range pyIntCases {
		got, ok := pyInt(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("pyInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestPyIntPython checks the table against Python itself where it is
// installed: int(s, 0), a negative result counting as refused (avbtool
// takes it, then fails; the front refuses it at once).
func TestPyIntPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	args := []string{"-c", "import sys\nfor a in sys.argv[1:]:\n try:\n  print(int(a, 0))\n except ValueError:\n  print('x')"}
	for _, c := range pyIntCases {
		args = append(args, c.in)
	}
	out, err := exec.Command(py, args...).Output() // one Python for all
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(pyIntCases) {
		t.Fatalf("python3 printed %d lines for %d numbers", len(lines), len(pyIntCases))
	}
	for i, c := range pyIntCases {
		v, perr := strconv.ParseUint(lines[i], 10, 64)
		ok := perr == nil
		if ok != c.ok || ok && v != c.want {
			t.Errorf("Python reads %q as %s; the table says %d, %v", c.in, lines[i], c.want, c.ok)
		}
	}
}

// TestPyIntRecorded: the number type reads every string of
// testdata/pyint.jsonl (recorded by record-pyint.py from Python 3.11's
// int(s, 0)) as Python does: the number when it is one from 0 to 2^64-1,
// kept as bad (refused later, exit 1) when Python reads it but it is
// negative or larger, a usage error when Python refuses it.
func TestPyIntRecorded(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pyint.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 10000 {
		t.Fatalf("%d lines in pyint.jsonl", len(lines))
	}
	wrong := 0
	for _, l := range lines {
		var c []*string
		if err := json.Unmarshal([]byte(l), &c); err != nil || len(c) != 2 || c[0] == nil {
			t.Fatalf("pyint.jsonl: %q", l)
		}
		s, py := *c[0], c[1]
		var n number
		setErr := n.Set(s)
		var got string
		switch {
		case setErr != nil:
			got = "refused"
		case n.bad != "":
			got = "out of range"
		default:
			got = strconv.FormatUint(n.v, 10)
		}
		want := "refused"
		if py != nil {
			want = *py
			if _, err := strconv.ParseUint(want, 10, 64); err != nil {
				want = "out of range" // negative, or past 2^64-1
			}
		}
		if got != want {
			if wrong++; wrong <= 20 {
				t.Errorf("%q: ours %s, Python's int(s, 0) %s", s, got, want)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d strings read otherwise than Python reads them", wrong, len(lines))
	}
}
