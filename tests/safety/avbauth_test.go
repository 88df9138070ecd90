package safety_test

// The AVB trust issue's attacks (items 2, 5, 6, 7), on the crafted images
// of internal/avbcraft: veritycheck decides as libavb does, and nothing
// cuts image data that the signed descriptor covers because the unsigned
// footer says so; the avbtool front's verify_image answers as avbtool.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/avbcraft"
)

// crafted returns a setup writing the crafted image name as dir/file, the
// public key that signed it as dir/key.pem and its private key as
// dir/sign.pem.
func crafted(name, file string) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		keys, err := filepath.Abs("../../avb/testdata/vectors/keys")
		if err != nil {
			t.Fatal(err)
		}
		if err := avbcraft.ByName(name).Make(filepath.Join(d, file), keys); err != nil {
			t.Fatal(err)
		}
		for file, key := range map[string]string{"key.pem": avbcraft.PubKey, "sign.pem": avbcraft.Key} {
			b, err := os.ReadFile(filepath.Join(keys, key))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, d, file, b)
		}
	}
}

var avbRerun = []string{"add_hashtree_footer", "--image", "system.img", "--partition_name", "system", "--hash_algorithm", "sha256",
	"--salt", avbcraft.Salt, "--algorithm", avbcraft.Algorithm, "--key", "sign.pem", "--do_not_generate_fec"}

var avbauthAttacks = []attack{
	// 2: a footer that disagrees with its signed descriptor.
	{item: "avb-2", name: "footer original size 4096 on a signed 4 MiB image: veritycheck",
		setup: crafted("footer-orig-4096", "system.img"), prog: "veritycheck", args: []string{"system.img"}, exit: []int{2},
		stderr: []string{`original image size is 4096 bytes, but the hashtree descriptor of partition "system" covers 4194304 bytes`}},
	{item: "avb-2", name: "footer original size 4096: avbtool erase_footer",
		setup: crafted("footer-orig-4096", "system.img"), prog: "avbtool", args: []string{"erase_footer", "--image", "system.img"}, exit: []int{1},
		stderr: []string{`avbtool: error: system\.img: .*would cut the image to 4096 bytes, but the hashtree descriptor .* 4194304 bytes`, `nothing was cut`}},
	{item: "avb-2", name: "footer original size 4096: avbtool add_hashtree_footer again",
		setup: crafted("footer-orig-4096", "system.img"), prog: "avbtool", args: avbRerun, exit: []int{1},
		stderr: []string{`would cut the image to 4096 bytes`}},
	{item: "avb-2", name: "footer original size 4096: veritygen --append --avb again",
		setup: crafted("footer-orig-4096", "system.img"), prog: "veritygen",
		args: []string{"--append", "--avb", "--hash", "sha256", "--partition-name", "system", "system.img"}, exit: []int{2},
		stderr: []string{`veritygen: error: .*would cut the image to 4096 bytes`}},
	{item: "avb-2", name: "footer original size 100 bytes short of the data: avbtool erase_footer",
		setup: crafted("footer-orig-minus-100", "system.img"), prog: "avbtool", args: []string{"erase_footer", "--image", "system.img"}, exit: []int{1},
		stderr: []string{`would cut the image to 1048476 bytes`}},
	{item: "avb-2", name: "hash image, footer original size 4096: avbtool erase_footer",
		setup: crafted("hash-orig-small", "boot.img"), prog: "avbtool", args: []string{"erase_footer", "--image", "boot.img"}, exit: []int{1},
		stderr: []string{`the hash descriptor of partition "boot" says its image data is 100000 bytes`}},
	{item: "avb-2", name: "a consistent footer (padded image) is erased as avbtool erases it",
		setup: crafted("footer-orig-unpadded", "system.img"), prog: "avbtool", args: []string{"erase_footer", "--image", "system.img"}, exit: []int{0},
		mayChange: []string{"system.img"},
		after: func(t *testing.T, d string, _ *outcome) {
			if fi, err := os.Stat(filepath.Join(d, "system.img")); err != nil || fi.Size() != 1<<20+100 {
				t.Errorf("system.img: %v, want 1048676 bytes", err)
			}
		}},
	// 5: an unsigned vbmeta that embeds the victim's public key.
	{item: "avb-5", name: "unsigned vbmeta embedding the --avb-key key: veritycheck",
		setup: crafted("none-victim-key", "system.img"), prog: "veritycheck", args: []string{"--avb-key", "key.pem", "system.img"}, exit: []int{1},
		stderr: []string{`not signed \(algorithm NONE\), so not with the key given`}},
	{item: "avb-5", name: "unsigned vbmeta without a key: veritycheck",
		setup: crafted("unsigned", "system.img"), prog: "veritycheck", args: []string{"system.img"}, exit: []int{1},
		stderr: []string{`OK_NOT_SIGNED`}},
	{item: "avb-5", name: "unsigned vbmeta embedding the key: avbtool verify_image --key passes, as avbtool",
		setup: crafted("none-victim-key", "system.img"), prog: "avbtool", args: []string{"verify_image", "--image", "system.img", "--key", "key.pem"},
		exit: []int{0}},
	// 6: a second hashtree descriptor for the partition with a wrong root.
	{item: "avb-6", name: "second hashtree descriptor, wrong root: veritycheck",
		setup: crafted("second-hashtree-wrong-root", "system.img"), prog: "veritycheck", args: []string{"system.img"}, exit: []int{1},
		stderr: []string{`hashtree descriptor 2 of partition "system" does not match the image`}},
	{item: "avb-6", name: "second hashtree descriptor, wrong root: avbtool verify_image",
		setup: crafted("second-hashtree-wrong-root", "system.img"), prog: "avbtool", args: []string{"verify_image", "--image", "system.img"},
		exit: []int{1}, stderr: []string{`^hashtree of system\.img does not match descriptor\n\S*avbtool: Error verifying descriptor\.\n$`}},
	// 7: a vbmeta that requires libavb 2.0 (and 1.99).
	{item: "avb-7", name: "vbmeta requiring libavb 2.0: veritycheck",
		setup: crafted("required-2.0", "system.img"), prog: "veritycheck", args: []string{"--avb-key", "key.pem", "system.img"}, exit: []int{2},
		stderr: []string{`requires libavb 2\.0, libavb 1\.3 .*refuses it`}},
	{item: "avb-7", name: "vbmeta requiring libavb 1.99: veritycheck",
		setup: crafted("required-1.99", "system.img"), prog: "veritycheck", args: []string{"system.img"}, exit: []int{2},
		stderr: []string{`requires libavb 1\.99`}},
	{item: "avb-7", name: "vbmeta requiring libavb 2.0: avbtool verify_image passes, as avbtool",
		setup: crafted("required-2.0", "system.img"), prog: "avbtool", args: []string{"verify_image", "--image", "system.img"}, exit: []int{0}},
}

func init() { moreAttacks = append(moreAttacks, avbauthAttacks) }
