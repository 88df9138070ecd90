package veritygen

// Tests of veritygen's command line through its in-process entry point run:
// warnings, the JSON report, where the tree goes, interruption, and that
// --jobs does not change the output. Bad input is in testdata/script.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// cliResult is what one run of veritygen gave.
type cliResult struct {
	code   int
	stdout string
	stderr string
	tty    string
}

// cliRun runs veritygen in-process with args.
func cliRun(t *testing.T, ctx context.Context, args ...string) cliResult {
	t.Helper()
	var stdout, stderr, tty bytes.Buffer
	code := run(ctx, args, &stdout, &stderr, &tty)
	r := cliResult{code: code, stdout: stdout.String(), stderr: stderr.String(), tty: tty.String()}
	t.Logf("veritygen %s\n-> exit %d\nstderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	return r
}

// cliOK runs veritygen and fails the test unless it exits 0.
func cliOK(t *testing.T, args ...string) cliResult {
	t.Helper()
	r := cliRun(t, context.Background(), args...)
	if r.code != 0 {
		t.Fatalf("veritygen %s: exit %d, want 0\nstderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	if r.tty != "" {
		t.Errorf("a progress bar was drawn on a writer that is not a terminal: %q", r.tty)
	}
	return r
}

// cliState is a file's content digest and modification time.
type cliState struct {
	sum   [32]byte
	mtime time.Time
}

func cliFileState(t *testing.T, path string) cliState {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return cliState{sum: fronttest.Sum(t, path), mtime: info.ModTime()}
}

// cliJSON decodes veritygen's --json output.
func cliJSON(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	return m
}

// cliUint returns the JSON number m[key] as a uint64, failing the test if
// it is missing or not a non-negative integer.
func cliUint(t *testing.T, m map[string]any, key string) uint64 {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("JSON has no %q", key)
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("JSON %q is %T (%v), want a number", key, v, v)
	}
	var u uint64
	if _, err := fmt.Sscan(n.String(), &u); err != nil || fmt.Sprint(u) != n.String() {
		t.Fatalf("JSON %q = %s, want a non-negative integer", key, n)
	}
	return u
}

// cliString returns the JSON string m[key].
func cliString(t *testing.T, m map[string]any, key string) string {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("JSON has no %q", key)
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("JSON %q is %T (%v), want a string", key, v, v)
	}
	return s
}

// cliBool returns the JSON boolean m[key].
func cliBool(t *testing.T, m map[string]any, key string) bool {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("JSON has no %q", key)
	}
	b, ok := v.(bool)
	if !ok {
		t.Fatalf("JSON %q is %T (%v), want a boolean", key, v, v)
	}
	return b
}

// cliRefTree is an independent, all-in-memory dm-verity format 1 tree with
// SHA-256: it returns the root hash and the tree's bytes (highest level
// first), as they follow the superblock's block in a hash device.
func cliRefTree(data []byte, dbs, hbs int, salt []byte) (root, tree []byte) {
	const size, slot = sha256.Size, 32
	hash := func(b []byte) []byte {
		h := sha256.New()
		h.Write(salt)
		h.Write(b)
		return h.Sum(nil)
	}
	var digests [][]byte
	for off := 0; off+dbs <= len(data); off += dbs {
		digests = append(digests, hash(data[off:off+dbs]))
	}
	hpb := hbs / slot
	var levels [][]byte
	for len(digests) > 1 {
		nb := (len(digests) + hpb - 1) / hpb
		level := make([]byte, nb*hbs)
		for i, d := range digests {
			copy(level[(i/hpb)*hbs+(i%hpb)*slot:], d[:size])
		}
		levels = append(levels, level)
		digests = digests[:0:0]
		for off := 0; off < len(level); off += hbs {
			digests = append(digests, hash(level[off:off+hbs]))
		}
	}
	for i := len(levels) - 1; i >= 0; i-- {
		tree = append(tree, levels[i]...)
	}
	return digests[0], tree
}

// cliCheckSuperblock checks the fields of the superblock at the start of sb.
func cliCheckSuperblock(t *testing.T, sb []byte, alg string, dbs, hbs int, dataBlocks uint64, salt []byte, uuid string) {
	t.Helper()
	le := binary.LittleEndian
	if string(sb[:8]) != "verity\x00\x00" {
		t.Fatalf("no superblock signature: % x", sb[:8])
	}
	algName := string(bytes.TrimRight(sb[32:64], "\x00"))
	got := fmt.Sprintf("version=%d type=%d alg=%s dbs=%d hbs=%d blocks=%d salt=%x",
		le.Uint32(sb[8:]), le.Uint32(sb[12:]), algName, le.Uint32(sb[64:]), le.Uint32(sb[68:]),
		le.Uint64(sb[72:]), sb[88:88+int(le.Uint16(sb[80:]))])
	want := fmt.Sprintf("version=1 type=1 alg=%s dbs=%d hbs=%d blocks=%d salt=%x", alg, dbs, hbs, dataBlocks, salt)
	if got != want {
		t.Errorf("superblock:\n got %s\nwant %s", got, want)
	}
	if uuid != "" {
		if u := hex.EncodeToString(sb[16:32]); u != strings.ReplaceAll(uuid, "-", "") {
			t.Errorf("superblock UUID %s, want %s", u, uuid)
		}
	}
}

const (
	cliSalt = "4f2a0c91d3b85e7710aa6b42c8e91f03d2b6a9587c1e40f5a3d9b2c6e08f7a11"
	cliUUID = "a60c98d2-ae9b-4865-bfcb-b4e3ace11033"
)

// TestCLIPartialBlock: a trailing partial block is a warning naming the
// bytes left out; the tree covers the whole blocks before it.
func TestCLIPartialBlock(t *testing.T) {
	for _, tc := range []struct {
		size       int64
		dbs        int
		wantBlocks uint64
		wantLeft   uint64
	}{
		{10*4096 + 100, 4096, 10, 100},
		{3*4096 + 4095, 4096, 3, 4095},
		{7*512 + 1, 512, 7, 1},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.size, tc.dbs), func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data.img")
			img := fronttest.Image(t, data, tc.size, 2)
			res := cliOK(t, "--json", "--salt="+cliSalt, fmt.Sprintf("--data-block-size=%d", tc.dbs), data)
			want := fmt.Sprintf("veritygen: warning: the last %d bytes of DATA are not a whole %d-byte block: the tree does not cover them\n", tc.wantLeft, tc.dbs)
			if res.stderr != want {
				t.Errorf("stderr:\n%q\nwant\n%q", res.stderr, want)
			}
			m := cliJSON(t, res.stdout)
			if got := cliUint(t, m, "data_blocks"); got != tc.wantBlocks {
				t.Errorf("data_blocks = %d, want %d", got, tc.wantBlocks)
			}
			if got := cliUint(t, m, "uncovered_bytes"); got != tc.wantLeft {
				t.Errorf("uncovered_bytes = %d, want %d", got, tc.wantLeft)
			}
			salt, _ := hex.DecodeString(cliSalt)
			root, tree := cliRefTree(img, tc.dbs, 4096, salt)
			if got := cliString(t, m, "root_hash"); got != hex.EncodeToString(root) {
				t.Errorf("root_hash %s, want %x (the tree of the whole blocks)", got, root)
			}
			hash := fronttest.Read(t, data+".verity")
			if !bytes.Equal(hash[4096:], tree) {
				t.Errorf("HASH's tree (%d bytes) differs from the reference (%d bytes)", len(hash)-4096, len(tree))
			}
		})
	}

	t.Run("no warning for whole blocks", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data.img")
		fronttest.Image(t, data, 8*4096, 2)
		res := cliOK(t, "--json", data)
		if res.stderr != "" {
			t.Errorf("stderr is not empty:\n%s", res.stderr)
		}
		if got := cliUint(t, cliJSON(t, res.stdout), "uncovered_bytes"); got != 0 {
			t.Errorf("uncovered_bytes = %d, want 0", got)
		}
	})
}

// TestCLIJSON: --json prints one object with every parameter, of the right
// types and values; --root-hash-file holds the root hash alone.
func TestCLIJSON(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	hashPath := filepath.Join(dir, "tree.bin")
	rootFile := filepath.Join(dir, "root.hex")
	const blocks = 300
	img := fronttest.Image(t, data, blocks*4096, 3)

	res := cliOK(t, "--json", "--hash=SHA256", "--salt="+cliSalt, "--uuid="+strings.ToUpper(cliUUID),
		"--root-hash-file="+rootFile, data, hashPath)
	if res.stderr != "" {
		t.Errorf("stderr is not empty:\n%s", res.stderr)
	}
	m := cliJSON(t, res.stdout)

	salt, _ := hex.DecodeString(cliSalt)
	root, tree := cliRefTree(img, 4096, 4096, salt)
	wantStr := map[string]string{
		"root_hash":      hex.EncodeToString(root),
		"salt":           cliSalt,
		"hash_algorithm": "sha256",
		"uuid":           cliUUID,
		"data_file":      data,
		"hash_file":      hashPath,
	}
	// 300 data blocks: one level-0 block of 128 digests would not do; 3
	// level-0 blocks and 1 level-1 block, after the superblock's block.
	wantNum := map[string]uint64{
		"format":           1,
		"data_blocks":      blocks,
		"data_block_size":  4096,
		"hash_blocks":      4,
		"hash_block_size":  4096,
		"hash_offset":      0,
		"hash_start_block": 1,
	}
	for k, want := range wantStr {
		if got := cliString(t, m, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for k, want := range wantNum {
		if got := cliUint(t, m, k); got != want {
			t.Errorf("%s = %d, want %d", k, got, want)
		}
	}
	if !cliBool(t, m, "superblock") {
		t.Error("superblock = false, want true")
	}

	hash := fronttest.Read(t, hashPath)
	if want := 5 * 4096; len(hash) != want {
		t.Errorf("HASH is %d bytes, want %d", len(hash), want)
	} else {
		cliCheckSuperblock(t, hash, "sha256", 4096, 4096, blocks, salt, cliUUID)
		if !bytes.Equal(hash[4096:], tree) {
			t.Error("HASH's tree differs from the reference tree")
		}
	}
	if got := string(fronttest.Read(t, rootFile)); got != wantStr["root_hash"] {
		t.Errorf("--root-hash-file holds %q, want %q (no newline)", got, wantStr["root_hash"])
	}

	t.Run("no superblock, no salt", func(t *testing.T) {
		res := cliOK(t, "--json", "--hash=Blake2B-256", "--salt=-", "--no-superblock", "--hash-offset=8192",
			data, filepath.Join(dir, "nosb.bin"))
		m := cliJSON(t, res.stdout)
		if got := cliString(t, m, "hash_algorithm"); got != "blake2b-256" {
			t.Errorf("hash_algorithm = %q, want blake2b-256", got)
		}
		if got := cliString(t, m, "salt"); got != "-" {
			t.Errorf("salt = %q, want -", got)
		}
		if cliBool(t, m, "superblock") {
			t.Error("superblock = true, want false")
		}
		if got := cliString(t, m, "uuid"); got != "" {
			t.Errorf("uuid = %q, want empty without a superblock", got)
		}
		if got := cliUint(t, m, "hash_offset"); got != 8192 {
			t.Errorf("hash_offset = %d, want 8192", got)
		}
		if got := cliUint(t, m, "hash_start_block"); got != 2 {
			t.Errorf("hash_start_block = %d, want 2", got)
		}
		if r := cliString(t, m, "root_hash"); len(r) != 64 {
			t.Errorf("root_hash %q is not 32 bytes of hex", r)
		}
	})

	t.Run("random salt and UUID", func(t *testing.T) {
		a := cliJSON(t, cliOK(t, "--json", data, filepath.Join(dir, "r1.bin")).stdout)
		b := cliJSON(t, cliOK(t, "--json", data, filepath.Join(dir, "r2.bin")).stdout)
		for _, k := range []string{"salt", "uuid", "root_hash"} {
			if cliString(t, a, k) == cliString(t, b, k) {
				t.Errorf("two runs gave the same %s %s", k, cliString(t, a, k))
			}
		}
		if s := cliString(t, a, "salt"); len(s) != 64 {
			t.Errorf("default salt %q is not 32 bytes of hex", s)
		}
		u := cliString(t, a, "uuid")
		if len(u) != 36 || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) {
			t.Errorf("default uuid %q is not a version 4 UUID", u)
		}
	})

	t.Run("text report", func(t *testing.T) {
		res := cliOK(t, "--salt="+cliSalt, "--uuid="+cliUUID, data, filepath.Join(dir, "text.bin"))
		for _, want := range []string{
			"VERITY header information for " + filepath.Join(dir, "text.bin"),
			"UUID:            \t" + cliUUID,
			"Data blocks:     \t300\n",
			"Hash algorithm:  \tsha256\n",
			"Salt:            \t" + cliSalt,
			"Root hash:      \t" + hex.EncodeToString(root),
			"Hash device size: \t20480 [bytes]",
		} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("report lacks %q:\n%s", want, res.stdout)
			}
		}
	})
}

// TestCLIFiles: where the tree goes, and that DATA is left alone.
func TestCLIFiles(t *testing.T) {
	t.Run("default HASH is DATA.verity", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "sys.img")
		img := fronttest.Image(t, data, 40*4096, 4)
		before := cliFileState(t, data)
		m := cliJSON(t, cliOK(t, "--json", "--salt="+cliSalt, data).stdout)
		if got := cliString(t, m, "hash_file"); got != data+".verity" {
			t.Errorf("hash_file = %q, want %q", got, data+".verity")
		}
		salt, _ := hex.DecodeString(cliSalt)
		root, tree := cliRefTree(img, 4096, 4096, salt)
		if got := cliString(t, m, "root_hash"); got != hex.EncodeToString(root) {
			t.Errorf("root_hash %s, want %x", got, root)
		}
		hash := fronttest.Read(t, data+".verity")
		if !bytes.Equal(hash[4096:], tree) {
			t.Error("sys.img.verity does not hold the tree")
		}
		if after := cliFileState(t, data); after != before {
			t.Error("DATA changed")
		}
		names := slices.Sorted(maps.Keys(fronttest.Listing(t, dir)))
		if want := []string{"sys.img", "sys.img.verity"}; !slices.Equal(names, want) {
			t.Errorf("directory holds %q, want %q", names, want)
		}
	})

	t.Run("help", func(t *testing.T) {
		for _, arg := range []string{"--help", "-h"} {
			res := cliRun(t, context.Background(), arg)
			if res.code != 0 {
				t.Errorf("%s: exit %d, want 0", arg, res.code)
			}
			if res.stderr != "" {
				t.Errorf("%s: stderr not empty: %s", arg, res.stderr)
			}
			for _, want := range []string{
				"Usage: veritygen [flags] DATA [HASH]",
				"Exit codes:", "0  success", "2  anything else",
				"--hash ", "--salt ", "--uuid ", "--format ", "--data-block-size ", "--hash-block-size ",
				"--data-blocks ", "--hash-offset ", "--no-superblock", "--root-hash-file ", "--json", "--jobs ",
			} {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("%s: help lacks %q", arg, want)
				}
			}
		}
	})

	t.Run("existing HASH is replaced", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data.img")
		hashPath := filepath.Join(dir, "tree.bin")
		img := fronttest.Image(t, data, 20*4096, 5)
		// An earlier tree, longer than the new one.
		fronttest.Image(t, filepath.Join(dir, "big.img"), 1000*4096, 6)
		cliOK(t, filepath.Join(dir, "big.img"), hashPath)
		os.Remove(filepath.Join(dir, "big.img"))
		if err := os.Chmod(hashPath, 0o600); err != nil {
			t.Fatal(err)
		}
		cliOK(t, "--salt="+cliSalt, data, hashPath)
		salt, _ := hex.DecodeString(cliSalt)
		_, tree := cliRefTree(img, 4096, 4096, salt)
		hash := fronttest.Read(t, hashPath)
		if len(hash) != 4096+len(tree) || !bytes.Equal(hash[4096:], tree) {
			t.Errorf("HASH is %d bytes, want the tree alone (%d bytes)", len(hash), 4096+len(tree))
		}
		if info, _ := os.Stat(hashPath); info.Mode().Perm() != 0o600 {
			t.Errorf("HASH mode %v, want the old 0600 kept", info.Mode().Perm())
		}
		names := slices.Sorted(maps.Keys(fronttest.Listing(t, dir)))
		if want := []string{"data.img", "tree.bin"}; !slices.Equal(names, want) {
			t.Errorf("directory holds %q, want %q", names, want)
		}
	})

	t.Run("tree inside DATA", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			size   int64 // DATA's size
			offset uint64
			extra  []string
			blocks uint64 // data blocks the tree should cover
			room   bool   // the bytes from the offset on are zeros
		}{
			// Room reserved at the end of the image for the tree.
			{"past the data", 64 * 4096, 48 * 4096, nil, 48, true},
			// The image ends at the offset: the tree extends it.
			{"at the end", 32 * 4096, 32 * 4096, nil, 32, false},
			// --data-blocks covers fewer blocks than lie before the offset,
			// and gives the rest over to the tree.
			{"data-blocks", 64 * 4096, 48 * 4096, []string{"--data-blocks=40"}, 40, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				data := filepath.Join(dir, "disk.img")
				img := fronttest.Image(t, data, tc.size, 7)
				if tc.room {
					img = append(img[:tc.offset], make([]byte, tc.size-int64(tc.offset))...)
					if err := os.WriteFile(data, img, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				args := append([]string{"--json", "--salt=" + cliSalt, "--uuid=" + cliUUID,
					fmt.Sprintf("--hash-offset=%d", tc.offset)}, tc.extra...)
				res := cliOK(t, append(args, data, data)...)
				if res.stderr != "" {
					t.Errorf("stderr is not empty:\n%s", res.stderr)
				}
				m := cliJSON(t, res.stdout)
				if got := cliUint(t, m, "data_blocks"); got != tc.blocks {
					t.Errorf("data_blocks = %d, want %d", got, tc.blocks)
				}
				if got := cliUint(t, m, "hash_offset"); got != tc.offset {
					t.Errorf("hash_offset = %d, want %d", got, tc.offset)
				}
				if got, want := cliUint(t, m, "hash_start_block"), tc.offset/4096+1; got != want {
					t.Errorf("hash_start_block = %d, want %d", got, want)
				}
				after := fronttest.Read(t, data)
				if !bytes.Equal(after[:tc.offset], img[:tc.offset]) {
					t.Error("DATA's bytes before --hash-offset changed")
				}
				salt, _ := hex.DecodeString(cliSalt)
				root, tree := cliRefTree(img[:tc.blocks*4096], 4096, 4096, salt)
				if got := cliString(t, m, "root_hash"); got != hex.EncodeToString(root) {
					t.Errorf("root_hash %s, want %x", got, root)
				}
				if uint64(len(after)) < tc.offset+4096+uint64(len(tree)) {
					t.Fatalf("DATA is %d bytes, too short to hold the tree at %d", len(after), tc.offset)
				}
				cliCheckSuperblock(t, after[tc.offset:], "sha256", 4096, 4096, tc.blocks, salt, cliUUID)
				if !bytes.Equal(after[tc.offset+4096:tc.offset+4096+uint64(len(tree))], tree) {
					t.Error("the tree in DATA differs from the reference")
				}
				names := slices.Sorted(maps.Keys(fronttest.Listing(t, dir)))
				if want := []string{"disk.img"}; !slices.Equal(names, want) {
					t.Errorf("directory holds %q, want %q", names, want)
				}
			})
		}
	})
}

// TestCLIInterrupt: a canceled run exits 2 and leaves no tree, no temporary
// file, and an existing HASH as it was.
func TestCLIInterrupt(t *testing.T) {
	check := func(t *testing.T, res cliResult) {
		t.Helper()
		if res.code != 2 {
			t.Errorf("exit %d, want 2", res.code)
		}
		if !strings.HasPrefix(res.stderr, "veritygen: error: interrupted") {
			t.Errorf("stderr does not say it was interrupted:\n%s", res.stderr)
		}
		// Nothing on stdout but, with --json, the error as JSON.
		var jsonErr struct{ Error string }
		if res.stdout != "" && (json.Unmarshal([]byte(res.stdout), &jsonErr) != nil || !strings.HasPrefix(jsonErr.Error, "interrupted")) {
			t.Errorf("stdout holds more than the error:\n%s", res.stdout)
		}
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	// The images canceled during the build: big enough that the build is
	// still running when the cancellation comes (-short: 16 MiB, hashed
	// once or twice under -race; the run may win the race either way).
	big := int64(64 << 20)
	if testing.Short() {
		big = 16 << 20
	}

	// Several MiB, so that the build runs in several chunks on several jobs.
	for _, jobs := range []string{"--jobs=1", "--jobs=4"} {
		t.Run("before the build/"+jobs, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data.img")
			fronttest.Image(t, data, 8<<20, 8)
			listing := fronttest.Listing(t, dir)
			// Repeat: with several jobs the dispatcher must not race the
			// cancellation into a complete tree.
			for range 20 {
				res := cliRun(t, canceled, jobs, "--root-hash-file="+filepath.Join(dir, "root.hex"), data)
				check(t, res)
				fronttest.SameListing(t, listing, fronttest.Listing(t, dir))
				if t.Failed() {
					return
				}
			}
		})
		t.Run("existing HASH/"+jobs, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data.img")
			hashPath := filepath.Join(dir, "data.verity")
			fronttest.Image(t, data, 8<<20, 8)
			fronttest.Image(t, hashPath, 12345, 9)
			listing := fronttest.Listing(t, dir)
			for _, extra := range [][]string{nil, {"--hash-offset=4096"}} {
				// --force: an existing HASH that is not a tree is refused
				// before the build otherwise.
				res := cliRun(t, canceled, append(append([]string{jobs, "--force"}, extra...), data, hashPath)...)
				check(t, res)
				fronttest.SameListing(t, listing, fronttest.Listing(t, dir))
			}
		})
	}

	t.Run("before the build/tree inside DATA", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "disk.img")
		fronttest.Image(t, data, 8<<20, 8)
		listing := fronttest.Listing(t, dir)
		for range 10 {
			res := cliRun(t, canceled, "--jobs=4", "--hash-offset=4194304", data, data)
			check(t, res)
			fronttest.SameListing(t, listing, fronttest.Listing(t, dir))
			if t.Failed() {
				return
			}
		}
	})

	// Cancel while the tree is being written into DATA: as soon as the
	// superblock makes DATA grow. The message must not claim that nothing
	// was written.
	t.Run("during the build/tree inside DATA", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "disk.img")
		size := big
		img := fronttest.Image(t, data, size, 10)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				if info, err := os.Stat(data); err == nil && info.Size() > size {
					cancel()
					return
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		res := cliRun(t, ctx, "--jobs=2", "--json", fmt.Sprintf("--hash-offset=%d", size), data, data)
		cancel()
		after := fronttest.Read(t, data)
		if !bytes.Equal(after[:size], img) {
			t.Error("DATA's bytes before --hash-offset changed")
		}
		switch res.code {
		case 2:
			want := fmt.Sprintf("veritygen: error: interrupted; the tree in %s from byte %d is incomplete\n"+
				"veritygen: hint: run veritygen again to write the whole tree\n", data, size)
			if res.stderr != want {
				t.Errorf("stderr:\n%s\nwant\n%s", res.stderr, want)
			}
		case 0:
			t.Log("the build finished before the cancellation took effect")
		default:
			t.Errorf("exit %d, want 2 (or 0 if the build won the race)", res.code)
		}
	})

	// Cancel while the tree is being built: as soon as the temporary file
	// appears. The run may still win the race and finish; either way there
	// is a complete tree under HASH or none, and no temporary file.
	t.Run("during the build", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data.img")
		hashPath := filepath.Join(dir, "data.verity")
		fronttest.Image(t, data, big, 10)
		old := fronttest.Image(t, hashPath, 4096, 11)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), ".data.verity.tmp") {
						cancel()
						return
					}
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		res := cliRun(t, ctx, "--jobs=2", "--json", "--force", data, hashPath)
		cancel()
		names := slices.Sorted(maps.Keys(fronttest.Listing(t, dir)))
		if want := []string{"data.img", "data.verity"}; !slices.Equal(names, want) {
			t.Errorf("directory holds %q, want %q", names, want)
		}
		switch res.code {
		case 2:
			check(t, res)
			if !bytes.Equal(fronttest.Read(t, hashPath), old) {
				t.Error("interrupted run changed the existing HASH")
			}
		case 0:
			t.Log("the build finished before the cancellation took effect")
			m := cliJSON(t, res.stdout)
			if info, _ := os.Stat(hashPath); uint64(info.Size()) != (1+cliUint(t, m, "hash_blocks"))*4096 {
				t.Errorf("HASH is %d bytes, not a whole tree", info.Size())
			}
		default:
			t.Errorf("exit %d, want 2 (or 0 if the build won the race)", res.code)
		}
	})
}

// TestCLIJobs: the tree and root hash do not depend on --jobs.
func TestCLIJobs(t *testing.T) {
	for _, tc := range []struct {
		dbs, hbs int
		blocks   int64
		extra    []string
	}{
		{512, 512, 1000, nil},
		{4096, 4096, 300, nil},
		// Several 1 MiB chunks, the last one partial, so that the jobs
		// really share the work.
		{512, 1024, 5001, []string{"--hash=sha1"}},
		{4096, 4096, 1111, []string{"--hash=blake2b-256", "--format=0"}},
		{1024, 512, 3333, []string{"--hash=sha512", "--no-superblock"}},
	} {
		t.Run(fmt.Sprintf("%dx%d%s", tc.blocks, tc.dbs, strings.Join(tc.extra, "")), func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data.img")
			fronttest.Image(t, data, tc.blocks*int64(tc.dbs), 12)
			var first []byte
			var firstRoot string
			for _, jobs := range []int{1, 2, 7} {
				hashPath := filepath.Join(dir, fmt.Sprintf("j%d.bin", jobs))
				args := append([]string{"--json", "--salt=" + cliSalt, "--uuid=" + cliUUID,
					fmt.Sprintf("--jobs=%d", jobs), fmt.Sprintf("--data-block-size=%d", tc.dbs),
					fmt.Sprintf("--hash-block-size=%d", tc.hbs)}, tc.extra...)
				m := cliJSON(t, cliOK(t, append(args, data, hashPath)...).stdout)
				if got := cliUint(t, m, "data_blocks"); got != uint64(tc.blocks) {
					t.Errorf("--jobs=%d: data_blocks = %d, want %d", jobs, got, tc.blocks)
				}
				root, hash := cliString(t, m, "root_hash"), fronttest.Read(t, hashPath)
				if first == nil {
					first, firstRoot = hash, root
					continue
				}
				if root != firstRoot {
					t.Errorf("--jobs=%d: root %s, --jobs=1 gave %s", jobs, root, firstRoot)
				}
				if !bytes.Equal(hash, first) {
					t.Errorf("--jobs=%d: HASH differs from --jobs=1's", jobs)
				}
			}
			if tc.extra == nil {
				salt, _ := hex.DecodeString(cliSalt)
				root, tree := cliRefTree(fronttest.Read(t, data), tc.dbs, tc.hbs, salt)
				if firstRoot != hex.EncodeToString(root) {
					t.Errorf("root %s, reference %x", firstRoot, root)
				}
				if !bytes.Equal(first[tc.hbs:], tree) {
					t.Error("tree differs from the reference")
				}
			}
		})
	}
}
