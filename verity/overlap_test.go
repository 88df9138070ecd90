package verity

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// randomBytes returns n pseudo-random bytes from seed.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFormatInDataRefusesUserBytes: with HASH the data file itself and no
// DataBlocks, the data is all of DATA: bytes from HashOffset on that are
// not zeros, holes or a tree of ours are the user's, and the tree would go
// over them (the trust issue's `veritygen --hash-offset=1433600 d.img d.img`
// on 2 MiB of random bytes). Refused, nothing written, the hint giving
// --data-blocks (the whole blocks before the offset), a --hash-offset past
// the end, and --force; also without superblock, with small data blocks,
// through a hard link, and for an ext4 image past the offset.
func TestFormatInDataRefusesUserBytes(t *testing.T) {
	dir := t.TempDir()
	// An ext4 file system starts with 1024 zero bytes, then its superblock.
	ext4 := randomBytes(2<<20, 2)
	copy(ext4[1433600:], make([]byte, 1024))
	copy(ext4[1433600+1080:], []byte{0x53, 0xEF})
	for _, c := range []struct {
		name   string
		tweak  func(*FormatOptions)
		image  []byte
		link   bool
		blocks string
		at     int // the first byte found
	}{
		{name: "default", blocks: "TreeOptions.DataBlocks=350", at: 1433600},
		{name: "no superblock", tweak: func(o *FormatOptions) { o.NoSuperblock = true }, blocks: "TreeOptions.DataBlocks=350", at: 1433600},
		{name: "512-byte blocks", tweak: func(o *FormatOptions) { o.DataBlockSize = 512 }, blocks: "TreeOptions.DataBlocks=2800", at: 1433600},
		{name: "1024-byte blocks", tweak: func(o *FormatOptions) { o.DataBlockSize = 1024 }, blocks: "TreeOptions.DataBlocks=1400", at: 1433600},
		{name: "hard link", link: true, blocks: "TreeOptions.DataBlocks=350", at: 1433600},
		{name: "ext4 past the offset", image: ext4, blocks: "TreeOptions.DataBlocks=350", at: 1433600 + 1024},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := filepath.Join(dir, "d.img")
			b := c.image
			if b == nil {
				b = randomBytes(2<<20, 1)
			}
			writeBytes(t, data, b)
			hash := data
			if c.link {
				hash = filepath.Join(dir, "link")
				os.Remove(hash)
				if err := os.Link(data, hash); err != nil {
					t.Fatal(err)
				}
			}
			opts := fixedOptions()
			opts.HashOffset = 1433600
			if c.tweak != nil {
				c.tweak(opts)
			}
			_, err := Format(context.Background(), data, hash, opts)
			e := fmtWantError(t, err, KindRefused, "", "holds data from TreeOptions.HashOffset 1433600 on (a non-zero byte at "+strconv.Itoa(c.at)+",")
			for _, h := range []string{c.blocks, "TreeOptions.HashOffset=2097152", "FormatOptions.Force"} {
				if !strings.Contains(e.Hint, h) {
					t.Errorf("hint %q, want %q in it", e.Hint, h)
				}
			}
			if !bytes.Equal(fmtRead(t, data), b) {
				t.Fatal("DATA changed")
			}
			if _, err := PlanFormat(data, hash, opts); err == nil {
				t.Error("PlanFormat accepts what Format refuses")
			}
		})
	}
}

// TestFormatInDataOwnBytes: what may be written over without DataBlocks:
// zeros past the offset (written or holes), where the data is the blocks
// before the offset, the documented layout; the tree of an earlier run
// (its superblock there, with the data changed since too; without
// superblock, a tree that verifies with the salt given, also after a data
// block changed, but not with another salt); its parity past it. Force and
// DataBlocks write over anything.
func TestFormatInDataOwnBytes(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	const offset = 1433600
	head := randomBytes(offset, 3)
	format := func(tweak func(*FormatOptions)) (*FormatResult, error) {
		t.Helper()
		opts := fixedOptions()
		opts.HashOffset = offset
		if tweak != nil {
			tweak(opts)
		}
		return Format(context.Background(), data, data, opts)
	}
	mustFormat := func(what string, tweak func(*FormatOptions)) *FormatResult {
		t.Helper()
		res, err := format(tweak)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Layout.Geometry.DataBlocks != offset/4096 {
			t.Fatalf("%s: %d data blocks, want the %d before the offset", what, res.Layout.Geometry.DataBlocks, offset/4096)
		}
		if !bytes.Equal(fmtRead(t, data)[:offset], head) {
			t.Fatalf("%s: the data changed", what)
		}
		fmtVerify(t, res, head)
		return res
	}
	poke := func(off int64, b byte) {
		t.Helper()
		f, err := os.OpenFile(data, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte{b}, off); err != nil {
			t.Fatal(err)
		}
	}

	// Zeros written past the offset, then holes.
	writeBytes(t, data, append(head, make([]byte, 600<<10)...))
	mustFormat("zeros past the offset", nil)
	writeBytes(t, data, head)
	if err := os.Truncate(data, 2<<20); err != nil {
		t.Fatal(err)
	}
	mustFormat("holes past the offset", nil)

	// Again over its own tree, then with a data block changed since.
	mustFormat("over its own tree", nil)
	head[5000] ^= 1
	poke(5000, head[5000])
	mustFormat("over its own tree, the data changed", nil)

	// The same without superblock, over zeros, then over its own tree.
	noSB := func(salt []byte) func(*FormatOptions) {
		return func(o *FormatOptions) { o.NoSuperblock, o.Salt = true, salt }
	}
	writeBytes(t, data, head)
	mustFormat("no superblock", noSB([]byte{1}))
	mustFormat("no superblock, over its own tree", noSB([]byte{1}))
	head[9000] ^= 1
	poke(9000, head[9000])
	mustFormat("no superblock, over its own tree, the data changed", noSB([]byte{1}))
	_, err := format(noSB([]byte{2}))
	fmtWantError(t, err, KindRefused, "", "counts only if it verifies with the TreeOptions.Salt and parameters given")

	// Its parity past the tree, in DATA too, and again over both.
	fecOpts := func(o *FormatOptions) { o.FECDevice, o.FECOffset = data, offset+32768 }
	writeBytes(t, data, head)
	mustFormat("parity past the tree", fecOpts)
	mustFormat("over its own tree and parity", fecOpts)

	// A byte past the tree that is no parity of ours.
	writeBytes(t, data, head)
	mustFormat("tree", nil)
	size := int64(len(fmtRead(t, data)))
	poke(size+4096, 1)
	_, err = format(nil)
	fmtWantError(t, err, KindRefused, "", "a non-zero byte at "+strconv.FormatInt(size+4096, 10))

	// Force and DataBlocks write over it.
	mustFormat("Force", func(o *FormatOptions) { o.Force = true })
	poke(offset+100, 1)
	mustFormat("DataBlocks", func(o *FormatOptions) { o.DataBlocks = offset / 4096; o.NoSuperblock, o.Salt = true, []byte{3} })
}

// TestFormatInDataFECOnly: the parity alone in DATA (the tree elsewhere,
// no DataBlocks) goes past the data's whole blocks; the bytes of a last,
// partial block are the user's, and it is refused over them, with a
// --fec-offset past the end; over zeros it goes.
func TestFormatInDataFECOnly(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	b := append(randomBytes(16*4096, 4), 1, 2, 3)
	writeBytes(t, data, b)
	opts := fixedOptions()
	opts.FECDevice, opts.FECOffset = data, 16*4096
	_, err := Format(context.Background(), data, filepath.Join(dir, "h"), opts)
	e := fmtWantError(t, err, KindRefused, "", "a non-zero byte at 65536, at or past FormatOptions.FECOffset 65536")
	if !strings.Contains(e.Hint, "FormatOptions.FECOffset=69632") || !strings.Contains(e.Hint, "FormatOptions.Force") {
		t.Errorf("hint %q", e.Hint)
	}
	if !bytes.Equal(fmtRead(t, data), b) {
		t.Fatal("DATA changed")
	}
	b[len(b)-3], b[len(b)-2], b[len(b)-1] = 0, 0, 0
	writeBytes(t, data, b)
	if _, err := Format(context.Background(), data, filepath.Join(dir, "h"), opts); err != nil {
		t.Fatal(err)
	}
}

// TestFormatKeptHashRefusesUserBytes: an existing HASH whose bytes before
// HashOffset are kept is the user's file: without superblock, the tree
// used to go over what lies at the offset whenever the file was no longer
// than the tree's end. Now only zeros, holes or a tree of ours there may be
// written over; the bytes before the offset stay either way.
func TestFormatKeptHashRefusesUserBytes(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	writeBytes(t, data, randomBytes(64<<10, 5))
	hash := filepath.Join(dir, "disk.img")
	user := randomBytes(1<<20, 6)
	writeBytes(t, hash, user)
	opts := fixedOptions()
	opts.NoSuperblock, opts.HashOffset = true, 1<<20-4096 // the tree is one block: the file's last
	_, err := Format(context.Background(), data, hash, opts)
	fmtWantError(t, err, KindRefused, "", "HASH "+hash+" holds a non-zero byte at 1044480, where the tree would go")
	if !bytes.Equal(fmtRead(t, hash), user) {
		t.Fatal("HASH changed")
	}
	// Zeros there: written, the bytes before kept; and again over its tree.
	copy(user[1<<20-4096:], make([]byte, 4096))
	writeBytes(t, hash, user)
	for range 2 {
		if _, err := Format(context.Background(), data, hash, opts); err != nil {
			t.Fatal(err)
		}
		if got := fmtRead(t, hash); !bytes.Equal(got[:1<<20-4096], user[:1<<20-4096]) {
			t.Fatal("the bytes before the offset changed")
		}
	}
}

// TestSameDevice: the same file by a hard link or a symbolic link is the
// same device, as two nodes of one block device are (veritysetup's
// device_is_identical); two files are not.
func TestSameDevice(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeBytes(t, a, []byte("a"))
	writeBytes(t, b, []byte("a"))
	if err := os.Link(a, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "soft")); err != nil {
		t.Fatal(err)
	}
	stat := func(name string) os.FileInfo {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	if !sameDevice(stat("a"), stat("hard")) || !sameDevice(stat("a"), stat("soft")) || sameDevice(stat("a"), stat("b")) || sameDevice(stat("a"), nil) {
		t.Error("files: wrong answer")
	}
	if os.Geteuid() != 0 {
		t.Skip("two nodes of one block device need mknod (root)")
	}
	for _, name := range []string{"n1", "n2"} {
		if err := syscall.Mknod(filepath.Join(dir, name), syscall.S_IFBLK|0o600, 7<<8|200); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mknod(filepath.Join(dir, "other"), syscall.S_IFBLK|0o600, 7<<8|201); err != nil {
		t.Fatal(err)
	}
	if !sameDevice(stat("n1"), stat("n2")) || sameDevice(stat("n1"), stat("other")) {
		t.Error("block devices: wrong answer")
	}
}

// TestFormatInPlaceWholeDevice: InPlace (veritysetup's semantics) takes the
// data to be the whole device without DataBlocks, so a tree inside it
// overlaps it: the KindParam HashOffset error the front words as "Data
// area overlaps with hash area.", nothing written.
func TestFormatInPlaceWholeDevice(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	b := append(randomBytes(1433600, 7), make([]byte, 600<<10)...) // zeros past the offset change nothing here
	writeBytes(t, data, b)
	opts := fixedOptions()
	opts.InPlace, opts.HashOffset = true, 1433600
	_, err := Format(context.Background(), data, data, opts)
	fmtWantError(t, err, KindParam, "HashOffset", "overlaps the hash area at TreeOptions.HashOffset 1433600")
	if !bytes.Equal(fmtRead(t, data), b) {
		t.Fatal("DATA changed")
	}
	opts.DataBlocks = 350
	res, err := Format(context.Background(), data, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	if g := res.Layout.Geometry; g.DataBlocks != 350 || g.HashOffset != 1433600 || !res.Layout.TreeInData {
		t.Errorf("layout %+v", g.Params)
	}
}

// TestFormatKeptFECRefusesUserBytes: an existing FEC file whose bytes
// before FECOffset are kept is the user's: the parity used to go over what
// lies at the offset whenever the file was no longer than the parity's
// end. Now only zeros, holes or parity of the data and HASH as they are
// (a round of it at least: one data block changed leaves the others) may
// be written over; the bytes before the offset stay either way.
func TestFormatKeptFECRefusesUserBytes(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.img")
	b := randomBytes(64<<10, 8)
	writeBytes(t, data, b)
	fecPath := filepath.Join(dir, "disk.img")
	user := randomBytes(1<<20, 9)
	writeBytes(t, fecPath, user)
	opts := fixedOptions()
	opts.FECDevice, opts.FECOffset = fecPath, 1<<20-8192 // the parity is two blocks: the file's last
	hash := filepath.Join(dir, "h")
	_, err := Format(context.Background(), data, hash, opts)
	fmtWantError(t, err, KindRefused, "", "FormatOptions.FECDevice "+fecPath+" holds a non-zero byte at 1040384, where the error correction would go")
	if !bytes.Equal(fmtRead(t, fecPath), user) {
		t.Fatal("the FEC file changed")
	}
	copy(user[1<<20-8192:], make([]byte, 8192))
	writeBytes(t, fecPath, user)
	for i, change := range []bool{false, false, true} {
		if change { // the parity of the other rounds still matches
			b[100] ^= 1
			writeBytes(t, data, b)
		}
		if _, err := Format(context.Background(), data, hash, opts); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := fmtRead(t, fecPath); !bytes.Equal(got[:1<<20-8192], user[:1<<20-8192]) {
			t.Fatal("the bytes before the offset changed")
		}
	}
}
