package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
)

const prog = "veritygen"

const usage = `Usage: veritygen [flags] DATA [HASH]

Builds the dm-verity hash tree of DATA and writes it to HASH (default:
DATA.verity), byte for byte as 'veritysetup format DATA HASH' would, then
prints the parameters and the root hash. The flags have veritysetup's names
and meanings.

HASH is written under a temporary name and renamed when complete, so an
interrupted run never leaves a partial tree under HASH. DATA is only read,
except when HASH is DATA itself: then the tree is written into DATA at
--hash-offset, past the data (the only case where veritygen writes to DATA).

Examples:
  veritygen system.img                       tree in system.img.verity
  veritygen --root-hash-file=root.hex system.img system.verity
  veritygen --hash=blake2b-256 --salt=- --no-superblock system.img tree.bin
  veritygen --hash-offset=1073741824 --data-blocks=262144 disk.img disk.img
  veritygen --json system.img | jq -r .root_hash

Flags:
`

const exitCodes = `
Exit codes:
  0  success
  2  anything else: bad usage, unreadable or bad input, I/O error
  (1 is veritycheck's: the data is not as expected)
`

type options struct {
	tree         cli.TreeFlags
	fecDevice    string
	fecOffset    uint64
	fecRoots     int
	rootHashFile string
	json         bool
	jobs         int
	noProgress   bool
}

func (o *options) changed(name string) bool { return o.tree.Changed(name) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty io.Writer) int {
	var o options
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.tree.Register(fs)
	fs.StringVar(&o.fecDevice, "fec-device", "", "also write Reed-Solomon error correction to `FILE` (may be HASH or DATA, with --fec-offset)")
	fs.Uint64Var(&o.fecOffset, "fec-offset", 0, "`bytes` into the FEC device where the parity starts")
	fs.IntVar(&o.fecRoots, "fec-roots", fec.DefaultRoots, "parity bytes per 255-byte codeword, `N` from 2 to 24")
	fs.StringVar(&o.rootHashFile, "root-hash-file", "", "also write the root hash to `FILE` (lower-case hex, no newline)")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "hash on `N` goroutines; the tree is the same for every N")
	fs.BoolVar(&o.noProgress, "no-progress", false, "never show the progress bar (shown only when stderr is a terminal)")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		cli.Report(stderr, prog, cli.WithHint(err, "see veritygen --help"))
		return cli.ExitError
	}
	if *help {
		fmt.Fprint(stdout, usage+fs.FlagUsages()+exitCodes)
		return cli.ExitOK
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		cli.Report(stderr, prog, cli.Errorf("usage: veritygen [flags] DATA [HASH]; see veritygen --help",
			"expected DATA and optionally HASH, got %d arguments", fs.NArg()))
		return cli.ExitError
	}
	if o.jobs < 1 {
		cli.Report(stderr, prog, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1"))
		return cli.ExitError
	}
	data := fs.Arg(0)
	hash := data + ".verity"
	if fs.NArg() == 2 {
		hash = fs.Arg(1)
	}
	showProgress := false
	if f, ok := tty.(*os.File); ok && !o.noProgress && !o.json {
		showProgress = cli.IsTerminal(f)
	}
	res, err := generate(ctx, &o, data, hash, stderr, showProgress)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted; nothing was written under HASH")
		}
		cli.Report(stderr, prog, err)
		return cli.ExitError
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			cli.Report(stderr, prog, fmt.Errorf("writing the report: %w", err))
			return cli.ExitError
		}
	} else {
		h := &cli.Header{HashFile: res.HashFile, UUID: res.UUID, HashType: res.Format, DataBlocks: res.DataBlocks,
			DataBlockSize: res.DataBlockSize, HashBlocks: res.HashBlocks, HashBlockSize: res.HashBlockSize,
			Algorithm: res.HashAlgorithm, Salt: res.Salt, RootHash: res.RootHash}
		if res.separate && res.HashOffset == 0 {
			// veritysetup prints the size only for a hash device of its own.
			h.HashDeviceSize, h.ShowHashDeviceSize = res.HashEnd, true
		}
		if f := res.fecResult; f != nil {
			h.FECRoots, h.FECBlocks = f.Roots, f.ParityBlocks
			switch {
			case f.inHash && h.ShowHashDeviceSize:
				h.HashDeviceSize += f.Size // as veritysetup counts it
			case !f.inHash && f.Offset == 0:
				h.FECDeviceSize = f.Size
			}
		}
		h.Print(stdout)
	}
	return cli.ExitOK
}

// result is the report, also printed as JSON.
type result struct {
	RootHash       string `json:"root_hash"`
	Salt           string `json:"salt"`
	HashAlgorithm  string `json:"hash_algorithm"`
	Format         int    `json:"format"`
	DataBlocks     uint64 `json:"data_blocks"`
	DataBlockSize  int    `json:"data_block_size"`
	HashBlocks     uint64 `json:"hash_blocks"`
	HashBlockSize  int    `json:"hash_block_size"`
	HashOffset     uint64 `json:"hash_offset"`
	HashStartBlock uint64 `json:"hash_start_block"`
	HashEnd        uint64 `json:"hash_end"`
	Superblock     bool   `json:"superblock"`
	UUID           string `json:"uuid"`
	DataFile       string `json:"data_file"`
	HashFile       string `json:"hash_file"`
	// UncoveredBytes counts the bytes of DATA after the last covered block
	// that the tree does not protect.
	UncoveredBytes uint64 `json:"uncovered_bytes"`
	*fecResult
	separate bool
}

func generate(ctx context.Context, o *options, dataPath, hashPath string, stderr io.Writer, showProgress bool) (*result, error) {
	p, err := o.tree.Params()
	if err != nil {
		return nil, err
	}

	dataFile, dataSize, err := cli.OpenImage("DATA", dataPath)
	if err != nil {
		return nil, err
	}
	defer dataFile.Close()

	hashInfo, err := os.Stat(hashPath)
	hashExists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, cli.Errorf("", "HASH %s: %v", hashPath, cli.UnwrapPath(err))
	case hashExists && hashInfo.IsDir():
		return nil, cli.Errorf("name a file for the tree, e.g. "+filepath.Join(hashPath, filepath.Base(dataPath)+".verity"),
			"HASH %s is a directory", hashPath)
	}
	dataInfo, _ := dataFile.Stat()
	inPlace := hashExists && os.SameFile(dataInfo, hashInfo)
	if err := checkRootHashFile(o.rootHashFile, dataPath, dataInfo, hashPath, hashInfo); err != nil {
		return nil, err
	}

	dbs := uint64(p.DataBlockSize)
	// Where hints put the tree: 4096-aligned, and on a hash block without
	// superblock, as --hash-offset must then be.
	align := uint64(4096)
	if !p.Superblock {
		align = max(align, uint64(p.HashBlockSize))
	}
	if inPlace {
		if !o.tree.Changed("hash-offset") {
			return nil, cli.Errorf(fmt.Sprintf("to write the tree into DATA past the data, add --hash-offset=%d (DATA's size rounded up to %d)", roundUp(uint64(dataSize), align), align),
				"HASH is DATA (%s) and no --hash-offset says where the tree goes", hashPath)
		}
		if !o.tree.Changed("data-blocks") {
			// The tree's own area is not data: cover the blocks before it.
			p.DataBlocks = min(uint64(dataSize), p.HashOffset) / dbs
		}
	} else if !o.tree.Changed("data-blocks") {
		p.DataBlocks = uint64(dataSize) / dbs
	}
	if p.DataBlocks == 0 {
		if dataSize == 0 {
			return nil, cli.Errorf("", "DATA %s is empty", dataPath)
		}
		if inPlace && uint64(dataSize) >= dbs {
			return nil, cli.Errorf(fmt.Sprintf("put the tree past the data: --hash-offset=%d", roundUp(uint64(dataSize), align)),
				"--hash-offset %d leaves no whole %d-byte data block before the tree in DATA %s", p.HashOffset, dbs, dataPath)
		}
		return nil, cli.Errorf(fmt.Sprintf("use a smaller --data-block-size, or pad the image: truncate -s %d %s", dbs, dataPath),
			"DATA %s is %d bytes, smaller than one %d-byte data block", dataPath, dataSize, dbs)
	}
	if p.DataBlocks > uint64(dataSize)/dbs { // not DataBlocks*dbs, which may overflow
		need := fmt.Sprint(p.DataBlocks * dbs)
		if hi, _ := bits.Mul64(p.DataBlocks, dbs); hi != 0 {
			need = "more than 2^64"
		}
		return nil, cli.Errorf(fmt.Sprintf("DATA has %d whole blocks; leave --data-blocks out to cover them all", uint64(dataSize)/dbs),
			"--data-blocks %d needs %s bytes, but DATA %s has only %d", p.DataBlocks, need, dataPath, dataSize)
	}
	if inPlace && p.DataBlocks*dbs > p.HashOffset {
		hint := fmt.Sprintf("put the tree past the data: --hash-offset=%d", roundUp(p.DataBlocks*dbs, align))
		if p.HashOffset/dbs > 0 {
			hint += fmt.Sprintf(", or cover fewer blocks: --data-blocks=%d", p.HashOffset/dbs)
		}
		return nil, cli.Errorf(hint,
			"the data area (%d blocks of %d bytes, up to byte %d) overlaps the hash area at --hash-offset %d", p.DataBlocks, dbs, p.DataBlocks*dbs, p.HashOffset)
	}

	if p.Salt == nil {
		p.Salt = make([]byte, 32)
		if _, err := rand.Read(p.Salt); err != nil {
			return nil, err
		}
	}
	if p.Superblock && !o.tree.Changed("uuid") {
		if p.UUID, err = cli.RandomUUID(); err != nil {
			return nil, err
		}
	}
	if !p.Superblock && o.tree.Changed("uuid") {
		cli.Warn(stderr, prog, "--uuid is ignored with --no-superblock: only a superblock stores it")
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return nil, err
	}
	fl, err := planFEC(o, g, dataPath, dataInfo, hashPath, hashInfo, inPlace)
	if err != nil {
		return nil, err
	}
	if p.DataBlockSize > 4096 {
		cli.Warn(stderr, prog, "Linux refuses data blocks larger than its page size (4096 bytes on most machines); this tree may not open there")
	}
	covered := g.DataSize()
	uncovered := uint64(dataSize) - covered
	if inPlace {
		uncovered = min(uint64(dataSize), p.HashOffset) - covered
	}
	if uncovered > 0 && !o.tree.Changed("data-blocks") {
		cli.Warn(stderr, prog, "the last %d bytes of DATA are not a whole %d-byte block: the tree does not cover them", uncovered, dbs)
	}

	// merkle.Build writes the superblock before it first looks at ctx, and
	// with several jobs may not notice a cancellation at all: an already
	// canceled run must stop here, before anything is written.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bar := cli.NewProgress(stderr, showProgress, "hashing", covered)
	var hashOut *output
	if inPlace {
		hashOut, err = openInPlace(dataPath, "DATA")
	} else {
		// Bytes of an existing HASH outside the tree are kept, as
		// veritysetup, which writes in place, keeps them: those before an
		// offset, and all of them when the parity goes into HASH too.
		keepFrom := g.HashOffset
		if fl != nil && fl.inHash {
			keepFrom = 1
		}
		hashOut, err = openReplacement(hashPath, "HASH", hashInfo, keepFrom)
	}
	if err != nil {
		return nil, err
	}
	defer hashOut.abort()
	root, err := merkle.Build(ctx, g, dataFile, hashOut.f, &merkle.BuildOptions{Jobs: o.jobs, Progress: bar.Update})
	var fecRes *fecResult
	if err == nil && fl != nil {
		fecRes, err = writeFEC(ctx, g, fl, dataPath, dataFile, hashOut, o.jobs)
	}
	if err == nil {
		err = hashOut.commit()
	}
	bar.Finish()
	if err != nil {
		if hashOut.tmp == "" && errors.Is(err, context.Canceled) {
			// Written in place, not through a temporary file.
			return nil, cli.Errorf("run veritygen again to write the whole tree",
				"interrupted; the tree in %s from byte %d is incomplete", hashPath, g.HashOffset)
		}
		return nil, err
	}
	rootHex := hex.EncodeToString(root)
	if o.rootHashFile != "" {
		if err := cli.WriteFileAtomic(o.rootHashFile, []byte(rootHex), 0o666); err != nil {
			return nil, cli.Errorf("", "writing --root-hash-file %s: %v", o.rootHashFile, err)
		}
	}
	res := &result{
		RootHash:       rootHex,
		Salt:           cli.FormatSalt(g.Salt),
		HashAlgorithm:  g.Hash.Name(),
		Format:         g.Format,
		DataBlocks:     g.DataBlocks,
		DataBlockSize:  g.DataBlockSize,
		HashBlocks:     g.HashBlocks,
		HashBlockSize:  g.HashBlockSize,
		HashOffset:     g.HashOffset,
		HashStartBlock: g.HashStartBlock,
		HashEnd:        g.HashEnd(),
		Superblock:     g.Superblock,
		DataFile:       dataPath,
		HashFile:       hashPath,
		UncoveredBytes: uncovered,
		separate:       !inPlace,
		fecResult:      fecRes,
	}
	if g.Superblock {
		res.UUID = cli.FormatUUID(g.UUID)
	}
	return res, nil
}

// checkRootHashFile refuses a --root-hash-file that would replace DATA or
// HASH (written over by the root hash after the tree) or is a directory.
// hashInfo is nil when HASH does not exist yet.
func checkRootHashFile(path, dataPath string, dataInfo fs.FileInfo, hashPath string, hashInfo fs.FileInfo) error {
	if path == "" {
		return nil
	}
	hint := "name another file, e.g. --root-hash-file=" + dataPath + ".roothash"
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return cli.Errorf(hint, "--root-hash-file %s is a directory", path)
	case err == nil && dataInfo != nil && os.SameFile(info, dataInfo):
		return cli.Errorf(hint, "--root-hash-file %s is DATA: the root hash would replace the image", path)
	case err == nil && hashInfo != nil && os.SameFile(info, hashInfo),
		filepath.Clean(path) == filepath.Clean(hashPath):
		return cli.Errorf(hint, "--root-hash-file %s is HASH: the root hash would replace the tree", path)
	}
	// Fail before the build, not after it.
	if dir, err := os.Stat(filepath.Dir(path)); err != nil || !dir.IsDir() {
		return cli.Errorf("", "--root-hash-file %s: its directory %s does not exist", path, filepath.Dir(path))
	}
	return nil
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }
