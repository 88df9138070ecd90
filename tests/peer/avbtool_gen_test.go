package peer_test

// The avbtool generator: each case is drawn from its own random stream
// (the run's seed and the case's index). A case is its input files (in
// internal/avbvectors' notation, so that the front's replay makes the same
// bytes without avbtool), then steps run in one directory: avbtool command
// lines (preparations and the line under test, all compared) and the
// harness's own changes between them ("@poke", "@trunc", "@simg", ...: a
// damaged byte, an Android sparse copy).

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// avbCase is one generated case, as recorded (JSON).
type avbCase struct {
	Index  int               `json:"index"`
	Kind   string            `json:"kind"`
	Inputs map[string]string `json:"inputs"` // name -> "spec:..." (avbvectors.InputBytes) or "dir"
	Steps  [][]string        `json:"steps"`  // avbtool's arguments, or a harness step ("@...")
	// RandomSalt: the last step draws a random salt (no --salt): its
	// files are compared by size only.
	RandomSalt bool `json:"random_salt,omitempty"`
}

// avbGen draws one case.
type avbGen struct {
	r *rand.Rand
	c *avbCase
}

// The keys and algorithms of avb/testdata/vectors/keys.
var (
	avbKeyBits = []int{2048, 4096, 8192}
	avbHashes  = []string{"sha256", "sha512"}
)

func genAVB(seed uint64, index int) *avbCase {
	// A stream apart from the veritysetup generator's for the same seed.
	g := &avbGen{r: rand.New(rand.NewPCG(seed^0xa7b70015eed, uint64(index))), c: &avbCase{Index: index, Inputs: map[string]string{}}}
	kinds := []struct {
		name   string
		weight int
		f      func()
	}{
		{"add_hash_footer", 16, g.hashFooter},
		{"add_hashtree_footer", 14, g.hashtreeFooter},
		{"make_vbmeta_image", 12, g.makeVbmeta},
		{"append_vbmeta_image", 5, g.appendVbmeta},
		{"read", 30, g.readOnly},
		{"change", 15, g.changeFooter},
		{"misc", 8, g.misc},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := g.r.IntN(total)
	for _, k := range kinds {
		if n < k.weight {
			g.c.Kind = k.name
			k.f()
			break
		}
		n -= k.weight
	}
	return g.c
}

func (g *avbGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *avbGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *avbGen) step(args ...string) { g.c.Steps = append(g.c.Steps, append([]string{}, args...)) }

// image adds an input file of about blocks 4096-byte blocks: counted
// bytes, runs of zeros (which img2simg makes DONT_CARE chunks), and
// sometimes a tail that is not a whole block.
func (g *avbGen) image(name string, blocks int) int64 {
	var parts []string
	var size int64
	for left := blocks; left > 0; {
		n := 1 + g.r.IntN(left)
		switch g.r.IntN(3) {
		case 0:
			parts = append(parts, fmt.Sprintf("zero:%d", n*4096))
		case 1:
			parts = append(parts, fmt.Sprintf("fill:%02x:%d", 1+g.r.IntN(255), n*4096))
		default:
			parts = append(parts, fmt.Sprintf("blockbyte:4096:%d", n))
		}
		size += int64(n) * 4096
		left -= n
	}
	if g.chance(0.25) {
		t := 1 + g.r.IntN(4095)
		parts = append(parts, fmt.Sprintf("fill:%02x:%d", g.r.IntN(256), t))
		size += int64(t)
	}
	if blocks == 0 && len(parts) == 0 {
		parts = append(parts, "zero:0")
	}
	g.c.Inputs[name] = "spec:" + strings.Join(parts, "+")
	return size
}

// num writes n as avbtool's parse_number (int(s, 0)) reads it, now and
// then in another of the forms it takes or refuses.
func (g *avbGen) num(n int64) string {
	if !g.chance(0.12) {
		return strconv.FormatInt(n, 10)
	}
	switch g.r.IntN(12) {
	case 0:
		return fmt.Sprintf("0x%x", n)
	case 1:
		return fmt.Sprintf("0X%X", n)
	case 2:
		return fmt.Sprintf("0o%o", n)
	case 3:
		return fmt.Sprintf("0%o", n) // refused by int(s, 0) unless all zeros
	case 4:
		return "+" + strconv.FormatInt(n, 10)
	case 5:
		s := strconv.FormatInt(n, 10)
		if len(s) > 3 {
			return s[:len(s)-3] + "_" + s[len(s)-3:]
		}
		return "0_" + s
	case 6:
		return " " + strconv.FormatInt(n, 10) + " "
	case 7:
		return strconv.FormatInt(n, 10) + ".0"
	case 8:
		return "-" + strconv.FormatInt(n, 10)
	case 9:
		return g.pick("", "abc", "0x", "1e6", "0b101", "١٢٣")
	case 10:
		return fmt.Sprintf("0b%b", n)
	default:
		return "00"
	}
}

// salt is --salt's value: hex of a hash's length mostly, else odd ones.
func (g *avbGen) salt() string {
	if g.chance(0.9) {
		b := make([]byte, g.pick32(32, 32, 20, 64, 1, 8))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return fmt.Sprintf("%x", b)
	}
	return g.pick("", "abc", "zz", "0x00", "AABB", "00 11", "-")
}

func (g *avbGen) pick32(s ...int) int { return s[g.r.IntN(len(s))] }

// opt appends an option with its value in one of argparse's spellings:
// "--name value", "--name=value", or a unique prefix of the name.
func (g *avbGen) opt(args []string, name, value string) []string {
	switch {
	case g.chance(0.1):
		return append(args, name+"="+value)
	case g.chance(0.05) && len(name) > 8:
		return append(args, name[:len(name)-2], value) // argparse takes unambiguous prefixes
	}
	return append(args, name, value)
}

// signing adds --algorithm and --key, matching mostly.
func (g *avbGen) signing(args []string) []string {
	if g.chance(0.4) {
		if g.chance(0.1) {
			args = g.opt(args, "--algorithm", "NONE")
		}
		return args
	}
	bits := avbKeyBits[g.r.IntN(len(avbKeyBits))]
	alg := fmt.Sprintf("%s_RSA%d", strings.ToUpper(avbHashes[g.r.IntN(2)]), bits)
	key := fmt.Sprintf("keys/rsa%d.pem", bits)
	switch {
	case g.chance(0.05):
		alg = fmt.Sprintf("SHA256_RSA%d", avbKeyBits[g.r.IntN(3)]) // perhaps not the key's size
	case g.chance(0.03):
		alg = g.pick("SHA1_RSA2048", "sha256_rsa2048", "", "SHA256_RSA1024", "NONE")
	case g.chance(0.03):
		key = g.pick("keys/missing.pem", fmt.Sprintf("keys/rsa%d.pub.pem", bits), fmt.Sprintf("keys/rsa%d.avbpubkey", bits), "props/text.txt", "keys")
	case g.chance(0.03):
		key = "" // no --key
	}
	args = g.opt(args, "--algorithm", alg)
	if key != "" {
		args = g.opt(args, "--key", key)
	}
	if g.chance(0.1) {
		args = g.opt(args, "--public_key_metadata", g.pick("props/pkmd.bin", "props/blob.bin", "props/missing.bin"))
	}
	return args
}

// common adds the common vbmeta options.
func (g *avbGen) common(args []string) []string {
	args = g.signing(args)
	if g.chance(0.15) {
		args = g.opt(args, "--rollback_index", g.num(int64(g.r.IntN(100000))))
	}
	if g.chance(0.1) {
		args = g.opt(args, "--rollback_index_location", g.num(int64(g.r.IntN(40))))
	}
	for range g.r.IntN(3) {
		if g.chance(0.5) {
			args = g.opt(args, "--prop", g.pick("a:b", "com.android.build.boot.os_version:14", "key:", ":v", "novalue", "k:v:w", "ü:ß"))
		}
	}
	if g.chance(0.1) {
		args = g.opt(args, "--prop_from_file", g.pick("t:props/text.txt", "b:props/blob.bin", "m:props/missing", "nocolon"))
	}
	if g.chance(0.15) {
		args = g.opt(args, "--kernel_cmdline", g.pick("quiet", "console=ttyS0 root=/dev/dm-0", "", "a\"b"))
	}
	if g.chance(0.08) {
		args = g.opt(args, "--internal_release_string", g.pick("", "rel 1", "x"))
	}
	if g.chance(0.08) {
		args = g.opt(args, "--append_to_release_string", g.pick("", "suffix", "a b"))
	}
	if g.chance(0.08) {
		args = g.opt(args, "--flags", g.num(int64(g.r.IntN(4))))
	}
	if g.chance(0.05) {
		args = append(args, "--set_hashtree_disabled_flag")
	}
	if g.chance(0.05) {
		args = append(args, "--print_required_libavb_version")
	}
	if g.chance(0.06) {
		args = g.chain(args)
	}
	return args
}

// chain adds a --chain_partition (or _do_not_use_ab) option.
func (g *avbGen) chain(args []string) []string {
	name := g.pick("--chain_partition", "--chain_partition_do_not_use_ab")
	part := g.pick("system", "vendor", "vbmeta_system", "boot")
	loc := strconv.Itoa(1 + g.r.IntN(4))
	key := fmt.Sprintf("keys/rsa%d.avbpubkey", avbKeyBits[g.r.IntN(3)])
	switch g.r.IntN(10) {
	case 0:
		loc = g.pick("0", "x", "-1")
	case 1:
		key = g.pick("keys/missing.avbpubkey", "keys/rsa2048.pem")
	case 2:
		return g.opt(args, name, g.pick("system:1", "system", ":1:keys/rsa2048.avbpubkey"))
	}
	return g.opt(args, name, part+":"+loc+":"+key)
}

// footerPrep appends steps that give name an AVB footer, by avbtool: a
// hash or a hashtree footer, signed or not; it returns its partition
// size and whether it is a hashtree.
func (g *avbGen) footerPrep(name string, blocks int) (psize int64, tree bool) {
	g.image(name, blocks)
	psize = int64(blocks*102/100+24+g.r.IntN(8)) * 4096
	tree = g.chance(0.5)
	var args []string
	if tree {
		args = []string{"add_hashtree_footer", "--image", name, "--partition_size", strconv.FormatInt(psize, 10),
			"--partition_name", g.pick("system", "vendor", "product"), "--do_not_generate_fec", "--salt", g.fixedSalt()}
		if g.chance(0.3) {
			args = append(args, "--hash_algorithm", g.pick("sha256", "sha512", "sha1"))
		}
	} else {
		args = []string{"add_hash_footer", "--image", name, "--partition_size", strconv.FormatInt(psize, 10),
			"--partition_name", g.pick("boot", "dtbo", "init_boot"), "--salt", g.fixedSalt()}
	}
	if g.chance(0.5) {
		bits := avbKeyBits[g.r.IntN(2)]
		args = append(args, "--algorithm", fmt.Sprintf("SHA256_RSA%d", bits), "--key", fmt.Sprintf("keys/rsa%d.pem", bits))
	}
	if g.chance(0.2) {
		args = append(args, "--rollback_index", strconv.Itoa(g.r.IntN(9)))
	}
	if g.chance(0.2) {
		args = append(args, "--prop", "p:v")
	}
	g.step(args...)
	return psize, tree
}

func (g *avbGen) fixedSalt() string {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(g.r.IntN(256))
	}
	return fmt.Sprintf("%x", b)
}

// sparse turns name into an Android sparse image (img2simg, its block
// size 4096 or now and then 1024).
func (g *avbGen) sparse(name string) {
	if g.chance(0.8) {
		g.step("@simg", name, "4096")
	} else {
		g.step("@simg", name, "1024")
	}
}

func (g *avbGen) hashFooter() {
	blocks := g.r.IntN(24)
	size := g.image("boot.img", blocks)
	if g.chance(0.15) {
		g.sparse("boot.img")
	}
	args := []string{"add_hash_footer"}
	if !g.chance(0.03) {
		args = g.opt(args, "--image", g.pick("boot.img", "boot.img", "boot.img", "boot.img", "boot.img", "boot.img", "boot.img", "boot.img", "missing.img", "adir"))
		g.c.Inputs["adir"] = "dir"
	}
	room := (size+4095)/4096*4096 + 69632 // past the image: a vbmeta and the footer, with room
	switch g.r.IntN(10) {
	case 0:
		args = append(args, "--dynamic_partition_size")
	case 1:
		args = g.opt(args, "--partition_size", g.num(room+int64(g.r.IntN(4))*4096-4096*int64(g.r.IntN(20))))
	case 2:
		args = g.opt(args, "--partition_size", g.num(room+int64(g.r.IntN(4096))))
	case 3:
		// none: the footer at the end, no partition size
	default:
		args = g.opt(args, "--partition_size", g.num(room+int64(g.r.IntN(8))*4096))
	}
	if g.chance(0.85) {
		args = g.opt(args, "--partition_name", g.pick("boot", "init_boot", "vendor_boot", "dtbo", "", "a/b"))
	}
	if g.chance(0.2) {
		args = g.opt(args, "--hash_algorithm", g.pick("sha256", "sha1", "sha512", "sha224", "sha384", "SHA256", "md5", "blake2b", "nope"))
	}
	if g.chance(0.97) {
		args = g.opt(args, "--salt", g.salt())
	} else {
		g.c.RandomSalt = true
	}
	if g.chance(0.06) {
		args = append(args, "--calc_max_image_size")
	}
	if g.chance(0.1) {
		args = g.opt(args, "--output_vbmeta_image", g.pick("vb.img", "vb.img", "nodir/vb.img", "adir"))
		g.c.Inputs["adir"] = "dir"
	}
	if g.chance(0.08) {
		args = append(args, "--do_not_append_vbmeta_image")
	}
	if g.chance(0.06) {
		args = append(args, "--use_persistent_digest")
	}
	if g.chance(0.06) {
		args = append(args, "--do_not_use_ab")
	}
	args = g.common(args)
	g.shuffleOpts(args)
	g.step(args...)
	if g.chance(0.15) && !g.c.RandomSalt {
		g.step(args...) // again, on its own output
	}
}

// shuffleOpts moves options around (after the subcommand), keeping each
// option with its value.
func (g *avbGen) shuffleOpts(args []string) {
	if !g.chance(0.2) || len(args) < 3 {
		return
	}
	var groups [][]string
	for i := 1; i < len(args); i++ {
		if i+1 < len(args) && strings.HasPrefix(args[i], "--") && !strings.Contains(args[i], "=") && !strings.HasPrefix(args[i+1], "--") {
			groups = append(groups, args[i:i+2])
			i++
		} else {
			groups = append(groups, args[i:i+1])
		}
	}
	g.r.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	out := args[:1:1]
	for _, gr := range groups {
		out = append(out, gr...)
	}
	copy(args, out)
}

func (g *avbGen) hashtreeFooter() {
	blocks := 1 + g.r.IntN(40)
	if g.chance(0.05) {
		blocks = 0
	}
	size := g.image("system.img", blocks)
	if g.chance(0.15) {
		g.sparse("system.img")
	}
	args := []string{"add_hashtree_footer", "--image", "system.img"}
	if g.chance(0.03) {
		args[2] = g.pick("missing.img", "adir")
		g.c.Inputs["adir"] = "dir"
	}
	room := (size+4095)/4096*4096*102/100 + 81920
	switch g.r.IntN(8) {
	case 0:
		args = g.opt(args, "--partition_size", g.num(room-4096*int64(g.r.IntN(30))))
	case 1:
		args = g.opt(args, "--partition_size", g.num(room+int64(g.r.IntN(4096))))
	case 2:
		// none: the footer at the end
	default:
		args = g.opt(args, "--partition_size", g.num((room+4095)/4096*4096+int64(g.r.IntN(8))*4096))
	}
	if g.chance(0.85) {
		args = g.opt(args, "--partition_name", g.pick("system", "vendor", "product", ""))
	}
	if g.chance(0.3) {
		args = g.opt(args, "--hash_algorithm", g.pick("sha1", "sha256", "sha512", "sha224", "sha384", "SHA256", "md5", "nope"))
	}
	if g.chance(0.2) {
		b := int64(g.pick32(4096, 4096, 512, 1024, 2048, 8192, 65536, 3000, 0, 100))
		args = g.opt(args, "--block_size", g.num(b))
	}
	if g.chance(0.97) {
		args = g.opt(args, "--salt", g.salt())
	} else {
		g.c.RandomSalt = true
	}
	// FEC needs AOSP's fec program, which is not at hand where the answers
	// are recorded: every case leaves it out.
	args = append(args, "--do_not_generate_fec")
	if g.chance(0.05) {
		args = append(args, "--generate_fec") // the deprecated switch: a warning only
	}
	if g.chance(0.05) {
		args = g.opt(args, "--fec_num_roots", g.num(int64(g.r.IntN(5))))
	}
	if g.chance(0.06) {
		args = append(args, "--calc_max_image_size")
	}
	if g.chance(0.1) {
		args = g.opt(args, "--output_vbmeta_image", g.pick("vb.img", "vb.img", "nodir/vb.img"))
	}
	for _, f := range []string{"--do_not_append_vbmeta_image", "--setup_as_rootfs_from_kernel", "--no_hashtree", "--check_at_most_once", "--use_persistent_digest", "--do_not_use_ab"} {
		if g.chance(0.05) {
			args = append(args, f)
		}
	}
	args = g.common(args)
	g.shuffleOpts(args)
	g.step(args...)
	if g.chance(0.1) && !g.c.RandomSalt {
		g.step(args...)
	}
}

func (g *avbGen) makeVbmeta() {
	args := []string{"make_vbmeta_image"}
	if g.chance(0.95) {
		args = g.opt(args, "--output", g.pick("vbmeta.img", "vbmeta.img", "vbmeta.img", "nodir/vbmeta.img", "adir"))
		g.c.Inputs["adir"] = "dir"
	}
	if g.chance(0.15) {
		args = g.opt(args, "--padding_size", g.num(int64(g.pick32(4096, 4096, 0, 1, 1000, 65536))))
	}
	for i := range g.r.IntN(3) {
		name := fmt.Sprintf("p%d.img", i)
		g.footerPrep(name, 1+g.r.IntN(12))
		args = g.opt(args, "--include_descriptors_from_image", name)
	}
	if g.chance(0.1) {
		args = g.opt(args, "--include_descriptors_from_image", g.pick("missing.img", "props/blob.bin", "keys/rsa2048.avbpubkey"))
	}
	if g.chance(0.1) {
		if _, tree := g.c.Inputs["p0.img"]; tree {
			args = g.opt(args, "--setup_rootfs_from_kernel", "p0.img")
		} else {
			args = g.opt(args, "--setup_rootfs_from_kernel", g.pick("missing.img", "props/blob.bin"))
		}
	}
	for range g.r.IntN(3) {
		args = g.chain(args)
	}
	args = g.common(args)
	g.shuffleOpts(args)
	g.step(args...)
}

func (g *avbGen) appendVbmeta() {
	g.step("make_vbmeta_image", "--output", "vb.img", "--algorithm", "SHA256_RSA2048", "--key", "keys/rsa2048.pem",
		"--rollback_index", strconv.Itoa(g.r.IntN(5)))
	size := g.image("boot.img", g.r.IntN(12))
	if g.chance(0.1) {
		g.sparse("boot.img")
	}
	args := []string{"append_vbmeta_image", "--image", "boot.img"}
	if g.chance(0.9) {
		args = g.opt(args, "--vbmeta_image", g.pick("vb.img", "vb.img", "vb.img", "missing.img", "props/blob.bin"))
	}
	room := (size+4095)/4096*4096 + 4096*int64(1+g.r.IntN(4))
	if g.chance(0.9) {
		args = g.opt(args, "--partition_size", g.num(room+g.pickN(0, 0, 0, 100, -4096, -8192)))
	}
	g.step(args...)
}

func (g *avbGen) pickN(s ...int64) int64 { return s[g.r.IntN(len(s))] }

// readOnly: a footer or vbmeta image made by avbtool, perhaps damaged or
// made sparse, then a subcommand that reads it.
func (g *avbGen) readOnly() {
	img := g.prepared()
	var args []string
	sub := g.pick("info_image", "info_image", "verify_image", "verify_image", "verify_image", "extract_vbmeta_image",
		"extract_public_key", "calculate_vbmeta_digest", "calculate_kernel_cmdline", "print_partition_digests")
	args = append(args, sub)
	if sub != "extract_public_key" && g.chance(0.97) {
		args = g.opt(args, "--image", img)
	}
	switch sub {
	case "info_image":
		if g.chance(0.2) {
			args = g.opt(args, "--output", g.pick("out.txt", "nodir/out.txt"))
		}
		if g.chance(0.05) {
			args = append(args, "--atx")
		}
	case "verify_image":
		if g.chance(0.4) {
			args = g.opt(args, "--key", g.pick("keys/rsa2048.pem", "keys/rsa4096.pem", "keys/rsa2048.avbpubkey", "keys/rsa4096.pub.pem", "keys/missing.pem"))
		}
		if g.chance(0.2) {
			args = g.opt(args, "--expected_chain_partition", g.pick("vbmeta_system:1:keys/rsa2048.avbpubkey", "system:2:keys/rsa4096.avbpubkey", "bad", "x:1:keys/missing.avbpubkey"))
		}
		if g.chance(0.3) {
			args = append(args, "--follow_chain_partitions")
		}
		if g.chance(0.3) {
			args = append(args, "--accept_zeroed_hashtree")
		}
	case "extract_vbmeta_image":
		args = g.opt(args, "--output", g.pick("out.img", "out.img", "nodir/out.img"))
		if g.chance(0.3) {
			args = g.opt(args, "--padding_size", g.num(int64(g.pick32(4096, 0, 1, 1000))))
		}
	case "extract_public_key":
		args = g.opt(args, "--key", g.pick("keys/rsa2048.pem", "keys/rsa4096.pem", "keys/rsa8192.pem", "keys/rsa2048.pub.pem", "keys/missing.pem", "props/text.txt"))
		args = g.opt(args, "--output", g.pick("k.bin", "k.bin", "nodir/k.bin"))
	case "calculate_vbmeta_digest":
		if g.chance(0.3) {
			args = g.opt(args, "--hash_algorithm", g.pick("sha256", "sha512", "sha1", "SHA256", "md5", "nope"))
		}
		if g.chance(0.2) {
			args = g.opt(args, "--output", "d.txt")
		}
	case "calculate_kernel_cmdline":
		if g.chance(0.3) {
			args = append(args, "--hashtree_disabled")
		}
		if g.chance(0.2) {
			args = g.opt(args, "--output", "c.txt")
		}
	case "print_partition_digests":
		if g.chance(0.3) {
			args = append(args, "--json")
		}
		if g.chance(0.2) {
			args = g.opt(args, "--output", "d.txt")
		}
	}
	g.step(args...)
}

// prepared makes an image by avbtool for a subcommand to read: a footer
// image, a vbmeta image (perhaps chaining to and including others), or a
// plain file; then perhaps damages it or makes it sparse. It returns its
// name.
func (g *avbGen) prepared() string {
	var img string
	var psize int64
	switch g.r.IntN(10) {
	case 0, 1, 2, 3, 4:
		img = g.pick("boot.img", "system.img")
		psize, _ = g.footerPrep(img, 1+g.r.IntN(20))
	case 5, 6, 7:
		// a top-level vbmeta: descriptors of one footer image, a chain
		// to another (signed by rsa2048, location 1)
		g.footerPrep("system.img", 1+g.r.IntN(12))
		args := []string{"make_vbmeta_image", "--output", "vbmeta.img", "--include_descriptors_from_image", "system.img"}
		if g.chance(0.6) {
			g.step("make_vbmeta_image", "--output", "vbmeta_system.img", "--algorithm", "SHA256_RSA2048", "--key", "keys/rsa2048.pem",
				"--rollback_index_location", "1", "--prop", "x:y")
			args = append(args, "--chain_partition", "vbmeta_system:1:keys/rsa2048.avbpubkey")
		}
		if g.chance(0.7) {
			args = append(args, "--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem")
		}
		if g.chance(0.3) {
			args = append(args, "--padding_size", "4096")
		}
		g.step(args...)
		img = "vbmeta.img"
		psize = 0
	case 8:
		img = "plain.img"
		g.image(img, g.r.IntN(4))
		return img
	default:
		img = g.pick("missing.img", "adir")
		g.c.Inputs["adir"] = "dir"
		return img
	}
	switch g.r.IntN(12) {
	case 0:
		g.damage(img, psize)
	case 1:
		g.step("zero_hashtree", "--image", img) // for --accept_zeroed_hashtree
	case 2, 3:
		if psize > 0 {
			g.sparse(img)
		}
	}
	return img
}

// damage changes bytes of img: in the data, the vbmeta, the footer.
func (g *avbGen) damage(img string, psize int64) {
	var off int64
	switch g.r.IntN(4) {
	case 0:
		off = int64(g.r.IntN(4096)) // the data
	case 1:
		off = psize - 64 + int64(g.r.IntN(64)) // the footer
		if psize == 0 {
			off = int64(g.r.IntN(256)) // the vbmeta header
		}
	case 2:
		off = int64(g.r.IntN(8)) // the vbmeta or data start
		if psize > 0 {
			g.step("@trunc", img, strconv.FormatInt(psize-int64(g.pick32(1, 4096, 64)), 10))
			return
		}
	default:
		off = int64(256 + g.r.IntN(1024)) // the descriptors of a vbmeta
		if psize > 0 {
			off = psize - 4096*int64(1+g.r.IntN(4)) + int64(g.r.IntN(4096))
		}
	}
	g.step("@poke", img, strconv.FormatInt(off, 10), fmt.Sprintf("%02x", g.r.IntN(256)))
}

// changeFooter: a footer image by avbtool, then erase_footer,
// resize_image, zero_hashtree or a second footer over it.
func (g *avbGen) changeFooter() {
	img := g.pick("boot.img", "system.img")
	psize, tree := g.footerPrep(img, 1+g.r.IntN(20))
	if g.chance(0.25) {
		g.sparse(img)
	}
	if g.chance(0.08) {
		g.damage(img, psize)
	}
	args := []string{g.pick("erase_footer", "resize_image", "resize_image", "zero_hashtree")}
	if g.chance(0.97) {
		args = g.opt(args, "--image", img)
	}
	switch args[0] {
	case "erase_footer":
		if g.chance(0.4) {
			args = append(args, "--keep_hashtree")
		}
	case "resize_image":
		if g.chance(0.95) {
			args = g.opt(args, "--partition_size", g.num(psize+4096*int64(g.r.IntN(9)-4)+g.pickN(0, 0, 0, 0, 512, 1)))
		}
	}
	_ = tree
	g.step(args...)
	if g.chance(0.3) {
		g.step("info_image", "--image", img)
	}
}

func (g *avbGen) misc() {
	switch g.r.IntN(8) {
	case 0:
		g.step("version")
	case 1:
		g.step()
	case 2:
		g.step(g.pick("add_footer", "info", "verify", "Info_image", "--version", "-x", "help", "generate_test_image2"))
	case 3:
		g.step("version", g.pick("--x", "extra"))
	case 4:
		g.step(g.pick("info_image", "verify_image", "erase_footer", "zero_hashtree", "resize_image", "extract_vbmeta_image", "calculate_vbmeta_digest", "append_vbmeta_image", "add_hash_footer", "make_vbmeta_image"))
	case 5:
		g.step(g.pick("info_image", "add_hash_footer", "make_vbmeta_image", "verify_image"), g.pick("--nope", "--image", "-i", "--key", "--help"))
	case 6:
		g.step("extract_public_key", "--key", g.pick("keys/rsa2048.pem", "keys/rsa8192.pem"), "--output", "k.bin")
	default:
		g.step(g.pick("info_image", "add_hash_footer"), "--image", "x.img", "--image", "y.img")
	}
}
