package kernel

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/testtool"
)

//go:embed init.sh
var initScript []byte

// kcase is one tree the kernel must open.
type kcase struct {
	name string
	alg  string // default sha256
	// tableAlg is the algorithm's kernel name, which the table gives, when
	// alg is another of veritysetup's names for it (the superblock keeps
	// alg).
	tableAlg   string
	format     int
	dbs, hbs   int    // default 4096
	blocks     int    // data blocks in the image
	tail       int    // bytes past the last whole block (not covered)
	dataBlocks int    // --data-blocks, fewer than the image has (0: all)
	salt       string // hex, "-" for none, "" for veritygen's random salt
	noSB       bool
	inPlace    bool // HASH is DATA; the tree goes at hashOffset
	hashGap    int  // inPlace: hashOffset = image size + hashGap
	zeroEvery  int  // every n-th data block is all zero (0: none)
	opts       []string
	// Reed-Solomon error correction (veritygen --fec-*): where the parity
	// goes: "" none; "file": a file of its own (a partition of its own),
	// fecGap bytes in; "hash": the hash file (the image itself when
	// inPlace), fecGap bytes past the tree; "data": the image, fecGap bytes
	// past the data, the tree being in a file of its own. fecRoots: parity
	// bytes per codeword (default 2).
	fec      string
	fecRoots int
	fecGap   int
	// What to spoil, in a copy of the images; the read must then fail,
	// unless error correction repairs it: then the kernel must read back
	// the original bytes.
	//   "data": a byte of data block flipBlock; "data-bytes": 16 bytes of
	//   it; "data-block": all of it (random bytes);
	//   "hash": a byte of the last hash block; "hash-block": all of it;
	//   "root": the table's root hash;
	//   "beyond" (with fec): fecRoots+1 whole data blocks of one FEC round
	//   (flipBlock, flipBlock+rounds, ...), more than the code can repair.
	corrupt   string
	flipBlock int // data block to spoil (default: the middle one)
	// readsOK: the read must succeed although something is spoiled
	// (a flipped zero block under ignore_zero_blocks reads as zeros).
	readsOK bool
}

// FEC cases come first: the kernel's "corrected" messages are rate-limited
// (10 in 5 s for the message, whatever the device), and these are the only
// cases that make them. Layouts: parity in a file of its own, in the hash
// file past the tree, in the image with the tree, in the image past the
// data; roots 2, 4, 8 and 24.
var fecCases = []kcase{
	{name: "fec-file-sha256-r2", fec: "file", format: 1, blocks: 512},
	{name: "fec-file-sha256-r2-data-block", fec: "file", format: 1, blocks: 512, corrupt: "data-block"},
	{name: "fec-file-sha256-r2-hash-block", fec: "file", format: 1, blocks: 512, corrupt: "hash-block"},
	{name: "fec-file-at-8192-sha256-r8", fec: "file", fecRoots: 8, fecGap: 8192, format: 1, blocks: 300, corrupt: "data-bytes", flipBlock: 7},
	{name: "fec-hash-blake2b-256-r8", fec: "hash", fecRoots: 8, fecGap: 8192, alg: "blake2b-256", format: 0, blocks: 256, noSB: true},
	{name: "fec-hash-blake2b-256-r8-data-bytes", fec: "hash", fecRoots: 8, fecGap: 8192, alg: "blake2b-256", format: 0, blocks: 256, noSB: true, corrupt: "data-bytes"},
	{name: "fec-hash-blake2b-256-r8-hash", fec: "hash", fecRoots: 8, alg: "blake2b-256", format: 0, blocks: 256, noSB: true, corrupt: "hash"},
	{name: "fec-inplace-sha512-r24", fec: "hash", fecRoots: 24, inPlace: true, alg: "sha512", format: 1, blocks: 256},
	{name: "fec-inplace-sha512-r24-data-block", fec: "hash", fecRoots: 24, inPlace: true, alg: "sha512", format: 1, blocks: 256, corrupt: "data-block", flipBlock: 255},
	{name: "fec-inplace-sha512-r24-hash-block", fec: "hash", fecRoots: 24, fecGap: 4096, inPlace: true, alg: "sha512", format: 1, blocks: 256, corrupt: "hash-block"},
	{name: "fec-indata-sha1-r4-data-block", fec: "data", fecRoots: 4, fecGap: 4096, alg: "sha1", format: 1, blocks: 400, corrupt: "data-block", flipBlock: 1},
	// Beyond what the code repairs: the read fails as without FEC.
	{name: "fec-file-sha256-r2-beyond", fec: "file", format: 1, blocks: 512, corrupt: "beyond"},
	{name: "fec-hash-blake2b-256-r8-beyond", fec: "hash", fecRoots: 8, alg: "blake2b-256", format: 0, blocks: 256, noSB: true, corrupt: "beyond", flipBlock: 100},
	{name: "fec-inplace-sha512-r24-beyond", fec: "hash", fecRoots: 24, inPlace: true, alg: "sha512", format: 1, blocks: 256, corrupt: "beyond"},
}

var kcases = append(fecCases, []kcase{
	// Algorithms and formats: superblock, random salt, separate hash file.
	{name: "sha1-f1", alg: "sha1", format: 1, blocks: 512},
	{name: "sha1-f0", alg: "sha1", format: 0, blocks: 512},
	{name: "sha256-f1", alg: "sha256", format: 1, blocks: 512},
	{name: "sha256-f0", alg: "sha256", format: 0, blocks: 512},
	{name: "sha512-f1", alg: "sha512", format: 1, blocks: 512},
	{name: "sha512-f0", alg: "sha512", format: 0, blocks: 512},
	{name: "blake2b-256-f1", alg: "blake2b-256", format: 1, blocks: 512},
	{name: "blake2b-256-f0", alg: "blake2b-256", format: 0, blocks: 512},
	// The other algorithms this kernel has (Debian's 6.1 has no
	// blake2s-256: see cryptoAlgs), small: they share the boot.
	{name: "sha224-f1", alg: "sha224", format: 1, blocks: 64},
	{name: "sha384-f0-nosb", alg: "sha384", format: 0, blocks: 64, noSB: true},
	{name: "sha3-224-f0", alg: "sha3-224", format: 0, blocks: 64},
	{name: "sha3-256-f1-nosb", alg: "sha3-256", format: 1, blocks: 64, noSB: true},
	{name: "sha3-384-f1-1024-512", alg: "sha3-384", format: 1, dbs: 1024, hbs: 512, blocks: 100},
	{name: "sha3-512-f0-512", alg: "sha3-512", format: 0, dbs: 512, hbs: 512, blocks: 65},
	{name: "blake2b-160-f1", alg: "blake2b-160", format: 1, blocks: 64},
	{name: "blake2b-384-f0", alg: "blake2b-384", format: 0, blocks: 64},
	{name: "blake2b-512-f1-no-salt", alg: "blake2b-512", format: 1, blocks: 64, salt: "-"},
	{name: "md5-f1", alg: "md5", format: 1, blocks: 64},
	{name: "md4-f0-nosb", alg: "md4", format: 0, blocks: 64, noSB: true},
	{name: "rmd160-f1", alg: "rmd160", format: 1, blocks: 64},
	{name: "ripemd160-spelling", alg: "ripemd160", tableAlg: "rmd160", format: 1, blocks: 64},
	// No superblock: the tree starts at block 0 of the hash file.
	{name: "nosb-sha1-f0", alg: "sha1", format: 0, blocks: 200, noSB: true},
	{name: "nosb-sha256-f1", alg: "sha256", format: 1, blocks: 200, noSB: true},
	{name: "nosb-sha512-f1", alg: "sha512", format: 1, blocks: 200, noSB: true},
	{name: "nosb-blake2b-256-f0", alg: "blake2b-256", format: 0, blocks: 200, noSB: true},
	// The tree inside the image, past the data (HASH=DATA, --hash-offset).
	{name: "inplace-sb-sha256", format: 1, blocks: 200, inPlace: true},
	{name: "inplace-nosb-blake2b-256", alg: "blake2b-256", format: 1, blocks: 200, inPlace: true, noSB: true, hashGap: 8192},
	{name: "inplace-sb-unaligned-sha512", alg: "sha512", format: 0, blocks: 200, inPlace: true, hashGap: 1536},
	{name: "inplace-sb-1024-512-sha1", alg: "sha1", format: 1, dbs: 1024, hbs: 512, blocks: 700, inPlace: true, hashGap: 3072},
	// Block sizes, equal and not.
	{name: "bs-512-512", format: 1, dbs: 512, hbs: 512, blocks: 1000},
	{name: "bs-512-4096", format: 1, dbs: 512, hbs: 4096, blocks: 1000},
	{name: "bs-1024-1024", format: 1, dbs: 1024, hbs: 1024, blocks: 1000},
	{name: "bs-2048-512-sha512-f0", alg: "sha512", format: 0, dbs: 2048, hbs: 512, blocks: 300},
	{name: "bs-4096-1024", format: 1, dbs: 4096, hbs: 1024, blocks: 300},
	{name: "bs-4096-512-sha1-f0", alg: "sha1", format: 0, dbs: 4096, hbs: 512, blocks: 300},
	{name: "bs-1024-2048-blake2b-256", alg: "blake2b-256", format: 1, dbs: 1024, hbs: 2048, blocks: 500, noSB: true},
	// Salts.
	{name: "salt-none", format: 1, blocks: 100, salt: "-"},
	{name: "salt-none-f0", format: 0, blocks: 100, salt: "-", alg: "sha1"},
	{name: "salt-256-bytes", format: 1, blocks: 100, salt: strings.Repeat("c3", 256)},
	{name: "salt-7-bytes-f0", format: 0, blocks: 100, salt: "00112233445566", alg: "sha512"},
	// Level-fill boundaries: sha256 in 512-byte hash blocks has 16 digests
	// a block.
	{name: "levels-1-block", format: 1, dbs: 512, hbs: 512, blocks: 1},
	{name: "levels-2-blocks", format: 1, dbs: 512, hbs: 512, blocks: 2},
	{name: "levels-16-blocks", format: 1, dbs: 512, hbs: 512, blocks: 16},
	{name: "levels-17-blocks", format: 1, dbs: 512, hbs: 512, blocks: 17},
	{name: "levels-256-blocks", format: 1, dbs: 512, hbs: 512, blocks: 256},
	{name: "levels-257-blocks", format: 0, dbs: 512, hbs: 512, blocks: 257},
	{name: "levels-4097-blocks", format: 1, dbs: 512, hbs: 512, blocks: 4097, noSB: true},
	{name: "levels-129-blocks-4096", format: 1, blocks: 129},
	// Part of the image: a tail past the last whole block, --data-blocks.
	{name: "tail-uncovered", format: 1, blocks: 100, tail: 1536},
	{name: "data-blocks-300-of-400", format: 1, blocks: 400, dataBlocks: 300},
	// Optional table arguments.
	{name: "opt-ignore_zero_blocks", format: 1, blocks: 300, zeroEvery: 3, opts: []string{"ignore_zero_blocks"}},
	{name: "opt-check_at_most_once", format: 1, blocks: 300, opts: []string{"check_at_most_once"}},
	{name: "opt-both", alg: "blake2b-256", format: 0, blocks: 300, zeroEvery: 2, opts: []string{"ignore_zero_blocks", "check_at_most_once"}},

	// Spoiled copies: the read must fail with an I/O error.
	{name: "corrupt-data-sha1-f0", alg: "sha1", format: 0, blocks: 256, corrupt: "data"},
	{name: "corrupt-data-sha256-f1", alg: "sha256", format: 1, blocks: 256, corrupt: "data"},
	{name: "corrupt-data-sha512-f0", alg: "sha512", format: 0, blocks: 256, corrupt: "data"},
	{name: "corrupt-data-blake2b-256-f1", alg: "blake2b-256", format: 1, blocks: 256, corrupt: "data"},
	{name: "corrupt-hash-sha1-f1", alg: "sha1", format: 1, blocks: 256, corrupt: "hash"},
	{name: "corrupt-hash-sha256-f0", alg: "sha256", format: 0, blocks: 256, corrupt: "hash"},
	{name: "corrupt-hash-sha512-f1", alg: "sha512", format: 1, blocks: 256, corrupt: "hash"},
	{name: "corrupt-hash-blake2b-256-f0", alg: "blake2b-256", format: 0, blocks: 256, corrupt: "hash"},
	{name: "corrupt-data-sha3-256-f0", alg: "sha3-256", format: 0, blocks: 64, corrupt: "data"},
	{name: "corrupt-hash-rmd160-f1", alg: "rmd160", format: 1, blocks: 256, corrupt: "hash"},
	{name: "corrupt-data-nosb", format: 1, blocks: 256, noSB: true, corrupt: "data"},
	{name: "corrupt-hash-nosb", format: 1, blocks: 256, noSB: true, corrupt: "hash"},
	{name: "corrupt-data-inplace", format: 1, blocks: 256, inPlace: true, corrupt: "data"},
	{name: "corrupt-hash-inplace-unaligned", format: 1, blocks: 256, inPlace: true, hashGap: 1536, corrupt: "hash"},
	{name: "corrupt-data-bs-512-4096", format: 1, dbs: 512, hbs: 4096, blocks: 1000, corrupt: "data"},
	{name: "corrupt-hash-bs-4096-512", format: 1, dbs: 4096, hbs: 512, blocks: 300, corrupt: "hash"},
	{name: "corrupt-data-last-block-512", format: 1, dbs: 512, hbs: 512, blocks: 257, corrupt: "data", flipBlock: 256},
	{name: "corrupt-root", format: 1, blocks: 64, corrupt: "root"},
	{name: "corrupt-data-check_at_most_once", format: 1, blocks: 256, opts: []string{"check_at_most_once"}, corrupt: "data"},
	{name: "corrupt-data-ignore_zero_blocks", format: 1, blocks: 256, zeroEvery: 3, opts: []string{"ignore_zero_blocks"}, corrupt: "data", flipBlock: 100},
	// A flipped byte in a block the tree says is zero is not even read:
	// ignore_zero_blocks returns zeros, so the image reads back intact.
	{name: "ignore_zero_blocks-hides-flip-in-zero-block", format: 1, blocks: 256, zeroEvery: 3, opts: []string{"ignore_zero_blocks"}, corrupt: "data", flipBlock: 99, readsOK: true},
}...)

// veritygenJSON is the part of `veritygen --json` the table is made of.
type veritygenJSON struct {
	RootHash       string `json:"root_hash"`
	Salt           string `json:"salt"`
	HashAlgorithm  string `json:"hash_algorithm"`
	Format         int    `json:"format"`
	DataBlocks     uint64 `json:"data_blocks"`
	DataBlockSize  uint64 `json:"data_block_size"`
	HashBlockSize  uint64 `json:"hash_block_size"`
	HashOffset     uint64 `json:"hash_offset"`
	HashStartBlock uint64 `json:"hash_start_block"`
	HashEnd        uint64 `json:"hash_end"`
	Superblock     bool   `json:"superblock"`
	FECRoots       int    `json:"fec_roots"`
	FECBlocks      uint64 `json:"fec_blocks"` // the table's fec_blocks
	FECOffset      uint64 `json:"fec_offset"`
	FECStart       uint64 `json:"fec_start"` // the table's fec_start
	FECSize        uint64 `json:"fec_size"`
	// The kernel table veritygen prints for the device names it was given
	// (--data-device, --hash-device, --fec-device-name): the target's
	// arguments, without "0 SECTORS verity", and the target's length.
	Table        string `json:"table"`
	TableSectors uint64 `json:"table_sectors"`
	DMModCreate  string `json:"dm_mod_create"`
	AndroidDM    string `json:"android_dm"`
}

// prepared is a case with its images on disk and what the kernel must show.
type prepared struct {
	kcase
	vg       veritygenJSON
	dataPart int // partition numbers on the guest's disk
	hashPart int
	fecPart  int
	table    string // veritygen's table: the line after "0 SECTORS verity"
	sectors  uint64 // veritygen's table_sectors
	wantSHA  string // SHA-256 of the covered data
	wantSize uint64
	flipped  int   // the data block spoiled
	spoiled  []int // "beyond": the data blocks spoiled
	logged   int   // kernel log lines about the corruption
	// With FEC: its rounds, the block spoiled as a block of the FEC message
	// (data blocks, then the hash device's from hash_start_block on), and
	// how many of its bytes now differ: what the kernel must correct.
	rounds   uint64
	fixBlock uint64
	fixBytes int
}

func buildVeritygen(t *testing.T) string {
	t.Helper()
	return testtool.BuildCommand(t, t.TempDir(), "./cmd/veritygen")
}

// randomImage returns blocks*dbs+tail bytes, random but the same each run;
// with zeroEvery, every zeroEvery-th block is all zero.
func randomImage(name string, c kcase, dbs int) []byte {
	seed := sha256.Sum256([]byte(name))
	b := make([]byte, c.blocks*dbs+c.tail)
	rand.NewChaCha8(seed).Read(b)
	if c.zeroEvery > 0 {
		for i := 0; i < c.blocks; i += c.zeroEvery {
			clear(b[i*dbs : (i+1)*dbs])
		}
	}
	return b
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("reading %s at %d: %v", path, off, err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// overwrite replaces n bytes of the file at off with random bytes (the same
// each run for the same seed) and returns how many bytes now differ.
func overwrite(t *testing.T, path string, off int64, n int, seed string) int {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := make([]byte, n)
	if _, err := f.ReadAt(old, off); err != nil {
		t.Fatalf("reading %s at %d: %v", path, off, err)
	}
	b := make([]byte, n)
	rand.NewChaCha8(sha256.Sum256([]byte(seed))).Read(b)
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	diff := 0
	for i := range b {
		if b[i] != old[i] {
			diff++
		}
	}
	return diff
}

// runVeritygen runs veritygen with args and returns its --json report.
func runVeritygen(t *testing.T, veritygen, name string, args []string) veritygenJSON {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), veritygen, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: veritygen %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	var vg veritygenJSON
	if err := json.Unmarshal(out, &vg); err != nil {
		t.Fatalf("%s: veritygen --json: %v\n%s", name, err, out)
	}
	return vg
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// prepare writes the case's images, builds the tree (and the error
// correction) with veritygen, naming the partitions the guest will see
// (/dev/vdaN) with --data-device, --hash-device and --fec-device-name, and
// the case's table options with their flags, spoils what the case says,
// and takes the table from veritygen's --json report (`table`,
// `table_sectors`), checked against the one the harness makes itself from
// the report's other fields. The images (one, data and hash, or data, hash
// and FEC) are appended to parts.
func prepare(t *testing.T, veritygen, dir string, c kcase, index int, parts *[]partition) *prepared {
	t.Helper()
	c = c.withDefaults()
	p := &prepared{kcase: c}
	img := randomImage(c.name, c, c.dbs)
	covered := c.covered()
	sum := sha256.Sum256(img[:covered*c.dbs])
	p.wantSHA = hex.EncodeToString(sum[:])
	p.wantSize = uint64(covered * c.dbs)

	data := filepath.Join(dir, fmt.Sprintf("%02d-data.img", index))
	hash := filepath.Join(dir, fmt.Sprintf("%02d-hash.img", index))
	if err := os.WriteFile(data, img, 0o644); err != nil {
		t.Fatal(err)
	}
	p.placePartitions(len(*parts))
	args := p.veritygenArgs()
	if c.inPlace {
		hash = data
		args = append(args, "--hash-offset="+strconv.Itoa(len(img)+c.hashGap))
	}
	fecPath, fecOffset := p.placeFEC(t, veritygen, args, data, hash, filepath.Join(dir, fmt.Sprintf("%02d-fec.img", index)), len(img))
	if c.fec != "" {
		args = append(args, "--fec-device="+fecPath, "--fec-offset="+strconv.Itoa(fecOffset), "--fec-roots="+strconv.Itoa(c.fecRoots))
	}
	args = append(args, data, hash)
	p.vg = runVeritygen(t, veritygen, c.name, args)
	p.checkReport(t, hash, covered, fecOffset)
	padToSectors(t, data, hash, fecPath)
	p.spoil(t, data, hash, covered)

	*parts = append(*parts, partition{name: c.name, path: data})
	if !c.inPlace {
		*parts = append(*parts, partition{name: c.name + " hash", path: hash})
	}
	if c.fec == "file" {
		*parts = append(*parts, partition{name: c.name + " fec", path: fecPath})
	}
	if n := len(*parts); n != max(p.dataPart, p.hashPart, p.fecPart) {
		t.Fatalf("%s: %d partitions, but the table names partitions %d, %d, %d", c.name, n, p.dataPart, p.hashPart, p.fecPart)
	}
	p.takeTable(t)
	return p
}

// withDefaults fills in the fields whose zero value stands for a default.
func (c kcase) withDefaults() kcase {
	c.alg = cmp.Or(c.alg, "sha256")
	c.dbs = cmp.Or(c.dbs, 4096)
	c.hbs = cmp.Or(c.hbs, 4096)
	if c.fec != "" {
		c.fecRoots = cmp.Or(c.fecRoots, 2)
	}
	return c
}

// covered is the number of data blocks the tree covers.
func (c kcase) covered() int { return cmp.Or(c.dataBlocks, c.blocks) }

// placePartitions numbers the partitions the images will be on, in the
// order prepare appends them past the first n: data, hash (unless in the
// image), FEC (in a file of its own).
func (p *prepared) placePartitions(n int) {
	p.dataPart = n + 1
	p.hashPart = p.dataPart
	if !p.inPlace {
		p.hashPart = p.dataPart + 1
	}
	switch p.fec {
	case "file":
		p.fecPart = p.hashPart + 1
	case "hash":
		p.fecPart = p.hashPart
	case "data":
		p.fecPart = p.dataPart
	}
}

// veritygenArgs are veritygen's options for the case's tree, its table
// options and the guest's device names (not --hash-offset, FEC's place,
// DATA or HASH).
func (p *prepared) veritygenArgs() []string {
	c := p.kcase
	args := []string{"--json", "--no-progress", "--hash=" + c.alg, "--format=" + strconv.Itoa(c.format),
		"--data-block-size=" + strconv.Itoa(c.dbs), "--hash-block-size=" + strconv.Itoa(c.hbs)}
	salt := c.salt
	if salt == "" && c.noSB {
		// veritygen refuses a random salt for a tree without superblock
		// when its report goes to a pipe, where the salt may be lost: a
		// script gives one.
		salt = fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
	}
	if salt != "" {
		args = append(args, "--salt="+salt)
	}
	if c.noSB {
		args = append(args, "--no-superblock")
	}
	if c.dataBlocks > 0 {
		args = append(args, "--data-blocks="+strconv.Itoa(c.dataBlocks))
	}
	args = append(args, "--data-device="+vda(p.dataPart), "--hash-device="+vda(p.hashPart))
	if c.fec == "file" {
		args = append(args, "--fec-device-name="+vda(p.fecPart))
	}
	for _, o := range c.opts { // ignore_zero_blocks: --ignore-zero-blocks
		args = append(args, "--"+strings.ReplaceAll(o, "_", "-"))
	}
	return args
}

// placeFEC returns the file and offset the case's parity goes to (none:
// ""): fecFile for a file of its own; the hash file past the tree, which a
// first run of veritygen with args measures; the image past its imgSize
// bytes of data.
func (p *prepared) placeFEC(t *testing.T, veritygen string, args []string, data, hash, fecFile string, imgSize int) (string, int) {
	t.Helper()
	switch p.fec {
	case "":
		return "", 0
	case "file":
		return fecFile, p.fecGap
	case "hash":
		first := runVeritygen(t, veritygen, p.name, append(slices.Clone(args), data, hash))
		return hash, roundUp(int(first.HashEnd), p.hbs) + p.fecGap
	case "data":
		return data, roundUp(imgSize, p.dbs) + p.fecGap
	}
	t.Fatalf("%s: fec %q", p.name, p.fec)
	return "", 0
}

// checkReport checks that veritygen's --json report says what was asked
// (covered data blocks, the parity at fecOffset), and that the superblock
// in hash names the algorithm as it was given; it counts the FEC rounds.
func (p *prepared) checkReport(t *testing.T, hash string, covered, fecOffset int) {
	t.Helper()
	c, vg := p.kcase, p.vg
	if vg.DataBlocks != uint64(covered) || vg.DataBlockSize != uint64(c.dbs) || vg.HashBlockSize != uint64(c.hbs) ||
		vg.HashAlgorithm != cmp.Or(c.tableAlg, c.alg) || vg.Format != c.format || vg.Superblock == c.noSB {
		t.Fatalf("%s: veritygen --json does not report what was asked: %+v", c.name, vg)
	}
	if c.tableAlg != "" && !c.noSB {
		b, err := os.ReadFile(hash)
		if err != nil {
			t.Fatal(err)
		}
		if name := string(bytes.TrimRight(b[vg.HashOffset+32:vg.HashOffset+64], "\x00")); name != c.alg {
			t.Fatalf("%s: the superblock names %q, want %q", c.name, name, c.alg)
		}
	}
	if c.fec == "" {
		return
	}
	bs := uint64(c.dbs)
	if vg.FECRoots != c.fecRoots || vg.FECOffset != uint64(fecOffset) || vg.FECStart*bs != vg.FECOffset ||
		vg.FECBlocks < vg.DataBlocks+(vg.HashEnd/bs-vg.HashStartBlock) || vg.FECSize == 0 {
		t.Fatalf("%s: veritygen --json does not report the error correction asked for (roots %d at %d): %+v",
			c.name, c.fecRoots, fecOffset, vg)
	}
	p.rounds = (vg.FECBlocks + uint64(255-c.fecRoots) - 1) / uint64(255-c.fecRoots)
}

// padToSectors extends the files (those named) to whole 512-byte sectors,
// as the virtio disk needs.
func padToSectors(t *testing.T, files ...string) {
	t.Helper()
	for _, f := range files {
		if f == "" {
			continue
		}
		if st, err := os.Stat(f); err != nil || st.Size()%512 != 0 {
			if err == nil {
				err = os.Truncate(f, (st.Size()+511)/512*512)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// spoil spoils in data or hash what the case says (the root hash: see
// takeTable), noting which block the kernel must blame or repair and how
// many bytes differ.
func (p *prepared) spoil(t *testing.T, data, hash string, covered int) {
	t.Helper()
	c, vg := p.kcase, p.vg
	blk := cmp.Or(c.flipBlock, covered/2)
	lastHash := int64(vg.HashEnd - vg.HashBlockSize)
	if strings.HasPrefix(c.corrupt, "hash") && vg.HashEnd < vg.HashStartBlock*vg.HashBlockSize+vg.HashBlockSize {
		t.Fatalf("%s: no hash block to spoil: %+v", c.name, vg)
	}
	seed := c.name + " spoiled"
	switch c.corrupt {
	case "data":
		flipByte(t, data, int64(blk*c.dbs+c.dbs/3))
		p.flipped, p.fixBytes = blk, 1
	case "data-bytes":
		for i := range 16 {
			flipByte(t, data, int64(blk*c.dbs+i*c.dbs/16+5))
		}
		p.flipped, p.fixBytes = blk, 16
	case "data-block":
		p.flipped, p.fixBytes = blk, overwrite(t, data, int64(blk*c.dbs), c.dbs, seed)
	case "hash":
		flipByte(t, hash, lastHash+7)
		p.fixBytes = 1
	case "hash-block":
		p.fixBytes = overwrite(t, hash, lastHash, c.hbs, seed)
	case "beyond":
		p.spoilBeyond(t, data, blk, covered, seed)
	}
	if strings.HasPrefix(c.corrupt, "hash") {
		p.fixBlock = uint64(lastHash)/vg.HashBlockSize - vg.HashStartBlock + vg.DataBlocks
	} else {
		p.fixBlock = uint64(p.flipped)
	}
}

// spoilBeyond overwrites fecRoots+1 whole data blocks of the FEC round of
// block blk: every codeword of the round loses roots+1 bytes.
func (p *prepared) spoilBeyond(t *testing.T, data string, blk, covered int, seed string) {
	t.Helper()
	if p.fec == "" {
		t.Fatalf("%s: corrupt %q needs fec", p.name, p.corrupt)
	}
	for i := range p.fecRoots + 1 {
		b := blk + i*int(p.rounds)
		if b >= covered {
			t.Fatalf("%s: %d rounds: block %d is past the %d data blocks", p.name, p.rounds, b, covered)
		}
		overwrite(t, data, int64(b*p.dbs), p.dbs, fmt.Sprint(seed, b))
		p.spoiled = append(p.spoiled, b)
	}
	p.flipped = blk
}

// takeTable takes veritygen's table, which the kernel loads verbatim,
// after checking it against the one the harness makes from the report's
// other fields (so that a bug in either shows) and against the boot
// arguments; the "root" case spoils its root hash.
func (p *prepared) takeTable(t *testing.T) {
	t.Helper()
	vg := p.vg
	p.table, p.sectors = vg.Table, vg.TableSectors
	if want := p.expectedTable(); p.table != want {
		t.Fatalf("%s: veritygen's table\n  %q\nthe harness makes\n  %q", p.name, p.table, want)
	}
	if p.sectors != p.wantSize/512 {
		t.Fatalf("%s: veritygen's table_sectors %d, want %d (%d bytes covered)", p.name, p.sectors, p.wantSize/512, p.wantSize)
	}
	target := fmt.Sprintf("0 %d verity %s", p.sectors, p.table)
	if !strings.HasSuffix(vg.DMModCreate, ",ro,"+target+`"`) || !strings.HasSuffix(vg.AndroidDM, " ro 1,"+target+`"`) {
		t.Fatalf("%s: the boot arguments do not hold the table %q: %s, %s", p.name, target, vg.DMModCreate, vg.AndroidDM)
	}
	if p.corrupt != "root" {
		return
	}
	// The one change to veritygen's table: the spoiled root hash.
	r, err := hex.DecodeString(vg.RootHash)
	if err != nil || len(r) == 0 {
		t.Fatalf("%s: root hash %q: %v", p.name, vg.RootHash, err)
	}
	r[0] ^= 1
	f := strings.Fields(p.table)
	if len(f) < 10 || f[8] != vg.RootHash {
		t.Fatalf("%s: no root hash %s in the 9th field of %q", p.name, vg.RootHash, p.table)
	}
	f[8] = hex.EncodeToString(r)
	p.table = strings.Join(f, " ")
}

// expectedTable is the table the harness makes itself from veritygen's
// --json fields and the guest's device names, the optional arguments in
// veritysetup's order (the case's opts, then use_fec_from_device DEV
// fec_start S fec_blocks N fec_roots R).
func (p *prepared) expectedTable() string {
	vg := p.vg
	salt := vg.Salt
	if salt == "" {
		salt = "-"
	}
	table := fmt.Sprintf("%d %s %s %d %d %d %d %s %s %s", vg.Format, vda(p.dataPart), vda(p.hashPart),
		vg.DataBlockSize, vg.HashBlockSize, vg.DataBlocks, vg.HashStartBlock, vg.HashAlgorithm, vg.RootHash, salt)
	opts := slices.Clone(p.opts)
	if p.fec != "" {
		opts = append(opts, "use_fec_from_device", p.fecDevice(), "fec_start", strconv.FormatUint(vg.FECStart, 10),
			"fec_blocks", strconv.FormatUint(vg.FECBlocks, 10), "fec_roots", strconv.Itoa(vg.FECRoots))
	}
	if len(opts) > 0 {
		table += fmt.Sprintf(" %d %s", len(opts), strings.Join(opts, " "))
	}
	return table
}

// vda is the guest's name of partition n of its disk.
func vda(n int) string { return fmt.Sprintf("/dev/vda%d", n) }

// fecDevice is the guest's name of the partition holding the parity.
func (p *prepared) fecDevice() string { return vda(p.fecPart) }

// corrected reports whether the case's spoiling is one error correction
// must repair: the read must then succeed.
func (p *prepared) corrected() bool {
	return p.fec != "" && p.corrupt != "" && p.corrupt != "beyond" && p.corrupt != "root"
}

// mustFail reports whether reading the case's mapped device must fail.
func (p *prepared) mustFail() bool { return p.corrupt != "" && !p.readsOK && !p.corrected() }

// TestDMVerity opens veritygen's trees with Linux's own dm-verity: one
// Debian kernel boot under qemu reads every case through a verity target
// whose table is veritygen's own (--json `table`, `table_sectors`).
// -short leaves it out: it boots a VM, and first downloads the kernel.
func TestDMVerity(t *testing.T) {
	testtool.Long(t, "the kernel boot")
	start := time.Now()
	tools := requireGuestTools(t)
	k := debianKernel(t)
	t.Logf("kernel ready after %v: boots %s; modules %v; built in: %v", time.Since(start).Round(time.Millisecond), k.Boot, k.Modules, k.Builtin)

	veritygen := buildVeritygen(t)
	work := t.TempDir()
	var cases []*prepared
	var parts []partition
	var list bytes.Buffer
	for i, c := range kcases {
		p := prepare(t, veritygen, work, c, i, &parts)
		cases = append(cases, p)
		fmt.Fprintf(&list, "%s %d %s\n", c.name, p.sectors, p.table)
	}
	g, console, vmTime := bootGuest(t, tools, k, work, parts, list.Bytes())
	t.Logf("%d cases in %d partitions; VM ran %v (guest: /init at %s, disks ready at %s, done at %s); whole test %v",
		len(cases), len(parts), vmTime.Round(time.Millisecond), g.boot, g.ready, g.done, time.Since(start).Round(time.Millisecond))
	for _, e := range g.errors {
		t.Errorf("guest: %s", e)
	}

	spoiled, logged := 0, 0
	for _, p := range cases {
		t.Run(p.name, func(t *testing.T) {
			rep := g.cases[p.name]
			if rep == nil || !rep.ended {
				t.Fatalf("the guest did not report this case; console:\n%s", tail(console, 40))
			}
			if p.mustFail() {
				spoiled++
			}
			check(t, p, rep)
			if p.logged > 0 {
				logged++
			}
		})
	}
	// The rate limit lets the first spoiled cases through at least.
	if spoiled > 0 && logged == 0 {
		t.Errorf("no spoiled case got a verity \"is corrupted\" message in the kernel log")
	}
}

func check(t *testing.T, p *prepared, rep *report) {
	t.Logf("table: %s", rep.table)
	for _, e := range rep.errors {
		t.Errorf("guest: %s", e)
	}
	for _, l := range rep.dmesg {
		t.Logf("dmesg: %s", l)
	}
	if code, out := rc(rep.create); code != 0 {
		t.Fatalf("dmsetup create failed (rc=%d): %s", code, out)
	}
	p.checkKernelTable(t, rep)
	if rep.size != strconv.FormatUint(p.wantSize, 10) {
		t.Errorf("mapped device size %s, want %d", rep.size, p.wantSize)
	}
	fec := p.fecLog(rep)
	for _, e := range fec.bad {
		t.Error(e)
	}
	if p.mustFail() {
		p.checkReadFailed(t, rep, fec)
	} else {
		p.checkReadIntact(t, rep, fec)
	}
}

// checkKernelTable checks that the kernel's view of the table is ours,
// devices aside; the FEC device is named by its major:minor, which the
// guest looked up.
func (p *prepared) checkKernelTable(t *testing.T, rep *report) {
	t.Helper()
	want := strings.Fields(rep.table)
	got := strings.Fields(rep.ktable)
	if p.fec != "" {
		if !strings.Contains(rep.fecdev, ":") {
			t.Errorf("the guest did not report the FEC device's major:minor: %q", rep.fecdev)
		}
		for i := 13; i < len(want); i++ {
			if want[i] == p.fecDevice() {
				want[i] = rep.fecdev
			}
		}
		if len(got) > 5 && (p.fecPart == p.dataPart) != (rep.fecdev == got[4]) || len(got) > 5 && (p.fecPart == p.hashPart) != (rep.fecdev == got[5]) {
			t.Errorf("FEC device %s (partition %d), data and hash devices %s and %s (partitions %d and %d)",
				rep.fecdev, p.fecPart, got[4], got[5], p.dataPart, p.hashPart)
		}
	}
	if len(got) < 13 || !slices.Equal(got[:4], want[:4]) || !slices.Equal(got[6:13], want[6:13]) ||
		!sameWords(got[13:], want[13:]) {
		t.Errorf("dmsetup table: kernel has %q, we gave %q", rep.ktable, rep.table)
	}
}

// checkReadIntact checks a case whose read must succeed: the original
// bytes, the status, and the kernel's FEC messages.
func (p *prepared) checkReadIntact(t *testing.T, rep *report, fec fecMessages) {
	t.Helper()
	code, out := rc(rep.read)
	status := strings.Fields(rep.status)
	if code != 0 {
		t.Errorf("reading the mapped device failed (rc=%d): %s", code, out)
	} else if f := strings.Fields(out); len(f) == 0 || f[0] != p.wantSHA {
		t.Errorf("the kernel read back data with SHA-256 %s, the image's is %s", out, p.wantSHA)
	} else if p.corrected() {
		t.Logf("read back the original bytes although the %s was spoiled", p.corrupt)
	}
	if p.corrected() && strings.HasPrefix(p.corrupt, "hash") {
		p.checkHashFixReports(t, rep, status)
	} else {
		if len(status) == 0 || status[len(status)-1] != "V" {
			t.Errorf("dmsetup status %q, want verified (V)", rep.status)
		}
		if len(rep.verrs) > 0 {
			t.Errorf("verity reported corrupted blocks (type,block): %v", rep.verrs)
		}
	}
	switch {
	case p.corrected() && fec.corrected != p.fixBytes:
		t.Errorf("the kernel log reports %d bytes corrected in FEC round %d (%d lines), want %d: the bytes spoiled in block %d of the FEC message",
			fec.corrected, p.wantRSB(), fec.correctedLines, p.fixBytes, p.fixBlock)
	case p.corrected():
		t.Logf("dmesg: FEC corrected the %d spoiled bytes (%d lines)", fec.corrected, fec.correctedLines)
	case fec.lines > 0:
		t.Errorf("dmesg: %d FEC messages about an image that is intact (or whose spoiling is never read)", fec.lines)
	}
}

// checkReadFailed checks a case whose read must fail: the I/O error, the
// status, the block blamed, and what the kernel log says.
func (p *prepared) checkReadFailed(t *testing.T, rep *report, fec fecMessages) {
	t.Helper()
	code, out := rc(rep.read)
	status := strings.Fields(rep.status)
	if code == 0 {
		t.Errorf("reading the mapped device succeeded (%s), want an I/O error: the %s corruption went unseen", out, p.corrupt)
	} else {
		t.Logf("read failed as it should: rc=%d %s", code, out)
	}
	if len(status) == 0 || status[len(status)-1] != "C" {
		t.Errorf("dmsetup status %q, want corruption seen (C)", rep.status)
	}
	// The kernel must blame the very block we spoiled (the first of them
	// when there are several: the read stops there).
	wantErr := p.wantErr()
	if !slices.Contains(rep.verrs, wantErr) {
		t.Errorf("verity error uevents %v, want one for %s", rep.verrs, wantErr)
	}
	blamable := p.blamable()
	for _, e := range rep.verrs {
		if !slices.Contains(blamable, e) {
			t.Errorf("verity error uevent for %s, want one of %v", e, blamable)
		}
	}
	t.Logf("verity error uevents (type,block): %v", rep.verrs)
	if p.corrupt == "beyond" {
		if fec.failed == 0 {
			t.Errorf("dmesg: no \"FEC %d: failed to correct\" message about the spoiled blocks %v", p.wantRSB(), p.spoiled)
		} else {
			t.Logf("dmesg: %d FEC failures in round %d, as %d whole blocks of it are spoiled", fec.failed, p.wantRSB(), len(p.spoiled))
		}
	}
	// The kernel log says the same, unless its rate limit (10 messages in 5
	// seconds for each message, whatever the device) swallowed this case's
	// messages.
	n, bad := p.loggedCorruption(rep)
	for _, e := range bad {
		t.Error(e)
	}
	p.logged = n
	if n > 0 {
		t.Logf("dmesg: %d corruption messages about this device", n)
	} else {
		t.Logf("dmesg: corruption messages rate-limited away")
	}
}

// checkHashFixReports checks what the kernel reports besides the repair of
// a spoiled hash block. To repair block H of the tree, dm-verity-fec reads
// the other blocks of H's FEC round, and asks the tree whether each data
// block among them is a known zero block; for those under H that needs H
// itself, which the kernel does not repair from within a repair ("dm-verity:
// disable recursive forward error correction"): it reports H corrupted
// (log, uevent, status C) once for each such data block, then repairs H and
// reads every block right. So: no report on anything but H, and at most
// that many; none (status V) is right too.
func (p *prepared) checkHashFixReports(t *testing.T, rep *report, status []string) {
	t.Helper()
	want := p.wantErr()
	for _, e := range rep.verrs {
		if e != want {
			t.Errorf("verity error uevent for %s while repairing %s", e, want)
		}
	}
	bound := p.dataBlocksUnderSpoiledLeaf()
	if len(rep.verrs) > bound {
		t.Errorf("%d verity error uevents for %s, want at most %d: the data blocks of its FEC round under it", len(rep.verrs), want, bound)
	}
	seen := len(status) > 0 && status[len(status)-1] == "C"
	if seen != (len(rep.verrs) > 0) {
		t.Errorf("dmsetup status %q with %d verity error uevents", rep.status, len(rep.verrs))
	}
	n, bad := p.loggedCorruption(rep)
	for _, e := range bad {
		t.Error(e)
	}
	t.Logf("while repairing hash block %s: %d \"is corrupted\" uevents (at most %d: the data blocks of its FEC round under it), %d log lines, status %s",
		want, len(rep.verrs), bound, n, rep.status)
}

// dataBlocksUnderSpoiledLeaf counts the data blocks in the FEC round of the
// spoiled hash block, the tree's last (a leaf), that hang from it.
func (p *prepared) dataBlocksUnderSpoiledLeaf() int {
	alg, err := hashes.Lookup(p.vg.HashAlgorithm)
	if err != nil {
		panic(err)
	}
	digest := alg.Size()
	slot := digest
	if p.vg.Format == 1 { // digests padded to a power of two
		for slot = 1; slot < digest; slot <<= 1 {
		}
	}
	perLeaf := p.vg.HashBlockSize / uint64(slot)
	leaves := (p.vg.DataBlocks + perLeaf - 1) / perLeaf
	n := 0
	for d := (leaves - 1) * perLeaf; d < p.vg.DataBlocks; d++ {
		if p.rounds > 0 && d%p.rounds == p.fixBlock%p.rounds {
			n++
		}
	}
	return n
}

// fecMessages is what the kernel log says of error correction on a case's
// device (dm-verity-fec.c: "DEV: FEC RSB: corrected N errors", "DEV: FEC
// RSB: failed to correct: ERR", "DEV: FEC RSB: failed to correct (N
// erasures)", where RSB is the FEC round times the block size).
type fecMessages struct {
	lines          int // all FEC messages about the device
	corrected      int // the sum of their N
	correctedLines int
	failed         int
	bad            []string // messages about another round than the spoiled block's
}

func (p *prepared) fecLog(rep *report) fecMessages {
	var m fecMessages
	kt := strings.Fields(rep.ktable)
	if len(kt) < 5 {
		return m
	}
	prefix := "verity-fec: " + kt[4] + ": "
	for _, l := range rep.dmesg {
		i := strings.Index(l, prefix)
		if i < 0 {
			continue
		}
		m.lines++
		var rsb uint64
		var n int
		rest := l[i+len(prefix):]
		switch {
		case strings.Contains(rest, ": corrected "):
			if _, err := fmt.Sscanf(rest, "FEC %d: corrected %d errors", &rsb, &n); err != nil {
				m.bad = append(m.bad, fmt.Sprintf("dmesg: %q: %v", l, err))
				continue
			}
			m.corrected += n
			m.correctedLines++
		case strings.Contains(rest, ": failed to correct"):
			if _, err := fmt.Sscanf(rest, "FEC %d: failed to correct", &rsb); err != nil {
				m.bad = append(m.bad, fmt.Sprintf("dmesg: %q: %v", l, err))
				continue
			}
			m.failed++
		default:
			m.bad = append(m.bad, fmt.Sprintf("dmesg: unexpected FEC message %q", l))
			continue
		}
		if p.rounds == 0 || rsb != p.wantRSB() {
			m.bad = append(m.bad, fmt.Sprintf("dmesg: %q, want FEC %d (block %d of the message, %d rounds)", l, p.wantRSB(), p.fixBlock, p.rounds))
		}
	}
	return m
}

// wantRSB is how the kernel's FEC messages number the spoiled block's
// round: block b of the message is in round b mod rounds, logged as the
// round's first byte, round * block size.
func (p *prepared) wantRSB() uint64 {
	if p.rounds == 0 {
		return 0
	}
	return p.fixBlock % p.rounds * p.vg.DataBlockSize
}

// loggedCorruption checks the kernel log's "... block N is corrupted"
// lines about the case's data device (named by its major:minor, as in the
// kernel's table): how many there are, and those naming another block.
func (p *prepared) loggedCorruption(rep *report) (n int, bad []string) {
	kt := strings.Fields(rep.ktable)
	if len(kt) < 5 {
		return 0, nil
	}
	var want []string
	for _, e := range p.blamable() {
		typ, blk, _ := strings.Cut(e, ",")
		want = append(want, fmt.Sprintf("verity: %s: %s block %s is corrupted", kt[4], map[string]string{"0": "data", "1": "metadata"}[typ], blk))
	}
	for _, l := range rep.dmesg {
		if strings.Contains(l, "verity: "+kt[4]+": ") && strings.Contains(l, "is corrupted") {
			if !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(l, w) }) {
				bad = append(bad, fmt.Sprintf("dmesg: %q, want %q", l, want))
			}
			n++
		}
	}
	return n, bad
}

// wantErr is the verity error uevent the spoiled case must cause:
// "0,BLOCK" for a data block, "1,BLOCK" for a hash block (numbered on the
// hash device, in hash blocks).
func (p *prepared) wantErr() string {
	switch p.corrupt {
	case "data", "data-bytes", "data-block", "beyond":
		return fmt.Sprintf("0,%d", p.flipped)
	case "hash", "hash-block":
		return fmt.Sprintf("1,%d", p.vg.HashEnd/p.vg.HashBlockSize-1)
	case "root": // the top hash block no longer matches
		return fmt.Sprintf("1,%d", p.vg.HashStartBlock)
	}
	return ""
}

// blamable lists the verity errors the kernel may report: the spoiled
// block, or any of them when several are.
func (p *prepared) blamable() []string {
	if p.corrupt != "beyond" {
		return []string{p.wantErr()}
	}
	var e []string
	for _, b := range p.spoiled {
		e = append(e, fmt.Sprintf("0,%d", b))
	}
	return e
}

func sameWords(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
