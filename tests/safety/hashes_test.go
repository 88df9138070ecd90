package safety_test

// Hash algorithm names (the fidelity issue's item 6): the names veritysetup
// takes and we do too, and those we refuse, each the way veritysetup or
// our commands say it, with nothing written.

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// vsFormat runs the real veritysetup format in dir, failing the setup
// unless it succeeds.
func vsFormat(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(testtool.Require(t, "veritysetup"), append([]string{"format"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup: veritysetup format %v: %v\n%s", args, err, out)
	}
}

var hashAttacks = []attack{
	{item: "h1", name: "veritygen --hash=whirlpool (veritysetup has it, Go has none)",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 61) },
		prog:  "veritygen", args: withGen("--hash=whirlpool", "d.img", "h.img"), exit: []int{2},
		stderr: []string{`hash algorithm "whirlpool" is not supported: Go has no Whirlpool, the kernel's wp512 \(supported: sha1, .*rmd160\)`}},
	{item: "h1", name: "veritygen --hash=sha512-256 (not in the kernel)",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 62) },
		prog:  "veritygen", args: withGen("--hash=sha512-256", "d.img", "h.img"), exit: []int{2},
		stderr: []string{`"sha512-256" is not supported: the kernel has no sha512-256: dm-verity could not open the tree`}},
	{item: "h1", name: "the veritysetup front refuses whirlpool as veritysetup refuses an unknown name",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 63) },
		prog:  "veritysetup", args: []string{"format", "--hash=whirlpool", "d.img", "h.img"}, exit: []int{1},
		stderr: []string{`^Hash algorithm whirlpool not supported\.\n$`}},
	{item: "h1", name: "the avbtool front refuses sm3",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 64) },
		prog:  "avbtool", args: []string{"add_hashtree_footer", "--image", "d.img", "--partition_size", "2097152", "--hash_algorithm", "sm3", "--do_not_generate_fec"},
		exit: []int{1}, stderr: []string{`hash algorithm "sm3" is not supported: Go has no SM3`}},
	{item: "h2", name: "veritycheck of veritysetup's sm3 tree",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 65)
			vsFormat(t, d, "--hash=sm3", "--salt="+salt, "d.img", "h.img")
		},
		prog: "veritycheck", args: []string{"--root-hash=" + salt, "d.img", "h.img"}, exit: []int{2},
		stderr: []string{`bad verity superblock: algorithm \(at byte 32\): hash algorithm "sm3" is not supported: Go has no SM3`, `hint: the tree was made with an algorithm this program does not have`}},
	{item: "h2", name: "veritycheck of veritysetup's ripemd160 tree",
		setup: func(t *testing.T, d string) {
			randomFile(t, d, "d.img", mib, 66)
			vsFormat(t, d, "--hash=ripemd160", "--salt="+salt, "--root-hash-file=r.hex", "d.img", "h.img")
		},
		prog: "veritycheck", args: []string{"--root-hash-file=r.hex", "d.img", "h.img"}, exit: []int{0},
		stderr: []string{`^$`}},
	{item: "h2", name: "the veritysetup front formats --hash=RIPEMD-160, the superblock naming ripemd-160",
		setup: func(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 67) },
		prog:  "veritysetup", args: []string{"format", "--hash=RIPEMD-160", "--salt=" + salt, "d.img", "h.img"}, exit: []int{0},
		stderr: []string{`^$`}, mayChange: []string{"h.img"},
		after: func(t *testing.T, d string, o *outcome) {
			if out := run(t, d, "veritycheck", "--dump", "h.img"); !strings.Contains(out, "Hash algorithm:  \tripemd-160\n") {
				t.Errorf("the superblock does not name ripemd-160:\n%s", out)
			}
		}},
}

func init() { moreAttacks = append(moreAttacks, hashAttacks) }
