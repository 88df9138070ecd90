package peer_test

// The differences allowed between avbtool 1.3.0 and the avbtool front, as
// rules_test.go's for veritysetup: avbAcceptedRules are deliberate (the
// README's deliberate differences of the avbtool front), avbKnownDivergences
// are bugs of the front still to fix.

import (
	"regexp"
	"strings"
)

type avbRule = peerRule[*avbResult]

func (r *avbResult) sub() string {
	if len(r.args) == 0 {
		return ""
	}
	return r.args[0]
}

func (r *avbResult) has(name string) bool {
	_, ok := r.opt(name)
	return ok
}

// opt returns the value of an option of the step (its last, as argparse
// keeps), in the spellings the generator writes.
func (r *avbResult) opt(name string) (string, bool) {
	v, found := "", false
	for i := 1; i < len(r.args); i++ {
		a := r.args[i]
		switch {
		case a == name || len(a) > 8 && strings.HasPrefix(name, a) && a == name[:len(name)-2]:
			found = true
			if i+1 < len(r.args) {
				v = r.args[i+1]
			}
		case strings.HasPrefix(a, name+"="):
			v, found = a[len(name)+1:], true
		}
	}
	return v, found
}

func (s *avbSide) says(re string) bool { return regexp.MustCompile(re).MatchString(s.stderr) }

func (r *avbResult) bothFail() bool { return r.real.code != 0 && r.ours.code != 0 }

// outputNames are the values of the step's options naming files it
// writes.
func (r *avbResult) outputNames() map[string]bool {
	out := map[string]bool{}
	for _, o := range []string{"--output", "--output_vbmeta_image"} {
		if v, ok := r.opt(o); ok {
			out[strings.TrimPrefix(v, "./")] = true
		}
	}
	return out
}

// onlyEmptiedOutputs reports whether the files differ only in --output
// files avbtool created or emptied (size 0) and the front left as they
// were.
func (r *avbResult) onlyEmptiedOutputs() bool {
	outs := r.outputNames()
	names := map[string]bool{}
	for n := range r.real.files {
		names[n] = true
	}
	for n := range r.ours.files {
		names[n] = true
	}
	for n := range names {
		rs, inR := r.real.files[n]
		os, inO := r.ours.files[n]
		if inR == inO && (rs == nil) == (os == nil) && (rs == nil || *rs == *os) {
			continue
		}
		if !outs[n] || !inR || rs == nil || !strings.HasPrefix(*rs, "0 ") || inO {
			return false
		}
	}
	return true
}

var avbAcceptedRules = []avbRule{
	{
		name:   "--output files are not emptied by a run that fails or only prints",
		covers: []string{"files"},
		reason: "avbtool creates (empties) its --output files while it parses its arguments, even when it then fails " +
			"or prints only (--print_required_libavb_version); the front creates nothing it does not write",
		match: func(r *avbResult) bool { return r.onlyEmptiedOutputs() },
	},
	{
		name:   "a Python traceback is one line in our words",
		covers: []string{"gist"},
		reason: "where avbtool dies of a Python exception (a missing key file, an included file that is not an AVB " +
			"image), the front says what is wrong in one line of its own, exit 1 as Python's",
		match: func(r *avbResult) bool {
			return r.real.code == 1 && r.ours.code == 1 && strings.HasPrefix(r.real.gist, "traceback: ") &&
				r.ours.says(`(?m)^avbtool: error: `)
		},
	},
	{
		name:   "a failed run changes no file",
		covers: []string{"files"},
		reason: "where avbtool fails half-way (a Python exception after it began writing), it leaves the image " +
			"half-written; the front refuses before writing, or puts back what it wrote",
		match: func(r *avbResult) bool { return r.bothFail() && r.ours.files == nil },
	},
	{
		name:   "Python's words in avbtool's message are ours",
		covers: []string{"gist"},
		reason: "add_hash_footer without --partition_name: avbtool fails encoding a descriptor without a name ('Adding " +
			"hash_footer failed: 'NoneType' object has no attribute 'encode'.'); the front fails at the same point, " +
			"exit 1, nothing written, and says 'Adding hash_footer failed: --partition_name is required.'; and " +
			"add_hashtree_footer of an Android sparse image of no blocks, where avbtool's tree code fails ('cannot access " +
			"local variable 'level_output''): the front says the image is empty",
		match: func(r *avbResult) bool {
			return r.real.code == 1 && r.ours.code == 1 && (r.real.says(`'NoneType' object has no attribute`) &&
				r.ours.gist == "Adding hash_footer failed: --partition_name is required." ||
				r.real.says(`cannot access local variable 'level_output'`) && strings.HasSuffix(r.ours.gist, " is empty"))
		},
	},
	{
		name:   "openssl's own words are not quoted",
		covers: []string{"gist"},
		reason: "avbtool runs openssl to read keys and sign, and quotes its stderr (its version's words, thread " +
			"addresses, source paths) in its message; the front runs no openssl and says what is wrong with the key itself",
		match: func(r *avbResult) bool {
			return r.real.code == 1 && r.ours.code == 1 && r.real.says(`(Error getting public key|Error signing): b['"]`)
		},
	},
	{
		name:   "--block_size not a power of two is refused",
		covers: all,
		reason: "avbtool writes a tree of, say, 3000-byte blocks that no kernel opens; the front takes powers of two " +
			"from 512 to 512 KiB, exit 1",
		match: func(r *avbResult) bool {
			return r.sub() == "add_hashtree_footer" && r.has("--block_size") && r.ours.code == 1 &&
				strings.Contains(r.ours.gist, "must be a power of two")
		},
	},
	{
		name:   "append_vbmeta_image refuses a partition too small",
		covers: all,
		reason: "avbtool exits 0 with a broken file when the partition cannot hold the image, its vbmeta and its " +
			"footer; the front refuses, exit 1, nothing written",
		match: func(r *avbResult) bool {
			return r.sub() == "append_vbmeta_image" && r.ours.code == 1 && strings.Contains(r.ours.gist, "more than the partition size") &&
				r.ours.files == nil
		},
	},
	{
		name:   "without a subcommand it takes, the front lists those it takes",
		covers: []string{"stdout", "gist"},
		reason: "a wrapper learns which subcommands to send to the real avbtool; exit 2 as argparse's",
		match: func(r *avbResult) bool {
			return r.real.code == 2 && r.ours.code == 2 && (len(r.args) == 0 || !frontTakes[r.args[0]]) &&
				r.ours.says(`avbtool front|not one of`)
		},
	},
	{
		name:   "zero_hashtree of a tree of no bytes",
		covers: all,
		reason: "an image of one block has a hashtree descriptor with an empty tree; avbtool writes its 4096-byte " +
			"marker block anyway, which moves the vbmeta past where the footer points: info_image and verify_image then " +
			"say 'Given image does not look like a vbmeta image.' (a broken image, exit 0); the front refuses",
		match: func(r *avbResult) bool {
			return r.sub() == "zero_hashtree" && r.real.code == 0 && strings.Contains(r.ours.gist, "the tree is 0 bytes")
		},
	},
	{
		name:   "no vbmeta digest of a footer that points outside the image",
		covers: all,
		reason: "a damaged footer's vbmeta offset past the image: avbtool hashes what its reader gives there (nothing, " +
			"or a default header's sizes), a digest no device computes (libavb refuses the image), exit 0; the front " +
			"refuses, exit 1, nothing written",
		match: func(r *avbResult) bool {
			return r.sub() == "calculate_vbmeta_digest" && r.real.code == 0 && r.ours.code == 1 &&
				strings.Contains(r.ours.gist, "malformed AVB data: AVB footer: vbmeta at")
		},
	},
	{
		name:   "a partition too small for any image is said in our words",
		covers: []string{"gist"},
		reason: "avbtool says the image 'exceeds maximum image size of -N' (its room less than nothing); the front says " +
			"the partition size leaves no room for any image and what the tree, FEC and metadata take, exit 1 as avbtool",
		match: func(r *avbResult) bool {
			return r.real.code == 1 && r.ours.code == 1 && r.real.says(`exceeds maximum image size of -`) &&
				r.ours.says(`leaves no room for any image`)
		},
	},
}

// frontTakes are the subcommands of the avbtool front.
var frontTakes = map[string]bool{}

func init() {
	for _, c := range []string{"add_hash_footer", "add_hashtree_footer", "append_vbmeta_image", "calculate_kernel_cmdline",
		"calculate_vbmeta_digest", "erase_footer", "extract_public_key", "extract_vbmeta_image", "info_image",
		"make_vbmeta_image", "print_partition_digests", "resize_image", "verify_image", "version", "zero_hashtree"} {
		frontTakes[c] = true
	}
}

// avbKnownDivergences are the classes of difference known to be the
// front's bugs, each with a reproducer in the README's "To fix (avbtool)":
// none at present (a new class is a failure until it is fixed or named).
var avbKnownDivergences = []avbRule{}

// addAVB counts an avbtool case and returns its verdict, as tally.add.
func (t *tally) addAVB(r *avbResult) string {
	return addCase(t, r, r.diffs, r.real.stderr == r.ours.stderr, avbAcceptedRules, avbKnownDivergences)
}
