package veritycheck

// veritycheck's command line: the report's format with many problems and
// each kind of problem. Bad input is in testdata/script (TestScripts).

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

var cliProblemLine = regexp.MustCompile(`^corrupted: data block (\d+) \(byte (\d+) of .*/data\.img\): digest mismatch$`)

// TestCLIManyProblems corrupts 50 of 60 data blocks: the listing is capped
// by --max-problems, the counts are complete.
func TestCLIManyProblems(t *testing.T) {
	vsPath(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 60*4096, 5)
	root := vsFormat(t, data, data+".verity").root
	for b := int64(5); b < 55; b++ {
		vcXorByte(t, data, b*4096+b, 0xff)
	}
	args := []string{"--root-hash=" + root, data}

	for _, tc := range []struct {
		flags  []string
		listed int
	}{{nil, 20}, {[]string{"--max-problems=-1"}, 50}, {[]string{"--max-problems=5"}, 5},
		{[]string{"--max-problems=0"}, 0}, {[]string{"--max-problems=50"}, 50}, {[]string{"--max-problems=1000"}, 50}} {
		t.Run(strings.Join(append([]string{"text"}, tc.flags...), " "), func(t *testing.T) {
			r := vcRun(append(tc.flags, args...)...)
			if r.code != 1 || r.stderr != "veritycheck: error: verification failed: 50 corrupted data blocks\n" {
				t.Fatalf("want exit 1 and 50 corrupted data blocks:\n%v", r)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if r.stdout == "" {
				lines = nil
			}
			wantLines := tc.listed
			if tc.listed < 50 {
				wantLines++
			}
			if len(lines) != wantLines {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), wantLines, r.stdout)
			}
			for i, line := range lines[:tc.listed] {
				m := cliProblemLine.FindStringSubmatch(line)
				if m == nil || m[1] != fmt.Sprint(5+i) || m[2] != fmt.Sprint((5+i)*4096) {
					t.Errorf("line %d is %q, want data block %d at byte %d", i, line, 5+i, (5+i)*4096)
				}
			}
			if tc.listed < 50 {
				want := fmt.Sprintf("... and %d more (50 in all; --max-problems=-1 lists all)", 50-tc.listed)
				if last := lines[len(lines)-1]; last != want {
					t.Errorf("last line %q, want %q", last, want)
				}
			}
		})
		t.Run(strings.Join(append([]string{"json"}, tc.flags...), " "), func(t *testing.T) {
			r := vcRun(append(append([]string{"--json"}, tc.flags...), args...)...)
			if r.code != 1 {
				t.Fatalf("%v", r)
			}
			j := vcDecode(t, r)
			if j.Verified || j.CorruptDataBlocks != 50 || j.CorruptHashBlocks != 0 || j.CorruptHeaderBytes != 0 || j.RootMismatch {
				t.Errorf("counts wrong:\n%s", r.stdout)
			}
			if len(j.Problems) != tc.listed || j.ProblemsTruncated != (tc.listed < 50) {
				t.Errorf("%d problems, truncated %v; want %d, %v", len(j.Problems), j.ProblemsTruncated, tc.listed, tc.listed < 50)
			}
			if tc.listed == 0 && !strings.Contains(r.stdout, `"problems": []`) {
				t.Errorf("no problems listed must be an empty list, not null:\n%s", r.stdout)
			}
			for i, p := range j.Problems {
				if p.Where != "data" || p.Level != nil || p.Index != uint64(5+i) || p.Offset != uint64((5+i)*4096) {
					t.Errorf("problem %d: %+v, want data block %d", i, p, 5+i)
				}
			}
		})
	}
}

// TestCLIProblemLines checks the text line of each kind of problem, and
// that an untouched image never fails.
func TestCLIProblemLines(t *testing.T) {
	vsPath(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	hash := data + ".verity"
	fronttest.Image(t, data, 300*4096, 6)
	root := vsFormat(t, data, hash, "--salt=abcd").root // levels: 3 blocks of level 0, 1 of level 1
	args := []string{"--root-hash=" + root, data, hash}
	r := vcVerified(t, args...)
	if want := fmt.Sprintf("verified: 300 data blocks of 4096 bytes and 4 hash blocks match root hash %s\n", root); r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	vcXorByte(t, hash, 100, 1)                   // salt padding (the salt is 2 bytes)
	vcXorByte(t, hash, 1000, 1)                  // the gap before the tree
	vcXorByte(t, hash, 4096*2+4095, 1)           // level 0, block 0: its last digest
	vcXorByte(t, hash, 4096*4+(300-256)*32+7, 1) // level 0, block 2: tail after its 44 digests
	vcXorByte(t, data, 299*4096+1, 1)            // data block 299: under block 2, unchecked
	vcXorByte(t, data, 150*4096, 1)              // data block 150: under the intact block 1
	r = vcRun(args...)
	want := []string{
		fmt.Sprintf("corrupted: superblock area, byte 100 of %s: non-zero reserved or padding byte in the superblock", hash),
		fmt.Sprintf("corrupted: superblock area, byte 1000 of %s: non-zero byte between the superblock and the tree", hash),
		fmt.Sprintf("corrupted: hash block 0 of level 0 (byte 8192 of %s): digest mismatch", hash),
		fmt.Sprintf("unchecked: data blocks 0-127 (bytes 0-524287 of %s) could not be checked: hash block 0 of level 0 above them is corrupted", data),
		fmt.Sprintf("corrupted: hash block 2 of level 0 (byte 16384 of %s): non-zero padding at byte %d of the block", hash, 44*32+7),
		fmt.Sprintf("unchecked: data blocks 256-299 (bytes 1048576-1228799 of %s) could not be checked: hash block 2 of level 0 above them is corrupted", data),
		fmt.Sprintf("corrupted: data block 150 (byte %d of %s): digest mismatch", 150*4096, data),
	}
	if r.code != 1 || r.stdout != strings.Join(want, "\n")+"\n" {
		t.Errorf("want exit 1 and\n%s\ngot:\n%v", strings.Join(want, "\n"), r)
	}
	wantErr := "veritycheck: error: verification failed: 1 corrupted data block, 2 corrupted hash blocks, 2 corrupted superblock bytes; " +
		"172 data and 0 hash blocks under corrupted hash blocks could not be checked\n"
	if r.stderr != wantErr {
		t.Errorf("stderr %q, want %q", r.stderr, wantErr)
	}
}
