//go:build linux && amd64

package safety_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

func init() { moreAttacks = append(moreAttacks, killedAVBAttacks, killedSparseAttacks) }

// killedAVB makes img, a random image of 2 MiB, and what veritygen
// --append --fec --avb killed as it starts writing the tree leaves of it
// (the provisional footer past the image), with a copy of the image in
// orig.img.
func killedAVB(t *testing.T, d string) {
	randomFile(t, d, "img", 2*mib, 95)
	copyFile(t, d, "img", "orig.img")
	if r := runTraced(t, d, bins["veritygen"], []string{"--append", "--fec", "--avb", "--salt=" + salt[:40], "img"}, killPoint{n: 2}); !r.killed {
		t.Fatal("not killed")
	}
}

// killedAVBAttacks are what the commands do with what a killed AVB run
// left (trust issue, item 3).
var killedAVBAttacks = []attack{
	{item: "T3", name: "veritycheck on a killed --avb run's image",
		setup: killedAVB,
		prog:  "veritycheck", args: []string{"img"}, exit: []int{2},
		stderr: []string{`interrupted add_hashtree_footer`, `run the same command again`}},
	{item: "T4", name: "--append --fec on a killed --avb run's image",
		setup: killedAVB,
		prog:  "veritygen", args: []string{"--append", "--fec", "img"}, exit: []int{2},
		stderr: []string{`provisional AVB footer`, `run the same command again`, `erase_footer`}},
	{item: "T3", name: "avbtool erase_footer on a killed --avb run's image",
		setup: killedAVB,
		prog:  "avbtool", args: []string{"erase_footer", "--image", "img"}, exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "orig.img") }},
}

// killedSparse makes orig.simg, an Android sparse image of 2 MiB, and img,
// what the command (veritygen or the avbtool front) run with args on it
// leaves when killed once its record is past the chunks, and ref.img, what
// the command makes of the image uninterrupted.
func killedSparse(prog string, args ...string) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		s := &sparseImage{bs: 4096}
		s.chunk(chunkRaw, 256, randomFile(t, d, "raw", mib, 98)).fill(64, 0x01020304).chunk(chunkDontCare, 64, nil)
		s.chunk(chunkRaw, 128, randomFile(t, d, "raw", mib/2, 99))
		os.Remove(filepath.Join(d, "raw"))
		writeFile(t, d, "orig.simg", s.bytes())
		copyFile(t, d, "orig.simg", "ref.img")
		run(t, d, prog, append(slices.Clone(args), "ref.img")...)
		copyFile(t, d, "orig.simg", "img")
		if r := runTraced(t, d, bins[prog], append(slices.Clone(args), "img"), killPoint{n: 2}); !r.killed {
			t.Fatal("not killed")
		}
	}
}

var (
	sparseAppendArgs = []string{"--append", "--fec", "--salt=" + salt}
	sparseFooterArgs = []string{"add_hashtree_footer", "--partition_size", fmt.Sprint(8 * mib), "--hash_algorithm", "sha256", "--salt", salt[:40], "--image"}
)

// killedSparseAttacks: a killed veritygen --append of an Android sparse
// image and a killed add_hashtree_footer of one write their tree alike,
// one without vbmeta: each is finished by its own command, and the other
// refuses it by name, the image untouched.
var killedSparseAttacks = []attack{
	{item: "T3", name: "a killed sparse --append --fec, run again",
		setup: killedSparse("veritygen", sparseAppendArgs...),
		prog:  "veritygen", args: append(slices.Clone(sparseAppendArgs), "img"), exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "ref.img") }},
	{item: "T3", name: "add_hashtree_footer on a killed sparse --append's image",
		setup: killedSparse("veritygen", sparseAppendArgs...),
		prog:  "avbtool", args: append(slices.Clone(sparseFooterArgs), "img"), exit: []int{1},
		stderr: []string{`an interrupted veritygen --append left this sparse image`, `run veritygen --append again`}},
	{item: "T3", name: "--append --fec on a killed sparse add_hashtree_footer's image",
		setup: killedSparse("avbtool", sparseFooterArgs...),
		prog:  "veritygen", args: append(slices.Clone(sparseAppendArgs), "img"), exit: []int{2},
		stderr: []string{`an interrupted add_hashtree_footer left this sparse image`, `run add_hashtree_footer again`}},
	{item: "T3", name: "a killed sparse --append, erase_footer",
		setup: killedSparse("veritygen", sparseAppendArgs...),
		prog:  "avbtool", args: []string{"erase_footer", "--image", "img"}, exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "orig.simg") }},
}

// appendKill is a command that appends to img in place, killed at random
// (seeded) kill points.
type appendKill struct {
	name string
	prog string
	args []string
	// sparse: img is an Android sparse image; whole: whole 4096-byte
	// blocks (else 1000 bytes short of them); once: the command refuses
	// its own output (veritygen --append of a sparse image), so it is not
	// run on a finished image.
	sparse, whole, once bool
	// prep, if not nil, is what the avbtool front runs on img first, to
	// make the image the command starts from (a footer to resize, say).
	prep []string
}

// TestSIGKILLDuringAppendLeavesResumable kills add_hashtree_footer (the
// avbtool front, raw and Android sparse), veritygen --append --fec --avb
// and veritygen --append --fec at random kill points (see killPoint:
// before a system call that changes a file, or in the middle of a large
// write), on an image and on a rerun of a finished image. After each kill
// the image must be the one the command started from, the finished image,
// or a state a plain rerun of the same command finishes: the rerun must
// then give exactly the finished image (sha256), whatever the state.
// Before the fixes most kill points left an image longer than the original
// and without a footer, from which a rerun built a wrong image with exit 0.
func TestSIGKILLDuringAppendLeavesResumable(t *testing.T) {
	testtool.Long(t, "the kills during --append (tens of seconds even with few kill points)")
	points, size := 20, 24*mib
	for ci, c := range appendKills(size) {
		for _, rerun := range []bool{false, true} {
			if rerun && c.once {
				continue
			}
			name, seed := c.name+", on an image", uint64(2*ci)
			if rerun {
				name, seed = c.name+", on a finished image", seed+1
			}
			t.Run(name, func(t *testing.T) { killAppendAt(t, c, rerun, size, points, seed) })
		}
	}
}

// TestSIGKILLDuringAppendEveryCall is TestSIGKILLDuringAppendLeavesResumable
// with a kill before each of the calls that change files, in turn, on a
// small image (not with -short).
func TestSIGKILLDuringAppendEveryCall(t *testing.T) {
	if testing.Short() {
		t.Skip("every kill point: not with -short")
	}
	for ci, c := range appendKills(mib) {
		for _, rerun := range []bool{false, true} {
			if rerun && c.once {
				continue
			}
			name, seed := c.name+", on an image", uint64(2*ci)
			if rerun {
				name, seed = c.name+", on a finished image", seed+1
			}
			t.Run(name, func(t *testing.T) { killAppendAt(t, c, rerun, mib, -1, seed) })
		}
	}
}

// appendKills are the commands the kill tests kill, on images of size
// bytes (in partitions of twice that).
func appendKills(size int) []appendKill {
	partition := 2 * size
	avbSalt := salt[:40]
	return []appendKill{
		{name: "avbtool add_hashtree_footer", prog: "avbtool", args: []string{"add_hashtree_footer", "--image", "img",
			"--partition_size", fmt.Sprint(partition), "--partition_name", "system", "--hash_algorithm", "sha256", "--salt", avbSalt}},
		{name: "veritygen --append --fec --avb", prog: "veritygen", whole: true, args: []string{"--append", "--fec", "--avb", "--salt=" + avbSalt, "img"}},
		{name: "veritygen --append --fec", prog: "veritygen", args: []string{"--append", "--fec", "--salt=" + salt, "img"}},
		{name: "avbtool add_hashtree_footer, sparse", prog: "avbtool", sparse: true, args: []string{"add_hashtree_footer", "--image", "img",
			"--partition_size", fmt.Sprint(partition), "--hash_algorithm", "sha256", "--salt", avbSalt}},
		// resize_image and zero_hashtree rewrite a sparse image's last
		// chunks: the new ones staged past them, then copied over them.
		{name: "avbtool resize_image (grow), sparse", prog: "avbtool", sparse: true, prep: sparseFooter(partition, avbSalt),
			args: []string{"resize_image", "--image", "img", "--partition_size", fmt.Sprint(partition + size)}},
		{name: "avbtool resize_image (shrink), sparse", prog: "avbtool", sparse: true, prep: sparseFooter(partition, avbSalt),
			args: []string{"resize_image", "--image", "img", "--partition_size", fmt.Sprint(partition - size/4)}},
		{name: "avbtool zero_hashtree (tree and FEC), sparse", prog: "avbtool", sparse: true, prep: sparseFooter(partition, avbSalt),
			args: []string{"zero_hashtree", "--image", "img"}},
		// Its own verb, not add_hashtree_footer's (whose layout it takes).
		{name: "veritygen --append --fec, sparse", prog: "veritygen", sparse: true, once: true, args: []string{"--append", "--fec", "--salt=" + salt, "img"}},
	}
}

// sparseFooter is the add_hashtree_footer (with FEC) that makes the images
// resize_image and zero_hashtree start from.
func sparseFooter(partition int, salt string) []string {
	return []string{"add_hashtree_footer", "--image", "img", "--partition_size", fmt.Sprint(partition),
		"--partition_name", "system", "--hash_algorithm", "sha256", "--salt", salt}
}

// killAppendAt runs c killed at points kill points drawn with seed (every
// call in turn, untorn, if points < 0), from an image of size bytes (or the
// finished image, if rerun).
func killAppendAt(t *testing.T, c appendKill, rerun bool, size, points int, seed uint64) {
	d := t.TempDir()
	if c.sparse {
		// Data, a FILL and a DONT_CARE chunk, more data.
		s := &sparseImage{bs: 4096}
		half := size / 2 / 4096
		s.chunk(chunkRaw, uint32(half), randomFile(t, d, "raw1", half*4096, 50+seed))
		s.fill(16, 0x5afe5afe).chunk(chunkDontCare, 16, nil)
		s.chunk(chunkRaw, uint32(half), randomFile(t, d, "raw2", half*4096, 60+seed))
		writeFile(t, d, "start.img", s.bytes())
	} else if c.whole {
		randomFile(t, d, "start.img", size, 70+seed)
	} else {
		randomFile(t, d, "start.img", size-1000, 70+seed) // padded to a whole block
	}
	if c.prep != nil {
		copyFile(t, d, "start.img", "img")
		run(t, d, "avbtool", c.prep...)
		copyFile(t, d, "img", "start.img")
	}
	if rerun {
		copyFile(t, d, "start.img", "img")
		run(t, d, c.prog, c.args...)
		copyFile(t, d, "img", "start.img")
	}
	start := sha256File(t, filepath.Join(d, "start.img"))
	copyFile(t, d, "start.img", "img")
	full := runTraced(t, d, bins[c.prog], c.args, killPoint{})
	if full.exit != 0 {
		t.Fatalf("an uninterrupted run under ptrace exited %d", full.exit)
	}
	finished := sha256File(t, filepath.Join(d, "img"))
	if rerun && finished != start {
		t.Fatal("a rerun of the finished image does not give the finished image")
	}
	rng := rand.New(rand.NewPCG(seed, 0xa99e))
	var left [3]int // the original, the finished image, another state
	every := points < 0
	if every {
		points = full.calls
	}
	for i := range points {
		kp := killPoint{n: 1 + rng.IntN(full.calls)}
		switch {
		case every:
			kp.n = i + 1
		case i%2 == 1:
			kp.tear = rand.New(rand.NewPCG(seed, uint64(i)))
		}
		copyFile(t, d, "start.img", "img")
		r := runTraced(t, d, bins[c.prog], c.args, kp)
		what := fmt.Sprintf("killed at call %d of %d", kp.n, full.calls)
		if r.torn {
			what += " (torn write)"
		}
		if r.exit == 0 && !r.killed {
			what = "not killed"
		}
		switch sha256File(t, filepath.Join(d, "img")) {
		case start:
			left[0]++
		case finished:
			left[1]++
		default:
			left[2]++
		}
		code, stderr := runPlain(d, c.prog, c.args...)
		after := sha256File(t, filepath.Join(d, "img"))
		if code != 0 || after != finished {
			t.Errorf("%s: a plain rerun exits %d and the image is %s\n%s", what, code,
				map[bool]string{true: "the finished image", false: "not the finished image"}[after == finished], indent(stderr))
		}
		if extra := extraFiles(t, d); len(extra) > 0 {
			t.Errorf("%s: files left: %v", what, extra)
		}
	}
	t.Logf("%d kill points (of %d calls that change files): %d left the image as it was, %d finished, %d another state; every rerun checked",
		points, full.calls, left[0], left[1], left[2])
}

// runPlain runs prog in dir and returns its exit code and stderr.
func runPlain(dir, prog string, args ...string) (int, string) {
	cmd := exec.Command(bins[prog], args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, stderr.String()
}

// extraFiles lists the files in d but the test's own.
func extraFiles(t *testing.T, d string) []string {
	t.Helper()
	entries, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, e := range entries {
		if !slices.Contains([]string{"img", "start.img", "raw1", "raw2"}, e.Name()) {
			extra = append(extra, e.Name())
		}
	}
	return extra
}
