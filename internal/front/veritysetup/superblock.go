package veritysetup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// vsSuperblock is a superblock as veritysetup's VERITY_read_sb reads it:
// more leniently than the library, which also refuses 0 data blocks, an
// algorithm not in lower case (the kernel's spelling) and a data area
// past 2^63 bytes. veritysetup dumps such a superblock and verifies the
// tree it describes (0 data blocks: the whole data device).
type vsSuperblock struct {
	hashType   uint32
	uuid       [16]byte
	alg        string // as stored
	dbs, hbs   uint32
	dataBlocks uint64
	salt       []byte
	offset     uint64
	algorithm  *hashes.Algorithm
}

// readVSSuperblock reads the superblock at offset of path in
// VERITY_read_sb's order. complaint is the line veritysetup prints before
// "Device X is not a valid VERITY device." ("" when it prints none: no
// signature, a short read); sb is nil when veritysetup refuses it.
func readVSSuperblock(path string, offset uint64) (sb *vsSuperblock, complaint string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	b := make([]byte, merkle.SuperblockSize)
	if _, err := f.ReadAt(b, int64(offset)); err != nil {
		return nil, "" // veritysetup fails the short read without a word
	}
	le := binary.LittleEndian
	if string(b[:8]) != "verity\x00\x00" {
		return nil, ""
	}
	// veritysetup prints these 32-bit fields with %d.
	if v := le.Uint32(b[8:]); v != 1 {
		return nil, fmt.Sprintf("Unsupported VERITY version %d.", int32(v))
	}
	sb = &vsSuperblock{hashType: le.Uint32(b[12:]), offset: offset}
	if sb.hashType > 1 {
		return nil, fmt.Sprintf("Unsupported VERITY hash type %d.", int32(sb.hashType))
	}
	copy(sb.uuid[:], b[16:32])
	sb.dbs, sb.hbs = le.Uint32(b[64:]), le.Uint32(b[68:])
	if !vsBlockSizeOK(sb.dbs) || !vsBlockSizeOK(sb.hbs) {
		return nil, "Unsupported VERITY block size."
	}
	sb.dataBlocks = le.Uint64(b[72:])
	name := string(b[32:64]) // strndup of the 32 bytes
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	sb.alg = name
	a, err := hashes.Lookup(name) // as OpenSSL, in any case
	if err != nil || notInOpenSSL(name) {
		// Also a name OpenSSL knows and we do not (whirlpool, sm3): we
		// cannot go on.
		return nil, fmt.Sprintf("Hash algorithm %s not supported.", name)
	}
	sb.algorithm = a
	saltSize := le.Uint16(b[80:])
	if saltSize > merkle.MaxSaltSize {
		return nil, "VERITY header corrupted."
	}
	sb.salt = append([]byte{}, b[88:88+int(saltSize)]...)
	return sb, ""
}

// vsBlockSizeOK is the negation of veritysetup's VERITY_BLOCK_SIZE_OK
// (which is true for a bad size): a power of two from 512 to 512 KiB.
func vsBlockSizeOK(x uint32) bool {
	return x%512 == 0 && x >= 512 && x <= 512*1024 && x&(x-1) == 0
}

// hashStart is where the tree of a superblock at offset starts
// (veritysetup's VERITY_hash_offset_block, in bytes).
func (sb *vsSuperblock) hashStart() uint64 {
	h := uint64(sb.hbs)
	return (sb.offset + merkle.SuperblockSize + h - 1) / h * h
}

// superblockError words a superblock the library refuses as veritysetup
// does (open's; it has the offset of neither).
func superblockError(err error, hashPath string) error {
	if errors.Is(err, verity.ErrInput) {
		f := fail(exitEINVAL, "Device %s is not a valid VERITY device.", hashPath)
		var se *merkle.SuperblockError
		if errors.As(err, &se) && se.Field == "algorithm" && se.Name != "" {
			// A name we do not know: veritysetup (OpenSSL) says so first.
			f.lines = append([]string{fmt.Sprintf("Hash algorithm %s not supported.", se.Name)}, f.lines...)
		}
		return f
	}
	return err
}

// refusedSuperblock words a superblock the library refuses at offset of
// hashPath as veritysetup does, with the reason it prints first; or
// returns the superblock when veritysetup reads it (the caller goes on
// with it).
func refusedSuperblock(err error, hashPath string, offset uint64) (*vsSuperblock, error) {
	if !errors.Is(err, verity.ErrInput) {
		return nil, err
	}
	sb, complaint := readVSSuperblock(hashPath, offset)
	if sb != nil {
		return sb, nil
	}
	f := fail(exitEINVAL, "Device %s is not a valid VERITY device.", hashPath)
	if complaint != "" {
		f.lines = append([]string{complaint}, f.lines...)
	}
	return nil, f
}

// header is the dump of sb, as VERITY_dump prints it.
func (sb *vsSuperblock) header(hashPath string) *cli.Header {
	hashBlocks := hashBlocks(int(sb.hbs), sb.algorithm.Size(), sb.dataBlocks)
	h := &cli.Header{HashFile: hashPath, UUID: cli.FormatUUID(sb.uuid), HashType: int(sb.hashType), DataBlocks: sb.dataBlocks,
		DataBlockSize: int(sb.dbs), HashBlocks: hashBlocks, HashBlockSize: int(sb.hbs), Algorithm: sb.alg,
		Salt: cli.FormatSalt(sb.salt)}
	if sb.offset == 0 {
		h.HashDeviceSize, h.ShowHashDeviceSize = sb.hashStart()+hashBlocks*uint64(sb.hbs), true
	}
	return h
}

// treeOptions are the options that verify the tree sb describes as a tree
// without superblock, starting where veritysetup starts it.
func (sb *vsSuperblock) treeOptions() verity.TreeOptions {
	return verity.TreeOptions{Hash: sb.algorithm.Name(), Salt: sb.salt, DataBlockSize: int(sb.dbs), HashBlockSize: int(sb.hbs),
		DataBlocks: sb.dataBlocks, LegacyFormat: sb.hashType == 0, NoSuperblock: true, HashOffset: sb.hashStart()}
}

func (sb *vsSuperblock) walkTree() walkTree {
	return walkTree{hash: sb.algorithm, format: int(sb.hashType), salt: sb.salt, dbs: int(sb.dbs), hbs: int(sb.hbs),
		dataBlocks: sb.dataBlocks, hashStart: sb.hashStart() / uint64(sb.hbs)}
}

// superblockOffset fails as veritysetup's VERITY_read_sb does for a
// superblock offset it cannot read at, with its caller's line after.
func superblockOffset(offset uint64, hashPath string) error {
	notValid := fmt.Sprintf("Device %s is not a valid VERITY device.", hashPath)
	switch {
	case offset%merkle.SuperblockSize != 0:
		return &failure{code: exitEINVAL, lines: []string{"Unsupported VERITY hash offset.", notValid}}
	case offset > cli.MaxFileOffset-merkle.SuperblockSize+1:
		return &failure{code: exitEINVAL, lines: []string{notValid}} // the read fails
	}
	return nil
}
