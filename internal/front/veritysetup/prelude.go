package veritysetup

// What open and verify share: veritysetup runs both through _activate,
// which checks the options, reads the tree's parameters and the root
// hash the same way before it either activates or verifies.

import (
	"fmt"
	"io"
	"os"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// activation is what _activate has checked and read before it activates
// or verifies.
type activation struct {
	// tree is the tree's options as the library takes them: with a
	// superblock only its offset (the rest is read from it), without one
	// all of them.
	tree verity.TreeOptions
	// g is the tree the superblock describes, nil without superblock.
	g *merkle.Geometry
	// fecOffset and fecRoots are --fec-offset and --fec-roots, checked,
	// when there is --fec-device.
	fecOffset uint64
	fecRoots  int
	root      []byte
}

// activation runs veritysetup's checks for open and verify, in its order
// and with its messages: a root hash given, the tree's options, FEC's,
// the devices (FEC, then HASH, then DATA), the superblock or, without
// one, the salt, then the root hash (from the line or --root-hash-file).
func (o *options) activation(dataPath, hashPath, rootText string) (*activation, error) {
	if rootText == "" && !o.withRootHashFile() {
		return nil, fail(exitEINVAL, "Command requires <root_hash> or --root-hash-file option as argument.")
	}
	t, err := o.tree(hashPath, o.verifyHooks(dataPath, hashPath), !o.noSuperblock)
	if err != nil {
		return nil, err
	}
	a := &activation{tree: verity.TreeOptions{HashOffset: t.HashOffset}}
	if a.fecOffset, a.fecRoots, err = o.fecOptions(&t); err != nil {
		return nil, err
	}
	if o.withFEC() {
		if err := checkDevice(o.fecDevice); err != nil {
			f := err.(*failure)
			f.lines = append(f.lines, fmt.Sprintf("Device %s is not a valid VERITY device.", hashPath))
			return nil, f
		}
	}
	// veritysetup opens HASH first.
	for _, p := range []string{hashPath, dataPath} {
		if err := checkDevice(p); err != nil {
			return nil, err
		}
	}
	digestSize := 0
	if o.noSuperblock {
		if t.Salt == nil {
			// The tree's salt is recorded nowhere: it must be given.
			return nil, fail(exitEINVAL, "Invalid salt string specified.")
		}
		a.tree = t
		a.tree.UUID = nil
		if alg, err := hashes.Lookup(t.Hash); err == nil {
			digestSize = alg.Size()
		}
	} else {
		// With a superblock, veritysetup takes the parameters from it and
		// ignores the options that give them.
		if a.g, err = verity.ReadSuperblock(hashPath, t.HashOffset); err != nil {
			return nil, superblockError(err, hashPath)
		}
		digestSize = a.g.DigestSize
	}
	if o.withRootHashFile() {
		// veritysetup takes the file's root hash, even with one on the
		// line.
		a.root, err = readRootHashFile(o.rootHashFile, digestSize)
		if err != nil {
			return nil, err
		}
	} else if a.root, err = cli.ParseRootHash("root hash", rootText); err != nil {
		return nil, fail(exitEINVAL, "Invalid root hash string specified.")
	}
	if digestSize != 0 && len(a.root) != digestSize {
		return nil, fail(exitEINVAL, "Invalid root hash string specified.")
	}
	return a, nil
}

// readRootHashFile reads a root hash from path as veritysetup does: the
// first 2*digestSize characters of a regular file are its digits, and
// whatever follows them (a newline, sha256sum's file name) is ignored.
func readRootHashFile(path string, digestSize int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		// veritysetup 2.6.1 says so but exits 0 without verifying or
		// opening anything: a script would take that for success.
		return nil, fail(exitENODEV, "Cannot read root hash file %s.", path)
	}
	defer f.Close()
	// Not a FIFO or a device, which could block or never end.
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fail(exitEINVAL, "Invalid root hash file %s.", path)
	}
	digits := make([]byte, 2*digestSize)
	if _, err := io.ReadFull(f, digits); err != nil || digestSize == 0 {
		return nil, fail(exitEINVAL, "Invalid root hash file %s.", path)
	}
	root, err := cli.ParseRootHash("root hash", string(digits))
	if err != nil {
		return nil, fail(exitEINVAL, "Invalid root hash string specified.")
	}
	return root, nil
}
