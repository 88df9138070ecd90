package veritycheck

// veritycheck against its peer, veritysetup (cryptsetup-bin): trees that
// `veritysetup format` makes must verify, `veritysetup verify` must agree
// on intact and corrupted images, and --dump must print what
// `veritysetup dump` prints. blake2b-256, which veritysetup lacks, is built
// with merkle.Build.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/merkle"
)

// peerCase is one tree veritysetup makes and veritycheck must verify.
type peerCase struct {
	name       string
	alg        string // "" for veritysetup's default (sha256)
	format     int    // 0 or 1
	dbs, hbs   int    // 0 for 4096
	blocks     int    // data blocks
	tail       int    // bytes past the last whole data block
	salt       string // hex, "-" for none, "" for veritysetup's random salt
	noSB       bool
	inPlace    bool   // the tree goes into the data file at hashOffset
	hashOffset uint64 // where the superblock (or tree) starts in HASH
	// giveDataBlocks passes --data-blocks to veritycheck (--no-superblock).
	giveDataBlocks bool
}

func (c *peerCase) sizes() (dbs, hbs int) {
	dbs, hbs = c.dbs, c.hbs
	if dbs == 0 {
		dbs = 4096
	}
	if hbs == 0 {
		hbs = 4096
	}
	return dbs, hbs
}

// treeFlags are the flags veritysetup format and veritycheck
// --no-superblock share.
func (c *peerCase) treeFlags() []string {
	dbs, hbs := c.sizes()
	alg := c.alg
	if alg == "" {
		alg = "sha256"
	}
	f := []string{"--hash=" + alg, fmt.Sprintf("--format=%d", c.format),
		fmt.Sprintf("--data-block-size=%d", dbs), fmt.Sprintf("--hash-block-size=%d", hbs)}
	if c.salt != "" {
		f = append(f, "--salt="+c.salt)
	}
	return f
}

var peerCases = []peerCase{
	// Algorithms and formats.
	{name: "sha1-f1", alg: "sha1", format: 1, blocks: 300, salt: "0011223344"},
	{name: "sha1-f0", alg: "sha1", format: 0, blocks: 300, salt: "0011223344"},
	{name: "sha256-f1-random-salt", format: 1, blocks: 77},
	{name: "sha256-f0", alg: "sha256", format: 0, blocks: 77, salt: "ab"},
	{name: "sha512-f1", alg: "sha512", format: 1, blocks: 130, salt: strings.Repeat("5a", 64)},
	{name: "sha512-f0", alg: "sha512", format: 0, blocks: 130, salt: strings.Repeat("5a", 64)},
	// Salts.
	{name: "no-salt", format: 1, blocks: 20, salt: "-"},
	{name: "salt-256-bytes", format: 1, blocks: 20, salt: strings.Repeat("c3", 256)},
	// Block sizes, equal and not.
	{name: "bs-512", format: 1, dbs: 512, hbs: 512, blocks: 300, salt: "01"},
	{name: "bs-1024", format: 1, dbs: 1024, hbs: 1024, blocks: 300, salt: "01"},
	{name: "bs-512-4096", format: 1, dbs: 512, hbs: 4096, blocks: 300, salt: "01"},
	{name: "bs-4096-1024", format: 1, dbs: 4096, hbs: 1024, blocks: 100, salt: "01"},
	{name: "bs-1024-512-sha1-f0", alg: "sha1", format: 0, dbs: 1024, hbs: 512, blocks: 300, salt: "01"},
	{name: "bs-4096-512-sha512", alg: "sha512", format: 1, dbs: 4096, hbs: 512, blocks: 70, salt: "01"},
	// Level-fill boundaries of sha256/4096 (128 digests per block).
	{name: "blocks-1", format: 1, blocks: 1, salt: "77"},
	{name: "blocks-2", format: 1, blocks: 2, salt: "77"},
	{name: "blocks-128", format: 1, blocks: 128, salt: "77"},
	{name: "blocks-129", format: 1, blocks: 129, salt: "77"},
	{name: "partial-last-block", format: 1, blocks: 9, tail: 1000, salt: "77"},
	// Without superblock.
	{name: "nosb-sha256", format: 1, blocks: 129, salt: "1234", noSB: true},
	{name: "nosb-sha1-f0-no-salt", alg: "sha1", format: 0, dbs: 512, hbs: 1024, blocks: 300, salt: "-", noSB: true},
	{name: "nosb-sha512-1-block", alg: "sha512", format: 1, blocks: 1, salt: "99", noSB: true},
	{name: "nosb-data-blocks", format: 1, blocks: 40, tail: 4096 * 3, salt: "42", noSB: true, giveDataBlocks: true},
	// The tree inside the data file.
	{name: "in-place", format: 1, blocks: 100, salt: "10", inPlace: true, hashOffset: 4096 * 104},
	{name: "in-place-gap", alg: "sha512", format: 1, dbs: 512, hbs: 1024, blocks: 257, salt: "-", inPlace: true, hashOffset: 1024 * 131},
	{name: "in-place-unaligned-4096", format: 0, blocks: 30, salt: "10", inPlace: true, hashOffset: 4096*31 + 1536},
	{name: "in-place-nosb", format: 1, blocks: 100, salt: "10", noSB: true, inPlace: true, hashOffset: 4096 * 100},
	{name: "in-place-nosb-data-blocks", alg: "sha1", format: 1, blocks: 50, salt: "10", noSB: true, inPlace: true,
		hashOffset: 4096 * 64, giveDataBlocks: true},
	// A separate hash file with the tree past an offset.
	{name: "hash-offset", format: 1, blocks: 50, salt: "10", hashOffset: 8192},
	{name: "hash-offset-nosb", format: 1, blocks: 50, salt: "10", noSB: true, hashOffset: 8192},
}

// peerMake builds the case's image and tree with veritysetup and returns
// the paths, what veritysetup printed, and the path of the root hash file
// veritysetup wrote.
func peerMake(t *testing.T, c *peerCase, seed uint64) (data, hash string, tr vsTree, rootFile string) {
	t.Helper()
	dir := t.TempDir()
	dbs, _ := c.sizes()
	data = filepath.Join(dir, "data.img")
	hash = filepath.Join(dir, "data.img.verity")
	size := int64(c.blocks*dbs + c.tail)
	if c.inPlace {
		size = max(size, int64(c.hashOffset))
		hash = data
	}
	fronttest.Image(t, data, size, seed)
	rootFile = filepath.Join(dir, "root.hex")
	args := append([]string{data, hash, "--root-hash-file=" + rootFile}, c.treeFlags()...)
	if c.noSB {
		args = append(args, "--no-superblock")
	}
	if c.hashOffset != 0 {
		args = append(args, fmt.Sprintf("--hash-offset=%d", c.hashOffset))
	}
	if c.inPlace || c.giveDataBlocks {
		args = append(args, fmt.Sprintf("--data-blocks=%d", c.blocks))
	}
	tr = vsFormat(t, args...)
	if tr.dataBlocks != uint64(c.blocks) {
		t.Fatalf("veritysetup covered %d data blocks, want %d", tr.dataBlocks, c.blocks)
	}
	return data, hash, tr, rootFile
}

// peerCheckArgs are veritycheck's flags for the case, root hash excluded.
func peerCheckArgs(c *peerCase, salt string) []string {
	var args []string
	if c.noSB {
		args = append(args, "--no-superblock")
		for _, f := range c.treeFlags() {
			if !strings.HasPrefix(f, "--salt=") {
				args = append(args, f)
			}
		}
		args = append(args, "--salt="+salt)
		if c.giveDataBlocks {
			args = append(args, fmt.Sprintf("--data-blocks=%d", c.blocks))
		}
	}
	if c.hashOffset != 0 {
		args = append(args, fmt.Sprintf("--hash-offset=%d", c.hashOffset))
	}
	return args
}

func TestPeerVeritysetupTreesVerify(t *testing.T) {
	vsPath(t)
	for i := range peerCases {
		c := &peerCases[i]
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data, hash, tr, rootFile := peerMake(t, c, uint64(100+i))
			dbs, _ := c.sizes()
			want := fmt.Sprintf("verified: %d data blocks of %d bytes and %d hash blocks match root hash %s\n",
				c.blocks, dbs, tr.hashBlocks, tr.root)

			if got := strings.TrimSpace(string(fronttest.Read(t, rootFile))); got != tr.root {
				t.Fatalf("veritysetup's root hash file holds %q, its output says %q", got, tr.root)
			}
			nl := filepath.Join(filepath.Dir(rootFile), "root-nl.hex")
			vcWrite(t, nl, []byte(tr.root+"\n"))

			base := peerCheckArgs(c, c.salt)
			for _, root := range []string{"--root-hash=" + tr.root, "--root-hash-file=" + rootFile, "--root-hash-file=" + nl} {
				args := append(append([]string{root}, base...), data, hash)
				if !c.inPlace && c.hashOffset == 0 && !c.noSB && strings.HasSuffix(root, "root.hex") {
					args = args[:len(args)-1] // HASH defaults to DATA.verity
				}
				r := vcVerified(t, args...)
				if r.stdout != want {
					t.Errorf("%v\nwant stdout %q", r, want)
				}
			}

			// --json says the same.
			r := vcRun(append(append([]string{"--json", "--root-hash=" + tr.root}, base...), data, hash)...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			j := vcDecode(t, r)
			if !j.Verified || j.RootHash != tr.root || j.DataBlocks != uint64(c.blocks) || j.HashBlocks != tr.hashBlocks ||
				len(j.Problems) != 0 || j.RootMismatch {
				t.Errorf("--json report does not say verified with veritysetup's numbers:\n%v", r)
			}

			// A root hash off by one bit is refused, exit 1.
			bad, _ := hex.DecodeString(tr.root)
			bad[len(bad)-1] ^= 1
			r = vcRun(append(append([]string{"--root-hash=" + hex.EncodeToString(bad)}, base...), data, hash)...)
			if r.code != 1 || !strings.Contains(r.stderr, "veritycheck: error: verification failed") {
				t.Errorf("wrong root hash: want exit 1 and \"verification failed\":\n%v", r)
			}
		})
	}
}

// TestPeerBLAKE2b checks trees that merkle.Build makes with blake2b-256,
// which veritysetup cannot make, with and without superblock, both
// formats, separate and in place.
func TestPeerBLAKE2b(t *testing.T) {
	alg, err := hashes.Lookup("blake2b-256")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		format     int
		dbs, hbs   int
		blocks     uint64
		salt       []byte
		sb         bool
		inPlace    bool
		hashOffset uint64
	}{
		{"f1-sb", 1, 4096, 4096, 129, []byte{1, 2, 3}, true, false, 0},
		{"f0-sb", 0, 4096, 4096, 129, []byte{1, 2, 3}, true, false, 0},
		{"f1-nosb-no-salt", 1, 1024, 512, 300, nil, false, false, 0},
		{"f0-nosb", 0, 512, 4096, 300, []byte{0xee}, false, false, 0},
		{"f1-sb-in-place", 1, 4096, 4096, 20, []byte{9}, true, true, 4096*20 + 512},
		{"f1-1-block", 1, 4096, 4096, 1, []byte{9}, true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := filepath.Join(dir, "data.img")
			hash := filepath.Join(dir, "tree.bin")
			fronttest.Image(t, data, int64(tc.blocks)*int64(tc.dbs), tc.blocks)
			if tc.inPlace {
				hash = data
			}
			g, err := merkle.NewGeometry(merkle.Params{Hash: alg, LegacyFormat: tc.format == 0, Salt: tc.salt, DataBlockSize: tc.dbs,
				HashBlockSize: tc.hbs, DataBlocks: tc.blocks, HashOffset: tc.hashOffset, Superblock: tc.sb,
				UUID: [16]byte{1, 2, 3, 4}})
			if err != nil {
				t.Fatal(err)
			}
			df, err := os.Open(data)
			if err != nil {
				t.Fatal(err)
			}
			defer df.Close()
			hf, err := os.OpenFile(hash, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			root, err := merkle.Build(context.Background(), g, df, hf, nil)
			if cerr := hf.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"--root-hash=" + hex.EncodeToString(root)}
			if !tc.sb {
				salt := "-"
				if len(tc.salt) > 0 {
					salt = hex.EncodeToString(tc.salt)
				}
				args = append(args, "--no-superblock", "--hash=blake2b-256", fmt.Sprintf("--format=%d", tc.format),
					fmt.Sprintf("--data-block-size=%d", tc.dbs), fmt.Sprintf("--hash-block-size=%d", tc.hbs), "--salt="+salt)
			}
			if tc.hashOffset != 0 {
				args = append(args, fmt.Sprintf("--hash-offset=%d", tc.hashOffset))
			}
			r := vcVerified(t, append(args, data, hash)...)
			want := fmt.Sprintf("verified: %d data blocks of %d bytes and %d hash blocks match root hash %x\n",
				tc.blocks, tc.dbs, g.HashBlocks, root)
			if r.stdout != want {
				t.Errorf("%v\nwant stdout %q", r, want)
			}
			// One flipped data bit is found.
			vcXorByte(t, data, int64(tc.blocks-1)*int64(tc.dbs)+5, 0x10)
			r = vcRun(append([]string{"--json"}, append(args, data, hash)...)...)
			j := vcDecode(t, r)
			if r.code != 1 || j.CorruptDataBlocks != 1 || len(j.Problems) != 1 || j.Problems[0].Index != tc.blocks-1 {
				t.Errorf("want exit 1 and data block %d corrupted:\n%v", tc.blocks-1, r)
			}
		})
	}
}

// TestPeerVerifyAgrees checks that veritysetup verify and veritycheck give
// the same verdict on intact images and on corrupted ones.
func TestPeerVerifyAgrees(t *testing.T) {
	vsPath(t)
	for _, name := range []string{"sha256-f0", "bs-1024-512-sha1-f0", "in-place-gap", "nosb-sha256", "hash-offset"} {
		var c *peerCase
		for i := range peerCases {
			if peerCases[i].name == name {
				c = &peerCases[i]
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, hash, tr, _ := peerMake(t, c, 7)
			dbs, hbs := c.sizes()
			// With a superblock, veritysetup verify reads the parameters
			// from it; without, they are given again.
			vsArgs := []string{"verify", data, hash, tr.root}
			if c.noSB {
				vsArgs = append(append(vsArgs, c.treeFlags()...), "--no-superblock")
				if c.inPlace || c.giveDataBlocks {
					vsArgs = append(vsArgs, fmt.Sprintf("--data-blocks=%d", c.blocks))
				}
			}
			if c.hashOffset != 0 {
				vsArgs = append(vsArgs, fmt.Sprintf("--hash-offset=%d", c.hashOffset))
			}
			vcArgs := append(append([]string{"--root-hash=" + tr.root}, peerCheckArgs(c, c.salt)...), data, hash)

			agree := func(what string, wantOK bool) {
				t.Helper()
				code, out, errOut := vsRun(t, vsArgs...)
				r := vcRun(vcArgs...)
				if (code == 0) != wantOK {
					t.Errorf("%s: veritysetup %s: exit %d\n%s%s", what, strings.Join(vsArgs, " "), code, out, errOut)
				}
				wantCode := 1
				if wantOK {
					wantCode = 0
				}
				if r.code != wantCode {
					t.Errorf("%s: want veritycheck exit %d:\n%v", what, wantCode, r)
				}
			}
			agree("intact", true)

			g := peerGeometry(t, c, hash)
			// A data byte in the middle, then a digest byte of level 0.
			off := int64(c.blocks/2)*int64(dbs) + 17
			vcXorByte(t, data, off, 0x80)
			agree("data byte changed", false)
			vcXorByte(t, data, off, 0x80)
			agree("data byte restored", true)
			if g.Levels > 0 {
				hoff := int64(g.BlockOffset(0, 0)) + 3
				vcXorByte(t, hash, hoff, 0x01)
				agree("hash byte changed", false)
				vcXorByte(t, hash, hoff, 0x01)
				agree("hash byte restored", true)
				// veritysetup checks the zero padding of hash blocks too.
				last := g.LevelBlocks[0] - 1
				used := g.DataBlocks - last*uint64(g.HashesPerBlock)
				if pad := used * uint64(g.DigestSlot); pad < uint64(hbs) {
					poff := int64(g.BlockOffset(0, last) + pad)
					vcXorByte(t, hash, poff, 0x20)
					agree("hash padding changed", false)
					vcXorByte(t, hash, poff, 0x20)
				}
			}
			agree("all restored", true)
		})
	}
}

// peerGeometry returns the geometry of the case's tree, from its
// parameters (and veritysetup's superblock, for the salt it chose).
func peerGeometry(t *testing.T, c *peerCase, hash string) *merkle.Geometry {
	t.Helper()
	dbs, hbs := c.sizes()
	name := c.alg
	if name == "" {
		name = "sha256"
	}
	alg, err := hashes.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	p := merkle.Params{Hash: alg, LegacyFormat: c.format == 0, DataBlockSize: dbs, HashBlockSize: hbs, DataBlocks: uint64(c.blocks),
		HashOffset: c.hashOffset, Superblock: !c.noSB}
	if c.salt != "" && c.salt != "-" {
		p.Salt, _ = hex.DecodeString(c.salt)
	}
	if !c.noSB {
		b := fronttest.Read(t, hash)
		sb, err := merkle.ParseSuperblock(b[c.hashOffset:])
		if err != nil {
			t.Fatalf("veritysetup's superblock: %v", err)
		}
		if c.salt == "" {
			p.Salt = sb.Salt
		}
		p.UUID = sb.UUID
		if sb.Hash != p.Hash || sb.Format() != p.Format() || sb.DataBlocks != p.DataBlocks ||
			sb.DataBlockSize != dbs || sb.HashBlockSize != hbs || string(sb.Salt) != string(p.Salt) {
			t.Fatalf("veritysetup's superblock %+v does not hold the parameters given, %+v", sb, p)
		}
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPeerDump compares --dump with veritysetup dump, byte for byte.
func TestPeerDump(t *testing.T) {
	vsPath(t)
	for _, name := range []string{"sha256-f1-random-salt", "sha1-f0", "no-salt", "salt-256-bytes", "bs-1024-512-sha1-f0",
		"bs-4096-512-sha512", "blocks-1", "in-place", "in-place-gap", "in-place-unaligned-4096", "hash-offset"} {
		var c *peerCase
		for i := range peerCases {
			if peerCases[i].name == name {
				c = &peerCases[i]
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, hash, tr, _ := peerMake(t, c, 3)
			args := []string{"dump"}
			if c.hashOffset != 0 {
				args = append(args, fmt.Sprintf("--hash-offset=%d", c.hashOffset))
			}
			args = append(args, hash)
			code, want, errOut := vsRun(t, args...)
			if code != 0 {
				t.Fatalf("veritysetup %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			vcArgs := append([]string{"--dump"}, args[1:]...)
			r := vcRun(vcArgs...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("%v", r)
			}
			if r.stdout != want {
				t.Errorf("veritycheck %s differs from veritysetup's dump:\n--- veritycheck\n%s--- veritysetup\n%s",
					strings.Join(vcArgs, " "), r.stdout, want)
			}

			// --json has the same parameters, and the places.
			r = vcRun(append([]string{"--dump", "--json"}, args[1:]...)...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
				t.Fatalf("--dump --json: %v\n%v", err, r)
			}
			g := peerGeometry(t, c, hash)
			wantJSON := map[string]any{
				"hash_algorithm": g.Hash.Name(), "format": float64(c.format), "salt": peerHexOrDash(g.Salt),
				"data_blocks": float64(c.blocks), "data_block_size": float64(g.DataBlockSize),
				"hash_blocks": float64(tr.hashBlocks), "hash_block_size": float64(g.HashBlockSize),
				"hash_offset": float64(c.hashOffset), "hash_start_block": float64(g.HashStartBlock),
				"hash_end": float64(g.HashEnd()), "superblock": true, "uuid": peerUUID(g.UUID), "hash_file": hash,
			}
			for k, v := range wantJSON {
				if m[k] != v {
					t.Errorf("--dump --json: %s is %v, want %v", k, m[k], v)
				}
			}
			if _, ok := m["data_file"]; ok {
				t.Errorf("--dump --json has a data_file: %v", m["data_file"])
			}
			if len(m) != len(wantJSON) {
				t.Errorf("--dump --json has %d fields, want %d:\n%s", len(m), len(wantJSON), r.stdout)
			}
			if !strings.Contains(want, "UUID:            \t"+peerUUID(g.UUID)+"\n") {
				t.Errorf("veritysetup dump does not show the UUID %s:\n%s", peerUUID(g.UUID), want)
			}
		})
	}
}

func peerHexOrDash(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func peerUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
