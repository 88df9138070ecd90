package veritycheck

// Issue 15: what a user porting veritysetup scripts types first.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/verity"
)

// frTree makes a tree of 8 blocks with verity.Format and returns DATA,
// HASH and the root hash in hex.
func frTree(t *testing.T, dir string, opts *verity.FormatOptions) (data, hash, root string) {
	t.Helper()
	data, hash = filepath.Join(dir, "d.img"), filepath.Join(dir, "d.img.verity")
	fronttest.Image(t, data, 8*4096, 3)
	if opts == nil {
		opts = &verity.FormatOptions{}
	}
	res, err := verity.Format(context.Background(), data, hash, opts)
	if err != nil {
		t.Fatal(err)
	}
	return data, hash, hex.EncodeToString(res.RootHash)
}

// TestVeritysetupVerbs: "verify DATA HASH ROOT" and "DATA HASH ROOT" check
// as --root-hash=ROOT DATA HASH does; "dump HASH" is --dump HASH; format
// points at veritygen; a third argument that is no digest is refused.
func TestVeritysetupVerbs(t *testing.T) {
	dir := t.TempDir()
	data, hash, root := frTree(t, dir, nil)
	for _, args := range [][]string{
		{"verify", data, hash, root},
		{data, hash, root},
		{"verify", data, hash, "--root-hash=" + root},
		{"--no-progress", "verify", data, "--root-hash=" + root},
	} {
		r := vcRun(args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "verified: ") {
			t.Errorf("want verified:\n%v", r)
		}
	}
	bad := strings.Repeat("0", len(root))
	if r := vcRun(data, hash, bad); r.code != 1 {
		t.Errorf("wrong positional root hash: want exit 1\n%v", r)
	}
	want := vcRun("--dump", hash)
	if r := vcRun("dump", hash); r.code != 0 || r.stdout != want.stdout || want.code != 0 {
		t.Errorf("dump HASH is not --dump HASH:\n%v\n%v", r, want)
	}
	for _, c := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{data, hash, "root.hex"}, "expected DATA and optionally HASH, got 3 arguments", `"root.hex" is not; a file of it: --root-hash-file=root.hex`},
		{[]string{"--root-hash=" + root, data, hash, root}, "root hash given both as the third argument and with --root-hash", "keep one"},
		{[]string{"format", data, hash}, "format is veritysetup's verb", "veritygen does that: veritygen format " + data + " " + hash},
		{[]string{"status", "vroot"}, "status is veritysetup's verb", "use veritysetup status"},
	} {
		r := vcRun(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, "veritycheck: error: "+c.err) || !strings.Contains(r.stderr, "veritycheck: hint: ") ||
			!strings.Contains(r.stderr, c.hint) {
			t.Errorf("want exit 2, error %q, hint %q:\n%v", c.err, c.hint, r)
		}
	}
	// A file named dump: "dump X" could be DATA dump and HASH X.
	t.Chdir(dir)
	if err := os.WriteFile("dump", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := vcRun("dump", hash); r.code != 2 || !strings.Contains(r.stderr, "which is DATA?") ||
		!strings.Contains(r.stderr, "veritycheck --dump "+hash) {
		t.Errorf("dump with a file named dump:\n%v", r)
	}
}

// TestHashShorthand: -h is --hash and -s is --salt, as in veritysetup;
// "-h" alone and --help are help.
func TestHashShorthand(t *testing.T) {
	dir := t.TempDir()
	data, hash, root := frTree(t, dir, &verity.FormatOptions{TreeOptions: verity.TreeOptions{Hash: "sha512", Salt: []byte{0x4f, 0x2a}, NoSuperblock: true}})
	if r := vcRun("--no-superblock", "-h", "sha512", "-s", "4f2a", data, hash, root); r.code != 0 {
		t.Errorf("-h sha512 -s 4f2a: want verified\n%v", r)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		if r := vcRun(args...); r.code != 0 || !strings.Contains(r.stdout, "Usage: veritycheck") {
			t.Errorf("%q: no help\n%v", args, r)
		}
	}
}

// TestHelpOwnWords: veritycheck's help speaks of a tree to check, not of
// veritygen's defaults for writing one.
func TestHelpOwnWords(t *testing.T) {
	r := vcRun("--help")
	for _, not := range []string{"32 random bytes", "(default: random)", "write no superblock", "--uuid"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("help shows %q", not)
		}
	}
	for _, want := range []string{"-h, --hash", "-s, --salt", "the tree has no superblock", "the tree's salt"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestJSONFlagError: with --json, a bad flag is also one JSON object on
// stdout (it printed nothing there), whether --json comes before or after it.
func TestJSONFlagError(t *testing.T) {
	for _, args := range [][]string{{"--json", "--frobnicate", "d.img"}, {"--frobnicate", "--json", "d.img"}, {"--json", "--jobs=x", "d.img"}} {
		r := vcRun(args...)
		var got struct{ Error, Hint string }
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 2 || got.Error == "" || got.Hint != "see veritycheck --help" {
			t.Errorf("want exit 2 and the error as JSON (%v):\n%v", err, r)
		}
	}
}

// TestRootMismatchParameters: the case, a --no-superblock
// blake2b-256 tree checked without --hash, is reported as the parameter
// mistake it is, with what to give, not as a corrupted top block alone.
func TestRootMismatchParameters(t *testing.T) {
	dir := t.TempDir()
	data, hash, root := frTree(t, dir, &verity.FormatOptions{TreeOptions: verity.TreeOptions{Hash: "blake2b-256", Salt: []byte{}, NoSuperblock: true}})
	r := vcRun("--no-superblock", "--salt=-", data, hash, root)
	t.Logf("%v", r)
	if r.code != 1 || !strings.Contains(r.stderr, "veritycheck: error: verification failed: the tree was not made with the parameters given: its top block matches the root hash with --hash=blake2b-256") ||
		!strings.Contains(r.stderr, "veritycheck: hint: the top block matches the root hash with --hash=blake2b-256: give --hash=blake2b-256") {
		t.Errorf("want exit 1 and the parameter named")
	}
	var j struct {
		RootHint string `json:"root_mismatch_hint"`
	}
	r = vcRun("--json", "--no-superblock", "--salt=-", data, hash, root)
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != 1 || !strings.Contains(j.RootHint, "give --hash=blake2b-256") {
		t.Errorf("--json: %v\n%v", err, r)
	}
	// With the algorithm named, it verifies.
	vcVerified(t, "--no-superblock", "--salt=-", "-h", "blake2b-256", data, hash, root)
	// A sha512 root hash for a sha256 check: the length names the algorithm.
	r = vcRun("--no-superblock", "--salt=-", data, hash, strings.Repeat("ab", 64))
	if r.code != 2 || !strings.Contains(r.stderr, "a root hash of 64 bytes is of --hash=sha512") {
		t.Errorf("want the algorithm of a 64-byte root hash named:\n%v", r)
	}
}

// TestShapeMismatch: a --no-superblock tree checked with other data blocks
// than it was made with (DATA grown since) or another data block size
// names the flag that fits, not a truncated HASH or a corrupted top block
// alone; a corrupted top block is still reported as corruption.
func TestShapeMismatch(t *testing.T) {
	dir := t.TempDir()
	data, hash, root := frTree(t, dir, &verity.FormatOptions{TreeOptions: verity.TreeOptions{Salt: []byte{}, NoSuperblock: true}})
	grown := filepath.Join(dir, "grown.img")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(grown, append(b, make([]byte, 300*4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := vcRun("--no-superblock", "--salt=-", grown, hash, root)
	if r.code != 2 || !strings.Contains(r.stderr, "truncated, or not this tree's hash file?") ||
		!strings.Contains(r.stderr, "veritycheck: hint: the top block matches the root hash with --data-blocks=8: give --data-blocks=8 (DATA has 308 whole blocks: did it grow since the tree was made?)") {
		t.Errorf("DATA grown: want exit 2 and --data-blocks=8 named:\n%v", r)
	}
	vcVerified(t, "--no-superblock", "--salt=-", "--data-blocks=8", grown, hash, root)

	small := filepath.Join(dir, "small.verity")
	res, err := verity.Format(context.Background(), data, small, &verity.FormatOptions{TreeOptions: verity.TreeOptions{Salt: []byte{}, NoSuperblock: true, DataBlockSize: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	sroot := hex.EncodeToString(res.RootHash)
	r = vcRun("--no-superblock", "--salt=-", data, small, sroot)
	if r.code != 1 || !strings.Contains(r.stderr, "veritycheck: error: verification failed: the tree was not made with the parameters given: its top block matches the root hash with --data-block-size=1024") ||
		!strings.Contains(r.stderr, "veritycheck: hint: the top block matches the root hash with --data-block-size=1024: give --data-block-size=1024") {
		t.Errorf("--data-block-size: want exit 1 and --data-block-size=1024 named:\n%v", r)
	}
	vcVerified(t, "--no-superblock", "--salt=-", "--data-block-size=1024", data, small, sroot)

	// The top block corrupted: corruption, and no flag named.
	b, err = os.ReadFile(hash)
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 1
	if err := os.WriteFile(hash, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = vcRun("--no-superblock", "--salt=-", data, hash, root)
	if r.code != 1 || !strings.Contains(r.stdout, "corrupted: hash block 0 of level") || strings.Contains(r.stderr, "give --") ||
		!strings.Contains(r.stderr, "else the top block is corrupted") {
		t.Errorf("corrupted top block: want exit 1 and corruption:\n%v", r)
	}
}

// TestHelpFits: --help (and -h alone) keeps to 80 columns, one line a
// flag, in groups with the common ones first, with no "[=true|false]"
// and no default said twice (issue 21 item 18).
func TestHelpFits(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		r := vcRun(arg)
		if r.code != 0 {
			t.Fatalf("%s: %v", arg, r)
		}
		for i, l := range strings.Split(r.stdout, "\n") {
			if len(l) > cli.HelpWidth {
				t.Errorf("%s: line %d has %d columns: %q", arg, i+1, len(l), l)
			}
			if strings.Contains(l, "[=") || strings.Count(l, "(default") > 1 {
				t.Errorf("%s: line %d: %q", arg, i+1, l)
			}
		}
		var at []int
		for _, g := range helpGroups {
			i := strings.Index(r.stdout, "\n"+g.Title+":\n")
			if i < 0 {
				t.Errorf("%s: group %q missing", arg, g.Title)
			}
			at = append(at, i)
		}
		if !slices.IsSorted(at) || !strings.Contains(r.stdout, "Common flags:\n      --root-hash HEX ") {
			t.Errorf("%s: groups out of order: %v", arg, at)
		}
		if strings.Contains(r.stdout, "Other options:") {
			t.Errorf("%s: a flag in no group", arg)
		}
	}
}

// TestDumpNamesFileSystem: --dump of a file system image (DATA given for
// HASH) names the file system, not the bytes where a superblock is not
// (issue 21 item 17); a file of no known kind keeps the superblock error.
func TestDumpNamesFileSystem(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "e.img")
	b := make([]byte, 1<<20)
	b[1080], b[1081] = 0x53, 0xEF // ext2/3/4 magic, as mkfs.ext4 leaves it
	b[1048] = 2                   // s_log_block_size: 4 KiB blocks
	if err := os.WriteFile(img, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := vcRun("--dump", img)
	if r.code != 2 || !strings.Contains(r.stderr, "error: HASH "+img+" is an ext2/3/4 filesystem, not a dm-verity tree: no verity superblock at byte 0\n") ||
		strings.Contains(r.stderr, "7665726974790000") {
		t.Errorf("%v", r)
	}
	other := filepath.Join(dir, "r.img")
	fronttest.Image(t, other, 8192, 1)
	if r := vcRun("--dump", other); r.code != 2 || !strings.Contains(r.stderr, "no valid verity superblock at byte 0") {
		t.Errorf("%v", r)
	}
}
