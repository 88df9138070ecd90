package safety_test

// The attacks of issue 12, one row each, with the behaviour expected once
// they are fixed. Every row runs under the same checks: the exit code, the
// messages (and none of forbidden), every file in the row's directory
// unchanged but those the row names, peak RSS under 64 MiB, and its time
// limit.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/fecmsg"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/merkle"
)

type attack struct {
	item  string // the item number
	name  string
	setup func(t *testing.T, dir string) // makes the inputs in dir
	prog  string                         // veritygen, veritycheck, veritysetup or avbtool
	args  []string                       // run in dir
	exit  []int                          // the exit codes allowed
	// stderr holds regexps the standard error must all match; notStderr
	// ones it must not, besides forbidden.
	stderr, notStderr []string
	// mayChange are globs of the files that may change, appear or vanish;
	// every other file must be as it was.
	mayChange []string
	trigger   *trigger
	timeout   time.Duration // defaultTimeout if 0
	after     func(t *testing.T, dir string, o *outcome)
	// long, if set, says what makes the row take tens of seconds: -short
	// leaves it out (testtool.Long).
	long string
}

// forbidden never appears on stderr: internal errors, crash dumps.
var forbidden = []string{"negative", "goroutine", "panic", "fatal error", "runtime error"}

var gen = []string{"--salt=" + salt, "--uuid=" + uuid}

// withGen returns veritygen's fixed-parameter flags followed by args.
func withGen(args ...string) []string { return append(slices.Clone(gen), args...) }

var attacks = []attack{
	// 1: outputs that are not trees veritygen wrote are not replaced.
	{item: "1", name: "DATA and HASH swapped",
		setup: func(t *testing.T, d string) {
			ext4Image(t, d, "img", 8*mib, 1)
			run(t, d, "veritygen", withGen("img", "img.verity")...)
		},
		prog: "veritygen", args: []string{"img.verity", "img"}, exit: []int{2},
		stderr: []string{`img img\.verity`, `--force`}},
	{item: "1", name: "a sparse image as HASH",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 2)
			s := &sparseImage{bs: 4096}
			s.fill(16, 0x01020304).chunk(chunkRaw, 1, make([]byte, 4096)).chunk(chunkDontCare, 8, nil)
			writeFile(t, d, "s.simg", s.bytes())
		},
		prog: "veritygen", args: []string{"d.img", "s.simg"}, exit: []int{2},
		stderr: []string{`(?i)sparse`, `--force`}},
	{item: "1", name: "an AVB image as HASH",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 3)
			avbImage(t, d, "a.img", 2*mib, 4)
		},
		prog: "veritygen", args: []string{"d.img", "a.img"}, exit: []int{2},
		stderr: []string{`AVB`, `--force`}},
	{item: "1", name: "HASH larger than the tree, no superblock",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 5)
			randomFile(t, d, "tree.bin", 4*mib, 6)
		},
		prog: "veritygen", args: []string{"--no-superblock", "--salt=" + salt, "d.img", "tree.bin"}, exit: []int{2},
		stderr: []string{`(?i)larger|bytes`, `--force`}},
	{item: "1", name: "--fec-device naming an ext4 image",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 7)
			ext4Image(t, d, "e.img", 2*mib, 8)
		},
		prog: "veritygen", args: withGen("--fec-device=e.img", "d.img", "d.verity"), exit: []int{2},
		stderr: []string{`--force`}},
	{item: "1", name: "--force overrides",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 5)
			randomFile(t, d, "tree.bin", 4*mib, 6)
		},
		prog: "veritygen", args: []string{"--force", "--no-superblock", "--salt=" + salt, "--root-hash-file=root.hex", "d.img", "tree.bin"},
		exit: []int{0}, mayChange: []string{"tree.bin", "root.hex"},
		after: func(t *testing.T, d string, o *outcome) {
			run(t, d, "veritycheck", "--no-superblock", "--salt="+salt, "--root-hash-file=root.hex", "d.img", "tree.bin")
		}},

	// 2: --root-hash-file never replaces a device or a link.
	{item: "2", name: "--root-hash-file is a character device",
		setup: func(t *testing.T, d string) {
			needRoot(t, "mknod")
			randomFile(t, d, "d.img", mib, 9)
			if err := unix.Mknod(filepath.Join(d, "n"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
				t.Fatal(err)
			}
		},
		prog: "veritygen", args: withGen("--root-hash-file=n", "d.img", "h"), exit: []int{0, 2},
		mayChange: []string{"h"}},
	{item: "2", name: "--root-hash-file is a link to /proc/self/fd/1",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 10)
			if err := os.Symlink("/proc/self/fd/1", filepath.Join(d, "r")); err != nil {
				t.Fatal(err)
			}
		},
		prog: "veritygen", args: withGen("--root-hash-file=r", "d.img", "h"), exit: []int{0, 2},
		mayChange: []string{"h"}},

	// 3: --data-size cuts off only an earlier appended tree.
	{item: "3", name: "--append --data-size on an image not appended to",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", 8*mib, 11) },
		prog:  "veritygen", args: withGen("--append", "--data-size=4096", "d.img"), exit: []int{2},
		stderr: []string{`--data-size`}},
	{item: "3", name: "an interrupted --append finished with --data-size",
		setup: func(t *testing.T, d string) {
			const orig = 3*mib + 1000
			randomFile(t, d, "d.img", orig, 12)
			copyFile(t, d, "d.img", "ref.img")
			run(t, d, "veritygen", withGen("--append", "--fec", "ref.img")...)
			// Cut the complete result in the middle of its tree, as a
			// kill during the writes leaves it.
			run(t, d, "veritygen", withGen("--append", "--fec", "d.img")...)
			info, err := os.Stat(filepath.Join(d, "d.img"))
			if err != nil {
				t.Fatal(err)
			}
			padded := int64(orig+4095) / 4096 * 4096
			if err := os.Truncate(filepath.Join(d, "d.img"), padded+(info.Size()-padded)/3); err != nil {
				t.Fatal(err)
			}
		},
		prog: "veritygen", args: withGen("--append", "--fec", fmt.Sprintf("--data-size=%d", 3*mib+1000), "d.img"),
		exit: []int{0}, mayChange: []string{"d.img"},
		after: func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "d.img", "ref.img") }},

	// 4: a failing output leaves the old state, or says the new root.
	{item: "4", name: "--root-hash-file under a regular file",
		setup: keptTree(13),
		prog:  "veritygen", args: []string{"--root-hash-file=m.img/r.root", "m.img", "old.verity"}, exit: []int{2},
		mayChange: []string{"old.verity"}, after: oldOrNewRootGiven},
	{item: "4", name: "--root-hash-file unwritable (in /proc)",
		setup: keptTree(14),
		prog:  "veritygen", args: []string{"--root-hash-file=/proc/veritytree-safety.root", "m.img", "old.verity"}, exit: []int{2},
		mayChange: []string{"old.verity"}, after: oldOrNewRootGiven},

	// 5: one writer at a time.
	{item: "5", name: "a second writer of the same DATA (--hash-offset)",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "X", mib, 15)
			lock(t, d, "X")
		},
		prog: "veritygen", args: withGen("--hash-offset=1048576", "X", "X"), exit: []int{2},
		stderr: []string{`(?i)locked`}},
	{item: "5", name: "a second writer of the same HASH",
		setup: func(t *testing.T, d string) {
			treeOf("d.img", "h", 16)(t, d)
			lock(t, d, "h")
		},
		prog: "veritygen", args: withGen("d.img", "h"), exit: []int{2},
		stderr: []string{`(?i)locked`}},
	{item: "5", name: "veritycheck --repair while DATA is being written",
		setup: func(t *testing.T, d string) {
			fecImage(t, d, 17)
			flipBytes(t, d, "d.img", 5*4096, 100)
			lock(t, d, "d.img")
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--fec-device=d.fec", "--fec-roots=8", "--repair", "d.img"},
		exit: []int{2}, stderr: []string{`(?i)locked`}},

	// 6: memory bounded for any input.
	{item: "6", name: "veritygen on 4M one-block sparse chunks (64 MB)",
		setup: func(t *testing.T, d string) { writeFile(t, d, "big.simg", manyChunks(4<<20)) },
		prog:  "veritygen", args: withGen("big.simg", "h"), exit: []int{0}, mayChange: []string{"h"},
		timeout: 5 * time.Minute, long: "the tree of 4M sparse chunks (sparse's TestIndexBounded bounds the index of a million)"},
	{item: "6", name: "veritycheck on 4M one-block sparse chunks (64 MB)",
		setup: func(t *testing.T, d string) {
			writeFile(t, d, "big.simg", manyChunks(4<<20))
			run(t, d, "veritygen", withGen("--root-hash-file=root.hex", "big.simg", "h")...)
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "big.simg", "h"}, exit: []int{0},
		timeout: 5 * time.Minute, long: "the check of 4M sparse chunks (sparse's TestIndexBounded bounds the index of a million)"},
	{item: "6", name: "veritycheck --root-hash-file=/dev/zero",
		setup: treeOf("d.img", "d.img.verity", 18),
		prog:  "veritycheck", args: []string{"--root-hash-file=/dev/zero", "d.img"}, exit: []int{2},
		stderr: []string{`--root-hash-file`}, timeout: 10 * time.Second},

	// 7: nothing waits forever, every wait ends on SIGINT or SIGTERM.
	{item: "7", name: "veritygen: DATA is a FIFO without writer",
		setup: func(t *testing.T, d string) { testtool.MkFIFO(t, d, "fifo") },
		prog:  "veritygen", args: withGen("fifo", "h"), exit: []int{2},
		stderr: []string{`FIFO`}, timeout: 10 * time.Second},
	{item: "7", name: "veritycheck: DATA is a FIFO without writer",
		setup: func(t *testing.T, d string) {
			treeOf("d.img", "h", 19)(t, d)
			testtool.MkFIFO(t, d, "fifo")
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "fifo", "h"}, exit: []int{2},
		stderr: []string{`FIFO`}, timeout: 10 * time.Second},
	{item: "7", name: "veritygen: HASH is a FIFO without reader",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 20)
			testtool.MkFIFO(t, d, "fifo")
		},
		prog: "veritygen", args: withGen("d.img", "fifo"), exit: []int{2},
		stderr:  []string{`(?i)FIFO|pipe|not a regular file`},
		trigger: &trigger{sig: syscall.SIGTERM, onWchan: fifoWaits}, timeout: 10 * time.Second},
	{item: "7", name: "veritycheck --dump of a FIFO without writer",
		setup: func(t *testing.T, d string) { testtool.MkFIFO(t, d, "fifo") },
		prog:  "veritycheck", args: []string{"--dump", "fifo"}, exit: []int{2},
		stderr: []string{`FIFO`}, timeout: 10 * time.Second},
	{item: "7", name: "veritycheck: the FEC device is a FIFO without writer",
		setup: func(t *testing.T, d string) {
			treeOf("d.img", "d.img.verity", 33)(t, d)
			testtool.MkFIFO(t, d, "fifo")
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--fec-device=fifo", "d.img"}, exit: []int{2},
		stderr: []string{`FIFO`}, timeout: 10 * time.Second},
	{item: "7", name: "veritygen: --root-hash-file is a FIFO without reader, SIGTERM if it waits",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 34)
			testtool.MkFIFO(t, d, "root.fifo")
		},
		prog: "veritygen", args: withGen("--root-hash-file=root.fifo", "d.img", "h"), exit: []int{0, 2},
		mayChange: []string{"h"},
		trigger:   &trigger{sig: syscall.SIGTERM, onWchan: fifoWaits}, timeout: 10 * time.Second},
	{item: "7", name: "veritycheck: waiting for the root hash from a FIFO, SIGINT",
		setup: func(t *testing.T, d string) {
			treeOf("d.img", "d.img.verity", 21)(t, d)
			testtool.MkFIFO(t, d, "root.fifo")
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.fifo", "d.img"}, exit: []int{2},
		trigger: &trigger{sig: syscall.SIGINT, onWchan: fifoWaits}, timeout: 10 * time.Second},

	// 8: the size of the expansion is said before hashing.
	{item: "8", name: "a 40-byte sparse file of 16 TiB, SIGINT after the size is shown",
		setup: func(t *testing.T, d string) {
			s := &sparseImage{bs: 4096}
			s.chunk(chunkDontCare, 0xffffffff, nil)
			writeFile(t, d, "s.simg", s.bytes())
		},
		prog: "veritygen", args: withGen("s.simg", "h"), exit: []int{2},
		stderr:  []string{`16 TiB`},
		trigger: &trigger{sig: syscall.SIGINT, onStderr: regexp.MustCompile(`16 TiB`)}, timeout: 30 * time.Second,
		after: func(t *testing.T, d string, o *outcome) {
			if !o.signalSent {
				t.Error("veritygen ended before saying the size of the expansion")
			}
		}},

	// 9, 10: FEC repair.
	{item: "9", name: "roots 8, nine blocks of one round with 64 bytes flipped each",
		setup: func(t *testing.T, d string) {
			g, p := fecImage(t, d, 22)
			rounds := int64(p.Rounds())
			for j := range int64(9) {
				flipBytes(t, d, "d.img", j*rounds*int64(g.DataBlockSize)+j*64, 64)
			}
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--fec-device=d.fec", "--fec-roots=8", "--repair", "d.img"},
		exit: []int{0}, mayChange: []string{"d.img"},
		after: func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "d.img", "orig.img") }},
	{item: "10", name: "a corrupt hash block and a block under it, with FEC",
		setup: func(t *testing.T, d string) {
			g, _ := fecImage(t, d, 23)
			flipBytes(t, d, "d.img.verity", int64(g.BlockOffset(0, 3))+100, 8)
			flipBytes(t, d, "d.img", 400*4096+7, 1)
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--fec-device=d.fec", "--fec-roots=8", "--repair", "d.img"},
		exit: []int{0}, mayChange: []string{"d.img", "d.img.verity"},
		after: func(t *testing.T, d string, o *outcome) {
			sameFiles(t, d, "d.img", "orig.img")
			sameFiles(t, d, "d.img.verity", "orig.verity")
			if !regexp.MustCompile(`\b400\b`).MatchString(o.stdout + o.stderr) {
				t.Error("the report does not name data block 400, under the corrupt hash block")
			}
		}},
	{item: "10", name: "a corrupt hash block and a block under it, located with FEC",
		setup: func(t *testing.T, d string) {
			g, _ := fecImage(t, d, 32)
			flipBytes(t, d, "d.img.verity", int64(g.BlockOffset(0, 3))+100, 8)
			flipBytes(t, d, "d.img", 400*4096+7, 1)
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--fec-device=d.fec", "--fec-roots=8", "d.img"},
		exit: []int{1}, notStderr: []string{"could not be checked"},
		after: func(t *testing.T, d string, o *outcome) {
			if !regexp.MustCompile(`\b400\b`).MatchString(o.stdout + o.stderr) {
				t.Error("the report does not name data block 400, under the corrupt hash block")
			}
		}},
	{item: "10", name: "a corrupt hash block, without FEC",
		setup: func(t *testing.T, d string) {
			g, _ := fecImage(t, d, 24)
			flipBytes(t, d, "d.img.verity", int64(g.BlockOffset(0, 3))+100, 8)
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "d.img"}, exit: []int{1},
		after: func(t *testing.T, d string, o *outcome) {
			// Hash block 3 of level 0 covers data blocks 384-511.
			if !regexp.MustCompile(`384\D{1,10}511`).MatchString(o.stdout + o.stderr) {
				t.Error("the report does not name the data blocks that could not be checked (384-511)")
			}
		}},

	// 11: offsets too large are refused as such, before any read.
	{item: "11", name: "--hash-offset near 2^64",
		setup: treeOf("d.img", "d.img.verity", 25),
		prog:  "veritycheck", args: []string{"--hash-offset=18446744073709551104", "--root-hash-file=root.hex", "d.img", "d.img.verity"},
		exit: []int{2}, stderr: []string{`(?i)too large`}},
	{item: "11", name: "--fec-offset near 2^64",
		setup: func(t *testing.T, d string) { fecImage(t, d, 26) },
		prog:  "veritycheck", args: []string{"--fec-device=d.fec", "--fec-roots=8", "--fec-offset=18446744073709547520", "--root-hash-file=root.hex", "d.img"},
		exit: []int{2}, stderr: []string{`(?i)too large`}, notStderr: []string{`-4096`}},

	// 12: temporary files left by a killed run.
	{item: "12", name: "a stale temporary file beside HASH",
		setup: func(t *testing.T, d string) {
			treeOf("d.img", "h", 27)(t, d)
			randomFile(t, d, ".h.tmp0123456789ab", 20000, 28)
		},
		prog: "veritygen", args: withGen("d.img", "h"), exit: []int{0},
		stderr: []string{`(?i)removed`, `\.h\.tmp0123456789ab`}, mayChange: []string{"h", ".h.tmp0123456789ab"},
		after: func(t *testing.T, d string, o *outcome) {
			if _, err := os.Lstat(filepath.Join(d, ".h.tmp0123456789ab")); err == nil {
				t.Error("the stale temporary file is still there")
			}
		}},
	{item: "12", name: "a temporary file in use beside HASH",
		setup: func(t *testing.T, d string) {
			treeOf("d.img", "h", 29)(t, d)
			randomFile(t, d, ".h.tmpaaaaaaaaaaaa", 20000, 30)
			lock(t, d, ".h.tmpaaaaaaaaaaaa")
		},
		prog: "veritygen", args: withGen("d.img", "h"), exit: []int{0}, mayChange: []string{"h"}},

	// Writes that fail half-way leave nothing half-written.
	{item: "-", name: "ENOSPC while writing HASH",
		setup: func(t *testing.T, d string) {
			mountSmallFS(t, filepath.Join(d, "small"), 256<<10)
			treeOf("small.img", "small/h", 31)(t, d)
			// 64 MiB of holes: a tree of 512 KiB, more than the room left.
			writeFile(t, d, "big.img", nil)
			if err := os.Truncate(filepath.Join(d, "big.img"), 64*mib); err != nil {
				t.Fatal(err)
			}
		},
		prog: "veritygen", args: withGen("big.img", "small/h"), exit: []int{2},
		stderr: []string{`(?i)no space`}},
}

// fifoWaits are the kernel functions a thread sleeps in while it waits on a
// FIFO: for the other end in open, for data in read, for room in write, and
// in epoll_wait, where the Go poller waits for a FIFO opened without
// blocking (internal/safefile).
var fifoWaits = []string{"wait_for_partner", "pipe_read", "pipe_write", "pipe_wait", "pipe_wait_readable", "pipe_wait_writable",
	"do_epoll_wait", "ep_poll"}

// moreAttacks holds the tables of later campaigns, each in its own file,
// appended by that file's init.
var moreAttacks [][]attack

func TestAttacks(t *testing.T) {
	all := slices.Clone(attacks)
	for _, more := range moreAttacks {
		all = append(all, more...)
	}
	for _, a := range all {
		t.Run(fmt.Sprintf("%s/%s", a.item, a.name), func(t *testing.T) {
			if a.long != "" {
				testtool.Long(t, a.long)
			}
			d := t.TempDir()
			if a.setup != nil {
				a.setup(t, d)
			}
			before := snapshot(t, d)
			timeout := orDefault(a.timeout, defaultTimeout)
			o := runLimited(t, d, timeout, a.trigger, bins[a.prog], a.args...)
			sent := ""
			if o.signalSent {
				sent = fmt.Sprintf(" (sent %v)", a.trigger.sig)
			}
			t.Logf("%s %s: exit %d%s in %v, peak RSS %d KiB\n%s", a.prog, strings.Join(a.args, " "), o.code, sent,
				o.elapsed.Round(time.Millisecond), o.maxRSSKiB, indent(o.stderr))
			if o.timedOut {
				t.Errorf("still running after %v: killed", timeout)
			}
			if !slices.Contains(a.exit, o.code) {
				t.Errorf("exit code %d, want one of %v", o.code, a.exit)
			}
			for _, re := range a.stderr {
				if !regexp.MustCompile(re).MatchString(o.stderr) {
					t.Errorf("stderr does not match %q", re)
				}
			}
			for _, s := range append(slices.Clone(forbidden), a.notStderr...) {
				if strings.Contains(strings.ToLower(o.stderr), strings.ToLower(s)) {
					t.Errorf("stderr contains %q", s)
				}
			}
			if o.maxRSSKiB > maxRSSKiB {
				t.Errorf("peak RSS %d KiB, more than %d KiB", o.maxRSSKiB, maxRSSKiB)
			}
			compareSnapshots(t, before, snapshot(t, d), a.mayChange)
			if a.after != nil {
				a.after(t, d, o)
			}
		})
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// indent returns the first lines of s, indented for the log.
func indent(s string) string {
	if s == "" {
		return "    (no stderr)"
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if n := len(lines); n > 12 {
		lines = append(lines[:12], fmt.Sprintf("... %d more lines", n-12))
	}
	return "    " + strings.Join(lines, "\n    ")
}

// treeOf returns a setup making a random 1 MiB image and its tree, with its
// root hash in root.hex.
func treeOf(data, hash string, seed uint64) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		randomFile(t, d, data, mib, seed)
		run(t, d, "veritygen", withGen("--root-hash-file=root.hex", data, hash)...)
	}
}

// fecImage makes an 8 MiB d.img, its tree in d.img.verity, its parity
// (roots 8) in d.fec, its root hash in root.hex, and copies of the image
// and tree in orig.img and orig.verity; it returns the tree's geometry and
// the parity's parameters.
func fecImage(t *testing.T, d string, seed uint64) (*merkle.Geometry, fec.Params) {
	t.Helper()
	randomFile(t, d, "d.img", 8*mib, seed)
	run(t, d, "veritygen", withGen("--root-hash-file=root.hex", "--fec-device=d.fec", "--fec-roots=8", "d.img")...)
	copyFile(t, d, "d.img", "orig.img")
	copyFile(t, d, "d.img.verity", "orig.verity")
	hash := readFile(t, d, "d.img.verity")
	p, err := merkle.DecodeSuperblock(hash[:merkle.SuperblockSize])
	if err != nil {
		t.Fatal(err)
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := fecmsg.Params(g, 8, uint64(len(hash)))
	if err != nil {
		t.Fatal(err)
	}
	return g, fp
}

func sameFiles(t *testing.T, d, a, b string) {
	t.Helper()
	if sha256File(t, filepath.Join(d, a)) != sha256File(t, filepath.Join(d, b)) {
		t.Errorf("%s differs from %s", a, b)
	}
}

// keptTree makes m.img and its tree old.verity, with a copy of the tree in
// old.verity.orig.
func keptTree(seed uint64) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		treeOf("m.img", "old.verity", seed)(t, d)
		copyFile(t, d, "old.verity", "old.verity.orig")
	}
}

var hexRoot = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// oldOrNewRootGiven passes when old.verity is unchanged, or when it holds a
// new tree whose root hash the error message gives.
func oldOrNewRootGiven(t *testing.T, d string, o *outcome) {
	t.Helper()
	if sha256File(t, filepath.Join(d, "old.verity")) == sha256File(t, filepath.Join(d, "old.verity.orig")) {
		return
	}
	root := hexRoot.FindString(o.stderr)
	if root == "" {
		t.Fatal("old.verity was replaced and the message does not give the new root hash")
	}
	run(t, d, "veritycheck", "--root-hash="+root, "m.img", "old.verity")
}

// needRoot skips the test unless it runs as root (fails it in CI, where
// the tests run as root).
func needRoot(t *testing.T, what string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if testtool.InCI() {
		t.Fatalf("%s needs root (the tests run as root in CI)", what)
	}
	t.Skipf("%s needs root", what)
}

// mountSmallFS mounts a tmpfs of size bytes at dir until the test ends.
func mountSmallFS(t *testing.T, dir string, size int) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	needRoot(t, "mounting a small tmpfs")
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mounting a %d-byte tmpfs: %v", size, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Error(err)
		}
	})
}
