package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// TreeFlags are the tree-parameter flags, with veritysetup's names and
// meanings so that scripts port unchanged.
type TreeFlags struct {
	Hash          string
	Salt          string
	UUID          string
	Format        int
	DataBlockSize int
	HashBlockSize int
	DataBlocks    uint64
	HashOffset    uint64
	NoSuperblock  bool

	fs *pflag.FlagSet
}

// Register adds the flags to fs with the wording of a command that writes
// a tree (veritygen).
func (t *TreeFlags) Register(fs *pflag.FlagSet) { t.register(fs, false) }

// RegisterForCheck adds the flags to fs with the wording of a command that
// reads a tree (veritycheck): there the flags describe a tree made earlier,
// and the defaults of writing (a random salt and UUID) mean nothing.
func (t *TreeFlags) RegisterForCheck(fs *pflag.FlagSet) { t.register(fs, true) }

// register adds the flags. -h is --hash and -s is --salt, as in
// veritysetup: a script's "-h sha512" must build a sha512 tree, not print
// help and exit 0 with nothing written; help is --help.
func (t *TreeFlags) register(fs *pflag.FlagSet, check bool) {
	t.fs = fs
	if !check {
		fs.StringVarP(&t.Hash, "hash", "h", "sha256", "hash `algorithm`, listed below")
		fs.StringVarP(&t.Salt, "salt", "s", "", "salt as `hex`, - for none (default: 32 random bytes)")
		fs.StringVar(&t.UUID, "uuid", "", "`UUID` stored in the superblock (default: random)")
	} else {
		fs.StringVarP(&t.Hash, "hash", "h", "sha256", "the tree's hash `algorithm`")
		fs.StringVarP(&t.Salt, "salt", "s", "", "the tree's salt as `hex`, - for none (required)")
		fs.StringVar(&t.UUID, "uuid", "", "not used: the superblock holds the `UUID`")
		fs.MarkHidden("uuid") // accepted only to be refused with a hint
	}
	fs.IntVar(&t.Format, "format", 1, "hash `type`: 1, or 0 for Chrome OS")
	fs.IntVar(&t.DataBlockSize, "data-block-size", 4096, "`BYTES` data block size")
	fs.IntVar(&t.HashBlockSize, "hash-block-size", 4096, "`BYTES` hash block size")
	if !check {
		fs.Uint64Var(&t.DataBlocks, "data-blocks", 0, "`N` data blocks to cover (default: all of DATA)")
		fs.Uint64Var(&t.HashOffset, "hash-offset", 0, "`BYTES` into HASH where the superblock (or tree) starts")
		fs.BoolVar(&t.NoSuperblock, "no-superblock", false, "write no superblock (check with the same flags)")
		return
	}
	fs.Uint64Var(&t.DataBlocks, "data-blocks", 0, "`N` data blocks the tree covers (default: all)")
	fs.Uint64Var(&t.HashOffset, "hash-offset", 0, "`BYTES` into HASH where the superblock (or tree) starts")
	fs.BoolVar(&t.NoSuperblock, "no-superblock", false, "the tree has no superblock: give its parameters")
}

// Changed reports whether the named flag was given.
func (t *TreeFlags) Changed(name string) bool { return t.fs.Changed(name) }

// Options checks the flags that need no file and returns the library's
// tree options they give: the one conversion from the flags (the
// library's TreeOptions.Params goes on to merkle.Params). Hash is the
// name as given (the superblock keeps its spelling); DataBlocks is 0 when
// --data-blocks is absent, Salt and UUID nil when not given.
func (t *TreeFlags) Options() (verity.TreeOptions, error) {
	var o verity.TreeOptions
	if _, err := hashes.Lookup(t.Hash); err != nil {
		return o, WithHint(err, "choose one with --hash (or -h, as in veritysetup), e.g. --hash=sha256; for help: --help")
	}
	o.Hash = t.Hash
	if t.Format != 0 && t.Format != 1 {
		return o, Errorf("use --format=1 (the default) or --format=0 for Chrome OS trees", "--format %d is not 0 or 1", t.Format)
	}
	o.LegacyFormat = t.Format == 0
	if t.Changed("salt") && t.Salt != "-" {
		salt, err := ParseHex("salt", t.Salt)
		if err != nil {
			return o, WithHint(err, "give the salt as hex digits, e.g. --salt=4f2a..., or --salt=- for none")
		}
		if len(salt) > merkle.MaxSaltSize {
			return o, Errorf("", "salt is %d bytes; at most %d are allowed", len(salt), merkle.MaxSaltSize)
		}
		o.Salt = salt
	}
	if t.Changed("salt") && t.Salt == "-" {
		o.Salt = []byte{}
	}
	if t.Changed("uuid") {
		u, err := ParseUUID(t.UUID)
		if err != nil {
			return o, WithHint(err, "e.g. --uuid=a60c98d2-ae9b-4865-bfcb-b4e3ace11033, or leave it out for a random one")
		}
		o.UUID = &u
	}
	for _, bs := range []struct {
		flag string
		v    int
	}{{"data-block-size", t.DataBlockSize}, {"hash-block-size", t.HashBlockSize}} {
		if err := merkle.CheckBlockSize(bs.v); err != nil {
			return o, Errorf(fmt.Sprintf("e.g. --%s=4096", bs.flag), "--%s: %v", bs.flag, err)
		}
	}
	o.DataBlockSize, o.HashBlockSize = t.DataBlockSize, t.HashBlockSize
	if t.Changed("data-blocks") && t.DataBlocks == 0 {
		return o, Errorf("leave --data-blocks out to cover every whole block of DATA", "--data-blocks must be at least 1")
	}
	o.DataBlocks = t.DataBlocks
	o.HashOffset = t.HashOffset
	o.NoSuperblock = t.NoSuperblock
	if err := CheckHashOffset(o.HashOffset, o.HashBlockSize); err != nil {
		return o, err
	}
	if o.NoSuperblock && o.HashOffset%uint64(o.HashBlockSize) != 0 {
		return o, Errorf(fmt.Sprintf("round it up: --hash-offset=%d", roundUp(o.HashOffset, uint64(o.HashBlockSize))),
			"--hash-offset %d is not a multiple of the hash block size %d, which a tree without superblock needs", o.HashOffset, o.HashBlockSize)
	}
	return o, nil
}

// CheckHashOffset checks --hash-offset for hash blocks of hbs bytes: a
// multiple of 512, and room for a superblock and a hash block before 2^63,
// where files end and past which offset arithmetic would wrap. With the
// parameters in a superblock yet unread, hbs is merkle.MinBlockSize.
func CheckHashOffset(offset uint64, hbs int) error {
	if maxOffset := uint64(1<<63) - uint64(hbs) - merkle.SuperblockSize; offset > maxOffset {
		return Errorf("", "--hash-offset %d is too large: at most %d", offset, maxOffset)
	}
	if offset%merkle.SuperblockSize != 0 {
		return Errorf(fmt.Sprintf("round it up: --hash-offset=%d", roundUp(offset, merkle.SuperblockSize)),
			"--hash-offset %d is not a multiple of 512", offset)
	}
	return nil
}

// MaxFileOffset is the largest byte offset of a file: files end before
// 2^63 (offsets are int64).
const MaxFileOffset = 1<<63 - 1

// FECOffsetTooLarge is the error for a --fec-offset past which the parity
// would not fit in a file.
func FECOffsetTooLarge(offset uint64) error {
	return Errorf("give the byte offset of the parity in the FEC device",
		"--fec-offset %d is too large: the parity would end past byte %d, the end of the largest possible file", offset, uint64(MaxFileOffset))
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }
