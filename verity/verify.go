package verity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/appendscan"
	"github.com/veritytree/veritytree/merkle"
)

// VerifyOptions tune Verify. The zero value (or nil) checks a tree whose
// superblock is at the start of the hash file, on one goroutine per CPU.
type VerifyOptions struct {
	// TreeOptions: HashOffset is where the superblock (or, with
	// NoSuperblock, the tree) starts in the hash file. The other fields
	// are only for a tree without superblock (NoSuperblock), which records
	// its parameters nowhere: they must then be those it was made with,
	// Salt included (an empty non-nil Salt for none); UUID is not used.
	// With a superblock they must be left zero.
	TreeOptions
	// Raw reads the data as it is, even if it starts with the Android
	// sparse magic (else a sparse image is checked as the image it
	// expands to).
	Raw bool

	// FECDevice is the file holding error-correction parity (veritysetup's
	// --fec-device; it may be the hash file or the data file, at
	// FECOffset). With it, the corrupted blocks found are rebuilt from the
	// parity and checked against the tree: VerifyResult.Repair says what
	// can be repaired. "" means no error correction.
	FECDevice string
	// FECOffset is the byte offset of the parity in FECDevice, a multiple
	// of the block size.
	FECOffset uint64
	// FECRoots is the number of parity bytes per codeword the parity was
	// made with, from 2 to 24; 0 means 2 (veritysetup's default).
	FECRoots int
	// Repair writes a repair back into the data and hash files when it
	// makes the image whole (it writes nothing otherwise), then reads what
	// it wrote back and checks it against the tree. It needs FECDevice,
	// and the only time Verify writes.
	Repair bool

	// MaxProblems caps the problems VerifyResult.Problems gives (the
	// counts are always complete): 0 means 100, negative means all. They
	// are kept in bounded memory (the rest in an unlinked temporary file).
	MaxProblems int
	// OnProblem, if set, is called with every problem the verification
	// finds, capped or not, in report order, from one goroutine.
	OnProblem func(*merkle.CorruptionError)
	// OnStart, if set, is called once the options and files passed every
	// check, before the data is read: with the tree and the data (e.g.
	// to say how large a sparse image expands).
	OnStart func(g *merkle.Geometry, data *Source)
	// Progress, if set, is called as the data is checked (StageHashing,
	// in bytes of data), and with FECDevice as the repair is planned
	// (StageRepairing), written (StageWriting) and read back
	// (StageVerifying): these three at their start and end, in bytes of
	// the blocks they concern.
	Progress Progress
	// Warn, if set, is given warnings that do not stop the check.
	Warn func(msg string)
	// Jobs is how many goroutines hash; 0 means one per CPU.
	Jobs int
}

// VerifyResult is what Verify found, and with error correction what it can
// repair or repaired. Close it.
type VerifyResult struct {
	// Geometry is the tree checked.
	Geometry *merkle.Geometry
	// DataFormat is "raw", or "android-sparse" for a sparse image checked
	// as the image it expands to.
	DataFormat string
	// Report has the counts (including the corrupted blocks found under
	// hash blocks that the repair rebuilt) and RootMismatch. Its Problems
	// is nil: Problems gives them.
	Report *merkle.VerifyReport
	// Verified: the data and the tree are exactly what the root hash
	// vouches for (after the repair, if one was written).
	Verified bool
	// FEC describes the parity; nil without VerifyOptions.FECDevice.
	FEC *FECInfo
	// Repair is what the parity can do; nil without FECDevice or when
	// nothing is corrupted.
	Repair *RepairPlan
	// Repaired says the repair was written; AfterRepair is then the check
	// of what was written, read back (everything else was not written).
	Repaired    bool
	AfterRepair *merkle.VerifyReport
	// RootDiagnosis, when Report.RootMismatch, says what likely explains
	// it: for a tree without superblock, the parameters with which the top
	// block matches the root hash, if it finds them. It is also set when a
	// top block that matches the root hash is corrupted for the tree given
	// (digests in its unused slots) and a tree of another shape (data
	// blocks, data block size) explains it.
	RootDiagnosis *RootDiagnosis

	spool *problemSpool
}

// Close releases the temporary files of the problem list and the repair.
func (r *VerifyResult) Close() error {
	if r == nil {
		return nil
	}
	r.spool.close()
	r.Repair.close()
	return nil
}

// Verify checks the data at dataPath and the tree in the hash file
// hashPath (they may be the same file, with the tree at HashOffset)
// against root, as veritysetup verify does, but finds every corrupted block
// rather than the first: each data block against the tree, each hash block
// against its parent, the top one against root, and the zero padding of
// hash blocks and superblock. The files are locked against writers while
// they are read.
//
// An Android sparse DATA is checked as the image it expands to (unless
// Raw); when HASH (or FECDevice) is that same file, the tree (or the
// parity) is read from the expansion too, at HashOffset (or FECOffset) in
// it, as avbtool lays out a sparse image. Repair is refused for a sparse
// DATA (KindInput): a repair writes blocks in place, which a sparse file
// does not have. The offsets in the problems and the repair plan are then
// those of the expansion.
//
// Corruption is not an error: it is in the result. The error is for bad
// options or input (KindParam, KindInput), files locked or refused
// (KindRefused) and I/O failures (KindIO); ctx's error when ctx ends.
func Verify(ctx context.Context, dataPath, hashPath string, root []byte, opts *VerifyOptions) (*VerifyResult, error) {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	p, err := opts.Check()
	if err != nil {
		return nil, err
	}
	if len(root) == 0 {
		return nil, paramErrorf("root", "", "the root hash is empty")
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	in, err := openVerify(opts, p, dataPath, hashPath, root)
	if err != nil {
		return nil, err
	}
	defer in.close()
	res, marks, err := in.check(ctx, opts, root, jobs)
	if err != nil {
		return nil, err
	}
	if err := res.repair(ctx, opts, in.g, in.parity, in.src, in.hash, root, marks, jobs, dataPath, hashPath, in.inPlace); err != nil {
		res.Close()
		return nil, err
	}
	rep := res.Report
	res.Verified = rep.OK() || res.AfterRepair != nil && res.AfterRepair.OK()
	rep.Problems = nil
	total := rep.CorruptDataBlocks + rep.CorruptHashBlocks + rep.CorruptHeaderBytes
	rep.Truncated = res.spool.limit >= 0 && total > uint64(res.spool.limit)
	return res, nil
}

// verifyInputs are the files Verify reads, open and checked, and the tree.
type verifyInputs struct {
	src      *Source
	hashFile *os.File
	// hash is the hash device as it is read: with HASH the same sparse
	// file as DATA, its expansion.
	hash               io.ReaderAt
	hashSize           int64
	dataInfo, hashInfo os.FileInfo
	inPlace            bool // HASH is DATA
	g                  *merkle.Geometry
	parity             *fecSetup // nil without FECDevice
}

func (in *verifyInputs) close() {
	in.parity.close()
	if in.hashFile != nil {
		in.hashFile.Close()
	}
	if in.src != nil {
		in.src.Close()
	}
}

// openVerify opens and checks the files Verify reads, and works out the
// tree (geometryFor) and the parity (openFEC).
func openVerify(opts *VerifyOptions, p merkle.Params, dataPath, hashPath string, root []byte) (_ *verifyInputs, err error) {
	in := &verifyInputs{}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	if err := in.open(opts, p, dataPath, hashPath); err != nil {
		return nil, err
	}
	if in.g, err = geometryFor(p, in.src, in.hash, hashPath, in.hashSize, in.inPlace, root); err != nil {
		return nil, err
	}
	if opts.FECDevice != "" {
		if in.parity, err = openFEC(opts, in.g, in.src, in.dataInfo, in.hashInfo, hashPath, in.hashSize); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// open opens DATA and HASH, locked shared, and refuses what cannot be
// checked (or repaired) as they are.
func (in *verifyInputs) open(opts *VerifyOptions, p merkle.Params, dataPath, hashPath string) error {
	src, err := OpenSource(dataPath, &SourceOptions{Raw: opts.Raw, Warn: opts.Warn})
	if err != nil {
		return err
	}
	in.src = src
	hashFile, hashSize, err := openImage("HASH", hashPath)
	if err != nil {
		return err
	}
	in.hashFile = hashFile
	// Both are locked shared (openImage): a writer (veritygen, another
	// repair) must not change what is being checked; a repair converts
	// these locks to exclusive ones to write.
	dataInfo, err := src.file.Stat()
	if err != nil {
		return errorf(KindIO, "", "DATA %s: %v", dataPath, unwrapPath(err))
	}
	hashInfo, err := hashFile.Stat()
	if err != nil {
		return errorf(KindIO, "", "HASH %s: %v", hashPath, unwrapPath(err))
	}
	inPlace := sameDevice(dataInfo, hashInfo)
	if inPlace && p.HashOffset == 0 {
		return paramErrorf("HashOffset", "give the tree's place in DATA with TreeOptions.HashOffset", "HASH is DATA (%s) and no TreeOptions.HashOffset says where the tree is", hashPath)
	}
	if src.sparse != nil && opts.Repair {
		return errorf(KindInput, fmt.Sprintf("expand the image first (simg2img %s image.raw), repair that, and make it sparse again (img2simg) if needed", dataPath),
			"DATA %s is an Android sparse image: VerifyOptions.Repair cannot write into it", dataPath)
	}
	// The hash device as it is read: with HASH the same sparse file as
	// DATA, the tree (and HashOffset) is in the expansion, read through
	// the sparse reader as the data is.
	var hash io.ReaderAt = guardShrink(hashFile, "HASH", hashPath, hashSize)
	if inPlace && src.sparse != nil {
		hash, hashSize = src, src.Size()
	}
	in.hash, in.hashSize, in.dataInfo, in.hashInfo, in.inPlace = hash, hashSize, dataInfo, hashInfo, inPlace
	return nil
}

// check verifies the data and the tree, the problems going to the result's
// spool and opts.OnProblem, and diagnoses a root hash that does not match;
// the marks are the corrupted blocks, for the repair.
func (in *verifyInputs) check(ctx context.Context, opts *VerifyOptions, root []byte, jobs int) (*VerifyResult, blockMarks, error) {
	g, parity, src, hash := in.g, in.parity, in.src, in.hash
	res := &VerifyResult{Geometry: g, DataFormat: src.Format(), spool: newProblemSpool(opts.MaxProblems)}
	if parity != nil {
		res.FEC = parity.info()
	}
	if opts.OnStart != nil {
		opts.OnStart(g, src)
	}
	var progress func(uint64)
	if opts.Progress != nil {
		total := g.DataSize()
		opts.Progress(StageHashing, 0, total)
		progress = func(done uint64) { opts.Progress(StageHashing, done, total) }
	}
	topCorrupt := false
	rep, marks, err := verifyMarked(ctx, g, parity, src, hash, root, &merkle.VerifyOptions{Jobs: jobs, Progress: progress,
		Runs: src.Runs(g.DataBlockSize, g.DataBlocks)}, func(pr *merkle.CorruptionError) {
		topCorrupt = topCorrupt || g.Levels > 0 && pr.Level == g.TopLevel()
		res.spool.add(pr)
		if opts.OnProblem != nil {
			opts.OnProblem(pr)
		}
	})
	if err != nil {
		res.Close()
		return nil, nil, err
	}
	res.Report = rep
	dataAvail := uint64(src.Size())
	if in.inPlace {
		dataAvail = min(dataAvail, g.HashOffset)
	}
	if rep.RootMismatch {
		res.RootDiagnosis = diagnoseRoot(g, &opts.TreeOptions, src, hash, dataAvail, in.hashSize, root)
	} else if topCorrupt && !g.Superblock {
		// A top block that matches the root hash but has digests where
		// the tree given has none: a tree of another shape, if its
		// diagnosis finds which.
		if d := diagnoseRoot(g, &opts.TreeOptions, src, hash, dataAvail, in.hashSize, root); d.Match != nil && len(d.Changed) > 0 {
			res.RootDiagnosis = d
		}
	}
	return res, marks, nil
}

// blocksDone is progress for a stage of a fixed total of blocks, or nil.
func blocksDone(progress func(done, total uint64), total uint64) func(done uint64) {
	if progress == nil {
		return nil
	}
	return func(done uint64) { progress(done, total) }
}

// repair plans the repair (nothing written) and with opts.Repair writes a
// whole one and checks it again from the disk.
func (res *VerifyResult) repair(ctx context.Context, opts *VerifyOptions, g *merkle.Geometry, parity *fecSetup, data, hash io.ReaderAt,
	root []byte, marks blockMarks, jobs int, dataPath, hashPath string, inPlace bool) error {
	rep := res.Report
	if parity == nil || rep.OK() {
		return nil
	}
	// The repair stages touch only the damaged rounds and blocks: they
	// are reported in bytes of those blocks, as they go (the repair's
	// total grows as it finds blocks under the hash blocks it rebuilt).
	bs := uint64(g.DataBlockSize)
	stage := func(s Stage, blocks uint64, run func(progress func(done, total uint64)) error) error {
		var progress func(done, total uint64)
		ended := false
		if opts.Progress != nil {
			opts.Progress(s, 0, blocks*bs)
			progress = func(done, total uint64) {
				blocks, ended = total, done == total
				opts.Progress(s, done*bs, total*bs)
			}
		}
		err := run(progress)
		if err == nil && opts.Progress != nil && !ended {
			opts.Progress(s, blocks*bs, blocks*bs)
		}
		return err
	}
	var rp *RepairPlan
	err := stage(StageRepairing, rep.CorruptDataBlocks+rep.CorruptHashBlocks, func(progress func(done, total uint64)) (err error) {
		rp, err = planRepair(ctx, g, parity, data, hash, root, rep, marks, jobs, progress)
		return err
	})
	if err != nil {
		return asIOError(err)
	}
	res.Repair = rp
	rp.updateReport(rep)
	// The decoders' buffers are garbage now: collected here, they do not
	// set how far the heap grows while the report is written.
	runtime.GC()
	if !opts.Repair || !rp.Whole() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fixes := uint64(rp.fixCount)
	if err := stage(StageWriting, fixes, func(progress func(done, total uint64)) error {
		return writeRepair(rp, dataPath, hashPath, inPlace, blocksDone(progress, fixes))
	}); err != nil {
		return err
	}
	res.Repaired = true
	var after *merkle.VerifyReport
	err = stage(StageVerifying, fixes, func(progress func(done, total uint64)) (err error) {
		after, err = verifyWritten(ctx, g, parity, data, hash, root, rp, blocksDone(progress, fixes))
		return err
	})
	if err != nil {
		e := withHint(KindIO, asIOError(err), "the repair was written; call Verify again")
		e.Advice = AdviceVerifyAgain
		return e
	}
	res.AfterRepair = after
	return nil
}

// Check checks the options that need no file, as Verify does first, and
// returns the tree parameters they give (DataBlocks 0 when not given). A
// caller that must read something before calling Verify (the root hash
// from a pipe, say) can refuse bad options first.
func (o *VerifyOptions) Check() (merkle.Params, error) {
	var p merkle.Params
	if o.FECDevice == "" {
		for _, f := range []struct {
			field string
			set   bool
		}{{"FECRoots", o.FECRoots != 0}, {"FECOffset", o.FECOffset != 0}, {"Repair", o.Repair}} {
			if !f.set {
				continue
			}
			hint := "" // where the parity comes from is the command line's to say
			if f.field == "Repair" {
				hint = "VerifyOptions.Repair rebuilds blocks from error-correction parity: give it with VerifyOptions.FECDevice (and VerifyOptions.FECRoots, VerifyOptions.FECOffset as when it was made)"
			}
			e := paramErrorf(f.field, hint, "VerifyOptions.%s needs VerifyOptions.FECDevice", f.field)
			e.Requires = "FECDevice"
			return p, e
		}
	}
	if o.NoSuperblock {
		var err error
		if p, err = o.Params(); err != nil {
			return p, err
		}
		if o.Salt == nil {
			return p, paramErrorf("Salt", "give the salt the tree was made with, e.g. TreeOptions.Salt=4f2a..., or TreeOptions.Salt=[]byte{} for none",
				"TreeOptions.NoSuperblock needs TreeOptions.Salt: without a superblock nothing records it")
		}
		if p.DataBlocks != 0 {
			// The data blocks must fit in a file too.
			if _, err := merkle.NewGeometry(p); err != nil {
				return p, paramErrorf("DataBlocks", "", "%v", err)
			}
		}
	} else {
		t := o.TreeOptions
		for _, f := range []struct {
			field string
			set   bool
		}{{"Hash", t.Hash != ""}, {"Salt", t.Salt != nil}, {"UUID", t.UUID != nil}, {"LegacyFormat", t.LegacyFormat},
			{"DataBlockSize", t.DataBlockSize != 0}, {"HashBlockSize", t.HashBlockSize != 0}, {"DataBlocks", t.DataBlocks != 0}} {
			if f.set {
				return p, paramErrorf(f.field, "leave TreeOptions."+f.field+" out, or add TreeOptions.NoSuperblock to give all parameters yourself",
					"TreeOptions.%s given, but the parameters come from HASH's superblock", f.field)
			}
		}
		if err := checkSuperblockOffset(o.HashOffset); err != nil {
			return p, err
		}
		p.HashOffset, p.Superblock = o.HashOffset, true
	}
	if o.FECDevice != "" {
		roots := o.fecRoots()
		if roots < fec.MinRoots || roots > fec.MaxRoots {
			return p, paramErrorf("FECRoots", "give the VerifyOptions.FECRoots the parity was made with (veritysetup's default is 2)",
				"VerifyOptions.FECRoots %d is not from %d to %d", roots, fec.MinRoots, fec.MaxRoots)
		}
		// At least one block of parity must fit before the end of a file.
		if o.FECOffset > maxFileOffset-merkle.MinBlockSize+1 {
			return p, fecOffsetTooLarge("VerifyOptions", o.FECOffset)
		}
	}
	return p, nil
}

func (o *VerifyOptions) fecRoots() int {
	if o.FECRoots == 0 {
		return fec.DefaultRoots
	}
	return o.FECRoots
}

// geometryFor completes the parameters p from the superblock or the data's
// size, and checks the tree's geometry against the root hash and the
// files.
func geometryFor(p merkle.Params, src *Source, hashFile io.ReaderAt, hashPath string, hashSize int64, inPlace bool, root []byte) (*merkle.Geometry, error) {
	dataPath, dataSize := src.path, src.Size()
	givenBlocks := p.DataBlocks
	if p.Superblock {
		var err error
		if p, err = readSuperblock(hashFile, hashPath, p.HashOffset); err != nil {
			return nil, err
		}
	} else if p.DataBlocks == 0 {
		avail := uint64(dataSize)
		if inPlace {
			avail = min(avail, p.HashOffset)
		}
		p.DataBlocks = avail / uint64(p.DataBlockSize)
		if p.DataBlocks == 0 && inPlace {
			return nil, paramErrorf("HashOffset", "", "TreeOptions.HashOffset %d leaves no whole %d-byte data block before the tree in DATA %s", p.HashOffset, p.DataBlockSize, dataPath)
		}
		if p.DataBlocks == 0 {
			return nil, errorf(KindInput, "", "DATA %s holds no whole %d-byte block", dataPath, p.DataBlockSize)
		}
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		return nil, errorf(KindInput, "", "%v", err)
	}
	if len(root) != g.DigestSize {
		hint := fmt.Sprintf("a %s root hash is %d hex digits", g.Hash.Name(), 2*g.DigestSize)
		if !g.Superblock {
			// The algorithm was given (or defaulted): the root hash's
			// length says which it likely is.
			var fit []string
			for _, name := range hashes.Names() {
				if a, _ := hashes.Lookup(name); a.Size() == len(root) {
					fit = append(fit, "TreeOptions.Hash="+name)
				}
			}
			if len(fit) > 0 {
				hint += fmt.Sprintf("; a root hash of %d bytes is of %s: give the tree's algorithm", len(root), strings.Join(fit, " or "))
			}
		}
		return nil, paramErrorf("root", hint,
			"the root hash is %d bytes, but %s digests are %d bytes", len(root), g.Hash.Name(), g.DigestSize)
	}
	if g.DataSize() > uint64(dataSize) {
		return nil, errorf(KindInput, "", "DATA %s is %d bytes, shorter than the %d blocks of %d bytes the tree covers (%d bytes): truncated?",
			dataPath, dataSize, g.DataBlocks, g.DataBlockSize, g.DataSize())
	}
	if inPlace && g.DataSize() > g.HashOffset {
		return nil, paramErrorf("HashOffset", "", "the data area (up to byte %d) overlaps the hash area at TreeOptions.HashOffset %d", g.DataSize(), g.HashOffset)
	}
	// A tree of one data block has no hash block (the root hash is the
	// block's digest): HASH needs to hold nothing past the superblock,
	// which veritysetup writes in a block of at most 4096 bytes.
	if g.Levels > 0 && g.HashEnd() > uint64(hashSize) {
		hint := ""
		if !g.Superblock {
			// Smaller hash blocks, or another algorithm, make a smaller
			// tree: the top block may say which.
			given := TreeOptions{Hash: g.Hash.Name(), LegacyFormat: g.LegacyFormat, Salt: g.Salt, DataBlockSize: g.DataBlockSize,
				HashBlockSize: g.HashBlockSize, DataBlocks: givenBlocks, HashOffset: g.HashOffset, NoSuperblock: true}
			dataAvail := uint64(dataSize)
			if inPlace {
				dataAvail = min(dataAvail, g.HashOffset)
			}
			if d := diagnoseRoot(g, &given, src, hashFile, dataAvail, hashSize, root); d.Match != nil && len(d.Changed) > 0 {
				hint = d.Hint
			}
		}
		return nil, errorf(KindInput, hint, "HASH %s is %d bytes, but the tree ends at byte %d: truncated, or not this tree's hash file?",
			hashPath, hashSize, g.HashEnd())
	}
	return g, nil
}

// openFEC checks the FEC options against the tree and opens the parity
// for reading. hashSize is the size of the hash device.
func openFEC(o *VerifyOptions, g *merkle.Geometry, src *Source, dataInfo, hashInfo os.FileInfo, hashPath string, hashSize int64) (*fecSetup, error) {
	// Check has checked the roots and the range of the offset.
	if g.DataBlockSize != g.HashBlockSize {
		return nil, paramErrorf("FECDevice", "", "error correction needs equal data and hash block sizes; this tree has %d and %d",
			g.DataBlockSize, g.HashBlockSize)
	}
	bs := uint64(g.DataBlockSize)
	if o.FECOffset%bs != 0 {
		return nil, paramErrorf("FECOffset", "give the VerifyOptions.FECOffset the parity was written at", "VerifyOptions.FECOffset %d is not a multiple of the block size %d", o.FECOffset, bs)
	}
	f, size, err := openImage("FEC device", o.FECDevice)
	if err != nil {
		return nil, err
	}
	path, roots, offset := o.FECDevice, o.fecRoots(), o.FECOffset
	fail := func(err error) (*fecSetup, error) {
		f.Close()
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		return fail(errorf(KindIO, "", "FEC device %s: %v", o.FECDevice, unwrapPath(err)))
	}
	// In a sparse DATA, the parity is in its expansion, as the data is.
	var r io.ReaderAt = guardShrink(f, "FEC device", o.FECDevice, size)
	if src.sparse != nil && os.SameFile(info, dataInfo) {
		r, size = src, src.Size()
	}
	// As veritysetup computes it: the message covers the hash device up to
	// the parity when the parity is in it, else up to its end.
	hashEnd := uint64(hashSize)
	var inHash, inData bool
	switch {
	case sameDevice(info, hashInfo):
		hashEnd, inHash = offset, true
		if offset < g.HashEnd() {
			return fail(paramErrorf("FECOffset", "the parity follows the tree: give the VerifyOptions.FECOffset it was written at",
				"VerifyOptions.FECOffset %d is inside the tree, which ends at byte %d of HASH %s", offset, g.HashEnd(), hashPath))
		}
	case sameDevice(info, dataInfo):
		inData = true
		if offset < g.DataSize() {
			return fail(paramErrorf("FECOffset", "the parity follows the data: give the VerifyOptions.FECOffset it was written at",
				"VerifyOptions.FECOffset %d is inside the data, which ends at byte %d of DATA", offset, g.DataSize()))
		}
	}
	p, err := fecParams(g, roots, hashEnd)
	switch {
	// In HASH, the parity covers HASH up to the offset: too large an
	// offset is too large a message.
	case err != nil && hashEnd == offset, err == nil && offset+p.ParitySize() > maxFileOffset:
		return fail(fecOffsetTooLarge("VerifyOptions", offset))
	case err != nil:
		return fail(err)
	}
	other := 0
	// Past the parity of an AVB image come its vbmeta and footer: the
	// file does not end where the parity does.
	if appendscan.FindAVBFooter(r, uint64(size)) == nil {
		other = sizeRoots(g, roots, hashEnd, offset, uint64(size))
	}
	if end := offset + p.ParitySize(); end > uint64(size) {
		hint := "give the VerifyOptions.FECRoots and VerifyOptions.FECOffset the parity was made with"
		if other != 0 {
			hint = fmt.Sprintf("the parity of VerifyOptions.FECRoots=%d ends exactly where FEC device %s does: give the roots the parity was made with", other, path)
		}
		return fail(errorf(KindInput, hint,
			"FEC device %s is %d bytes, but the parity of %d blocks with %d roots is %d bytes from byte %d (up to byte %d): wrong VerifyOptions.FECRoots or VerifyOptions.FECOffset, or a truncated file?",
			path, size, p.Blocks, roots, p.ParitySize(), offset, end))
	}
	s := &fecSetup{FECInfo: *newFECInfo(path, offset, p, inHash, inData), p: p, f: f,
		parity: io.NewSectionReader(r, int64(offset), int64(p.ParitySize()))}
	s.SizeRoots = other
	return s, nil
}

// verifyTree is merkle.Verify; tests wrap it to see the options given.
var verifyTree = merkle.Verify

// verifyMarked verifies, giving each problem to onProblem and, with error
// correction (s not nil), marking the corrupted blocks for the repair.
// opts' MaxProblems and OnProblem are set here.
func verifyMarked(ctx context.Context, g *merkle.Geometry, s *fecSetup, data, hash io.ReaderAt, root []byte,
	opts *merkle.VerifyOptions, onProblem func(*merkle.CorruptionError)) (*merkle.VerifyReport, blockMarks, error) {
	var marks blockMarks
	if s != nil {
		marks = newBlockMarks(g, s)
	}
	// The problems go to onProblem, and to the repair's marks, which find
	// every corrupted block: Verify's own list is not used (0 would mean
	// its default).
	opts.MaxProblems = 1
	opts.OnProblem = func(p *merkle.CorruptionError) {
		if onProblem != nil {
			onProblem(p)
		}
		if marks != nil && p.Level != merkle.HeaderLevel {
			marks.set(msgIndex(g, p.Level, p.Index), markBad|markReported)
		}
	}
	rep, err := verifyTree(ctx, g, data, hash, root, opts)
	if err != nil {
		return nil, nil, asIOError(err)
	}
	return rep, marks, nil
}

// asIOError returns err as an *Error: of the kind of an *Error it wraps
// (an engine's error around ours: "reading data block 2: DATA ... shrank"),
// else KindIO. A context's error is returned as it is.
func asIOError(err error) error {
	if _, ok := err.(*Error); ok || err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	kind := KindIO
	var e *Error
	if errors.As(err, &e) {
		kind = e.Kind
	}
	return &Error{Kind: kind, Err: err}
}
