package safety_test

// The trust issue's items 3 and 4: appended layouts (--append, --avb,
// add_hashtree_footer) run again on their own output, on an AVB image, or
// after an interrupted run. The kills themselves are in appendkill_test.go.

import (
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"os"
	"path/filepath"
	"testing"
)

func init() { moreAttacks = append(moreAttacks, appendAgainAttacks) }

// avbImageOf makes d/img, a random image of size bytes, and turns it into
// an AVB image with veritygen --append --fec --avb.
func avbImageOf(size int, seed uint64) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		randomFile(t, d, "img", size, seed)
		run(t, d, "veritygen", "--append", "--fec", "--avb", "--salt="+salt, "img")
	}
}

// appendedTwice makes d/img, a random image of size bytes, appends to it
// with args, and keeps a copy of the result in d/ref.img.
func appendedTwice(size int, seed uint64, args ...string) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		randomFile(t, d, "img", size, seed)
		run(t, d, "veritygen", append(args, "img")...)
		copyFile(t, d, "img", "ref.img")
	}
}

// interruptedAppend makes what a veritygen --append --fec killed while
// writing its tree leaves (the image, half a tree of garbage, the record
// past the end), and the finished file in ref.img.
func interruptedAppend(t *testing.T, d string) {
	const size = 3*mib + 1000
	randomFile(t, d, "img", size, 81)
	copyFile(t, d, "img", "ref.img")
	run(t, d, "veritygen", "--append", "--fec", "--salt="+salt, "ref.img")
	end := len(readFile(t, d, "ref.img"))
	b := append(readFile(t, d, "img"), randomFile(t, d, "junk", (end-size)/2, 82)...)
	os.Remove(filepath.Join(d, "junk"))
	b = append(b, make([]byte, end-len(b))...)
	rec := &safefile.ResumeRecord{OriginalSize: size, End: uint64(end) + safefile.ResumeRecordSize}
	writeFile(t, d, "img", append(b, rec.Encode()...))
}

// interruptedSparseAVB makes what add_hashtree_footer killed while
// writing the chunks of an Android sparse image leaves (the image's
// chunks, the new chunks not yet counted, the record past them), and the
// finished file in ref.img.
func interruptedSparseAVB(t *testing.T, d string) {
	s := &sparseImage{bs: 4096}
	s.chunk(chunkRaw, 256, randomFile(t, d, "raw", mib, 83)).fill(64, 0x01020304).chunk(chunkDontCare, 64, nil)
	os.Remove(filepath.Join(d, "raw"))
	orig := s.bytes()
	writeFile(t, d, "orig.simg", orig)
	writeFile(t, d, "ref.img", orig)
	run(t, d, "avbtool", avbtoolSparseArgs("ref.img")...)
	done := readFile(t, d, "ref.img")
	// The finished file's chunks are there but the header counts the
	// original's; the last ones are half written.
	b := append(append([]byte{}, orig...), done[len(orig):len(orig)+(len(done)-len(orig))/2]...)
	rec := &safefile.ResumeRecord{OriginalSize: 384 * 4096, Sparse: true}
	at := (len(b) + 511) / 512 * 512
	rec.End = uint64(at) + safefile.ResumeRecordSize
	b = append(b, make([]byte, at-len(b))...)
	writeFile(t, d, "img", append(b, rec.Encode()...))
}

// grewFrom checks that d/name is larger than size bytes: a tree was
// appended.
func grewFrom(t *testing.T, d, name string, size int64) {
	t.Helper()
	if info, err := os.Stat(filepath.Join(d, name)); err != nil || info.Size() <= size {
		t.Errorf("%s is not larger than %d bytes (%v): no tree appended", name, size, err)
	}
}

func avbtoolSparseArgs(image string) []string {
	return []string{"add_hashtree_footer", "--image", image, "--partition_size", fmt.Sprint(4 * mib), "--hash_algorithm", "sha256", "--salt", salt[:40]}
}

var appendAgainAttacks = []attack{
	// 4: --append on an AVB image buries its footer.
	{item: "T4", name: "--append --fec on an AVB image",
		setup: avbImageOf(2*mib, 84),
		prog:  "veritygen", args: []string{"--append", "--fec", "--salt=" + salt, "img"}, exit: []int{2},
		stderr: []string{`AVB image`, `--avb`, `avbtool erase_footer --image img`}},
	{item: "T4", name: "--append on an AVB image",
		setup: avbImageOf(2*mib, 85),
		prog:  "veritygen", args: []string{"--append", "img"}, exit: []int{2},
		stderr: []string{`AVB image`, `--avb`, `erase_footer`}},
	{item: "T4", name: "--append --data-size on an AVB image",
		setup: avbImageOf(2*mib, 86),
		prog:  "veritygen", args: []string{"--append", "--fec", fmt.Sprintf("--data-size=%d", 2*mib), "img"}, exit: []int{2},
		stderr: []string{`AVB image`, `--avb`, `erase_footer`}},
	{item: "T4", name: "--append --force on an AVB image (the image is all of it)",
		setup: avbImageOf(2*mib, 87),
		prog:  "veritygen", args: []string{"--append", "--force", "--salt=" + salt, "img"}, exit: []int{0},
		mayChange: []string{"img"}},

	// 4: --append run twice.
	{item: "T4", name: "--append --salt run twice: the same file",
		setup: appendedTwice(3*mib+1000, 88, "--append", "--salt="+salt),
		prog:  "veritygen", args: []string{"--append", "--salt=" + salt, "img"}, exit: []int{0},
		stderr: []string{`already ends in the tree`}, mayChange: []string{"img"},
		after: func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "ref.img") }},
	{item: "T4", name: "--append --fec --salt run twice: the same file",
		setup: appendedTwice(3*mib, 89, "--append", "--fec", "--salt="+salt),
		prog:  "veritygen", args: []string{"--append", "--fec", "--salt=" + salt, "img"}, exit: []int{0},
		stderr: []string{`already ends in the tree and error correction`}, mayChange: []string{"img"},
		after: func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "ref.img") }},
	{item: "T4", name: "--append --fec run twice, random salt",
		setup: appendedTwice(3*mib, 90, "--append", "--fec"),
		prog:  "veritygen", args: []string{"--append", "--fec", "img"}, exit: []int{2},
		stderr: []string{`already ends in a tree and error correction`, `--data-size=3145728`, `--salt`}},
	{item: "T4", name: "--append run again with another salt",
		setup: appendedTwice(3*mib, 91, "--append", "--salt="+salt),
		prog:  "veritygen", args: []string{"--append", "--salt=00", "img"}, exit: []int{2},
		stderr: []string{`already ends in a tree`, `not this salt`, `--data-size=3145728`}},
	{item: "T4", name: "--append --data-size=<all of it> on its own output: a tree of all of it",
		setup: appendedTwice(3*mib, 92, "--append", "--salt="+salt),
		prog:  "veritygen", args: []string{"--append", "--salt=" + salt, fmt.Sprintf("--data-size=%d", 3*mib+28672), "img"}, exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { grewFrom(t, d, "img", 3*mib+28672) }},
	{item: "T4", name: "--append --fec --avb on an --append --fec output",
		setup: appendedTwice(3*mib+1000, 96, "--append", "--fec", "--salt="+salt),
		prog:  "veritygen", args: []string{"--append", "--fec", "--avb", "--partition-size=8388608", "img"}, exit: []int{2},
		stderr: []string{`ends in the tree and error correction of an earlier --append without --avb`, `truncate -s 3146728 img`}},
	{item: "T4", name: "--append --avb on an --append output (another salt)",
		setup: appendedTwice(3*mib, 97, "--append", "--salt="+salt),
		prog:  "veritygen", args: []string{"--append", "--avb", "--salt=00", "img"}, exit: []int{2},
		stderr: []string{`ends in the tree of an earlier --append without --avb`}},

	// No false alarm: images of the one size an --append of 3 MiB ends
	// at (sha256, no parity: 7 hash blocks), random, or ending in zeros
	// where the tree would be, or all zeros.
	{item: "T4", name: "no false alarm: a random image of an appended size",
		setup: func(t *testing.T, d string) { randomFile(t, d, "img", 3*mib+28672, 93) },
		prog:  "veritygen", args: []string{"--append", "--salt=" + salt, "img"}, exit: []int{0},
		notStderr: []string{"already"}, mayChange: []string{"img"},
		after: func(t *testing.T, d string, o *outcome) { grewFrom(t, d, "img", 3*mib+28672) }},
	{item: "T4", name: "no false alarm: an image of that size whose tail is zeros",
		setup: func(t *testing.T, d string) {
			b := randomFile(t, d, "img", 3*mib+28672, 94)
			clear(b[3*mib:])
			writeFile(t, d, "img", b)
		},
		prog: "veritygen", args: []string{"--append", "--salt=" + salt, "img"}, exit: []int{0},
		notStderr: []string{"already"}, mayChange: []string{"img"},
		after: func(t *testing.T, d string, o *outcome) { grewFrom(t, d, "img", 3*mib+28672) }},
	{item: "T4", name: "no false alarm: an image of that size, all zeros",
		setup: func(t *testing.T, d string) { writeFile(t, d, "img", make([]byte, 3*mib+28672)) },
		prog:  "veritygen", args: []string{"--append", "img"}, exit: []int{0},
		notStderr: []string{"already"}, mayChange: []string{"img"},
		after: func(t *testing.T, d string, o *outcome) { grewFrom(t, d, "img", 3*mib+28672) }},

	// 3: what a killed run leaves is finished by the same command.
	{item: "T3", name: "a killed --append --fec (record past half a tree), run again",
		setup: interruptedAppend,
		prog:  "veritygen", args: []string{"--append", "--fec", "--salt=" + salt, "img"}, exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "ref.img") }},
	{item: "T3", name: "a killed --append --fec, run again with another --data-size",
		setup: interruptedAppend,
		prog:  "veritygen", args: []string{"--append", "--fec", "--salt=" + salt, "--data-size=4096", "img"}, exit: []int{2},
		stderr: []string{`interrupted --append of its first 3146728 bytes`, `leave --data-size out`}},
	{item: "T3", name: "a killed --append --fec, then --avb",
		setup: interruptedAppend,
		prog:  "veritygen", args: []string{"--append", "--fec", "--avb", "--partition-size=8388608", "--salt=" + salt[:40], "img"}, exit: []int{0},
		mayChange: []string{"img"},
		after: func(t *testing.T, d string, o *outcome) {
			// The AVB image of the original image: made from a fresh copy.
			b := readFile(t, d, "ref.img")
			writeFile(t, d, "fresh.img", b[:3*mib+1000])
			run(t, d, "veritygen", "--append", "--fec", "--avb", "--partition-size=8388608", "--salt="+salt[:40], "fresh.img")
			sameFiles(t, d, "img", "fresh.img")
		}},
	{item: "T3", name: "a killed sparse add_hashtree_footer (record past the chunks), run again",
		setup: interruptedSparseAVB,
		prog:  "avbtool", args: avbtoolSparseArgs("img"), exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "ref.img") }},
	{item: "T3", name: "a killed sparse add_hashtree_footer, erase_footer",
		setup: interruptedSparseAVB,
		prog:  "avbtool", args: []string{"erase_footer", "--image", "img"}, exit: []int{0},
		mayChange: []string{"img"},
		after:     func(t *testing.T, d string, o *outcome) { sameFiles(t, d, "img", "orig.simg") }},
}
