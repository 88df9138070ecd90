package verity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
)

// fmtImage writes an image of size bytes that differ from block to block.
func fmtImage(t *testing.T, path string, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7 + i/4096)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func fmtRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fmtListing returns the names and sizes in dir.
func fmtListing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%d", e.Name(), info.Size()))
	}
	return strings.Join(out, " ")
}

// fmtWantError fails unless err is an *Error of kind k about field
// (checked when not ""), whose message contains msg.
func fmtWantError(t *testing.T, err error, k Kind, field, msg string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != k || field != "" && e.Field != field || !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %v (%#v), want kind %d, field %q, saying %q", err, e, k, field, msg)
	}
	return e
}

func fixedOptions() *FormatOptions {
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	return &FormatOptions{TreeOptions: TreeOptions{Salt: []byte{0xab, 0xcd}, UUID: &uuid}}
}

// fmtVerify checks the tree in hashPath against the data, the root hash
// and the layout.
func fmtVerify(t *testing.T, res *FormatResult, data []byte) {
	t.Helper()
	hash, err := os.Open(res.Layout.HashPath)
	if err != nil {
		t.Fatal(err)
	}
	defer hash.Close()
	rep, err := merkle.Verify(context.Background(), res.Layout.Geometry, bytes.NewReader(data), hash, res.RootHash, nil)
	if err != nil {
		t.Fatalf("verify: %v (%+v)", err, rep)
	}
}

// TestFormatSeparate: a tree in a file of its own is merkle.Build's, with
// the options' salt and UUID; the layout says so.
func TestFormatSeparate(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	b := fmtImage(t, data, 64*4096+100)
	var warnings []string
	opts := fixedOptions()
	opts.Warn = func(m string) { warnings = append(warnings, m) }
	res, err := Format(context.Background(), data, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Layout.HashPath != data+".verity" || res.Layout.TreeInData || res.Layout.Geometry.DataBlocks != 64 || res.Layout.UncoveredBytes != 100 || res.Layout.CoveredBytes != 64*4096 {
		t.Errorf("layout %+v", res.Layout)
	}
	want, err := merkle.Build(context.Background(), res.Layout.Geometry, bytes.NewReader(b), &memWriter{}, nil)
	if err != nil || !bytes.Equal(want, res.RootHash) {
		t.Errorf("root hash %x, merkle.Build's %x (%v)", res.RootHash, want, err)
	}
	fmtVerify(t, res, b[:64*4096])
	if res.Layout.Geometry.UUID != *opts.UUID || !bytes.Equal(res.Layout.Geometry.Salt, opts.Salt) {
		t.Errorf("salt %x, UUID %x", res.Layout.Geometry.Salt, res.Layout.Geometry.UUID)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "the last 100 bytes of DATA are not a whole 4096-byte block") {
		t.Errorf("warnings %q", warnings)
	}
}

type memWriter struct{ b []byte }

func (w *memWriter) WriteAt(p []byte, off int64) (int, error) {
	if n := int(off) + len(p); n > len(w.b) {
		w.b = append(w.b, make([]byte, n-len(w.b))...)
	}
	return copy(w.b[off:], p), nil
}

// TestPlanFormatWritesNothing: PlanFormat gives Format's layout, and the
// directory is as it was.
func TestPlanFormatWritesNothing(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fmtImage(t, data, 100*4096)
	before := fmtListing(t, dir)
	opts := fixedOptions()
	opts.FECDevice = filepath.Join(dir, "data.fec")
	opts.RootHashFile = filepath.Join(dir, "root.hex")
	l, err := PlanFormat(data, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtListing(t, dir); got != before {
		t.Errorf("PlanFormat changed the directory: %s, was %s", got, before)
	}
	res, err := Format(context.Background(), data, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if l.Geometry.HashEnd() != res.Layout.Geometry.HashEnd() || l.HashOutputEnd != res.Layout.HashOutputEnd || *l.FEC != *res.Layout.FEC ||
		*l.FEC != *res.FEC {
		t.Errorf("planned %+v %+v, formatted %+v %+v", l, l.FEC, res.Layout, res.FEC)
	}
	if got := string(fmtRead(t, opts.RootHashFile)); got != fmt.Sprintf("%x", res.RootHash) {
		t.Errorf("root hash file holds %q", got)
	}
	if n := len(fmtRead(t, opts.FECDevice)); uint64(n) != res.FEC.Size {
		t.Errorf("FEC file of %d bytes, want %d", n, res.FEC.Size)
	}
}

// TestFormatInData: the tree inside DATA at HashOffset covers the blocks
// before it; the overlaps and the missing offset are KindParam errors
// about HashOffset, with the flags' hints.
func TestFormatInData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	b := fmtImage(t, data, 16*4096+10)
	for _, c := range []struct {
		offset    uint64
		set       bool
		blocks    uint64
		msg, hint string
	}{
		{0, false, 0, "HASH is DATA (" + data + ") and no TreeOptions.HashOffset says where the tree goes", "add TreeOptions.HashOffset=69632 (DATA's size rounded up to 4096)"},
		{0, true, 0, "TreeOptions.HashOffset 0 leaves no whole 4096-byte data block before the tree", "TreeOptions.HashOffset=69632"},
		{32768, true, 12, "the data area (12 blocks of 4096 bytes, up to byte 49152) overlaps the hash area at TreeOptions.HashOffset 32768", "TreeOptions.HashOffset=49152, or cover fewer blocks: TreeOptions.DataBlocks=8"},
	} {
		opts := fixedOptions()
		opts.HashOffset, opts.HashOffsetSet, opts.DataBlocks = c.offset, c.set, c.blocks
		_, err := Format(context.Background(), data, data, opts)
		e := fmtWantError(t, err, KindParam, "HashOffset", c.msg)
		if !strings.Contains(e.Hint, c.hint) {
			t.Errorf("hint %q, want %q in it", e.Hint, c.hint)
		}
	}
	if got := fmtRead(t, data); !bytes.Equal(got, b) {
		t.Fatal("DATA changed")
	}
	// The 10 bytes past the 16 blocks are the user's: the superblock
	// would go over them.
	opts := fixedOptions()
	opts.HashOffset = 65536
	_, err := Format(context.Background(), data, data, opts)
	e := fmtWantError(t, err, KindRefused, "", "holds data from TreeOptions.HashOffset 65536 on (a non-zero byte at 65536")
	for _, hint := range []string{"TreeOptions.DataBlocks=16", "TreeOptions.HashOffset=69632", "FormatOptions.Force"} {
		if !strings.Contains(e.Hint, hint) {
			t.Errorf("hint %q, want %q in it", e.Hint, hint)
		}
	}
	if got := fmtRead(t, data); !bytes.Equal(got, b) {
		t.Fatal("DATA changed")
	}
	opts.DataBlocks = 16
	res, err := Format(context.Background(), data, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Layout.TreeInData || res.Layout.Geometry.DataBlocks != 16 || res.Layout.UncoveredBytes != 0 {
		t.Errorf("layout %+v", res.Layout)
	}
	got := fmtRead(t, data)
	if !bytes.Equal(got[:16*4096], b[:16*4096]) || string(got[65536:65536+6]) != "verity" {
		t.Error("the data changed, or the superblock is not at 65536")
	}
	fmtVerify(t, res, b[:16*4096])
}

// TestFormatAppend: Append pads DATA with zeros to a whole block, then the
// tree and the parity follow, as avbtool lays them out; an interrupted
// run's leftovers are replaced with OriginalSize, and bytes that are not
// such leftovers are refused.
func TestFormatAppend(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "system.img")
	const size = 10*4096 + 1000
	b := fmtImage(t, data, size)
	opts := fixedOptions()
	opts.Append, opts.AppendFEC = true, true
	res, err := Format(context.Background(), data, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	g := res.Layout.Geometry
	if g.HashOffset != 11*4096 || g.Superblock || g.DataBlocks != 11 || res.Layout.Append.OriginalSize != size ||
		res.FEC == nil || !res.FEC.InHash || res.FEC.Offset != g.HashEnd() || res.Layout.Append.ImageSize != g.HashEnd()+res.FEC.Size {
		t.Fatalf("layout %+v, append %+v, fec %+v", res.Layout, res.Layout.Append, res.FEC)
	}
	got := fmtRead(t, data)
	if uint64(len(got)) != res.Layout.Append.ImageSize || !bytes.Equal(got[:size], b) || slices.ContainsFunc(got[size:g.HashOffset], func(c byte) bool { return c != 0 }) {
		t.Fatalf("DATA is %d bytes, want %d: the image, then zeros to %d", len(got), res.Layout.Append.ImageSize, g.HashOffset)
	}
	padded := got[:g.HashOffset]
	fmtVerifyIn(t, g, padded, got, res.RootHash)
	// The parity is that of the image and the tree.
	fp, err := fecParams(g, 2, res.FEC.Offset)
	if err != nil {
		t.Fatal(err)
	}
	var parity memWriter
	if err := fec.Encode(context.Background(), fp, fecMessage(g, fp, bytes.NewReader(got), bytes.NewReader(got)), &parity, 0, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(parity.b, got[res.FEC.Offset:]) {
		t.Error("the parity is not the image's and the tree's")
	}

	// An interrupted run: half a tree past the image. With OriginalSize
	// the result is the same.
	if err := os.Truncate(data, int64(g.HashOffset+4096)); err != nil {
		t.Fatal(err)
	}
	orig := uint64(size)
	opts.OriginalSize = &orig
	if _, err := Format(context.Background(), data, "", opts); err != nil {
		t.Fatal(err)
	}
	if again := fmtRead(t, data); !bytes.Equal(again, got) {
		t.Error("the finished run's DATA differs from an uninterrupted run's")
	}
	// A non-zero byte in the padding is not an earlier run's.
	f, err := os.OpenFile(data, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{1}, size+10)
	f.Close()
	_, err = Format(context.Background(), data, "", opts)
	e := fmtWantError(t, err, KindRefused, "", fmt.Sprintf("has a non-zero byte at %d, past FormatOptions.OriginalSize %d", size+10, size))
	if !errors.Is(err, ErrRefused) || !strings.Contains(e.Hint, "add FormatOptions.Force") {
		t.Errorf("hint %q", e.Hint)
	}
	// OriginalSize past the end, and zero.
	big := uint64(1 << 30)
	opts.OriginalSize = &big
	_, err = Format(context.Background(), data, "", opts)
	fmtWantError(t, err, KindParam, "OriginalSize", "FormatOptions.OriginalSize 1073741824 is more than DATA")
	zero := uint64(0)
	opts.OriginalSize = &zero
	_, err = Format(context.Background(), data, "", opts)
	fmtWantError(t, err, KindParam, "OriginalSize", "FormatOptions.OriginalSize must be at least 1")
}

func fmtVerifyIn(t *testing.T, g *merkle.Geometry, data, hash, root []byte) {
	t.Helper()
	if rep, err := merkle.Verify(context.Background(), g, bytes.NewReader(data), bytes.NewReader(hash), root, nil); err != nil {
		t.Fatalf("verify: %v (%+v)", err, rep)
	}
}

// TestFormatFECPlacement: the parity in the hash file past the tree, in
// DATA past the data, or in a file of its own; offsets that would
// overwrite the tree or the data are KindParam errors about FECOffset.
func TestFormatFECPlacement(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fmtImage(t, data, 32*4096)
	hash := filepath.Join(dir, "tree.verity")
	run := func(fecDevice string, offset uint64) (*FormatResult, error) {
		opts := fixedOptions()
		opts.FECDevice, opts.FECOffset = fecDevice, offset
		return Format(context.Background(), data, hash, opts)
	}
	_, err := run(hash, 4096)
	e := fmtWantError(t, err, KindParam, "FECOffset", "FormatOptions.FECOffset 4096 would overwrite the tree, which ends at byte 8192 of HASH")
	if e.Hint != "put it past the tree: FormatOptions.FECOffset=8192" {
		t.Errorf("hint %q", e.Hint)
	}
	_, err = run(data, 65536)
	fmtWantError(t, err, KindParam, "FECOffset", "FormatOptions.FECOffset 65536 would overwrite the data, which ends at byte 131072 of DATA")
	_, err = run(filepath.Join(dir, "x.fec"), 100)
	fmtWantError(t, err, KindParam, "FECOffset", "FormatOptions.FECOffset 100 is not a multiple of the block size 4096")
	if _, err := os.Stat(hash); err == nil {
		t.Fatal("HASH was written by a refused run")
	}

	res, err := run(hash, 16384)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.FEC; !f.InHash || f.InData || f.Offset != 16384 || f.Start != 4 || res.Layout.HashOutputEnd != 16384+f.Size {
		t.Errorf("in HASH: %+v", f)
	}
	if n := len(fmtRead(t, hash)); uint64(n) != res.Layout.HashOutputEnd {
		t.Errorf("HASH is %d bytes, want %d", n, res.Layout.HashOutputEnd)
	}
	res, err = run(data, 32*4096)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.FEC; f.InHash || !f.InData || f.Offset != 32*4096 {
		t.Errorf("in DATA: %+v", f)
	}
	if n := len(fmtRead(t, data)); uint64(n) != 32*4096+res.FEC.Size {
		t.Errorf("DATA is %d bytes", n)
	}
	res, err = run(filepath.Join(dir, "own.fec"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.FEC; f.InHash || f.InData || f.Path != filepath.Join(dir, "own.fec") {
		t.Errorf("own file: %+v", f)
	}

	opts := fixedOptions()
	opts.FECDevice, opts.FECRoots = filepath.Join(dir, "x.fec"), 30
	_, err = Format(context.Background(), data, hash, opts)
	fmtWantError(t, err, KindParam, "FECRoots", "FormatOptions.FECRoots 30 is not from 2 to 24")
}

// TestFormatRefusesForeignOutputs: a hash file or FEC file that is not
// something Format wrote is not replaced, unless Force; the hint of DATA
// and HASH swapped names the flags' order.
func TestFormatRefusesForeignOutputs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fmtImage(t, data, 16*4096)
	tree := filepath.Join(dir, "data.img.verity")
	if _, err := Format(context.Background(), data, tree, fixedOptions()); err != nil {
		t.Fatal(err)
	}
	treeBytes := fmtRead(t, tree)
	// Swapped: the image would be replaced by the tree of the tree.
	_, err := Format(context.Background(), tree, data, fixedOptions())
	e := fmtWantError(t, err, KindRefused, "", "HASH "+data+" is not a tree Format could have written")
	if want := "DATA comes first: did you mean Format of DATA " + data + " then HASH " + tree + "?\nto replace it anyway, add FormatOptions.Force"; e.Hint != want {
		t.Errorf("hint %q, want %q", e.Hint, want)
	}
	if !bytes.Equal(fmtRead(t, tree), treeBytes) {
		t.Error("the tree changed")
	}
	// A FEC file of something else.
	other := filepath.Join(dir, "other")
	fmtImage(t, other, 1<<20)
	opts := fixedOptions()
	opts.FECDevice = other
	_, err = Format(context.Background(), data, tree, opts)
	fmtWantError(t, err, KindRefused, "", "FormatOptions.FECDevice "+other+" is not error correction Format could have written")
	opts.Force = true
	if _, err := Format(context.Background(), data, tree, opts); err != nil {
		t.Fatal(err)
	}
	// The existing tree is replaced without Force.
	if _, err := Format(context.Background(), data, tree, fixedOptions()); err != nil {
		t.Fatal(err)
	}
}

// TestFormatParamErrors: options that contradict one another or the data
// are KindParam errors naming the field, and nothing is written.
func TestFormatParamErrors(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fmtImage(t, data, 8*4096)
	before := fmtListing(t, dir)
	for _, c := range []struct {
		name  string
		mod   func(*FormatOptions)
		hash  string
		field string
		msg   string
	}{
		{"too many blocks", func(o *FormatOptions) { o.DataBlocks = 9 }, "", "DataBlocks", "TreeOptions.DataBlocks 9 needs 36864 bytes, but DATA " + data + " has only 32768"},
		{"hash", func(o *FormatOptions) { o.Hash = "md6" }, "", "Hash", "md6"},
		{"hash without Go implementation", func(o *FormatOptions) { o.Hash = "sm3" }, "", "Hash", "Go has no SM3"},
		{"block size", func(o *FormatOptions) { o.DataBlockSize = 1000 }, "", "DataBlockSize", "--data-block-size"},
		{"FEC with unequal blocks", func(o *FormatOptions) { o.FECDevice, o.HashBlockSize = data+".fec", 1024 }, "", "FECRoots", "equal data and hash block sizes"},
		{"append with a hash file", func(o *FormatOptions) { o.Append = true }, data + ".verity", "Append", "FormatOptions.Append writes the tree into DATA"},
		{"append with a hash offset", func(o *FormatOptions) { o.Append, o.HashOffset = true, 4096 }, "", "HashOffset", "TreeOptions.HashOffset cannot be used with FormatOptions.Append"},
		{"FEC append without append", func(o *FormatOptions) { o.AppendFEC = true }, "", "AppendFEC", "FormatOptions.AppendFEC needs FormatOptions.Append"},
		{"FEC offset without FEC", func(o *FormatOptions) { o.FECOffset = 4096 }, "", "FECOffset", "FormatOptions.FECOffset needs FormatOptions.FECDevice"},
		{"root hash file is HASH", func(o *FormatOptions) { o.RootHashFile = data + ".verity" }, "", "RootHashFile", "is HASH: the root hash would replace the tree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fixedOptions()
			c.mod(opts)
			_, err := Format(context.Background(), data, c.hash, opts)
			fmtWantError(t, err, KindParam, c.field, c.msg)
			if !errors.Is(err, ErrParam) {
				t.Error("not ErrParam")
			}
			if _, err := PlanFormat(data, c.hash, opts); err == nil {
				t.Error("PlanFormat accepted it")
			}
		})
	}
	if got := fmtListing(t, dir); got != before {
		t.Errorf("the directory changed: %s, was %s", got, before)
	}
	_, err := Format(context.Background(), filepath.Join(dir, "none"), "", nil)
	fmtWantError(t, err, KindInput, "", "does not exist")
}

// TestFormatCanceled: a canceled run writes nothing, and its error says so
// and matches context.Canceled.
func TestFormatCanceled(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fmtImage(t, data, 8*4096)
	before := fmtListing(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Format(ctx, data, "", nil)
	if !errors.Is(err, context.Canceled) || err.Error() != "interrupted; nothing was written under HASH" {
		t.Errorf("error %v", err)
	}
	if got := fmtListing(t, dir); got != before {
		t.Errorf("the directory changed: %s, was %s", got, before)
	}
}

// TestFormatStaleTemps: temporary files of a killed run beside HASH are
// removed and named through Note.
func TestFormatStaleTemps(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fmtImage(t, data, 8*4096)
	stale := filepath.Join(dir, ".data.img.verity.tmp0123456789ab")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var notes []string
	opts := fixedOptions()
	opts.Note = func(m string) { notes = append(notes, m) }
	if _, err := Format(context.Background(), data, "", opts); err != nil {
		t.Fatal(err)
	}
	if want := []string{"removed 1 stale temporary file left by an interrupted run: .data.img.verity.tmp0123456789ab"}; !slices.Equal(notes, want) {
		t.Errorf("notes %q, want %q", notes, want)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the stale file is still there")
	}
}

// TestFormatProgressAndRuns: progress goes from 0 to the covered bytes,
// and merkle.Build gets the layout's known runs (a hole here).
func TestFormatProgressAndRuns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{1}, 0)
	f.WriteAt([]byte{1}, 4<<20)
	f.Close()
	var built []merkle.Run
	saved := buildTree
	t.Cleanup(func() { buildTree = saved })
	buildTree = func(ctx context.Context, g *merkle.Geometry, data io.ReaderAt, hash io.WriterAt, opts *merkle.BuildOptions) ([]byte, error) {
		built = opts.Runs
		return saved(ctx, g, data, hash, opts)
	}
	var first, last [2]uint64
	calls := 0
	opts := fixedOptions()
	opts.Progress = func(s Stage, done, total uint64) {
		if s != StageHashing {
			t.Errorf("stage %v", s)
		}
		if calls == 0 {
			first = [2]uint64{done, total}
		}
		last = [2]uint64{done, total}
		calls++
	}
	var planned *Layout
	opts.OnLayout = func(l *Layout) { planned = l }
	res, err := Format(context.Background(), data, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if first != [2]uint64{0, res.Layout.CoveredBytes} || last != [2]uint64{res.Layout.CoveredBytes, res.Layout.CoveredBytes} {
		t.Errorf("progress from %v to %v", first, last)
	}
	if planned != res.Layout || fmt.Sprint(built) != fmt.Sprint(res.Layout.KnownRuns) {
		t.Errorf("built with runs %v, layout's %v", built, res.Layout.KnownRuns)
	}
	if len(res.Layout.KnownRuns) == 0 {
		t.Log("this file system reports no holes")
	}
}

// TestFormatFECProgress: the parity's computation is reported as StageFEC,
// after the hashing, from 0 to the size of the data and tree it reads (not
// the parity's: issue 21 item 17) in steps (it sat at "hashing 100%"
// while the parity was computed), each step more done than the last.
func TestFormatFECProgress(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := testimages.Random(f, 64<<20, 4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var stages []Stage
	var fec [][2]uint64
	opts := fixedOptions()
	opts.FECDevice, opts.FECRoots, opts.Jobs = filepath.Join(dir, "data.fec"), 24, 2
	opts.Progress = func(s Stage, done, total uint64) {
		if len(stages) == 0 || stages[len(stages)-1] != s {
			stages = append(stages, s)
		}
		if s == StageFEC {
			fec = append(fec, [2]uint64{done, total})
		}
	}
	res, err := Format(context.Background(), data, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stages) != "[hashing error correction]" {
		t.Errorf("stages %v", stages)
	}
	size := res.FEC.Blocks * 4096
	if size <= res.FEC.Size || size < 64<<20 {
		t.Fatalf("FEC message of %d bytes, parity %d", size, res.FEC.Size)
	}
	if len(fec) < 3 || fec[0] != [2]uint64{0, size} || fec[len(fec)-1] != [2]uint64{size, size} {
		t.Fatalf("FEC progress %v, want from 0 to %d in steps", fec, size)
	}
	for i := 1; i < len(fec); i++ {
		if fec[i][0] <= fec[i-1][0] || fec[i][1] != size {
			t.Errorf("FEC progress goes %v then %v", fec[i-1], fec[i])
		}
	}
}
