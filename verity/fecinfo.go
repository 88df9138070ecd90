package verity

import (
	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

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
