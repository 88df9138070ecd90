package verity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/appendscan"
	"github.com/veritytree/veritytree/internal/safefile"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// Layout is where Format puts the tree, its superblock and the error
// correction, and what the tree covers: everything decided before anything
// is hashed or written. PlanFormat returns it without writing; Format
// plans the same way and hands it to FormatOptions.OnLayout.
type Layout struct {
	// Geometry is the tree's shape, its parameters complete: the salt and
	// UUID drawn at random when not given, DataBlocks and HashOffset as
	// the layout fixes them.
	Geometry *merkle.Geometry
	// DataPath is the data; HashPath the file the tree goes into (DataPath
	// itself when TreeInData).
	DataPath, HashPath string
	// TreeInData: the tree goes into the data file, at HashOffset past the
	// data (the hash file is the data file) or appended (Append).
	TreeInData bool
	// Append is the appended layout, as avbtool's: nil otherwise.
	Append *AppendLayout
	// FEC is where the error correction goes and what it covers; nil
	// without. For parity in a file of its own, what it covers assumes the
	// hash file ends where Format will leave it.
	FEC *FECInfo
	// SourceFormat is "raw", or "android-sparse" for a sparse image read
	// as the image it expands to; SourceSize the size of the image read
	// (expanded), SourceFileSize that of the file itself.
	SourceFormat               string
	SourceSize, SourceFileSize int64
	// CoveredBytes are the data bytes the tree covers; UncoveredBytes
	// those of the data (before the tree, when it is in the data) past
	// the last whole block, which it does not.
	CoveredBytes, UncoveredBytes uint64
	// HashOutputEnd is where the writes to the hash file end: the end of
	// the tree, or of the parity when it follows the tree in that file.
	HashOutputEnd uint64
	// KnownRuns are the runs of data blocks whose content is known without
	// reading them (holes, sparse FILL and DONT_CARE chunks), hashed once;
	// see Source.Runs.
	KnownRuns []merkle.Run

	hashInfo fs.FileInfo // nil when HASH does not exist yet
	fecFile  fs.FileInfo // the FEC file as it is, nil if none or not a file of its own
}

// TreeSize is the size of the tree, superblock included.
func (l *Layout) TreeSize() uint64 { return l.Geometry.HashEnd() - l.Geometry.HashOffset }

// AppendLayout is the layout of Append: the image (OriginalSize bytes),
// zeros up to a whole block (the tree's HashOffset), the tree, then the
// parity, ImageSize bytes in all.
type AppendLayout struct {
	OriginalSize, ImageSize uint64

	regular  bool                   // DATA is a regular file (it grows, and is cut back)
	fileSize uint64                 // DATA's size when planned
	record   *safefile.ResumeRecord // the record DATA ends in, of an interrupted Append
}

// PlanFormat lays out what Format(dataPath, hashPath, opts) would write,
// with every check Format makes before hashing (parameters, overlaps,
// sizes, outputs it would refuse to replace), reading but writing nothing.
// The random salt and UUID it draws (when opts gives none) are its own:
// pass them in opts to Format for the same tree.
func PlanFormat(dataPath, hashPath string, opts *FormatOptions) (*Layout, error) {
	if opts == nil {
		opts = &FormatOptions{}
	}
	src, err := OpenSource(dataPath, &SourceOptions{Raw: opts.Raw, Warn: opts.Warn})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	l, err := planFormat(src, hashPath, opts)
	if err != nil {
		return nil, err
	}
	if err := l.checkOverwrites(context.Background(), opts, src); err != nil {
		return nil, err
	}
	return l, nil
}

// planFormat lays out the tree for the open source src; see PlanFormat.
// The steps, in order (each refuses what it must before the next): the
// files, which blocks the tree covers and where it goes, its geometry,
// the error correction, what the tree leaves uncovered, where the writes
// end, and whether they overlap a loop device's file.
func planFormat(src *Source, hashPath string, opts *FormatOptions) (*Layout, error) {
	p, err := opts.params()
	if err != nil {
		return nil, err
	}
	l, files, err := planFiles(src, hashPath, opts)
	if err != nil {
		return nil, err
	}
	if err := l.planDataBlocks(opts, &p, src, files); err != nil {
		return nil, err
	}
	if err := l.planGeometry(opts, &p); err != nil {
		return nil, err
	}
	if err := l.placeFEC(opts, src, files); err != nil {
		return nil, err
	}
	if p.DataBlockSize > 4096 {
		opts.warn("Linux refuses data blocks larger than its page size (4096 bytes on most machines); this tree may not open there")
	}
	l.planCoverage(opts, &p, uint64(src.size), files.inPlace)
	l.planOutputEnd()
	if err := l.checkLoopOverlap(files.dataInfo); err != nil {
		return nil, err
	}
	l.KnownRuns = src.Runs(l.Geometry.DataBlockSize, l.Geometry.DataBlocks)
	return l, nil
}

// formatFiles is what planFiles finds of DATA and HASH.
type formatFiles struct {
	dataInfo fs.FileInfo
	// inPlace: HASH exists and is DATA (with Append too).
	inPlace bool
}

// planFiles names HASH and checks DATA, HASH and the small outputs against
// each other, and starts the layout.
func planFiles(src *Source, hashPath string, opts *FormatOptions) (*Layout, formatFiles, error) {
	dataPath := src.path
	hashPath, hashGiven, err := formatHashPath(dataPath, hashPath, opts)
	if err != nil {
		return nil, formatFiles{}, err
	}
	dataInfo, err := src.file.Stat()
	if err != nil {
		return nil, formatFiles{}, errorf(KindIO, "", "DATA %s: %w", dataPath, unwrapPath(err))
	}
	if isBlockDevice(dataInfo) && !hashGiven && !opts.Append {
		return nil, formatFiles{}, errorf(KindParam, fmt.Sprintf("name HASH, e.g. %s.verity, or put the tree inside the device with TreeOptions.HashOffset", filepath.Base(dataPath)),
			"DATA %s is a block device: the default HASH %s would be a new file beside it in %s", dataPath, hashPath, filepath.Dir(dataPath))
	}
	hashInfo, err := statHash(hashPath, dataPath)
	if err != nil {
		return nil, formatFiles{}, err
	}
	inPlace := hashInfo != nil && sameDevice(dataInfo, hashInfo)
	if err := checkSmallOutputs(opts, dataPath, dataInfo, hashPath, hashInfo); err != nil {
		return nil, formatFiles{}, err
	}
	if src.sparse != nil && (inPlace || opts.Append) {
		return nil, formatFiles{}, errorf(KindInput, fmt.Sprintf("write the tree to a file of its own (HASH %s.verity), or expand the image first: simg2img %s image.raw", dataPath, dataPath),
			"DATA %s is an Android sparse image: a tree cannot go inside it", dataPath)
	}
	l := &Layout{DataPath: dataPath, HashPath: hashPath, TreeInData: inPlace || opts.Append, SourceFormat: src.Format(),
		SourceSize: src.size, SourceFileSize: src.fileSize, hashInfo: hashInfo}
	return l, formatFiles{dataInfo: dataInfo, inPlace: inPlace}, nil
}

// formatHashPath returns the hash file: hashPath, else DATA itself with
// Append, else DATA.verity; hashGiven says the caller named it.
func formatHashPath(dataPath, hashPath string, opts *FormatOptions) (_ string, hashGiven bool, _ error) {
	hashGiven = hashPath != "" && !(opts.Append && hashPath == dataPath)
	switch {
	case opts.Append && hashGiven:
		return "", false, paramErrorf("Append", "leave HASH out",
			"FormatOptions.Append writes the tree into DATA; got a HASH argument (%s) too", hashPath)
	case opts.Append:
		hashPath = dataPath
	case hashPath == "":
		hashPath = dataPath + ".verity"
	}
	return hashPath, hashGiven, nil
}

// statHash returns the info of an existing HASH, one the tree can be
// written into, or nil when HASH does not exist yet.
func statHash(hashPath, dataPath string) (fs.FileInfo, error) {
	hashInfo, err := os.Stat(hashPath)
	hashExists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, errorf(KindIO, "", "HASH %s: %w", hashPath, unwrapPath(err))
	case hashExists && hashInfo.IsDir():
		return nil, errorf(KindInput, "name a file for the tree, e.g. "+filepath.Join(hashPath, filepath.Base(dataPath)+".verity"),
			"HASH %s is a directory", hashPath)
	case hashExists:
		// The tree is written at offsets, and read back for the parity.
		if err := checkImageType("HASH", hashPath, hashInfo.Mode(), "written"); err != nil {
			return nil, err
		}
	case !hashExists:
		hashInfo = nil
	}
	return hashInfo, nil
}

// planDataBlocks fills in p's DataBlocks, the blocks the tree covers, and
// with Append (l.Append) or a tree inside DATA its HashOffset, and checks
// them against DATA.
func (l *Layout) planDataBlocks(opts *FormatOptions, p *merkle.Params, src *Source, files formatFiles) error {
	dataPath, dataSize := src.path, src.size
	dbs := uint64(p.DataBlockSize)
	// Where hints put the tree: 4096-aligned, and on a hash block without
	// superblock, as --hash-offset must then be.
	align := uint64(4096)
	if !p.Superblock {
		align = max(align, uint64(p.HashBlockSize))
	}
	switch {
	case opts.Append:
		var err error
		if l.Append, err = planAppend(opts, p, dataPath, files.dataInfo, src.file, dataSize); err != nil {
			return err
		}
	case files.inPlace:
		if err := planInData(opts, p, uint64(dataSize), align, dataPath, l.HashPath); err != nil {
			return err
		}
	case p.DataBlocks == 0:
		p.DataBlocks = uint64(dataSize) / dbs
	}
	if err := checkDataBlocks(p, dataPath, dataSize, l.Append != nil); err != nil {
		return err
	}
	if files.inPlace && p.DataBlocks*dbs > p.HashOffset {
		hint := fmt.Sprintf("put the tree past the data: TreeOptions.HashOffset=%d", roundUp(p.DataBlocks*dbs, align))
		if p.HashOffset/dbs > 0 {
			hint += fmt.Sprintf(", or cover fewer blocks: TreeOptions.DataBlocks=%d", p.HashOffset/dbs)
		}
		return paramErrorf("HashOffset", hint,
			"the data area (%d blocks of %d bytes, up to byte %d) overlaps the hash area at TreeOptions.HashOffset %d", p.DataBlocks, dbs, p.DataBlocks*dbs, p.HashOffset)
	}
	return nil
}

// checkDataBlocks refuses a tree of no data block, or of more than DATA
// (dataSize bytes) holds; appended: Append, which pads DATA.
func checkDataBlocks(p *merkle.Params, dataPath string, dataSize int64, appended bool) error {
	dbs := uint64(p.DataBlockSize)
	if p.DataBlocks == 0 {
		if dataSize == 0 {
			return errorf(KindInput, "", "DATA %s is empty", dataPath)
		}
		return errorf(KindInput, fmt.Sprintf("use a smaller TreeOptions.DataBlockSize, or pad the image: truncate -s %d %s", dbs, dataPath),
			"DATA %s is %d bytes, smaller than one %d-byte data block", dataPath, dataSize, dbs)
	}
	if p.DataBlocks > uint64(dataSize)/dbs && !appended { // not DataBlocks*dbs, which may overflow
		need := fmt.Sprint(p.DataBlocks * dbs)
		if hi, _ := bits.Mul64(p.DataBlocks, dbs); hi != 0 {
			need = "more than 2^64"
		}
		return paramErrorf("DataBlocks", fmt.Sprintf("DATA has %d whole blocks; leave TreeOptions.DataBlocks out to cover them all", uint64(dataSize)/dbs),
			"TreeOptions.DataBlocks %d needs %s bytes, but DATA %s has only %d", p.DataBlocks, need, dataPath, dataSize)
	}
	return nil
}

// planGeometry completes p (the salt and UUID drawn at random when not
// given) and sets the tree's geometry.
func (l *Layout) planGeometry(opts *FormatOptions, p *merkle.Params) error {
	if err := opts.fillRandom(p); err != nil {
		return errorf(KindIO, "", "drawing a random salt or UUID: %w", err)
	}
	if !p.Superblock && opts.UUID != nil {
		opts.warn("TreeOptions.UUID is ignored with TreeOptions.NoSuperblock: only a superblock stores it")
	}
	g, err := merkle.NewGeometry(*p)
	if err != nil {
		return &Error{Kind: KindParam, Err: err}
	}
	l.Geometry = g
	return nil
}

// placeFEC sets where the error correction goes (see planFEC), refusing
// it inside a sparse DATA.
func (l *Layout) placeFEC(opts *FormatOptions, src *Source, files formatFiles) error {
	var err error
	if l.FEC, l.fecFile, err = planFEC(opts, l.Geometry, l.DataPath, files.dataInfo, l.HashPath, l.hashInfo); err != nil {
		return err
	}
	if l.FEC != nil && l.FEC.InData && src.sparse != nil {
		return errorf(KindInput, "write the error correction to a file of its own, e.g. FormatOptions.FECDevice="+l.DataPath+".fec",
			"DATA %s is an Android sparse image: error correction cannot go inside it", l.DataPath)
	}
	return nil
}

// planCoverage sets the bytes the tree covers and the bytes of DATA
// (dataSize bytes) it leaves uncovered, and warns of those.
func (l *Layout) planCoverage(opts *FormatOptions, p *merkle.Params, dataSize uint64, inPlace bool) {
	l.CoveredBytes = l.Geometry.DataSize()
	switch {
	case l.Append != nil: // the padding makes the image whole blocks
	case inPlace:
		l.UncoveredBytes = min(dataSize, p.HashOffset) - l.CoveredBytes
	default:
		l.UncoveredBytes = dataSize - l.CoveredBytes
	}
	if l.UncoveredBytes > 0 && opts.DataBlocks == 0 {
		opts.warn(fmt.Sprintf("the last %d bytes of DATA are not a whole %d-byte block: the tree does not cover them", l.UncoveredBytes, p.DataBlockSize))
	}
}

// planOutputEnd sets where the writes to the hash file end, and with
// Append the image's final size.
func (l *Layout) planOutputEnd() {
	l.HashOutputEnd = l.Geometry.HashEnd()
	if f := l.FEC; f != nil && f.InHash {
		l.HashOutputEnd = f.Offset + f.Size
	}
	if l.Append != nil {
		l.Append.ImageSize = l.HashOutputEnd
	}
}

// planInData fills in the data blocks of a tree inside the data file
// (size bytes), which needs a HashOffset: without DataBlocks, the whole
// device with InPlace (veritysetup's: a tree inside it then overlaps it,
// refused by planFormat), else the blocks before the tree, if nothing from
// it on is the user's (checkWrittenTails). align is where hints put the
// tree.
func planInData(opts *FormatOptions, p *merkle.Params, size, align uint64, dataPath, hashPath string) error {
	dbs := uint64(p.DataBlockSize)
	switch {
	case p.HashOffset == 0 && !opts.HashOffsetSet:
		return paramErrorf("HashOffset", fmt.Sprintf("to write the tree into DATA past the data, add TreeOptions.HashOffset=%d (DATA's size rounded up to %d), or use FormatOptions.Append", roundUp(size, align), align),
			"HASH is DATA (%s) and no TreeOptions.HashOffset says where the tree goes", hashPath)
	case p.DataBlocks != 0:
	case opts.InPlace:
		p.DataBlocks = size / dbs
	default:
		p.DataBlocks = min(size, p.HashOffset) / dbs
		if p.DataBlocks == 0 && size >= dbs {
			return paramErrorf("HashOffset", fmt.Sprintf("put the tree past the data: TreeOptions.HashOffset=%d", roundUp(size, align)),
				"TreeOptions.HashOffset %d leaves no whole %d-byte data block before the tree in DATA %s", p.HashOffset, dbs, dataPath)
		}
	}
	return nil
}

// planAppend lays out Append: the tree right after the image padded to a
// whole data and hash block, and fills p in. f is DATA, open.
func planAppend(opts *FormatOptions, p *merkle.Params, dataPath string, dataInfo fs.FileInfo, f *os.File, size int64) (*AppendLayout, error) {
	orig := uint64(size)
	if isBlockDevice(dataInfo) && opts.OriginalSize == nil {
		return nil, paramErrorf("OriginalSize", "give the size of the image on it: FormatOptions.OriginalSize=BYTES",
			"DATA %s is a block device: FormatOptions.Append cannot grow it, and needs FormatOptions.OriginalSize to know where the image ends", dataPath)
	}
	if opts.OriginalSize != nil {
		if *opts.OriginalSize > orig {
			return nil, paramErrorf("OriginalSize", "give the image's size before the interrupted FormatOptions.Append, no more than DATA's current size",
				"FormatOptions.OriginalSize %d is more than DATA %s's %d bytes", *opts.OriginalSize, dataPath, size)
		}
		orig = *opts.OriginalSize
	}
	ap := &AppendLayout{regular: dataInfo.Mode().IsRegular(), fileSize: uint64(size)}
	if ap.regular {
		var err error
		if orig, err = appendStart(opts, *p, dataPath, f, ap, orig); err != nil {
			return nil, err
		}
	}
	if orig == 0 {
		return nil, errorf(KindInput, "", "DATA %s is empty", dataPath)
	}
	// Both block sizes are powers of two: the larger is a multiple of the
	// other.
	align := uint64(max(p.DataBlockSize, p.HashBlockSize))
	padded := roundUp(orig, align)
	if padded < orig || padded > 1<<62 {
		return nil, errorf(KindInput, "", "DATA %s is too large", dataPath)
	}
	p.Superblock = false
	p.HashOffset = padded
	p.DataBlocks = padded / uint64(p.DataBlockSize)
	ap.OriginalSize = orig
	return ap, nil
}

// appendStart finds where the image in the regular file f (DATA) ends,
// orig being its size or --data-size: where the record of an interrupted
// Append says, or where an earlier Append of the image ended (its tree,
// written again); an AVB image, or one that ends in a tree it cannot check,
// is refused.
func appendStart(opts *FormatOptions, p merkle.Params, dataPath string, f *os.File, ap *AppendLayout, orig uint64) (uint64, error) {
	given := opts.OriginalSize != nil
	if rec := safefile.ReadResumeRecord(f, int64(ap.fileSize)); rec != nil && !rec.Sparse {
		if rec.Verb != "" && rec.Verb != safefile.VerbAppend {
			// Only Append writes raw records; a record of its own of another
			// verb is a newer tool's, not this run's to finish.
			return 0, errorf(KindRefused, fmt.Sprintf("finish it with that verb (%s) first", rec.Verb),
				"DATA %s ends in the record of an interrupted %s of its first %d bytes, not of a FormatOptions.Append", dataPath, rec.Verb, rec.OriginalSize)
		}
		if given && orig != rec.OriginalSize && !opts.Force {
			return 0, errorf(KindRefused, fmt.Sprintf("leave FormatOptions.OriginalSize out to finish it; to cut DATA at byte %d anyway, add FormatOptions.Force", orig),
				"DATA %s ends in the record of an interrupted FormatOptions.Append of its first %d bytes, not %d (FormatOptions.OriginalSize)", dataPath, rec.OriginalSize, orig)
		}
		ap.record = rec
		return rec.OriginalSize, nil
	}
	if opts.Force {
		return orig, nil
	}
	if av := appendscan.FindAVBFooter(f, ap.fileSize); av != nil {
		return 0, avbImageRefused(dataPath, av)
	}
	if given {
		return orig, nil
	}
	roots := 0
	if opts.AppendFEC {
		roots = cmp.Or(opts.FECRoots, fec.DefaultRoots)
	}
	found, err := appendscan.Find(f, ap.fileSize, p, roots)
	if err != nil {
		return 0, errorf(KindIO, "", "reading DATA %s: %w", dataPath, unwrapPath(err))
	}
	if found == nil {
		return orig, nil
	}
	what := "a tree"
	if roots > 0 {
		what = "a tree and error correction"
	}
	if !found.Checked {
		hint := fmt.Sprintf("to build it again in place: FormatOptions.OriginalSize=%d (or give that run's TreeOptions.Salt: the tree is then checked and written again); to take all of DATA, that tree included, for the image: FormatOptions.OriginalSize=%d",
			found.Original, ap.fileSize)
		if p.Salt != nil {
			hint = fmt.Sprintf("its digests are not this salt's: to build it again with this one: FormatOptions.OriginalSize=%d; to take all of DATA, that tree included, for the image: FormatOptions.OriginalSize=%d",
				found.Original, ap.fileSize)
		}
		return 0, errorf(KindRefused, hint, "DATA %s already ends in %s laid out as an FormatOptions.Append of its first %d bytes with these parameters leaves them: appending again would take them for data",
			dataPath, what, found.Padded)
	}
	if opts.Note != nil {
		opts.Note(fmt.Sprintf("DATA %s already ends in the %s an FormatOptions.Append of its first %d bytes writes (an earlier run's): written again in place, not appended after",
			dataPath, strings.TrimPrefix(what, "a "), found.Padded))
	}
	return found.Original, nil
}

// avbImageRefused is the error of an Append on an image that ends in an AVB
// footer: the tree would bury it.
func avbImageRefused(dataPath string, av *appendscan.AVBFooter) error {
	if av.Provisional {
		e := errorf(KindRefused, fmt.Sprintf("finish that run: call avb.AddHashtreeFooter again; or cut DATA back to its image first: avb.EraseFooter(%q, false)", dataPath),
			"DATA %s ends in the provisional AVB footer of an interrupted AVB run (add_hashtree_footer) over its first %d bytes: FormatOptions.Append would bury it", dataPath, av.OriginalSize)
		e.Advice, e.Role, e.Path = AdviceAVBInterrupted, RoleData, dataPath
		return e
	}
	e := errorf(KindRefused, fmt.Sprintf("to build its tree and footer again, call avb.AddHashtreeFooter; for a tree without AVB, remove the footer first: avb.EraseFooter(%q, false)", dataPath),
		"DATA %s is an AVB image (it ends in an AVB footer; the image is its first %d bytes): FormatOptions.Append would bury the footer and take the AVB metadata for data", dataPath, av.OriginalSize)
	e.Advice, e.Role, e.Path = AdviceAVB, RoleData, dataPath
	return e
}

// planFEC checks the FEC options against the tree and describes the
// parity, nil without FEC, and the FEC file as it is, if it exists and is
// not HASH or DATA.
func planFEC(opts *FormatOptions, g *merkle.Geometry, dataPath string, dataInfo fs.FileInfo, hashPath string, hashInfo fs.FileInfo) (*FECInfo, fs.FileInfo, error) {
	if opts.FECDevice == "" && !opts.AppendFEC {
		return nil, nil, nil
	}
	roots := opts.FECRoots
	if roots == 0 {
		roots = fec.DefaultRoots
	}
	if roots < fec.MinRoots || roots > fec.MaxRoots {
		return nil, nil, paramErrorf("FECRoots", "2 (the default) corrects one lost byte in 253, 24 one in ten",
			"FormatOptions.FECRoots %d is not from %d to %d", roots, fec.MinRoots, fec.MaxRoots)
	}
	bs := uint64(g.DataBlockSize)
	if g.DataBlockSize != g.HashBlockSize {
		return nil, nil, paramErrorf("FECRoots", "use the same TreeOptions.DataBlockSize and TreeOptions.HashBlockSize",
			"error correction needs equal data and hash block sizes, not %d and %d", g.DataBlockSize, g.HashBlockSize)
	}
	if opts.AppendFEC {
		if !opts.Append {
			e := paramErrorf("AppendFEC", "", "FormatOptions.AppendFEC needs FormatOptions.Append")
			e.Requires = "Append"
			return nil, nil, e
		}
		// avbtool's layout: the parity right after the tree, covering the
		// image and the tree.
		fp, err := fecParams(g, roots, g.HashEnd())
		if err != nil {
			return nil, nil, err
		}
		return newFECInfo(dataPath, g.HashEnd(), fp, true, false), nil, nil
	}
	// Checked first: rounding a huge offset up would wrap.
	if opts.FECOffset > maxFileOffset-bs+1 {
		return nil, nil, fecOffsetTooLarge("FormatOptions", opts.FECOffset)
	}
	if opts.FECOffset%bs != 0 {
		return nil, nil, paramErrorf("FECOffset", fmt.Sprintf("round it up: FormatOptions.FECOffset=%d", roundUp(opts.FECOffset, bs)),
			"FormatOptions.FECOffset %d is not a multiple of the block size %d", opts.FECOffset, bs)
	}
	offset := opts.FECOffset
	var inHash, inData bool
	var existing fs.FileInfo
	info, err := os.Stat(opts.FECDevice)
	if err == nil {
		if info.IsDir() {
			return nil, nil, errorf(KindInput, "", "FormatOptions.FECDevice %s is a directory", opts.FECDevice)
		}
		// The parity is written at an offset: a FIFO cannot take it.
		if err := checkImageType("FEC device", opts.FECDevice, info.Mode(), "written"); err != nil {
			return nil, nil, err
		}
		existing = info
	}
	sameAsHash := err == nil && sameDevice(info, hashInfo) ||
		filepath.Clean(opts.FECDevice) == filepath.Clean(hashPath)
	switch {
	case sameAsHash:
		inHash, existing = true, nil
		if offset < g.HashEnd() {
			return nil, nil, paramErrorf("FECOffset", fmt.Sprintf("put it past the tree: FormatOptions.FECOffset=%d", g.HashEnd()),
				"FormatOptions.FECOffset %d would overwrite the tree, which ends at byte %d of HASH", offset, g.HashEnd())
		}
	case err == nil && sameDevice(info, dataInfo):
		inData, existing = true, nil
		if offset < g.DataSize() {
			return nil, nil, paramErrorf("FECOffset", fmt.Sprintf("put it past the data: FormatOptions.FECOffset=%d", roundUp(g.DataSize(), bs)),
				"FormatOptions.FECOffset %d would overwrite the data, which ends at byte %d of DATA", offset, g.DataSize())
		}
	}
	if flag := sameAsSmallOutput(opts, opts.FECDevice); flag != "" {
		return nil, nil, paramErrorf("FECDevice", "", "FormatOptions.FECDevice and %s are the same file", flag)
	}
	// The parity must end before 2^63, checked now, before anything is
	// written. In HASH it covers HASH up to itself; elsewhere what HASH
	// will hold: at least the tree.
	hashEnd := offset
	if !inHash {
		hashEnd = keptHashEnd(g, hashPath, hashInfo)
	}
	fp, err := fecParams(g, roots, hashEnd)
	if err != nil || offset+fp.ParitySize() > maxFileOffset {
		return nil, nil, fecOffsetTooLarge("FormatOptions", offset)
	}
	return newFECInfo(opts.FECDevice, offset, fp, inHash, inData), existing, nil
}

// keptHashEnd is where the hash file will end once the tree is written,
// for parity kept elsewhere: the tree's end, or that of an existing HASH
// whose bytes Format keeps (those before an offset; a device's all).
func keptHashEnd(g *merkle.Geometry, hashPath string, hashInfo fs.FileInfo) uint64 {
	hashEnd := g.HashEnd()
	if hashInfo != nil && (g.HashOffset > 0 || !hashInfo.Mode().IsRegular()) {
		if f, err := os.Open(hashPath); err == nil {
			if n, err := fileSize(f); err == nil {
				hashEnd = max(hashEnd, uint64(n))
			}
			f.Close()
		}
	}
	return hashEnd
}

// checkOverwrites refuses, unless opts.Force or opts.InPlace (which writes
// into whatever it is given, as veritysetup), what would destroy bytes the
// caller did not give over to Format: the tail of an Append DATA that is
// not an earlier tree (see checkAppendTail), an existing HASH or FEC file
// that is not something Format could have written (see foreignOutput),
// bytes of DATA or of a kept HASH where the tree or parity would go that
// are not ours (see checkWrittenTails). src is DATA, open.
func (l *Layout) checkOverwrites(ctx context.Context, opts *FormatOptions, src *Source) error {
	if opts.Force {
		return nil
	}
	dataFile := src.file
	if opts.InPlace {
		// Written in place, an output keeps every byte outside the tree
		// and parity: only a file system or image it holds would be lost.
		return l.checkOutputs(dataFile, true)
	}
	if l.Append != nil {
		size, err := fileSize(dataFile)
		if err != nil {
			return errorf(KindIO, "", "DATA %s: %w", l.DataPath, unwrapPath(err))
		}
		if err := l.checkAppendTail(ctx, src, uint64(size), jobs(opts.Jobs)); err != nil {
			return err
		}
	}
	if err := l.checkOutputs(dataFile, false); err != nil {
		return err
	}
	return l.checkWrittenTails(ctx, opts, src)
}

// checkAppendTail refuses an Append with an OriginalSize that would cut off
// DATA bytes past the image that are not provably what an earlier Append of
// the same image wrote: the file may end anywhere from the image's end to
// the end of a complete tree and parity (an interrupted run stops anywhere
// in between), the padding before the tree must be zeros, and what lies
// past it zeros or a tree of the image (its first level-0 block, which a
// build writes first, or all of it) with, past it, its parity. A block
// device keeps its size and is not checked.
func (l *Layout) checkAppendTail(ctx context.Context, src *Source, size uint64, jobs int) error {
	ap, g, f := l.Append, l.Geometry, src.file
	if size <= ap.OriginalSize || ap.record != nil && ap.record.OriginalSize == ap.OriginalSize {
		// Nothing past the image, or only what the record proves an
		// interrupted Append of this image wrote.
		return nil
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		if err != nil {
			return errorf(KindIO, "", "DATA %s: %w", l.DataPath, unwrapPath(err))
		}
		return nil
	}
	hint := fmt.Sprintf("check FormatOptions.OriginalSize (DATA's size before the earlier FormatOptions.Append); to cut DATA at byte %d anyway, add FormatOptions.Force", ap.OriginalSize)
	if size > l.HashOutputEnd {
		return errorf(KindRefused, hint, "DATA %s is %d bytes, more than an FormatOptions.Append of its first %d bytes makes (%d): "+
			"the bytes past FormatOptions.OriginalSize are not only an earlier tree, and cutting them off would lose them", l.DataPath, size, ap.OriginalSize, l.HashOutputEnd)
	}
	pad := make([]byte, min(g.HashOffset, size)-ap.OriginalSize)
	if _, err := f.ReadAt(pad, int64(ap.OriginalSize)); err != nil {
		return errorf(KindIO, "", "reading DATA %s: %w", l.DataPath, unwrapPath(err))
	}
	for i, b := range pad {
		if b != 0 {
			return errorf(KindRefused, hint, "DATA %s has a non-zero byte at %d, past FormatOptions.OriginalSize %d where an earlier FormatOptions.Append wrote only zeros up to byte %d: "+
				"they are not an earlier tree, and cutting them off would lose them", l.DataPath, ap.OriginalSize+uint64(i), ap.OriginalSize, g.HashOffset)
		}
	}
	if size <= g.HashOffset {
		return nil
	}
	w := &writtenFile{f: f, tree: true, parity: l.FEC != nil}
	off, found, err := l.userByteIn(ctx, w, src, g.HashOffset, size, jobs)
	if err != nil {
		return readError(err, "DATA", l.DataPath)
	}
	if found {
		return errorf(KindRefused, hint, "DATA %s has a non-zero byte at %d, past FormatOptions.OriginalSize %d where an earlier FormatOptions.Append of its first %d bytes wrote its tree from byte %d, "+
			"but no tree of those bytes is there: they are not an earlier tree, and cutting them off would lose them", l.DataPath, off, ap.OriginalSize, ap.OriginalSize, g.HashOffset)
	}
	return nil
}

// checkOutputs refuses to replace an existing HASH or FEC file that is not
// something Format could have written (see foreignOutput): a filesystem or
// image named as HASH by mistake, e.g. DATA and HASH swapped. A tree in
// DATA goes where the caller gave it room (HashOffset, Append).
func (l *Layout) checkOutputs(dataFile *os.File, magicOnly bool) error {
	// FIFOs, sockets and character devices were refused by planFormat and
	// planFEC (checkImageType) before anything was opened.
	g := l.Geometry
	if !l.TreeInData && l.hashInfo != nil {
		if err := checkNotLocked("HASH", l.HashPath); err != nil {
			return err
		}
		why, err := foreignOutput(l.HashPath, l.hashInfo, int64(g.HashOffset), g.Superblock, l.HashOutputEnd, magicOnly)
		if err != nil {
			return errorf(KindIO, "", "HASH %s: %w", l.HashPath, unwrapPath(err))
		}
		if why != "" {
			hint := "to replace it anyway, add FormatOptions.Force"
			swapped := looksLikeTree(l.DataPath, dataFile)
			if swapped {
				hint = fmt.Sprintf("DATA comes first: did you mean Format of DATA %s then HASH %s?\n", l.HashPath, l.DataPath) + hint
			}
			e := &Error{Kind: KindRefused, Err: &ForeignOutputError{Role: RoleHash, Path: l.HashPath, Reason: why}, Hint: hint}
			if swapped {
				e.Advice, e.Role, e.Path, e.DataPath = AdviceSwapped, RoleHash, l.HashPath, l.DataPath
			}
			return e
		}
	}
	fl := l.FEC
	if fl == nil || l.fecFile == nil {
		return nil
	}
	if err := checkNotLocked("FEC device", fl.Path); err != nil {
		return err
	}
	// The parity covers the hash output as it will be: the tree, or all of
	// an existing HASH whose bytes are kept.
	why, err := foreignOutput(fl.Path, l.fecFile, -1, false, fl.Offset+fl.Size, magicOnly)
	if err != nil {
		return errorf(KindIO, "", "FormatOptions.FECDevice %s: %w", fl.Path, unwrapPath(err))
	}
	if why != "" {
		return &Error{Kind: KindRefused, Err: &ForeignOutputError{Role: RoleFEC, Path: fl.Path, Reason: why},
			Hint: "name another file, or add FormatOptions.Force to replace it anyway"}
	}
	return nil
}

// checkSmallOutputs refuses a root hash file or signature file that would
// replace DATA or HASH (written over after the tree) or is a directory.
// hashInfo is nil when HASH does not exist yet.
func checkSmallOutputs(opts *FormatOptions, dataPath string, dataInfo fs.FileInfo, hashPath string, hashInfo fs.FileInfo) error {
	for _, o := range smallOutputs(opts) {
		if err := checkSmallOutput(o, dataPath, dataInfo, hashPath, hashInfo); err != nil {
			return err
		}
	}
	return nil
}

// smallOutput is an output written after the tree: the root hash file,
// the signature files.
type smallOutput struct {
	field, flag, path, suffix, what string
}

func smallOutputs(opts *FormatOptions) []smallOutput {
	out := []smallOutput{{"RootHashFile", "FormatOptions.RootHashFile", opts.RootHashFile, ".roothash", "the root hash"}}
	if s := opts.Sign; s != nil {
		out = append(out, smallOutput{"Sign", "RootHashSigning.SignatureFile", s.SignatureFile, ".roothash.p7s", "the signature"},
			smallOutput{"Sign", "RootHashSigning.JSONFile", s.JSONFile, ".verity-sig", "the signature JSON"})
	}
	return out
}

// sameAsSmallOutput returns the flag of the root hash or signature file
// that is path, or "".
func sameAsSmallOutput(opts *FormatOptions, path string) string {
	for _, o := range smallOutputs(opts) {
		if o.path != "" && filepath.Clean(o.path) == filepath.Clean(path) {
			return o.flag
		}
	}
	return ""
}

func checkSmallOutput(o smallOutput, dataPath string, dataInfo fs.FileInfo, hashPath string, hashInfo fs.FileInfo) error {
	path := o.path
	if path == "" {
		return nil
	}
	hint := "name another file, e.g. " + o.flag + "=" + dataPath + o.suffix
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return paramErrorf(o.field, hint, "%s %s is a directory", o.flag, path)
	case err == nil && dataInfo != nil && sameDevice(info, dataInfo):
		return paramErrorf(o.field, hint, "%s %s is DATA: %s would replace the image", o.flag, path, o.what)
	case err == nil && hashInfo != nil && sameDevice(info, hashInfo),
		filepath.Clean(path) == filepath.Clean(hashPath):
		return paramErrorf(o.field, hint, "%s %s is HASH: %s would replace the tree", o.flag, path, o.what)
	}
	// Fail before the build, not after it.
	if dir, err := os.Stat(filepath.Dir(path)); err != nil || !dir.IsDir() {
		return paramErrorf(o.field, "", "%s %s: its directory %s does not exist", o.flag, path, filepath.Dir(path))
	}
	return nil
}

// looksLikeTree reports whether DATA is rather a hash tree: named *.verity,
// or starting with a verity superblock.
func looksLikeTree(path string, f *os.File) bool {
	if strings.HasSuffix(path, ".verity") {
		return true
	}
	b := make([]byte, 8)
	_, err := f.ReadAt(b, 0)
	return err == nil && string(b) == "verity\x00\x00"
}
