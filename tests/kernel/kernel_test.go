package kernel

import (
	"bytes"
	"context"
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

	"github.com/veritytree/veritytree/internal/testtool"
)

//go:embed init.sh
var initScript []byte

// kcase is one tree the kernel must open.
type kcase struct {
	name       string
	alg        string // default sha256
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
	// What to spoil, in a copy of the images; the read must then fail.
	corrupt   string // "", "data" (a byte of data block flipBlock), "hash" (a byte of the last hash block), "root" (the table's root hash)
	flipBlock int    // data block to flip (default: the middle one)
	// readsOK: the read must succeed although something is spoiled
	// (a flipped zero block under ignore_zero_blocks reads as zeros).
	readsOK bool
}

var kcases = []kcase{
	// Algorithms and formats: superblock, random salt, separate hash file.
	{name: "sha1-f1", alg: "sha1", format: 1, blocks: 512},
	{name: "sha1-f0", alg: "sha1", format: 0, blocks: 512},
	{name: "sha256-f1", alg: "sha256", format: 1, blocks: 512},
	{name: "sha256-f0", alg: "sha256", format: 0, blocks: 512},
	{name: "sha512-f1", alg: "sha512", format: 1, blocks: 512},
	{name: "sha512-f0", alg: "sha512", format: 0, blocks: 512},
	{name: "blake2b-256-f1", alg: "blake2b-256", format: 1, blocks: 512},
	{name: "blake2b-256-f0", alg: "blake2b-256", format: 0, blocks: 512},
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
}

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
}

// prepared is a case with its images on disk and what the kernel must show.
type prepared struct {
	kcase
	vg       veritygenJSON
	dataPart int // partition numbers on the guest's disk
	hashPart int
	table    string // the table line after "0 SECTORS verity FORMAT DATA HASH"
	sectors  uint64
	wantSHA  string // SHA-256 of the covered data
	wantSize uint64
	flipped  int // the data block spoiled
	logged   int // kernel log lines about the corruption
}

func buildVeritygen(t *testing.T) string {
	t.Helper()
	goTool := testtool.Require(t, "go")
	bin := filepath.Join(t.TempDir(), "veritygen")
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, "./cmd/veritygen")
	cmd.Dir = testtool.ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/veritygen: %v\n%s", err, out)
	}
	return bin
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

// prepare writes the case's images, builds the tree with veritygen, spoils
// what the case says, and makes the table from veritygen's --json report.
// The images (one, or data and hash) are appended to parts.
func prepare(t *testing.T, veritygen, dir string, c kcase, index int, parts *[]partition) *prepared {
	t.Helper()
	if c.alg == "" {
		c.alg = "sha256"
	}
	if c.dbs == 0 {
		c.dbs = 4096
	}
	if c.hbs == 0 {
		c.hbs = 4096
	}
	p := &prepared{kcase: c}
	img := randomImage(c.name, c, c.dbs)
	covered := c.blocks
	if c.dataBlocks > 0 {
		covered = c.dataBlocks
	}
	sum := sha256.Sum256(img[:covered*c.dbs])
	p.wantSHA = hex.EncodeToString(sum[:])
	p.wantSize = uint64(covered * c.dbs)

	data := filepath.Join(dir, fmt.Sprintf("%02d-data.img", index))
	hash := filepath.Join(dir, fmt.Sprintf("%02d-hash.img", index))
	if err := os.WriteFile(data, img, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--json", "--no-progress", "--hash=" + c.alg, "--format=" + strconv.Itoa(c.format),
		"--data-block-size=" + strconv.Itoa(c.dbs), "--hash-block-size=" + strconv.Itoa(c.hbs)}
	if c.salt != "" {
		args = append(args, "--salt="+c.salt)
	}
	if c.noSB {
		args = append(args, "--no-superblock")
	}
	if c.dataBlocks > 0 {
		args = append(args, "--data-blocks="+strconv.Itoa(c.dataBlocks))
	}
	if c.inPlace {
		hash = data
		args = append(args, "--hash-offset="+strconv.Itoa(len(img)+c.hashGap))
	}
	args = append(args, data, hash)
	out, err := exec.CommandContext(t.Context(), veritygen, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: veritygen %s: %v\n%s", c.name, strings.Join(args, " "), err, stderr)
	}
	if err := json.Unmarshal(out, &p.vg); err != nil {
		t.Fatalf("%s: veritygen --json: %v\n%s", c.name, err, out)
	}
	vg := p.vg
	if vg.DataBlocks != uint64(covered) || vg.DataBlockSize != uint64(c.dbs) || vg.HashBlockSize != uint64(c.hbs) ||
		vg.HashAlgorithm != c.alg || vg.Format != c.format || vg.Superblock == c.noSB {
		t.Fatalf("%s: veritygen --json does not report what was asked: %s", c.name, out)
	}
	// The image files must hold whole 512-byte sectors for the virtio disk.
	for _, f := range []string{data, hash} {
		if st, err := os.Stat(f); err != nil || st.Size()%512 != 0 {
			if err == nil {
				err = os.Truncate(f, (st.Size()+511)/512*512)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	switch c.corrupt {
	case "data":
		blk := c.flipBlock
		if blk == 0 {
			blk = covered / 2
		}
		flipByte(t, data, int64(blk*c.dbs+c.dbs/3))
		p.flipped = blk
	case "hash":
		if vg.HashEnd < vg.HashStartBlock*vg.HashBlockSize+vg.HashBlockSize {
			t.Fatalf("%s: no hash block to spoil: %s", c.name, out)
		}
		flipByte(t, hash, int64(vg.HashEnd-vg.HashBlockSize+7))
	case "root":
		r, err := hex.DecodeString(vg.RootHash)
		if err != nil || len(r) == 0 {
			t.Fatalf("%s: root hash %q: %v", c.name, vg.RootHash, err)
		}
		r[0] ^= 1
		vg.RootHash = hex.EncodeToString(r)
	}

	salt := vg.Salt
	if salt == "" {
		salt = "-"
	}
	p.sectors = vg.DataBlocks * vg.DataBlockSize / 512
	p.table = fmt.Sprintf("%d %d %d %d %s %s %s", vg.DataBlockSize, vg.HashBlockSize, vg.DataBlocks,
		vg.HashStartBlock, vg.HashAlgorithm, vg.RootHash, salt)
	if len(c.opts) > 0 {
		p.table += fmt.Sprintf(" %d %s", len(c.opts), strings.Join(c.opts, " "))
	}
	*parts = append(*parts, partition{name: c.name, path: data})
	p.dataPart = len(*parts)
	p.hashPart = p.dataPart
	if !c.inPlace {
		*parts = append(*parts, partition{name: c.name + " hash", path: hash})
		p.hashPart = len(*parts)
	}
	return p
}

// TestDMVerity opens veritygen's trees with Linux's own dm-verity: one
// Debian kernel boot under qemu reads every case through a verity target
// made from veritygen's --json report.
func TestDMVerity(t *testing.T) {
	start := time.Now()
	qemu := testtool.Require(t, "qemu-system-x86_64")
	busybox := testtool.Require(t, "busybox")
	dmsetup := testtool.Require(t, "dmsetup")
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
		fmt.Fprintf(&list, "%s %d %d %d %d %s\n", c.name, p.dataPart, p.hashPart, p.sectors, p.vg.Format, p.table)
	}
	if len(parts) > maxPartitions {
		t.Fatalf("%d partitions, the kernel reads at most %d", len(parts), maxPartitions)
	}
	diskImage := filepath.Join(work, "disk.img")
	if err := writeGPTDisk(diskImage, parts); err != nil {
		t.Fatalf("disk image: %v", err)
	}

	r := &initramfs{
		init: initScript,
		files: map[string][]byte{
			"etc/vt/cases":      list.Bytes(),
			"etc/vt/partitions": []byte(strconv.Itoa(len(parts)) + "\n"),
			"etc/vt/modules":    []byte(strings.Join(k.Modules, "\n") + "\n"),
		},
		programs: map[string]string{"bin/busybox": busybox, "sbin/dmsetup": dmsetup},
	}
	for _, m := range k.Modules {
		b, err := os.ReadFile(k.modulePath(m))
		if err != nil {
			t.Fatal(err)
		}
		r.files["lib/vt-modules/"+m] = b
	}
	cpio, err := buildInitramfs(r)
	if err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	initrd := filepath.Join(work, "initramfs.cpio")
	if err := os.WriteFile(initrd, cpio, 0o644); err != nil {
		t.Fatal(err)
	}

	// The VM's own limit: a hung guest is killed, not waited for.
	timeout := 240 * time.Second
	if v := os.Getenv("VERITYTREE_KERNEL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("VERITYTREE_KERNEL_TIMEOUT: %v", err)
		}
		timeout = d
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl)-15*time.Second < timeout {
		timeout = time.Until(dl) - 15*time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	vmStart := time.Now()
	console, err := runVM(ctx, qemu, k.bootPath(), initrd, diskImage, work)
	vmTime := time.Since(vmStart)
	if dump := os.Getenv("VERITYTREE_KERNEL_CONSOLE"); dump != "" {
		os.WriteFile(dump, []byte(console), 0o644)
	}
	g := parseConsole(console)
	if err != nil || g.done == "" {
		t.Fatalf("the guest did not finish (%v); console:\n%s", err, tail(console, 60))
	}
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
			if p.corrupt != "" && !p.readsOK {
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
	// The kernel's view of the table must be ours, devices aside.
	want := strings.Fields(rep.table)
	got := strings.Fields(rep.ktable)
	if len(got) < 13 || !slices.Equal(got[:4], want[:4]) || !slices.Equal(got[6:13], want[6:13]) ||
		!sameWords(got[13:], want[13:]) {
		t.Errorf("dmsetup table: kernel has %q, we gave %q", rep.ktable, rep.table)
	}
	if rep.size != strconv.FormatUint(p.wantSize, 10) {
		t.Errorf("mapped device size %s, want %d", rep.size, p.wantSize)
	}
	code, out := rc(rep.read)
	status := strings.Fields(rep.status)
	if p.corrupt == "" || p.readsOK {
		if code != 0 {
			t.Errorf("reading the mapped device failed (rc=%d): %s", code, out)
		} else if f := strings.Fields(out); len(f) == 0 || f[0] != p.wantSHA {
			t.Errorf("the kernel read back data with SHA-256 %s, the image's is %s", out, p.wantSHA)
		}
		if len(status) == 0 || status[len(status)-1] != "V" {
			t.Errorf("dmsetup status %q, want verified (V)", rep.status)
		}
		if len(rep.verrs) > 0 {
			t.Errorf("verity reported corrupted blocks (type,block): %v", rep.verrs)
		}
		return
	}
	if code == 0 {
		t.Errorf("reading the mapped device succeeded (%s), want an I/O error: the %s corruption went unseen", out, p.corrupt)
	} else {
		t.Logf("read failed as it should: rc=%d %s", code, out)
	}
	if len(status) == 0 || status[len(status)-1] != "C" {
		t.Errorf("dmsetup status %q, want corruption seen (C)", rep.status)
	}
	// The kernel must blame the very block we spoiled.
	wantErr := p.wantErr()
	if len(rep.verrs) == 0 {
		t.Errorf("no verity error uevent, want one for %s", wantErr)
	}
	for _, e := range rep.verrs {
		if e != wantErr {
			t.Errorf("verity error uevent for %s, want %s", e, wantErr)
		}
	}
	t.Logf("verity error uevents (type,block): %v", rep.verrs)
	// The kernel log says the same, unless its rate limit (10 messages in 5
	// seconds for all of device-mapper) swallowed this case's messages.
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

// loggedCorruption checks the kernel log's "... block N is corrupted"
// lines about the case's data device (named by its major:minor, as in the
// kernel's table): how many there are, and those naming another block.
func (p *prepared) loggedCorruption(rep *report) (n int, bad []string) {
	kt := strings.Fields(rep.ktable)
	if len(kt) < 5 {
		return 0, nil
	}
	typ, blk, _ := strings.Cut(p.wantErr(), ",")
	want := fmt.Sprintf("verity: %s: %s block %s is corrupted", kt[4], map[string]string{"0": "data", "1": "metadata"}[typ], blk)
	for _, l := range rep.dmesg {
		if strings.Contains(l, "verity: "+kt[4]+": ") && strings.Contains(l, "is corrupted") {
			if !strings.Contains(l, want) {
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
	case "data":
		return fmt.Sprintf("0,%d", p.flipped)
	case "hash":
		return fmt.Sprintf("1,%d", p.vg.HashEnd/p.vg.HashBlockSize-1)
	case "root": // the top hash block no longer matches
		return fmt.Sprintf("1,%d", p.vg.HashStartBlock)
	}
	return ""
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
