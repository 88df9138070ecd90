package verity

import (
	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// FECInfo describes the error-correction parity of a tree: where it is,
// how it was made and what it covers. Format gives it for the parity it
// plans (Layout.FEC) and writes (FormatResult.FEC), Verify and DescribeFEC
// for the parity they read. Table takes its Start, Blocks and Roots (the
// device is TableOptions.FECDevice), PlanRepair its Roots, Blocks and
// Offset. The JSON names are those of veritygen's report.
type FECInfo struct {
	// Path is the file or device the parity is in.
	Path string `json:"fec_device"`
	// Roots is the number of parity bytes per 255-byte codeword.
	Roots int `json:"fec_roots"`
	// Blocks is the number of message blocks covered (data, then the hash
	// device from the tree on): the table's fec_blocks.
	Blocks uint64 `json:"fec_blocks"`
	// ParityBlocks is the number of parity blocks (veritysetup's "FEC
	// blocks").
	ParityBlocks uint64 `json:"fec_parity_blocks"`
	// Offset is the parity's byte offset in Path; Start the same in
	// blocks, the table's fec_start.
	Offset uint64 `json:"fec_offset"`
	Start  uint64 `json:"fec_start"`
	// Size is the parity's size in bytes.
	Size uint64 `json:"fec_size"`
	// InHash: the parity is in the hash device past the tree (when the
	// tree is in DATA, in DATA past the tree) and covers that device up to
	// Offset. InData: in DATA past the data, while the tree is in a file
	// of its own.
	InHash bool `json:"-"`
	InData bool `json:"-"`
	// SizeRoots, when Verify or DescribeFEC read the parity, is the one
	// other number of roots whose parity, from Offset, ends exactly where
	// Path ends while Roots' does not: a sign that the parity was made
	// with SizeRoots (a wrong VerifyOptions.FECRoots makes a parity of
	// another size). 0 when Roots' parity ends there, or none or several
	// others' do, or Path ends in an AVB footer (its vbmeta and footer
	// follow the parity).
	SizeRoots int `json:"-"`
}

// sizeRoots returns the one number of roots other than roots whose parity
// for the tree g (covering the hash device up to hashEnd) ends, from
// offset, at byte size; 0 if roots' does, or if none or several others'
// do.
func sizeRoots(g *merkle.Geometry, roots int, hashEnd, offset, size uint64) int {
	if p, err := fecParams(g, roots, hashEnd); err != nil || offset+p.ParitySize() == size {
		return 0
	}
	found := 0
	for r := fec.MinRoots; r <= fec.MaxRoots; r++ {
		p, err := fecParams(g, r, hashEnd)
		if r == roots || err != nil || offset+p.ParitySize() != size {
			continue
		}
		if found != 0 {
			return 0
		}
		found = r
	}
	return found
}

// newFECInfo describes the parity with parameters p (of a tree whose data
// and hash block sizes are p.BlockSize) in path at offset.
func newFECInfo(path string, offset uint64, p fec.Params, inHash, inData bool) *FECInfo {
	return &FECInfo{Path: path, Roots: p.Roots, Blocks: p.Blocks, ParityBlocks: p.ParityBlocks(),
		Offset: offset, Start: offset / uint64(p.BlockSize), Size: p.ParitySize(), InHash: inHash, InData: inData}
}

// DescribeFEC describes the error-correction parity of an existing tree,
// as Format describes what it writes (FormatResult.FEC) and Verify what it
// reads (VerifyResult.FEC): the FECInfo that Table takes for its FEC
// arguments, without reading the data, the tree or the parity. g is the
// tree (ReadSuperblock gives it, or a FormatResult), dataPath and hashPath
// its files, fecPath the file the parity is in (it may be HASH or DATA),
// at byte fecOffset, made with roots parity bytes per codeword (0 means
// 2, veritysetup's default).
//
// What the parity covers depends on where it is, as veritysetup computes
// it: in HASH, HASH up to the parity; elsewhere, the whole of HASH. The
// files are looked at (and locked shared while they are) only for that
// and to check that the parity fits in fecPath. An Android sparse DATA is
// taken as the image it expands to, as Verify takes it: the parity in it
// is in the expansion.
//
// Bad options are KindParam errors naming the option (FECRoots,
// FECOffset); a fecPath too short for the parity is KindInput.
func DescribeFEC(g *merkle.Geometry, dataPath, hashPath, fecPath string, fecOffset uint64, roots int) (*FECInfo, error) {
	vo := &VerifyOptions{FECDevice: fecPath, FECOffset: fecOffset, FECRoots: roots}
	if _, err := vo.Check(); err != nil {
		return nil, err
	}
	src, err := OpenSource(dataPath, nil)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	hash, hashSize, err := openImage("HASH", hashPath)
	if err != nil {
		return nil, err
	}
	defer hash.Close()
	dataInfo, err := src.file.Stat()
	if err != nil {
		return nil, errorf(KindIO, "", "DATA %s: %v", dataPath, unwrapPath(err))
	}
	hashInfo, err := hash.Stat()
	if err != nil {
		return nil, errorf(KindIO, "", "HASH %s: %v", hashPath, unwrapPath(err))
	}
	if src.sparse != nil && sameDevice(dataInfo, hashInfo) {
		hashSize = src.Size() // HASH is the sparse DATA: its expansion, as Verify reads it
	}
	parity, err := openFEC(vo, g, src, dataInfo, hashInfo, hashPath, hashSize)
	if err != nil {
		return nil, err
	}
	defer parity.close()
	return parity.info(), nil
}

// Params are the Reed-Solomon parameters of the parity, for the fec
// package (fec.Params.Round says which blocks share a codeword with a
// block), of the tree g it was made for.
func (f *FECInfo) Params(g *merkle.Geometry) fec.Params {
	return fec.Params{Roots: f.Roots, BlockSize: g.DataBlockSize, Blocks: f.Blocks}
}
