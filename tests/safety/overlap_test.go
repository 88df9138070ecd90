package safety_test

// The trust issue's item 1: a tree written over the user's data. HASH the
// same file (or device) as DATA and --hash-offset inside the data, without
// --data-blocks: the front refuses as veritysetup does ("Data area
// overlaps with hash area.", exit 1), the native command unless the bytes
// there are zeros, holes or a tree of ours (exit 2, naming --data-blocks=N
// and --force). Then the same class elsewhere: parity in DATA, a kept HASH
// or FEC file, what --append --data-size cuts off.

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

func init() { moreAttacks = append(moreAttacks, overlapAttacks) }

// The layout: 2 MiB of DATA, the tree at 1433600 (350 blocks of
// 4096 bytes before it).
const (
	ovSize   = 2 * mib
	ovOffset = "--hash-offset=1433600"
)

// ovData writes d.img: 2 MiB of random bytes.
func ovData(t *testing.T, d string) { randomFile(t, d, "d.img", ovSize, 40) }

// ovZerosPast writes d.img: random bytes up to the offset, then zeros (the
// room reserved for the tree), half written, half a hole.
func ovZerosPast(t *testing.T, d string) {
	b := randomFile(t, d, "d.img", 1433600, 41)
	writeFile(t, d, "d.img", append(b, make([]byte, 300<<10)...))
	if err := os.Truncate(filepath.Join(d, "d.img"), ovSize); err != nil {
		t.Fatal(err)
	}
}

// ovExt4Past writes d.img: random bytes up to the offset, then an ext4
// file system (1024 zero bytes, its superblock with the magic 0xEF53).
func ovExt4Past(t *testing.T, d string) {
	b := randomFile(t, d, "d.img", ovSize, 42)
	clear(b[1433600 : 1433600+1024])
	binary.LittleEndian.PutUint16(b[1433600+1080:], 0xEF53)
	writeFile(t, d, "d.img", b)
}

// ovLink makes h, a hard link to d.img.
func ovLink(t *testing.T, d string) {
	ovData(t, d)
	if err := os.Link(filepath.Join(d, "d.img"), filepath.Join(d, "h")); err != nil {
		t.Fatal(err)
	}
}

// ovLoop attaches d.img to a loop device and makes the nodes L and A of it
// in d: root is needed (the row fails in CI without it), and the loop
// driver (skipped without it).
func ovLoop(t *testing.T, d string) {
	needRoot(t, "a loop device")
	ovData(t, d)
	losetup := testtool.Require(t, "losetup")
	out, err := exec.Command(losetup, "--find", "--show", filepath.Join(d, "d.img")).Output()
	if err != nil {
		// As internal/front/veritygen's loop tests: no loop driver here.
		t.Skipf("cannot attach a loop device here: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command(losetup, "-d", dev).Run() })
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"L", "A"} {
		if err := syscall.Mknod(filepath.Join(d, name), syscall.S_IFBLK|0o600, int(st.Rdev)); err != nil {
			t.Fatal(err)
		}
	}
}

// ovCheck returns an after that checks the tree in d.img at the offset
// with veritycheck, given args.
func ovCheck(args ...string) func(t *testing.T, d string, o *outcome) {
	return func(t *testing.T, d string, o *outcome) {
		run(t, d, "veritycheck", append(append([]string{ovOffset, "--root-hash=" + ovRoot(t, o)}, args...), "d.img", "d.img")...)
	}
}

// ovVerify checks the tree in d.img at the offset as veritysetup verify
// does (the front: it ignores the bytes veritysetup keeps between the
// superblock and the tree).
func ovVerify(t *testing.T, d string, o *outcome) {
	run(t, d, "veritysetup", "verify", ovOffset, "d.img", "d.img", ovRoot(t, o))
}

// ovRoot is the root hash the report gives.
func ovRoot(t *testing.T, o *outcome) string {
	t.Helper()
	m := rootLine.FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("no root hash in the report:\n%s", o.stdout)
	}
	return m[1]
}

var rootLine = regexp.MustCompile(`(?m)^Root hash:\s+([0-9a-f]+)$`)

var vsOverlap = []string{`^Data area overlaps with hash area\.\n$`}

var nativeOverlap = []string{`holds data from --hash-offset 1433600 on`, `--data-blocks=350`, `--force`}

var overlapAttacks = []attack{
	// The front: as veritysetup 2.6.1, whatever else.
	{item: "t1", name: "front: --hash-offset inside DATA (the issue's command)", setup: ovData,
		prog: "veritysetup", args: []string{ovOffset, "format", "d.img", "d.img"}, exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: --no-superblock", setup: ovData,
		prog: "veritysetup", args: []string{"--no-superblock", "-s", "-", ovOffset, "format", "d.img", "d.img"}, exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: 512-byte data blocks", setup: ovData,
		prog: "veritysetup", args: []string{"--data-block-size=512", ovOffset, "format", "d.img", "d.img"}, exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: 1024-byte blocks", setup: ovData,
		prog: "veritysetup", args: []string{"--data-block-size=1024", "--hash-block-size=1024", ovOffset, "format", "d.img", "d.img"}, exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: HASH a hard link to DATA", setup: ovLink,
		prog: "veritysetup", args: []string{ovOffset, "format", "d.img", "h"}, exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: a loop device, two nodes of it", setup: ovLoop,
		prog: "veritysetup", args: []string{ovOffset, "format", "L", "A"}, exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: verify without superblock", setup: ovData,
		prog: "veritysetup", args: []string{"--no-superblock", "-s", "-", ovOffset, "verify", "d.img", "d.img", strings.Repeat("0", 64)},
		exit: []int{1}, stderr: vsOverlap},
	{item: "t1", name: "front: the FEC device is DATA, inside the data", setup: ovData,
		prog: "veritysetup", args: []string{"--fec-device=d.img", "--fec-offset=1433600", "format", "d.img", "h"},
		exit: []int{1}, stderr: []string{`^Data area overlaps with FEC area\.\n$`}},
	{item: "t1", name: "front: --data-blocks gives the rest over", setup: ovData,
		prog: "veritysetup", args: []string{"--data-blocks=350", ovOffset, "format", "d.img", "d.img"}, exit: []int{0},
		mayChange: []string{"d.img"}, after: ovVerify},

	// The native command: only over bytes that are not the user's.
	{item: "t1", name: "native: --hash-offset inside DATA", setup: ovData,
		prog: "veritygen", args: withGen(ovOffset, "d.img", "d.img"), exit: []int{2}, stderr: nativeOverlap},
	{item: "t1", name: "native: --no-superblock", setup: ovData,
		prog: "veritygen", args: []string{"--no-superblock", "--salt=" + salt, ovOffset, "d.img", "d.img"}, exit: []int{2}, stderr: nativeOverlap},
	{item: "t1", name: "native: 512-byte data blocks", setup: ovData,
		prog: "veritygen", args: withGen("--data-block-size=512", ovOffset, "d.img", "d.img"), exit: []int{2},
		stderr: []string{`holds data from --hash-offset 1433600 on`, `--data-blocks=2800`, `--force`}},
	{item: "t1", name: "native: 1024-byte blocks", setup: ovData,
		prog: "veritygen", args: withGen("--data-block-size=1024", "--hash-block-size=1024", ovOffset, "d.img", "d.img"), exit: []int{2},
		stderr: []string{`holds data from --hash-offset 1433600 on`, `--data-blocks=1400`, `--force`}},
	{item: "t1", name: "native: HASH a hard link to DATA", setup: ovLink,
		prog: "veritygen", args: withGen(ovOffset, "d.img", "h"), exit: []int{2}, stderr: nativeOverlap},
	{item: "t1", name: "native: a loop device, two nodes of it", setup: ovLoop,
		prog: "veritygen", args: withGen(ovOffset, "L", "A"), exit: []int{2},
		stderr: []string{`holds data from --hash-offset 1433600 on`, `--data-blocks=350`, `--force`}},
	{item: "t1", name: "native: an ext4 file system past the offset", setup: ovExt4Past,
		prog: "veritygen", args: withGen(ovOffset, "d.img", "d.img"), exit: []int{2},
		stderr: []string{`a non-zero byte at 1434624`, `--data-blocks=350`, `--force`}},
	{item: "t1", name: "native: zeros and holes past the offset", setup: ovZerosPast,
		prog: "veritygen", args: withGen(ovOffset, "d.img", "d.img"), exit: []int{0}, mayChange: []string{"d.img"},
		after: ovCheck()},
	{item: "t1", name: "native: again over its own tree",
		setup: func(t *testing.T, d string) {
			ovZerosPast(t, d)
			run(t, d, "veritygen", withGen(ovOffset, "d.img", "d.img")...)
		},
		prog: "veritygen", args: withGen(ovOffset, "d.img", "d.img"), exit: []int{0}, mayChange: []string{"d.img"},
		after: ovCheck()},
	{item: "t1", name: "native: again over its own tree, no superblock",
		setup: func(t *testing.T, d string) {
			ovZerosPast(t, d)
			run(t, d, "veritygen", "--no-superblock", "--salt="+salt, ovOffset, "d.img", "d.img")
		},
		prog: "veritygen", args: []string{"--no-superblock", "--salt=" + salt, ovOffset, "d.img", "d.img"}, exit: []int{0},
		mayChange: []string{"d.img"}, after: ovCheck("--no-superblock", "--salt="+salt)},
	{item: "t1", name: "native: --force", setup: ovData,
		prog: "veritygen", args: withGen("--force", ovOffset, "d.img", "d.img"), exit: []int{0}, mayChange: []string{"d.img"},
		after: ovCheck()},
	{item: "t1", name: "native: --data-blocks=350", setup: ovData,
		prog: "veritygen", args: withGen("--data-blocks=350", ovOffset, "d.img", "d.img"), exit: []int{0}, mayChange: []string{"d.img"},
		after: ovCheck()},

	// The same class elsewhere.
	{item: "t1", name: "native: DATA a loop device, HASH the file behind it", setup: ovLoop,
		prog: "veritygen", args: withGen(ovOffset, "L", "d.img"), exit: []int{2},
		stderr: []string{`DATA L is a loop device over HASH d\.img: what would be written there \(bytes 1433600 to 1458176 of the file\) goes over the data \(bytes 0 to 2097152 of it\)`}},
	{item: "t1", name: "front: DATA a loop device, HASH the file behind it", setup: ovLoop,
		prog: "veritysetup", args: []string{ovOffset, "format", "L", "d.img"}, exit: []int{1},
		stderr: []string{`^DATA L is a loop device over HASH d\.img: .* goes over the data \(bytes 0 to 2097152 of it\)\.\n$`}},
	{item: "t1", name: "native: parity in DATA over its last, partial block",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib+100, 43) },
		prog:  "veritygen", args: withGen("--fec-device=d.img", "--fec-offset=1048576", "d.img", "h"), exit: []int{2},
		stderr: []string{`a non-zero byte at 1048576, at or past --fec-offset 1048576`, `--fec-offset=1052672`, `--force`}},
	{item: "t1", name: "native: a kept HASH with the user's bytes at the offset (no superblock)",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", 64<<10, 44)
			randomFile(t, d, "disk.img", mib, 45)
		},
		prog: "veritygen", args: []string{"--no-superblock", "--salt=" + salt, "--hash-offset=1044480", "d.img", "disk.img"}, exit: []int{2},
		stderr: []string{`HASH disk\.img holds a non-zero byte at 1044480, where the tree would go`, `--force`}},
	{item: "t1", name: "native: a kept FEC file with the user's bytes at the offset",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", 64<<10, 46)
			randomFile(t, d, "disk.img", mib, 47)
		},
		prog: "veritygen", args: withGen("--fec-device=disk.img", "--fec-offset=1040384", "d.img", "h"), exit: []int{2},
		stderr: []string{`--fec-device disk\.img holds a non-zero byte at 1040384`, `--force`}},
	{item: "t1", name: "native: --append --data-size cutting off what is no tree",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 48) },
		prog:  "veritygen", args: withGen("--append", "--data-size=1040384", "d.img"), exit: []int{2},
		stderr: []string{`has a non-zero byte at 1040384, past --data-size 1040384`, `--force`}},
}
