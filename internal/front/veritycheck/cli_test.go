package veritycheck

// veritycheck's command line: bad input (one table: exit 2, a specific
// error, nothing changed) and the report's format with many problems.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// cliMaster is a tree made once by veritysetup, copied into each case's
// directory: data.img, data.img.verity (superblock), nosb.verity (the same
// data without superblock), inplace.img (tree at byte 65536) and root.hex.
type cliMaster struct {
	dir             string
	root, nosbRoot  string
	inplaceRoot     string
	hashEnd         int64
	dataBlocks      int
	inplaceHashOffs int64
}

func cliMakeMaster(t *testing.T) *cliMaster {
	t.Helper()
	m := &cliMaster{dir: t.TempDir(), dataBlocks: 16, inplaceHashOffs: 65536}
	data := filepath.Join(m.dir, "data.img")
	fronttest.Image(t, data, int64(m.dataBlocks)*4096, 11)
	m.root = vsFormat(t, data, data+".verity", "--salt=00112233", "--root-hash-file="+filepath.Join(m.dir, "root.hex")).root
	m.nosbRoot = vsFormat(t, data, filepath.Join(m.dir, "nosb.verity"), "--salt=00112233", "--no-superblock").root
	if m.nosbRoot != m.root {
		t.Fatalf("the same tree with and without superblock has roots %s and %s", m.root, m.nosbRoot)
	}
	in := filepath.Join(m.dir, "inplace.img")
	fronttest.Image(t, in, m.inplaceHashOffs, 11)
	m.inplaceRoot = vsFormat(t, in, in, "--salt=00112233", fmt.Sprintf("--hash-offset=%d", m.inplaceHashOffs),
		fmt.Sprintf("--data-blocks=%d", m.dataBlocks)).root
	info, err := os.Stat(data + ".verity")
	if err != nil {
		t.Fatal(err)
	}
	m.hashEnd = info.Size()
	if m.hashEnd != 4096*2 {
		t.Fatalf("the hash file is %d bytes, want a superblock block and one hash block", m.hashEnd)
	}
	return m
}

// copyTo copies the master's files into dir.
func (m *cliMaster) copyTo(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		vcWrite(t, filepath.Join(dir, e.Name()), fronttest.Read(t, filepath.Join(m.dir, e.Name())))
	}
}

// Tree flags that agree with HASH's superblock are accepted: a script may
// give veritysetup's options to both tools.
func TestCLITreeFlagsAgreeingWithSuperblock(t *testing.T) {
	vsPath(t)
	m := cliMakeMaster(t)
	dir := t.TempDir()
	m.copyTo(t, dir)
	r := vcRun("--root-hash="+m.root, "-h", "SHA256", "--format=1", "--data-block-size=4096", "--hash-block-size=4096",
		"--data-blocks=16", filepath.Join(dir, "data.img"))
	if r.code != 0 {
		t.Errorf("exit %d, want 0: %v", r.code, r)
	}
}

func TestCLIBadInput(t *testing.T) {
	vsPath(t)
	m := cliMakeMaster(t)
	// setSB changes the superblock of data.img.verity.
	setSB := func(off int, b ...byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, "data.img.verity")
			h := fronttest.Read(t, p)
			copy(h[off:], b)
			vcWrite(t, p, h)
		}
	}
	truncate := func(name string, size int64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
				t.Fatal(err)
			}
		}
	}
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	root := "--root-hash=" + m.root
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		args  []string // {D} is the case's directory
		want  []string // substrings of the error line
	}{
		{"hash truncated inside the tree", truncate("data.img.verity", m.hashEnd-1),
			[]string{root, "{D}/data.img"},
			[]string{"HASH {D}/data.img.verity is 8191 bytes, but the tree ends at byte 8192: truncated"}},
		{"hash truncated inside the superblock", truncate("data.img.verity", 300),
			[]string{root, "{D}/data.img"}, []string{"HASH {D}/data.img.verity ends before a superblock at byte 0"}},
		{"hash missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "data.img.verity")) },
			[]string{root, "{D}/data.img"}, []string{"HASH {D}/data.img.verity does not exist"}},
		{"hash missing, named", nil, []string{root, "{D}/data.img", "{D}/nothere"}, []string{"HASH {D}/nothere does not exist"}},
		{"data missing", nil, []string{root, "{D}/nothere", "{D}/data.img.verity"}, []string{"DATA {D}/nothere does not exist"}},
		{"data a directory", func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) },
			[]string{root, "{D}/sub", "{D}/data.img.verity"}, []string{"DATA {D}/sub is a directory"}},
		{"root too short", nil, []string{"--root-hash=" + m.root[:62], "{D}/data.img"},
			[]string{"the root hash is 31 bytes, but sha256 digests are 32 bytes"}},
		{"root of sha1 length", nil, []string{"--root-hash=" + m.root[:40], "{D}/data.img"},
			[]string{"the root hash is 20 bytes, but sha256 digests are 32 bytes"}},
		{"root too long", nil, []string{"--root-hash=" + m.root + "00", "{D}/data.img"},
			[]string{"the root hash is 33 bytes, but sha256 digests are 32 bytes"}},
		{"root odd length", nil, []string{"--root-hash=" + m.root[:63], "{D}/data.img"},
			[]string{"--root-hash", "has an odd number of hex digits"}},
		{"root not hex", nil, []string{"--root-hash=" + m.root[:60] + "xyzw", "{D}/data.img"},
			[]string{"--root-hash", "is not hexadecimal: bad character 'x'"}},
		{"root file not hex", func(t *testing.T, dir string) { vcWrite(t, filepath.Join(dir, "bad.hex"), []byte("0x"+m.root)) },
			[]string{"--root-hash-file={D}/bad.hex", "{D}/data.img"}, []string{"root hash in {D}/bad.hex", "is not hexadecimal"}},
		{"both root hash and file", nil, []string{root, "--root-hash-file={D}/root.hex", "{D}/data.img"},
			[]string{"--root-hash and --root-hash-file both given"}},
		{"no root hash", nil, []string{"{D}/data.img"}, []string{"no root hash: give --root-hash or --root-hash-file"}},
		{"empty root hash", nil, []string{"--root-hash=", "{D}/data.img"}, []string{"--root-hash is empty"}},
		{"empty root hash file", func(t *testing.T, dir string) { vcWrite(t, filepath.Join(dir, "empty.hex"), nil) },
			[]string{"--root-hash-file={D}/empty.hex", "{D}/data.img"}, []string{"root hash in {D}/empty.hex is empty"}},
		{"blank root hash file", func(t *testing.T, dir string) { vcWrite(t, filepath.Join(dir, "blank.hex"), []byte(" \n")) },
			[]string{"--root-hash-file={D}/blank.hex", "{D}/data.img"}, []string{"root hash in {D}/blank.hex is empty"}},
		{"root hash file missing", nil, []string{"--root-hash-file={D}/nothere.hex", "{D}/data.img"},
			[]string{"reading --root-hash-file", "no such file"}},
		{"superblock bad signature", setSB(0, 'V'), []string{root, "{D}/data.img"},
			[]string{"HASH {D}/data.img.verity has no valid verity superblock at byte 0", "signature (at byte 0)"}},
		{"superblock bad version", setSB(8, 2), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: version (at byte 8): 2"}},
		{"superblock data block size 3000", setSB(64, le32(3000)...), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: data block size (at byte 64)", "3000", "power of two"}},
		{"superblock hash block size 0", setSB(68, le32(0)...), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: hash block size (at byte 68)"}},
		{"superblock unknown algorithm", setSB(32, 'm', 'd', '6', 0), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: algorithm (at byte 32)", `unknown hash algorithm "md6"`}},
		{"superblock algorithm without Go implementation", setSB(32, 's', 'm', '3', 0), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: algorithm (at byte 32)", `hash algorithm "sm3" is not supported: Go has no SM3`}},
		{"superblock salt size 300", setSB(80, 0x2c, 0x01), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: salt size (at byte 80): 300", "256"}},
		{"superblock zero data blocks", setSB(72, 0, 0, 0, 0, 0, 0, 0, 0), []string{root, "{D}/data.img"},
			[]string{"bad verity superblock: data blocks (at byte 72)", "zero"}},
		{"no superblock without --salt", nil, []string{root, "--no-superblock", "{D}/data.img", "{D}/nosb.verity"},
			[]string{"--no-superblock needs --salt"}},
		{"tree flag conflicting with the superblock", nil, []string{root, "--hash=sha512", "{D}/data.img"},
			[]string{"--hash sha512 given, but HASH's superblock says sha256"}},
		{"salt conflicting with the superblock", nil, []string{root, "--salt=ffeeddcc", "{D}/data.img"},
			[]string{"--salt ffeeddcc given, but HASH's superblock says"}},
		{"data blocks conflicting with the superblock", nil, []string{root, "--data-blocks=3", "{D}/data.img"},
			[]string{"--data-blocks 3 given, but HASH's superblock says 16"}},
		{"bad tree flag with a superblock", nil, []string{root, "--format=7", "{D}/data.img"},
			[]string{"--format 7 is not 0 or 1"}},
		{"HASH is DATA without --hash-offset", nil, []string{"--root-hash=" + m.inplaceRoot, "{D}/inplace.img", "{D}/inplace.img"},
			[]string{"HASH is DATA ({D}/inplace.img) and no --hash-offset says where the tree is"}},
		{"unaligned --hash-offset", nil,
			[]string{"--root-hash=" + m.inplaceRoot, "--hash-offset=65537", "{D}/inplace.img", "{D}/inplace.img"},
			[]string{"--hash-offset 65537 is not a multiple of 512"}},
		{"unaligned --hash-offset without superblock", nil,
			[]string{root, "--no-superblock", "--salt=00112233", "--hash-offset=512", "{D}/data.img", "{D}/nosb.verity"},
			[]string{"--hash-offset 512 is not a multiple of the hash block size 4096"}},
		{"--hash-offset at no superblock", nil,
			[]string{"--root-hash=" + m.inplaceRoot, "--hash-offset=4096", "{D}/inplace.img", "{D}/inplace.img"},
			[]string{"has no valid verity superblock at byte 4096"}},
		{"data shorter than the superblock says", truncate("data.img", 4096*15+100), []string{root, "{D}/data.img"},
			[]string{"DATA {D}/data.img is 61540 bytes, shorter than the 16 blocks of 4096 bytes the tree covers (65536 bytes)"}},
		{"data area overlaps the tree", func(t *testing.T, dir string) {
			// The separate tree of 16 blocks, copied into the data at 32768.
			p := filepath.Join(dir, "data.img")
			b := fronttest.Read(t, p)
			copy(b[32768:], fronttest.Read(t, p+".verity"))
			vcWrite(t, p, b)
		}, []string{root, "--hash-offset=32768", "{D}/data.img", "{D}/data.img"},
			[]string{"the data area (up to byte 65536) overlaps the hash area at --hash-offset 32768"}},
		{"too many args", nil, []string{root, "{D}/data.img", "{D}/data.img.verity", "{D}/root.hex"},
			[]string{"expected DATA and optionally HASH, got 3 arguments"}},
		{"no args", nil, []string{root}, []string{"expected DATA and optionally HASH, got 0 arguments"}},
		{"unknown flag", nil, []string{root, "--frobnicate", "{D}/data.img"}, []string{"unknown flag: --frobnicate"}},
		{"jobs 0", nil, []string{root, "--jobs=0", "{D}/data.img"}, []string{"--jobs must be at least 1"}},
		{"--dump no args", nil, []string{"--dump"}, []string{"--dump takes one argument, HASH; got 0"}},
		{"--dump two args", nil, []string{"--dump", "{D}/data.img", "{D}/data.img.verity"},
			[]string{"--dump takes one argument, HASH; got 2"}},
		{"--dump without superblock", nil, []string{"--dump", "{D}/nosb.verity"},
			[]string{"HASH {D}/nosb.verity has no valid verity superblock at byte 0"}},
		{"--dump missing", nil, []string{"--dump", "{D}/nothere"}, []string{"HASH {D}/nothere does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m.copyTo(t, dir)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := fronttest.ListingWithDir(t, dir)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "{D}", dir)
			}
			r := vcRun(args...)
			t.Logf("%v", r)
			if r.code != 2 {
				t.Errorf("exit %d, want 2", r.code)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty")
			}
			first, _, _ := strings.Cut(r.stderr, "\n")
			if !strings.HasPrefix(first, "veritycheck: error: ") {
				t.Errorf("stderr does not start with \"veritycheck: error: \"")
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "{D}", dir); !strings.Contains(first, w) {
					t.Errorf("error line %q lacks %q", first, w)
				}
			}
			for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")[1:] {
				if !strings.HasPrefix(line, "veritycheck: hint: ") {
					t.Errorf("stderr line %q is neither the error nor a hint", line)
				}
			}
			fronttest.SameListing(t, before, fronttest.ListingWithDir(t, dir))
		})
	}
}

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

// A missing HASH that was not named gets the hint to name it (the error's
// Role says it is about HASH); a missing DATA, or a HASH named, does not.
func TestCLIMissingHashHint(t *testing.T) {
	m := cliMakeMaster(t)
	dir := t.TempDir()
	m.copyTo(t, dir)
	data := filepath.Join(dir, "data.img")
	if err := os.Remove(data + ".verity"); err != nil {
		t.Fatal(err)
	}
	const hint = "veritycheck: hint: name the hash file: veritycheck [flags] DATA HASH\n"
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"--root-hash=" + m.root, data}, true},
		{[]string{"--root-hash=" + m.root, data, filepath.Join(dir, "nothere")}, false},
		{[]string{"--root-hash=" + m.root, filepath.Join(dir, "nothere")}, false},
	} {
		r := vcRun(tc.args...)
		if r.code != 2 || strings.Contains(r.stderr, hint) != tc.hint {
			t.Errorf("hint wanted: %v; got:\n%v", tc.hint, r)
		}
	}
}
