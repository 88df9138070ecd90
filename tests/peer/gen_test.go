package peer_test

// The generator: each case is drawn from its own random stream (the run's
// seed and the case's index), so that any case can be run again alone.
// A case is its inputs (files made from a key, so that a shell can make
// them again with openssl), an optional preparation (a format by the real
// veritysetup, whose root hash the command line may use), damage done
// after it, and the one command line compared.

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// fileSpec is an input made before the preparation.
type fileSpec struct {
	name string
	size int64
	kind string // "random" (AES-128-CTR keystream of key), "zeros", "sparse" (a hole), "dir"
	key  []byte
}

// poke writes data at off of a file after the preparation.
type poke struct {
	name string
	off  int64
	data []byte
}

// link is a hard or symbolic link made in each directory.
type link struct {
	name, target string
	symbolic     bool
}

// peerCase is one generated case.
type peerCase struct {
	index int
	kind  string // "format", "verify", "dump", "misc"
	files []fileSpec
	// prep, when set, is a format run by the real veritysetup before the
	// compared command; its root hash is $ROOT in args and rootFile.
	prep     []string
	pokes    []poke
	truncs   map[string]int64 // sizes files are cut or extended to after prep
	rootFile *string          // content of the file "rh", written after prep
	links    []link
	args     []string
	// facts the rules look at
	geo        geometry
	randomSalt bool // no --salt on a format that writes a superblock or prints one
	randomUUID bool
	damage     string // what was done after prep: "", "data", "hash", "sb", "fec-few", "fec-many", "trunc", ...
	tweaks     []string
}

// has reports whether the compared command line has option name (given
// as "--name", in any spelling popt reads).
func (c *peerCase) has(name string) bool {
	_, ok := c.opt(name)
	return ok
}

// opt returns the value of option name on the compared command line: the
// last one given, as veritysetup keeps.
func (c *peerCase) opt(name string) (string, bool) {
	v, ok := "", false
	for _, o := range scanLine(c.args).opts {
		if o.name == name {
			v, ok = o.value, true
		}
	}
	return v, ok
}

// poptValued are veritysetup's options that take a value; poptKnown its
// switches (popt 1.19 has no abbreviations: any other name is unknown).
var (
	poptValued = map[string]bool{"--data-block-size": true, "--data-blocks": true, "--fec-device": true, "--fec-offset": true,
		"--fec-roots": true, "--format": true, "--hash": true, "--hash-block-size": true, "--hash-offset": true,
		"--root-hash-file": true, "--root-hash-signature": true, "--salt": true, "--uuid": true}
	poptKnown = map[string]bool{"--help": true, "--usage": true, "--version": true, "--cancel-deferred": true,
		"--check-at-most-once": true, "--debug": true, "--deferred": true, "--ignore-corruption": true,
		"--ignore-zero-blocks": true, "--no-superblock": true, "--panic-on-corruption": true,
		"--restart-on-corruption": true, "--use-tasklets": true, "--verbose": true}
	poptShort = map[byte]string{'s': "--salt", 'h': "--hash", 'v': "--verbose", 'V': "--version", '?': "--help"}
)

// scanned is a command line as popt reads it: the options up to where it
// stops (a help option acted on, or a mistake), by their long names.
type scanned struct {
	opts       []option
	positional []string
	stop       string // "--help", "--usage" or "--version" when one is acted on
	bad        bool   // an unknown option, a value where none is taken, a value missing
}

// scanLine reads words as popt does (the rules' view of a line; the
// front's own parser is the thing under test, so this is written apart).
func scanLine(words []string) scanned {
	var s scanned
	rest := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		if rest || w == "-" || !strings.HasPrefix(w, "-") {
			s.positional = append(s.positional, w)
			continue
		}
		if w == "--" {
			rest = true
			continue
		}
		// take records one option; false stops the scan.
		take := func(name string, value *string, attached string) bool {
			switch {
			case poptValued[name]:
				v := attached
				if value != nil {
					v = *value
				} else if attached == "" {
					if i+1 >= len(words) {
						s.bad = true
						return false
					}
					i++
					v = words[i]
				}
				s.opts = append(s.opts, option{name, v})
			case poptKnown[name]:
				if value != nil {
					s.bad = true
					return false
				}
				s.opts = append(s.opts, option{name, ""})
				if name == "--help" || name == "--usage" || name == "--version" {
					s.stop = name
					return false
				}
			default:
				s.bad = true
				return false
			}
			return true
		}
		if strings.HasPrefix(w, "--") {
			name, v, eq := strings.Cut(w, "=")
			var value *string
			if eq {
				value = &v
			}
			if !take(name, value, "") {
				return s
			}
			continue
		}
		// a cluster of short options; a value option takes the rest of
		// the word (after an '=') or, when none is left, the next word
		chars := w[1:]
		for chars != "" {
			name, ok := poptShort[chars[0]]
			chars = chars[1:]
			if !ok {
				s.bad = true
				return s
			}
			if poptValued[name] {
				attached := strings.TrimPrefix(chars, "=")
				if chars != "" && attached == "" {
					// "-s=": an empty value
					e := ""
					if !take(name, &e, "") {
						return s
					}
				} else if !take(name, nil, attached) {
					return s
				}
				chars = ""
				break
			}
			var value *string
			if strings.HasPrefix(chars, "=") {
				value = &chars
			}
			if !take(name, value, "") {
				return s
			}
		}
	}
	return s
}

func (c *peerCase) tweaked(name string) bool {
	for _, t := range c.tweaks {
		if t == name {
			return true
		}
	}
	return false
}

// geometry is a consistent set of format parameters, from which a valid
// command line is written (and then perhaps spoiled).
type geometry struct {
	dbs, hbs       int
	dbsOpt, hbsOpt bool
	blocks         int64 // data blocks
	partial        int64 // bytes past the last whole block
	alg            string
	algOpt         bool
	digest         int
	salt           string // hex or "-"
	uuid           string
	format         int
	formatOpt      bool
	noSB           bool
	layout         string // "sep", "same" (HASH is DATA), "link" (a hard link to DATA), "dot" (./DATA)
	hashOffset     int64
	dataBlocksOpt  bool
	dataBlocks     int64
	fec            string // "", "sep", "hash" (in HASH), "data" (in DATA, past the tree)
	fecOffset      int64
	fecRoots       int
	fecRootsOpt    bool
	rootHashFile   bool
}

var digestSizes = map[string]int{"sha1": 20, "sha256": 32, "sha512": 64, "sha224": 28, "sha384": 48, "md5": 16,
	"sha3-256": 32, "blake2b-512": 64, "blake2s-256": 32, "ripemd160": 20}

// validAlgs are names both know (the common ones weigh more).
var validAlgs = []string{"sha256", "sha256", "sha256", "sha1", "sha512", "sha224", "sha384", "md5", "sha3-256",
	"blake2b-512", "blake2s-256", "ripemd160"}

const fixedUUID = "a60c98d2-ae9b-4865-bfcb-b4e3ace11033"

type gen struct {
	r        *rand.Rand
	c        *peerCase
	trailing string // an option last on the line, with no value
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) n(k int) int           { return g.r.IntN(k) }

func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

func (g *gen) hexBytes(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return hex.EncodeToString(b)
}

func (g *gen) key() []byte {
	k := make([]byte, 16)
	for i := range k {
		k[i] = byte(g.r.Uint32())
	}
	return k
}

// generate draws case index of the run seeded with seed.
func generate(seed uint64, index int) *peerCase {
	g := &gen{r: rand.New(rand.NewPCG(seed, uint64(index))), c: &peerCase{index: index, truncs: map[string]int64{}}}
	switch x := g.n(100); {
	case x < 45:
		g.formatCase()
	case x < 80:
		g.verifyCase()
	case x < 92:
		g.dumpCase()
	default:
		g.miscCase()
	}
	// Drawn last, so that every case is otherwise what it was before
	// these were drawn.
	if g.chance(0.1) {
		g.poptTweak()
	}
	return g.c
}

// treeEnd returns where the hash area ends for geometry e: the offset,
// the superblock's block, and the tree's blocks (as dm-verity lays it out:
// levels of 2^k digests per block).
func treeEnd(e *geometry) int64 {
	if e.digest <= 0 || e.hbs < 512 || e.digest*2 > e.hbs {
		return 0 // not a geometry (a case with no format): nothing to lay out
	}
	slot := 1
	for slot < e.digest {
		slot *= 2
	}
	perBlock := int64(e.hbs / slot)
	if e.format == 0 {
		perBlock = 1
		for perBlock*2*int64(e.digest) <= int64(e.hbs) {
			perBlock *= 2
		}
	}
	var blocks int64
	for n := e.blocks; n > 1; {
		n = (n + perBlock - 1) / perBlock
		blocks += n
	}
	if blocks == 0 {
		blocks = 1
	}
	end := e.hashOffset + blocks*int64(e.hbs)
	if !e.noSB {
		end += roundUp(512, int64(e.hbs))
	}
	return end
}

func roundUp(x, m int64) int64 { return (x + m - 1) / m * m }

// geometry draws a valid geometry and the inputs it needs.
func (g *gen) geometry() geometry {
	var e geometry
	sizes := []int{512, 1024, 2048, 4096, 4096, 4096}
	e.dbs, e.hbs = pick(g, sizes...), pick(g, sizes...)
	if g.chance(0.5) {
		e.hbs = e.dbs
	}
	e.dbsOpt, e.hbsOpt = e.dbs != 4096 || g.chance(0.3), e.hbs != 4096 || g.chance(0.3)
	e.blocks = int64(pick(g, 1, 2, 3, 5, 8, 16, 31, 64, 127, 128, 129, 200, 257, 300, 513, 1000))
	if g.chance(0.1) {
		e.partial = int64(1 + g.n(e.dbs-1))
	}
	e.alg = pick(g, validAlgs...)
	e.algOpt = e.alg != "sha256" || g.chance(0.3)
	e.digest = digestSizes[e.alg]
	switch x := g.n(10); {
	case x == 0:
		e.salt = "-"
	default:
		e.salt = g.hexBytes(pick(g, 1, 3, 8, 16, 32, 32, 32, 64, 100, 256))
	}
	e.uuid = fixedUUID
	if g.chance(0.2) {
		e.format, e.formatOpt = 0, true
	} else {
		e.format, e.formatOpt = 1, g.chance(0.3)
	}
	e.noSB = g.chance(0.3)
	e.layout = "sep"
	if x := g.n(10); x < 2 {
		e.layout = pick(g, "same", "same", "link", "dot")
	}
	dataBytes := e.blocks*int64(e.dbs) + e.partial
	if e.layout != "sep" {
		e.hashOffset = roundUp(dataBytes, int64(e.hbs)) + int64(g.n(3))*int64(e.hbs)
		e.dataBlocksOpt, e.dataBlocks = true, e.blocks
	} else {
		if g.chance(0.15) {
			e.hashOffset = int64(g.n(8)) * int64(e.hbs)
		}
		if g.chance(0.2) {
			e.dataBlocksOpt, e.dataBlocks = true, e.blocks
			if g.chance(0.4) && e.blocks > 1 {
				e.dataBlocks = int64(1 + g.n(int(e.blocks)-1))
			}
		}
	}
	if !e.dataBlocksOpt {
		e.dataBlocks = e.blocks
	}
	if g.chance(0.25) {
		e.fec = pick(g, "sep", "sep", "hash", "data")
		if e.layout == "sep" && e.fec == "data" {
			e.fec = "sep"
		}
		e.hbs = e.dbs // FEC needs one block size
		e.hbsOpt = e.dbsOpt
		e.fecRoots, e.fecRootsOpt = 2, g.chance(0.5)
		if e.fecRootsOpt {
			e.fecRoots = 2 + g.n(23)
		}
		if e.fec != "sep" {
			t := e
			t.blocks = e.dataBlocks
			e.fecOffset = roundUp(treeEnd(&t), 512) + int64(g.n(3))*4096
		} else if g.chance(0.2) {
			e.fecOffset = int64(g.n(4)) * 4096
		}
	}
	e.rootHashFile = g.chance(0.15)
	kind := "random"
	if g.chance(0.1) {
		kind = "zeros" // as verity-compat-test's images
	}
	g.c.files = append(g.c.files, fileSpec{name: "data", size: dataBytes, kind: kind, key: g.key()})
	if e.layout == "link" {
		g.c.links = append(g.c.links, link{name: "hash", target: "data"})
	}
	return e
}

// hashName is HASH's name on the command line for e's layout.
func (e *geometry) hashName() string {
	switch e.layout {
	case "same":
		return "data"
	case "dot":
		return "./data"
	}
	return "hash"
}

func (e *geometry) fecName() string {
	switch e.fec {
	case "sep":
		return "fec"
	case "hash":
		return e.hashName()
	case "data":
		return "data"
	}
	return ""
}

// option is one option of a command line: its name and value ("" for a
// switch).
type option struct{ name, value string }

// formatOptions are e's options as format takes them.
func (e *geometry) formatOptions() []option {
	var o []option
	if e.dbsOpt {
		o = append(o, option{"--data-block-size", strconv.Itoa(e.dbs)})
	}
	if e.hbsOpt {
		o = append(o, option{"--hash-block-size", strconv.Itoa(e.hbs)})
	}
	if e.algOpt {
		o = append(o, option{"--hash", e.alg})
	}
	o = append(o, option{"--salt", e.salt})
	if !e.noSB {
		o = append(o, option{"--uuid", e.uuid})
	}
	if e.formatOpt {
		o = append(o, option{"--format", strconv.Itoa(e.format)})
	}
	if e.noSB {
		o = append(o, option{"--no-superblock", ""})
	}
	if e.hashOffset != 0 {
		o = append(o, option{"--hash-offset", strconv.FormatInt(e.hashOffset, 10)})
	}
	if e.dataBlocksOpt {
		o = append(o, option{"--data-blocks", strconv.FormatInt(e.dataBlocks, 10)})
	}
	o = append(o, e.fecOptions()...)
	return o
}

func (e *geometry) fecOptions() []option {
	if e.fec == "" {
		return nil
	}
	o := []option{{"--fec-device", e.fecName()}}
	if e.fecOffset != 0 {
		o = append(o, option{"--fec-offset", strconv.FormatInt(e.fecOffset, 10)})
	}
	if e.fecRootsOpt {
		o = append(o, option{"--fec-roots", strconv.Itoa(e.fecRoots)})
	}
	return o
}

// switches are the options that take no value.
var switches = map[string]bool{"--no-superblock": true, "--verbose": true, "--debug": true, "--ignore-corruption": true,
	"--restart-on-corruption": true, "--panic-on-corruption": true, "--ignore-zero-blocks": true, "--check-at-most-once": true,
	"--use-tasklets": true, "--deferred": true, "--bogus": true, "--sal": true}

// line writes a command line: the action and its arguments, the options
// in a random order and spelling, before or after the action.
func (g *gen) line(action []string, opts []option) []string {
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	var words []string
	for _, o := range opts {
		short := map[string]string{"--salt": "-s", "--hash": "-h", "--verbose": "-v"}[o.name]
		switch {
		case switches[o.name]:
			if short != "" && g.chance(0.5) {
				words = append(words, short)
			} else {
				words = append(words, o.name)
			}
		case short != "" && g.chance(0.3):
			words = append(words, short, o.value)
		case o.value != "" && !strings.HasPrefix(o.value, "-") && g.chance(0.3):
			words = append(words, o.name, o.value)
		default:
			words = append(words, o.name+"="+o.value)
		}
	}
	if g.chance(0.5) {
		return append(words, action...)
	}
	return append(action, words...)
}

// setOpt replaces (or adds) option name.
func setOpt(opts []option, name, value string) []option {
	for i := range opts {
		if opts[i].name == name {
			opts[i].value = value
			return opts
		}
	}
	return append(opts, option{name, value})
}

func dropOpt(opts []option, name string) []option {
	var out []option
	for _, o := range opts {
		if o.name != name {
			out = append(out, o)
		}
	}
	return out
}

// extras adds, now and then, what any command line may carry: verbosity,
// an option only open takes, an unknown option.
func (g *gen) extras(opts []option) []option {
	if g.chance(0.1) {
		opts = append(opts, option{pick(g, "--verbose", "--debug"), ""})
	}
	if g.chance(0.03) {
		n := pick(g, "--ignore-corruption", "--restart-on-corruption", "--panic-on-corruption", "--ignore-zero-blocks",
			"--check-at-most-once", "--use-tasklets", "--deferred")
		g.c.tweaks = append(g.c.tweaks, "activation-option")
		if g.chance(0.15) {
			opts = append(opts, option{"--root-hash-signature", "sig"})
		} else {
			opts = append(opts, option{n, ""})
		}
	}
	if g.chance(0.02) {
		g.c.tweaks = append(g.c.tweaks, "unknown-option")
		opts = append(opts, option{pick(g, "--bogus", "--sal"), ""})
	}
	return opts
}

func (g *gen) formatCase() {
	c := g.c
	c.kind = "format"
	if g.chance(0.01) {
		g.bigOffsetCase()
		return
	}
	e := g.geometry()
	c.geo = e
	opts := e.formatOptions()
	if e.rootHashFile {
		opts = append(opts, option{"--root-hash-file", "rh"})
	}
	if e.fec == "sep" && g.chance(0.1) {
		// an FEC device that exists, larger than the parity
		c.files = append(c.files, fileSpec{name: "fec", size: int64(1+g.n(64)) * 4096, kind: "random", key: g.key()})
	}
	if e.layout == "sep" && g.chance(0.1) {
		c.tweaks = append(c.tweaks, "existing-hash")
		c.files = append(c.files, fileSpec{name: "hash", size: int64(g.n(300)) * 512, kind: "random", key: g.key()})
	}
	if g.chance(0.05) {
		c.randomSalt = true
		opts = dropOpt(opts, "--salt")
	}
	if !e.noSB && g.chance(0.05) {
		c.randomUUID = true
		opts = dropOpt(opts, "--uuid")
	}
	data, hash := "data", e.hashName()
	if e.layout == "sep" && !e.noSB && g.chance(0.04) {
		// alone: parity in HASH where veritysetup's count of the tree ends
		opts = g.fecOverTree(opts, &e)
	} else {
		// Spoil it now and then, one or two things at a time.
		for spoil := g.n(10); spoil >= 6; spoil-- {
			opts, data, hash = g.spoilFormat(opts, data, hash, &e)
		}
	}
	opts = g.extras(opts)
	c.args = g.line([]string{"format", data, hash}, opts)
	if g.trailing != "" {
		c.args = append(c.args, g.trailing)
	}
}

// bigOffsetCase is HASH = DATA with a hash offset past 2 GiB (and 4 GiB),
// in a sparse file, as verity-compat-test's "hash-offset bigger than 2G".
func (g *gen) bigOffsetCase() {
	c := g.c
	v := pick(g, [3]int64{3000000000, 2499997696, 256}, [3]int64{10000000000, 8000000000, 128})
	size, offset, blocks := v[0], v[1], v[2]
	c.tweaks = append(c.tweaks, "big-offset")
	c.files = append(c.files, fileSpec{name: "data", size: size, kind: "sparse"})
	c.geo = geometry{dbs: 4096, hbs: 4096, blocks: blocks, dataBlocks: blocks, alg: "sha256", digest: 32, format: 1,
		layout: "same", hashOffset: offset, dataBlocksOpt: true, salt: g.hexBytes(32), uuid: fixedUUID}
	c.args = g.line([]string{"format", "data", "data"}, c.geo.formatOptions())
}

// fecOverTree puts the parity in HASH where veritysetup's count of the
// tree ends: without the superblock's block, so the parity would overwrite
// the tree's last block.
func (g *gen) fecOverTree(opts []option, e *geometry) []option {
	t := *e
	t.hbs = e.dbs
	t.blocks = e.dataBlocks
	opts = setOpt(opts, "--hash-block-size", strconv.Itoa(e.dbs))
	opts = setOpt(opts, "--fec-device", "hash")
	opts = setOpt(opts, "--fec-offset", strconv.FormatInt(treeEnd(&t)-roundUp(512, int64(t.hbs)), 10))
	g.c.tweaks = append(g.c.tweaks, "fec-over-tree")
	return opts
}

// spoilFormat makes one thing of a format command line wrong, odd or
// borderline.
func (g *gen) spoilFormat(opts []option, data, hash string, e *geometry) ([]option, string, string) {
	c := g.c
	what := pick(g, "salt", "uuid", "format", "dbs", "hbs", "data-blocks", "hash-offset", "hash", "hash", "fec",
		"root-hash-file", "data", "hash-file", "missing-value", "overlap")
	c.tweaks = append(c.tweaks, what)
	switch what {
	case "salt":
		opts = setOpt(opts, "--salt", pick(g, "", "abc", "zz", g.hexBytes(257), "0x00", "ABCDEF", "-", "00 11", g.hexBytes(256)))
	case "uuid":
		opts = setOpt(opts, "--uuid", pick(g, "", "bad", strings.ReplaceAll(fixedUUID, "-", ""), strings.ToUpper(fixedUUID),
			"{"+fixedUUID+"}", fixedUUID+"0", "00000000-0000-0000-0000-000000000000"))
	case "format":
		opts = setOpt(opts, "--format", pick(g, "2", "x", "-1", "01", "", "1 "))
	case "dbs", "hbs":
		name := map[string]string{"dbs": "--data-block-size", "hbs": "--hash-block-size"}[what]
		opts = setOpt(opts, name, pick(g, "0", "256", "1000", "8192", "16384", "65536", "1048576", "4k", "+4096",
			"-4096", "04096", "0x1000", "", "4294967296", "2147483648"))
	case "data-blocks":
		opts = setOpt(opts, "--data-blocks", pick(g, "0", "+16", "-1", strconv.FormatInt(e.blocks+1, 10),
			strconv.FormatInt(e.blocks+100, 10), "1099511627776", "18446744073709551615", "abc", "", "1"))
	case "hash-offset":
		opts = setOpt(opts, "--hash-offset", pick(g, "100", "511", "513", "4608", "-512", "1125899906842624", "abc",
			strconv.FormatInt(e.hashOffset+512, 10), strconv.FormatInt(max(0, e.hashOffset-int64(e.hbs)), 10), "0"))
	case "hash":
		opts = setOpt(opts, "--hash", pick(g, "SHA256", "sha-256", "bogus", "", "sha512-224", "whirlpool", "md4", "rmd160",
			"sm3", "streebog256", "crc32c", "sha3_256", "blake2b-256", "Sha1", "sha512/256", "sha3-512"))
	case "fec":
		opts = g.spoilFEC(opts, e)
	case "root-hash-file":
		opts = g.spoilRootHashFile(opts)
	case "data":
		data = g.spoilData(e)
	case "hash-file":
		hash, opts = g.spoilHashFile(opts, e)
	case "overlap":
		hash, opts = g.spoilOverlap(opts, hash, e)
	case "missing-value":
		// an option that takes a value, last with none
		g.trailing = pick(g, "--salt", "--hash", "--data-blocks", "--fec-device", "--uuid", "-s")
	}
	return opts, data, hash
}

// spoilFEC makes error correction's options wrong or odd, adding them
// where the case has none.
func (g *gen) spoilFEC(opts []option, e *geometry) []option {
	c := g.c
	if e.fec == "" {
		opts = append(opts, option{"--fec-device", pick(g, "fec", "data", "hash")})
		c.tweaks = append(c.tweaks, "fec-added")
	}
	switch g.n(4) {
	case 0:
		opts = setOpt(opts, "--fec-roots", pick(g, "0", "1", "25", "26", "255", "x", "", "-2"))
	case 1:
		opts = setOpt(opts, "--fec-offset", pick(g, "100", "513", "-1", "0", "4096", "x", "1125899906842624"))
	case 2:
		// parity inside the tree or the data
		if e.layout == "sep" && !e.noSB && g.chance(0.5) {
			opts = g.fecOverTree(opts, e)
			break
		}
		opts = setOpt(opts, "--fec-device", pick(g, "data", "hash"))
		opts = setOpt(opts, "--fec-offset", strconv.FormatInt(int64(g.n(8))*512, 10))
	default:
		opts = setOpt(opts, "--hash-block-size", strconv.Itoa(e.dbs*2))
	}
	return opts
}

// spoilRootHashFile makes --root-hash-file name something it cannot be.
func (g *gen) spoilRootHashFile(opts []option) []option {
	c := g.c
	v := pick(g, "data", "nodir/rh", "adir", "rh", "hash")
	if v == "adir" {
		c.files = append(c.files, fileSpec{name: "adir", kind: "dir"})
	}
	if v == "rh" {
		c.files = append(c.files, fileSpec{name: "rh", size: int64(g.n(100)), kind: "random", key: g.key()})
	}
	return setOpt(opts, "--root-hash-file", v)
}

// spoilData returns a DATA that is missing, not a file, or too small.
func (g *gen) spoilData(e *geometry) string {
	c := g.c
	var data string
	switch g.n(5) {
	case 0:
		data = "missing"
	case 1:
		data = "adir"
		c.files = append(c.files, fileSpec{name: "adir", kind: "dir"})
	case 2:
		data = "/dev/null"
	case 3:
		data = "empty"
		c.files = append(c.files, fileSpec{name: "empty", kind: "zeros"})
	default:
		data = "small"
		c.files = append(c.files, fileSpec{name: "small", size: int64(1 + g.n(e.dbs-1)), kind: "random", key: g.key()})
	}
	return data
}

// spoilHashFile returns a HASH that cannot be written, or DATA by another
// name.
func (g *gen) spoilHashFile(opts []option, e *geometry) (string, []option) {
	c := g.c
	var hash string
	switch g.n(4) {
	case 0:
		hash = "nodir/hash"
	case 1:
		hash = "adir"
		c.files = append(c.files, fileSpec{name: "adir", kind: "dir"})
	case 2:
		hash = "/dev/null"
	default:
		// HASH = DATA by another name, at an offset inside the data
		hash = pick(g, "data", "./data")
		opts = setOpt(opts, "--hash-offset", strconv.FormatInt(int64(g.n(4))*int64(e.hbs), 10))
	}
	return hash, opts
}

// spoilOverlap makes areas overlap, as verity-compat-test's overlap checks
// do: the data past the hash offset, no --data-blocks with HASH = DATA,
// parity in the data or the tree.
func (g *gen) spoilOverlap(opts []option, hash string, e *geometry) (string, []option) {
	switch g.n(4) {
	case 0:
		hash = "data"
		opts = setOpt(opts, "--hash-offset", strconv.FormatInt(int64(g.n(int(e.blocks)))*int64(e.dbs)/512*512, 10))
		opts = setOpt(opts, "--data-blocks", strconv.FormatInt(e.blocks, 10))
	case 1:
		hash = "data"
		opts = dropOpt(setOpt(opts, "--hash-offset", strconv.FormatInt(roundUp(e.blocks*int64(e.dbs), 4096), 10)), "--data-blocks")
	case 2:
		opts = setOpt(opts, "--fec-device", "data")
		opts = setOpt(opts, "--fec-offset", strconv.FormatInt(int64(g.n(int(e.blocks)))*int64(e.dbs)/512*512, 10))
	default:
		hash = "data"
		opts = setOpt(opts, "--hash-offset", strconv.FormatInt(roundUp(e.blocks*int64(e.dbs)+e.partial, 4096), 10))
		opts = setOpt(opts, "--data-blocks", strconv.FormatInt(e.blocks, 10))
		opts = setOpt(opts, "--fec-device", "data")
		opts = setOpt(opts, "--fec-offset", strconv.FormatInt(roundUp(e.blocks*int64(e.dbs)+e.partial, 4096)+512*int64(g.n(4)), 10))
	}
	return hash, opts
}

func (g *gen) verifyCase() {
	c := g.c
	c.kind = "verify"
	e := g.geometry()
	c.geo = e
	prep := e.formatOptions()
	c.prep = append([]string{"format", "data", e.hashName()}, optionWords(prep)...)
	// the compared line
	var opts []option
	if e.noSB {
		opts = e.formatOptions()
	} else {
		if e.hashOffset != 0 {
			opts = append(opts, option{"--hash-offset", strconv.FormatInt(e.hashOffset, 10)})
		}
		opts = append(opts, e.fecOptions()...)
		switch x := g.n(10); {
		case x < 2:
			// all format's options again
			opts = dropOpt(dropOpt(e.formatOptions(), "--uuid"), "--salt")
			opts = append(opts, option{"--salt", e.salt})
		case x < 4:
			// options the superblock overrides, with other values
			c.tweaks = append(c.tweaks, "sb-override")
			switch g.n(5) {
			case 0:
				opts = append(opts, option{"--hash", pick(g, "sha1", "sha512", "md5", "bogus")})
			case 1:
				opts = append(opts, option{"--data-block-size", pick(g, "512", "1024", "4096", "1000")})
			case 2:
				opts = append(opts, option{"--salt", pick(g, "00", "-", "zz", "")})
			case 3:
				opts = append(opts, option{"--data-blocks", pick(g, "1", "5", "+16", "99999")})
			default:
				opts = append(opts, option{"--format", pick(g, "0", "1", "2")})
			}
		}
	}
	if e.noSB && g.chance(0.15) {
		// one parameter the tree needs, left out or changed
		c.tweaks = append(c.tweaks, "nosb-changed")
		switch g.n(4) {
		case 0:
			opts = dropOpt(opts, "--salt")
		case 1:
			opts = setOpt(opts, "--hash", pick(g, "sha1", "sha512", "sha256"))
		case 2:
			opts = setOpt(opts, "--data-blocks", strconv.FormatInt(max(1, e.dataBlocks-1), 10))
		default:
			opts = setOpt(opts, "--salt", pick(g, "", "00", "-"))
		}
	}
	root := "$ROOT"
	switch x := g.n(20); {
	case x < 2:
		root = "$ROOT_BAD"
	case x < 3:
		root = "$ROOT_UPPER"
	case x < 4:
		root = pick(g, "$ROOT_SHORT", "zz", "0x$ROOT", "$ROOT00", "", "abcdef"+strings.Repeat("0", 58))
	}
	if e.rootHashFile || g.chance(0.05) {
		opts = append(opts, option{"--root-hash-file", "rh"})
		content := pick(g, "$ROOT", "$ROOT", "$ROOT\n", "$ROOT junk\n", "$ROOT_UPPER", " $ROOT", "", "$ROOT_BAD", "$ROOT_SHORT", "none")
		if content != "none" {
			c.rootFile = &content
		}
		if g.chance(0.8) {
			root = ""
		}
	}
	if !e.noSB && e.fec == "" && g.chance(0.05) {
		// FEC at verify only
		opts = append(opts, option{"--fec-device", pick(g, "fec", "missing")})
		c.files = append(c.files, fileSpec{name: "fec", size: 8192, kind: "random", key: g.key()})
		c.tweaks = append(c.tweaks, "fec-verify-only")
	}
	g.damage(&e)
	opts = g.extras(opts)
	action := []string{"verify", "data", e.hashName()}
	if root != "" {
		action = append(action, root)
	}
	c.args = g.line(action, opts)
}

// damage spoils the prepared files.
func (g *gen) damage(e *geometry) {
	c := g.c
	dataBytes := e.blocks*int64(e.dbs) + e.partial
	hashStart := e.hashOffset
	if !e.noSB {
		hashStart += roundUp(512, int64(e.hbs))
	}
	end := treeEnd(&geometry{dbs: e.dbs, hbs: e.hbs, blocks: e.dataBlocks, digest: e.digest, format: e.format,
		hashOffset: e.hashOffset, noSB: e.noSB})
	hash := e.hashName()
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(g.r.Uint32()) | 1 // never all zero: damage shows
		}
		return b
	}
	x := g.n(100)
	switch {
	case x < 45:
		return
	case x < 60:
		c.damage = "data"
		for k := 1 + g.n(3); k > 0; k-- {
			c.pokes = append(c.pokes, poke{"data", g.r.Int64N(max(1, dataBytes)), randBytes(1 + g.n(8))})
		}
		if g.chance(0.2) {
			c.pokes = append(c.pokes, poke{"data", min(3456, dataBytes-1), randBytes(8)})
		}
	case x < 72:
		c.damage = "hash"
		if g.chance(0.25) && end > e.hashOffset+8193+8 {
			// verity-compat-test's spot: byte 8193 of HASH (plus the format
			// number on a shared device)
			c.pokes = append(c.pokes, poke{hash, e.hashOffset + 8193 + int64(e.format), randBytes(8)})
		} else if end > hashStart {
			c.pokes = append(c.pokes, poke{hash, hashStart + g.r.Int64N(end-hashStart), randBytes(1 + g.n(4))})
		}
	case x < 78:
		// the unused end of the last hash block (its spare area)
		c.damage = "spare"
		if end > hashStart {
			c.pokes = append(c.pokes, poke{hash, end - 1 - g.r.Int64N(min(64, end-hashStart)), randBytes(1)})
		}
	case x < 84 && !e.noSB:
		c.damage = "sb"
		g.superblockDamage(hash, e.hashOffset)
	case x < 92 && e.fec != "":
		few := g.chance(0.6)
		c.damage = "fec-many"
		n := 200 + g.n(2000)
		if few {
			c.damage, n = "fec-few", 1+g.n(8)
		}
		for k := 0; k < n; k++ {
			c.pokes = append(c.pokes, poke{"data", g.r.Int64N(max(1, e.dataBlocks*int64(e.dbs))), randBytes(1)})
		}
	case x < 96:
		c.damage = "trunc"
		if g.chance(0.5) {
			c.truncs["data"] = g.r.Int64N(dataBytes + 1)
		} else if e.layout == "sep" {
			c.truncs["hash"] = g.r.Int64N(end + 1)
		}
	default:
		c.damage = "zero-data"
		c.pokes = append(c.pokes, poke{"data", int64(g.n(int(e.blocks))) * int64(e.dbs), make([]byte, e.dbs)})
	}
}

// superblockDamage changes one field of the superblock at off of name.
func (g *gen) superblockDamage(name string, off int64) {
	c := g.c
	le32 := func(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
	switch g.n(10) {
	case 0:
		c.pokes = append(c.pokes, poke{name, off, []byte("veritx")})
	case 1:
		c.pokes = append(c.pokes, poke{name, off + 8, le32(uint32(pick(g, 0, 2, 255)))})
	case 2:
		c.pokes = append(c.pokes, poke{name, off + 12, le32(uint32(pick(g, 0, 2, 7)))})
	case 3:
		alg := pick(g, "sha999", "md4", "whirlpool", "SHA256", "", "sha1")
		b := make([]byte, 32)
		copy(b, alg)
		c.pokes = append(c.pokes, poke{name, off + 32, b})
	case 4:
		c.pokes = append(c.pokes, poke{name, off + 64, le32(uint32(pick(g, 0, 1000, 256, 8192, 1<<20)))})
	case 5:
		c.pokes = append(c.pokes, poke{name, off + 68, le32(uint32(pick(g, 0, 1000, 256, 8192, 1<<20)))})
	case 6:
		c.pokes = append(c.pokes, poke{name, off + 72, le32(uint32(pick(g, 0, 1, 7, 1<<30)))})
	case 7:
		c.pokes = append(c.pokes, poke{name, off + 80, []byte{byte(pick(g, 0, 1, 255)), byte(pick(g, 0, 1, 2))}})
	case 8:
		// the reserved bytes after the salt
		c.pokes = append(c.pokes, poke{name, off + 344 + int64(g.n(168)), []byte{0x5a}})
	default:
		c.pokes = append(c.pokes, poke{name, off + 16 + int64(g.n(16)), []byte{byte(g.r.Uint32())}})
	}
}

func (g *gen) dumpCase() {
	c := g.c
	c.kind = "dump"
	e := g.geometry()
	e.fec = ""
	c.geo = e
	hash := e.hashName()
	if g.chance(0.85) {
		if e.noSB && g.chance(0.7) {
			e.noSB = false
			c.geo = e
		}
		c.prep = append([]string{"format", "data", hash}, optionWords(e.formatOptions())...)
		if !e.noSB && g.chance(0.4) {
			c.damage = "sb"
			g.superblockDamage(hash, e.hashOffset)
		}
	}
	var opts []option
	if e.hashOffset != 0 || g.chance(0.1) {
		off := e.hashOffset
		if g.chance(0.2) {
			off = pick(g, off+512, off+100, max(0, off-4096), 1<<50)
			c.tweaks = append(c.tweaks, "dump-offset")
		}
		opts = append(opts, option{"--hash-offset", strconv.FormatInt(off, 10)})
	}
	if g.chance(0.1) {
		hash = pick(g, "data", "missing", "/dev/null", "empty")
		if hash == "empty" {
			c.files = append(c.files, fileSpec{name: "empty", kind: "zeros"})
		}
		c.tweaks = append(c.tweaks, "dump-other")
	}
	opts = g.extras(opts)
	c.args = g.line([]string{"dump", hash}, opts)
}

func (g *gen) miscCase() {
	c := g.c
	c.kind = "misc"
	c.files = append(c.files, fileSpec{name: "data", size: 65536, kind: "random", key: g.key()})
	c.args = pick(g, []string{}, []string{"foo"}, []string{"format"}, []string{"format", "data"}, []string{"verify", "data", "hash"},
		[]string{"verify", "data"}, []string{"dump"}, []string{"--bogus", "format", "data", "hash"}, []string{"-q", "dump", "data"},
		[]string{"-v"}, []string{"--version"}, []string{"-V"}, []string{"--usage"}, []string{"format", "data", "hash", "extra", "--salt=00", "--uuid=" + fixedUUID},
		[]string{"--salt"}, []string{"format", "--hash"}, []string{"verify", "data", "data", "00", "--no-superblock", "-s", "-"},
		[]string{"-v", "dump", "missing"}, []string{"--debug", "format", "missing", "hash"}, []string{"-s", "00", "--format=1", "verify", "data", "hash", "00"})
}

// poptTweak writes the line in one more way popt reads (or refuses):
// short options in a cluster, "--" ending the options, --help, --usage or
// -? among them, a value that looks like an option, an option given twice,
// "--x=" with no value, an abbreviation (popt takes none), an unknown short
// option.
func (g *gen) poptTweak() {
	c := g.c
	defer func() {
		// A format whose line no longer gives the salt or the UUID (after
		// a "--", or past where help or a mistake stops the parse) makes
		// them at random; without --no-superblock it writes a UUID.
		if c.kind != "format" {
			return
		}
		has := map[string]bool{}
		for _, o := range scanLine(c.args).opts {
			has[o.name] = true
		}
		c.randomSalt = c.randomSalt || !has["--salt"]
		c.randomUUID = c.randomUUID || !has["--uuid"] && !has["--no-superblock"]
	}()
	what := pick(g, "cluster", "cluster", "dashdash", "help", "option-value", "repeat", "repeat", "empty-value", "empty-value",
		"abbreviation", "unknown-short")
	c.tweaks = append(c.tweaks, "popt-"+what)
	// insert puts words between two others, not between an option and
	// its value (what "option-value" does on purpose).
	insert := func(words ...string) {
		var at []int
		for k := 0; k <= len(c.args); k++ {
			if k == 0 || !(poptValued[c.args[k-1]] || c.args[k-1] == "-s" || c.args[k-1] == "-h") {
				at = append(at, k)
			}
		}
		k := at[g.n(len(at))]
		c.args = append(c.args[:k], append(words, c.args[k:]...)...)
	}
	switch what {
	case "cluster":
		g.cluster()
	case "dashdash":
		insert("--")
	case "help":
		insert(pick(g, "--help", "--usage", "-?", "-v?", "-?v", "-vV", "--usage", "-h?"))
	case "option-value":
		name := pick(g, "--salt", "-s", "--hash", "-h", "--uuid", "--format", "--data-blocks", "--hash-offset", "--fec-device",
			"--root-hash-file", "--fec-roots")
		insert(name, pick(g, "-v", "--verbose", "--salt=00", "--", "-", "--help", "-s", "-?", "--no-superblock", "-V", "--bogus"))
	case "repeat":
		sc := scanLine(c.args)
		if len(sc.opts) == 0 {
			insert("-v", "--verbose")
			break
		}
		o := sc.opts[g.n(len(sc.opts))]
		if o.name == "--help" || o.name == "--usage" || o.name == "--version" {
			insert(o.name, o.name)
			break
		}
		v := o.value
		if poptValued[o.name] {
			v = pick(g, o.value, "0", "1", "x", "", "00", "sha1", "512", "4096", fixedUUID, "fec", "rh")
		}
		words := []string{o.name}
		if poptValued[o.name] {
			words = []string{o.name + "=" + v}
		}
		insert(words...)
	case "empty-value":
		insert(pick(g, "--salt=", "--hash=", "--uuid=", "--format=", "--data-block-size=", "--hash-block-size=",
			"--data-blocks=", "--hash-offset=", "--fec-device=", "--fec-offset=", "--fec-roots=", "--root-hash-file=",
			"--root-hash-signature=", "-s=", "-h=", "--verbose=", "--no-superblock=", "--debug=", "--help=", "--usage=",
			"--version=", "-v=", "--salt=", "--fec-device=", "--root-hash-file="))
	case "abbreviation":
		insert(pick(g, "--sa=00", "--sal", "--has=sha1", "--hash-o=0", "--verb", "--no-super", "--data-block=4096",
			"--fec=fec", "--root=rh", "--vers", "--hel", "--salt-=00", "--usag", "--form=1"))
	default:
		insert(pick(g, "-q", "-x", "-d", "-S", "-H", "-vq", "-F", "-y", "-vx", "-?x", "-u"))
	}
}

// cluster writes -s or -h (or another switch) in a cluster of short
// options: -vs00, -vh sha1, -sv (v is then the salt), -vv.
func (g *gen) cluster() {
	c := g.c
	sc := scanLine(c.args)
	valued := ""
	for _, o := range sc.opts {
		if o.name == "--salt" || o.name == "--hash" {
			valued = o.name
		}
	}
	// drop the word(s) of the option (each spelling) and of -v
	var words []string
	var value string
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		long, short := valued, map[string]string{"--salt": "-s", "--hash": "-h"}[valued]
		switch {
		case valued != "" && (a == long || a == short) && i+1 < len(c.args):
			value = c.args[i+1]
			i++
			continue
		case valued != "" && strings.HasPrefix(a, long+"="):
			value = a[len(long)+1:]
			continue
		case valued != "" && a != short && strings.HasPrefix(a, short) && !strings.HasPrefix(a, "--"):
			value = strings.TrimPrefix(a[2:], "=")
			continue
		case a == "-v" || a == "--verbose":
			continue
		}
		words = append(words, a)
	}
	prefix := pick(g, "-v", "-v", "-vv", "-")
	var add []string
	switch {
	case valued == "":
		add = []string{pick(g, "-vv", "-vs", "-vh", "-sv", "-hv")}
	case g.chance(0.2):
		// the letters the other way: the switch's letter is the value
		add = []string{"-" + valued[2:3] + "v"}
	case g.chance(0.5):
		add = []string{prefix + valued[2:3] + value}
	default:
		add = []string{prefix + valued[2:3], value}
	}
	k := g.n(len(words) + 1)
	c.args = append(words[:k], append(add, words[k:]...)...)
}

// optionWords writes opts as --name=value words, in order.
func optionWords(opts []option) []string {
	var w []string
	for _, o := range opts {
		if switches[o.name] {
			w = append(w, o.name)
		} else {
			w = append(w, o.name+"="+o.value)
		}
	}
	return w
}

// describe is a one-line summary of the case for the report.
func (c *peerCase) describe() string {
	return fmt.Sprintf("case %d (%s, damage %q, tweaks %v)", c.index, c.kind, c.damage, c.tweaks)
}
