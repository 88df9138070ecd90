package safety_test

// The trust issue's items 11 to 13: a file another run writes is told as
// locked, a second writer of an output that does not exist yet fails at
// once, and messages are in our words (none of Go's own texts).

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

func init() { moreAttacks = append(moreAttacks, messageAttacks) }

// goInternals are texts of Go's packages and runtime that must not reach
// the user.
var goInternals = []string{"asn1:", "x509:", "pkcs1PrivateKey", "encoding/hex", "strconv.", "readat", "unexpected EOF", "invalid byte: U+"}

// notGo returns goInternals and more.
func notGo(more ...string) []string { return append(append([]string(nil), goInternals...), more...) }

// avbOf makes dir/name a 1 MiB image with a hashtree footer, unsigned, by
// the avbtool front.
func avbOf(t *testing.T, d, name string, seed uint64) {
	t.Helper()
	randomFile(t, d, name, mib, seed)
	run(t, d, "avbtool", "add_hashtree_footer", "--image", name, "--hash_algorithm", "sha256", "--salt", salt)
}

// patchDescriptor sets a field of the hashtree descriptor of the AVB image
// dir/name (unsigned, so that it still verifies): the 64-bit image size
// (off 4 from its dm-verity version field) or a 32-bit field (36: the FEC
// roots).
func patchDescriptor(t *testing.T, d, name string, off int, v uint64) {
	t.Helper()
	b := readFile(t, d, name)
	// dm_verity_version 1, then the image size (1 MiB) and the tree offset
	// (the same: the tree follows the image).
	pat := binary.BigEndian.AppendUint32(nil, 1)
	pat = binary.BigEndian.AppendUint64(pat, mib)
	pat = binary.BigEndian.AppendUint64(pat, mib)
	at := bytes.LastIndex(b, pat)
	if at < 0 {
		t.Fatal("no hashtree descriptor found")
	}
	if off == 4 {
		binary.BigEndian.PutUint64(b[at+off:], v)
	} else {
		binary.BigEndian.PutUint32(b[at+off:], uint32(v))
	}
	writeFile(t, d, name, b)
}

// garbageKey writes a PEM block of the type whose DER is garbage.
func garbageKey(t *testing.T, d, name, typ string) {
	t.Helper()
	writeFile(t, d, name, []byte("-----BEGIN "+typ+"-----\nZ2FyYmFnZQ==\n-----END "+typ+"-----\n"))
}

// heldFirstRun starts veritygen (args) in d and holds it once its
// temporary file for output is created and locked (see testtool.Held);
// it fails the test unless that run completes once released, after the
// row, with output written.
func heldFirstRun(output string, args ...string) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		randomFile(t, d, "d.img", mib, 51)
		randomFile(t, d, "e.img", mib, 52)
		stale := "." + output + ".tmp0123456789ab"
		writeFile(t, d, stale, nil)
		first := testtool.StartHeld(t, d, stale, bins["veritygen"], withGen(args...)...)
		heldRuns[t.Name()] = first
	}
}

// heldRuns are the first runs heldFirstRun holds, by test.
var heldRuns = map[string]*testtool.Held{}

// releaseFirst lets the held first run finish: it must succeed.
func releaseFirst(output string) func(t *testing.T, d string, o *outcome) {
	return func(t *testing.T, d string, o *outcome) {
		first := heldRuns[t.Name()]
		delete(heldRuns, t.Name())
		code, _, stderr := first.Release()
		if code != 0 {
			t.Errorf("the first run, released: exit %d\n%s", code, stderr)
		}
		readFile(t, d, output)
	}
}

var messageAttacks = []attack{
	// 11: reads of a file a writer holds.
	{item: "T11", name: "veritycheck IMAGE while a run gives it its footer",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "a.img", mib, 41)
			lock(t, d, "a.img")
		},
		prog: "veritycheck", args: []string{"a.img"}, exit: []int{2},
		stderr: []string{`DATA a\.img is locked by another process`}, notStderr: []string{"no root hash"}},
	{item: "T11", name: "veritycheck on an AVB image being written",
		setup: func(t *testing.T, d string) {
			avbOf(t, d, "a.img", 42)
			lock(t, d, "a.img")
		},
		prog: "veritycheck", args: []string{"--avb", "a.img"}, exit: []int{2},
		stderr: []string{`image a\.img is locked by another process`},
		after: func(t *testing.T, d string, o *outcome) {
			if o.stdout != "" {
				t.Errorf("the image was read while locked:\n%s", o.stdout)
			}
		}},
	{item: "T11", name: "avbtool info_image while a run gives the image its footer",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "a.img", mib, 43)
			lock(t, d, "a.img")
		},
		prog: "avbtool", args: []string{"info_image", "--image", "a.img"}, exit: []int{1},
		stderr: []string{`avbtool: error: image a\.img is locked by another process`}, notStderr: []string{"footer"}},
	{item: "T11", name: "avbtool verify_image of an image being written",
		setup: func(t *testing.T, d string) {
			avbOf(t, d, "a.img", 44)
			lock(t, d, "a.img")
		},
		prog: "avbtool", args: []string{"verify_image", "--image", "a.img"}, exit: []int{1},
		stderr: []string{`image a\.img is locked by another process`}, notStderr: []string{"Successfully"}},
	{item: "T11", name: "veritycheck --dump of a tree being written",
		setup: func(t *testing.T, d string) {
			writeFile(t, d, "h", make([]byte, 8192))
			lock(t, d, "h")
		},
		prog: "veritycheck", args: []string{"--dump", "h"}, exit: []int{2},
		stderr: []string{`HASH h is locked by another process`}, notStderr: []string{"superblock"}},
	{item: "T11", name: "veritysetup dump of a tree being written",
		setup: func(t *testing.T, d string) {
			writeFile(t, d, "h", make([]byte, 8192))
			lock(t, d, "h")
		},
		prog: "veritysetup", args: []string{"dump", "h"}, exit: []int{5},
		stderr: []string{`HASH h is locked by another process`}, notStderr: []string{"not a valid VERITY device"}},
	{item: "T11", name: "veritygen onto a HASH another run writes in place",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 45)
			randomFile(t, d, "h", mib, 46) // half-written: no superblock yet
			lock(t, d, "h")
		},
		prog: "veritygen", args: withGen("d.img", "h"), exit: []int{2},
		stderr: []string{`HASH h is locked by another process`}, notStderr: []string{"--force", "not a tree"}},

	// 12: the second writer of an output that does not exist yet.
	{item: "T12", name: "a second writer of a new HASH, the first held",
		setup: heldFirstRun("h", "d.img", "h"),
		prog:  "veritygen", args: withGen("e.img", "h"), exit: []int{2},
		stderr: []string{`HASH h is locked by another process, which is writing it \(its temporary file \.h\.tmp[0-9a-f]{12} is held\)`},
		after:  releaseFirst("h")},
	{item: "T12", name: "a second writer of a new --fec-device, the first held",
		setup: heldFirstRun("p.fec", "--fec-device=p.fec", "d.img", "h1"),
		prog:  "veritygen", args: withGen("--fec-device=p.fec", "e.img", "h2"), exit: []int{2},
		stderr: []string{`FEC device p\.fec is locked by another process, which is writing it`},
		after:  releaseFirst("p.fec")},
	{item: "T12", name: "a second writer of a new --root-hash-file, the first held",
		setup: heldFirstRun("r.hex", "--root-hash-file=r.hex", "d.img", "h1"),
		prog:  "veritygen", args: withGen("--root-hash-file=r.hex", "e.img", "h2"), exit: []int{2},
		stderr: []string{`--root-hash-file r\.hex is locked by another process, which is writing it`},
		after:  releaseFirst("r.hex")},

	// 13: messages in our words, with the right numbers.
	{item: "T13", name: "a garbage PEM key",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "a.img", mib, 47)
			garbageKey(t, d, "k.pem", "RSA PRIVATE KEY")
		},
		prog: "avbtool", args: []string{"add_hashtree_footer", "--image", "a.img", "--algorithm", "SHA256_RSA2048", "--key", "k.pem"}, exit: []int{1},
		stderr: []string{`key k\.pem: its "RSA PRIVATE KEY" block does not hold a valid PKCS#1 RSA private key`}, notStderr: notGo("tags don't match")},
	{item: "T13", name: "a garbage PEM key as --avb-key",
		setup: func(t *testing.T, d string) {
			avbOf(t, d, "a.img", 48)
			garbageKey(t, d, "k.pem", "PUBLIC KEY")
		},
		prog: "veritycheck", args: []string{"--avb-key=k.pem", "a.img"}, exit: []int{2},
		stderr: []string{`does not hold a valid public key`}, notStderr: notGo("publicKeyInfo @")},
	{item: "T13", name: "avbtool --salt abc",
		setup: func(t *testing.T, d string) { randomFile(t, d, "a.img", mib, 49) },
		prog:  "avbtool", args: []string{"add_hashtree_footer", "--image", "a.img", "--salt", "abc"}, exit: []int{1},
		stderr: []string{`avbtool: Adding hashtree_footer failed: Odd-length string.\n`}, notStderr: notGo("odd length", "encoding/hex")},
	{item: "T13", name: "avbtool --block_size 2^32",
		setup: func(t *testing.T, d string) { randomFile(t, d, "a.img", mib, 50) },
		prog:  "avbtool", args: []string{"add_hashtree_footer", "--image", "a.img", "--block_size", "4294967296", "--do_not_generate_fec"}, exit: []int{1},
		stderr: []string{`error: block size 4294967296: must be a power of two from 512 to 524288\n`}, notStderr: notGo("1073741824", "block size 4294967296: block size")},
	{item: "T13", name: "a descriptor with 255 FEC roots",
		setup: func(t *testing.T, d string) {
			avbOf(t, d, "a.img", 53)
			patchDescriptor(t, d, "a.img", 36, 255)
		},
		prog: "veritycheck", args: []string{"a.img"}, exit: []int{2},
		stderr: []string{`a\.img: malformed AVB data: hashtree descriptor: FEC with 255 roots, where dm-verity takes 2 to 24`}, notStderr: notGo("--fec-roots")},
	{item: "T13", name: "a descriptor's image size that fits but is not whole blocks",
		setup: func(t *testing.T, d string) {
			avbOf(t, d, "a.img", 54)
			patchDescriptor(t, d, "a.img", 4, mib+100)
		},
		prog: "veritycheck", args: []string{"a.img"}, exit: []int{2},
		stderr: []string{`an image size of 1048676 bytes, not a multiple of its block size 4096`}, notStderr: notGo("does not fit")},
	{item: "T13", name: "a descriptor's image size of 0",
		setup: func(t *testing.T, d string) {
			avbOf(t, d, "a.img", 55)
			patchDescriptor(t, d, "a.img", 4, 0)
		},
		prog: "avbtool", args: []string{"verify_image", "--image", "a.img"}, exit: []int{1},
		stderr: []string{`an image size of 0 bytes: there is no data for a tree`}, notStderr: notGo("does not fit the")},
	{item: "T13", name: "a partition size of 2^63-1",
		setup: func(t *testing.T, d string) { randomFile(t, d, "a.img", mib, 56) },
		prog:  "avbtool", args: []string{"add_hashtree_footer", "--image", "a.img", "--partition_size", "9223372036854775807"}, exit: []int{1},
		stderr: []string{`partition size 9223372036854775807 is too large`, `hint: at most 4611686018427387904`}, notStderr: notGo("9223372036854775808", "round it up")},
	{item: "T13", name: "a partition too small for any image",
		setup: func(t *testing.T, d string) { randomFile(t, d, "a.img", mib, 57) },
		prog:  "avbtool", args: []string{"add_hashtree_footer", "--image", "a.img", "--partition_size", "4096"}, exit: []int{1},
		stderr: []string{`a partition size of 4096 leaves no room for any image`}, notStderr: notGo("size of -")},
	{item: "T13", name: "veritycheck --avb on an empty file",
		setup: func(t *testing.T, d string) { writeFile(t, d, "e.img", nil) },
		prog:  "veritycheck", args: []string{"--avb", "e.img"}, exit: []int{2},
		stderr: []string{`e\.img: the file is empty: no AVB footer, no vbmeta blob`}, notStderr: notGo("shorter than its header")},
	{item: "T13", name: "ENOSPC while writing HASH, in our words",
		setup: func(t *testing.T, d string) {
			mountSmallFS(t, filepath.Join(d, "small"), 256<<10)
			writeFile(t, d, "big.img", nil)
			if err := os.Truncate(filepath.Join(d, "big.img"), 64*mib); err != nil {
				t.Fatal(err)
			}
		},
		prog: "veritygen", args: withGen("big.img", "small/h"), exit: []int{2},
		stderr: []string{`writing HASH small/h at byte \d+: no space left on device`}, notStderr: notGo(".tmp", "write small")},
}
