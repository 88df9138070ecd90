package cli

import "github.com/veritytree/veritytree/merkle"

// TreeJSON is a tree's parameters as both commands print them in --json.
type TreeJSON struct {
	HashAlgorithm  string `json:"hash_algorithm"`
	Format         int    `json:"format"`
	Salt           string `json:"salt"`
	DataBlocks     uint64 `json:"data_blocks"`
	DataBlockSize  int    `json:"data_block_size"`
	HashBlocks     uint64 `json:"hash_blocks"`
	HashBlockSize  int    `json:"hash_block_size"`
	HashOffset     uint64 `json:"hash_offset"`
	HashStartBlock uint64 `json:"hash_start_block"`
	HashEnd        uint64 `json:"hash_end"`
	Superblock     bool   `json:"superblock"`
	UUID           string `json:"uuid"`
	DataFile       string `json:"data_file,omitempty"`
	HashFile       string `json:"hash_file"`
}

// NewTreeJSON describes g; dataPath may be empty (--dump has no DATA).
func NewTreeJSON(g *merkle.Geometry, dataPath, hashPath string) *TreeJSON {
	t := &TreeJSON{HashAlgorithm: g.Hash.Name(), Format: g.Format(), Salt: FormatSalt(g.Salt), DataBlocks: g.DataBlocks,
		DataBlockSize: g.DataBlockSize, HashBlocks: g.HashBlocks, HashBlockSize: g.HashBlockSize, HashOffset: g.HashOffset,
		HashStartBlock: g.HashStartBlock, HashEnd: g.HashEnd(), Superblock: g.Superblock, DataFile: dataPath, HashFile: hashPath}
	if g.Superblock {
		t.UUID = FormatUUID(g.UUID)
	}
	return t
}

// NewHeader returns the veritysetup-style header of g, without the root
// hash and the device sizes, which depend on the command. The algorithm is
// named as the superblock names it (veritysetup dump's), which may be
// another spelling than the kernel name of --json's hash_algorithm.
func NewHeader(g *merkle.Geometry, hashPath string) *Header {
	h := &Header{HashFile: hashPath, HashType: g.Format(), DataBlocks: g.DataBlocks, DataBlockSize: g.DataBlockSize,
		HashBlocks: g.HashBlocks, HashBlockSize: g.HashBlockSize, Algorithm: g.SuperblockHashName(), Salt: FormatSalt(g.Salt)}
	if g.Superblock {
		h.UUID = FormatUUID(g.UUID)
	}
	return h
}
