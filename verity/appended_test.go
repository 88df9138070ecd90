package verity

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/appendscan"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
)

// randomData returns n pseudo-random bytes from seed (eight at a time).
func randomData(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// appendCase is a tree's parameters for an Append.
type appendCase struct {
	hash     string
	legacy   bool
	dbs, hbs int
	roots    int // 0: no parity
}

func (c appendCase) String() string {
	return fmt.Sprintf("%s/legacy=%v/%d-%d/roots=%d", c.hash, c.legacy, c.dbs, c.hbs, c.roots)
}

func (c appendCase) options(salt []byte) *FormatOptions {
	return &FormatOptions{TreeOptions: TreeOptions{Hash: c.hash, LegacyFormat: c.legacy, Salt: salt, DataBlockSize: c.dbs, HashBlockSize: c.hbs},
		Append: true, AppendFEC: c.roots > 0, FECRoots: c.roots}
}

func (c appendCase) params(t *testing.T, salt []byte) merkle.Params {
	t.Helper()
	p, err := c.options(salt).params()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var appendCases = []appendCase{
	{"sha256", false, 4096, 4096, 0}, {"sha256", false, 4096, 4096, 2}, {"sha1", false, 4096, 4096, 0},
	{"sha512", false, 1024, 1024, 8}, {"sha1", true, 4096, 4096, 0}, {"blake2b-256", false, 512, 4096, 0},
	{"sha256", false, 4096, 1024, 0},
}

// TestFindEarlierAppend: the tree (and parity) an Append wrote is found at
// the end of its output, checked with the salt it was made with, found by
// its shape alone without a salt or with another one, and the image's
// size is given back as the output's bytes tell it.
func TestFindEarlierAppend(t *testing.T) {
	dir := t.TempDir()
	salt := []byte{0x5a, 0x17}
	for i, c := range appendCases {
		// 128 blocks: with 32-byte digests in 4096-byte blocks, a tree of
		// one full block, nothing to tell it by but the digests or the
		// parity.
		for _, size := range []int{3<<20 + 1000, 1 << 20, 200 * 4096, 128 * 4096} {
			t.Run(fmt.Sprintf("%v/%d", c, size), func(t *testing.T) {
				path := filepath.Join(dir, "img")
				img := randomData(size, uint64(i*10+size))
				if err := os.WriteFile(path, img, 0o644); err != nil {
					t.Fatal(err)
				}
				res, err := Format(context.Background(), path, "", c.options(salt))
				if err != nil {
					t.Fatal(err)
				}
				out := fmtRead(t, path)
				for _, s := range []struct {
					name    string
					salt    []byte
					checked bool
				}{{"the salt", salt, true}, {"no salt", nil, false}, {"another salt", []byte{1}, false}} {
					found, err := appendscan.Find(bytes.NewReader(out), uint64(len(out)), c.params(t, s.salt), c.roots)
					if err != nil {
						t.Fatal(err)
					}
					if found == nil && !s.checked && c.roots == 0 && c.hash != "sha1" && size == 128*4096 && c.dbs == 4096 && c.hbs == 4096 {
						continue // full levels, no salt, no parity: nothing to tell it by
					}
					if found == nil || found.Checked != s.checked || found.Padded != res.Layout.Geometry.HashOffset {
						t.Fatalf("with %s: found %+v, want the tree at %d, checked %v", s.name, found, res.Layout.Geometry.HashOffset, s.checked)
					}
					if found.Original != uint64(size) {
						t.Errorf("with %s: original size %d, want %d", s.name, found.Original, size)
					}
				}
			})
		}
	}
}

// TestFindEarlierAppendNoFalseAlarm: images of the sizes an Append ends at,
// random, with zeros where the tree would be, or all zeros, are not taken
// for an earlier Append's output, with the salt or without. -short tries
// 6 sizes a case, not 12: the three with full levels and three random, each
// of the three kinds of image.
func TestFindEarlierAppendNoFalseAlarm(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := 12
	if testing.Short() {
		sizes = 6
	}
	for i, c := range appendCases {
		for j := range sizes {
			align := uint64(max(c.dbs, c.hbs))
			padded := (1 + rng.Uint64N(3000)) * align
			if j < 3 {
				padded = 128 * align // levels full with 32-byte digests: the parity decides
			}
			_, end, err := appendscan.Geometry(c.params(t, []byte{1}), padded, c.roots)
			if err != nil {
				t.Fatal(err)
			}
			b := randomData(int(end), uint64(i*100+j))
			switch j % 3 {
			case 1:
				clear(b[padded:]) // the image ends in zeros where the tree would be
			case 2:
				clear(b)
			}
			for _, salt := range [][]byte{{1}, nil} {
				found, err := appendscan.Find(bytes.NewReader(b), end, c.params(t, salt), c.roots)
				if err != nil || found != nil {
					t.Fatalf("%v, %d bytes (kind %d), salt %x: found %+v, err %v", c, end, j%3, salt, found, err)
				}
			}
		}
	}
}

// TestFormatAppendAgain: an Append run again on its own output writes the
// same file (with the salt given; a note says so), refuses without a salt
// or with another one (naming --data-size, nothing written), and takes all
// of DATA for the image with OriginalSize. Before, the second run took the
// first tree for data and appended a second one.
func TestFormatAppendAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img")
	const size = 2<<20 + 333
	fmtImage(t, path, size)
	opts := appendCases[1].options([]byte{9, 9})
	if _, err := Format(context.Background(), path, "", opts); err != nil {
		t.Fatal(err)
	}
	want := fmtRead(t, path)
	var notes []string
	opts.Note = func(s string) { notes = append(notes, s) }
	res, err := Format(context.Background(), path, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fmtRead(t, path), want) || res.Layout.Append.OriginalSize != size || len(notes) != 1 || !strings.Contains(notes[0], "written again in place") {
		t.Fatalf("the second run changed DATA, or original size %d, notes %q", res.Layout.Append.OriginalSize, notes)
	}
	for _, salt := range [][]byte{nil, {1, 2}} {
		_, err := Format(context.Background(), path, "", appendCases[1].options(salt))
		e := fmtWantError(t, err, KindRefused, "", "already ends in a tree and error correction laid out as an FormatOptions.Append of its first 2101248 bytes")
		if !strings.Contains(e.Hint, fmt.Sprintf("FormatOptions.OriginalSize=%d", size)) || !strings.Contains(e.Hint, fmt.Sprintf("FormatOptions.OriginalSize=%d", len(want))) {
			t.Errorf("hint %q", e.Hint)
		}
		if !bytes.Equal(fmtRead(t, path), want) {
			t.Fatal("a refused run changed DATA")
		}
	}
	all := uint64(len(want))
	opts.OriginalSize = &all
	if res, err = Format(context.Background(), path, "", opts); err != nil || res.Layout.Append.OriginalSize != all {
		t.Fatalf("with OriginalSize: %v", err)
	}
}

// TestFormatAppendAVBImage: an Append on an image that ends in an AVB
// footer (and its vbmeta) is refused, with OriginalSize too, unless Force;
// a provisional footer is named as such. Before, the tree went after the
// footer.
func TestFormatAppendAVBImage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img")
	for _, provisional := range []bool{false, true} {
		b := fmtImage(t, path, 1<<20)
		vb := make([]byte, 512)
		copy(vb, "AVB0")
		if provisional {
			copy(vb[300:], safefile.ProvisionalAVBMarker)
		}
		copy(b[900000:], vb)
		footer := make([]byte, 64)
		copy(footer, "AVBf")
		binary.BigEndian.PutUint32(footer[4:], 1)
		binary.BigEndian.PutUint64(footer[12:], 800000)
		binary.BigEndian.PutUint64(footer[20:], 900000)
		binary.BigEndian.PutUint64(footer[28:], 512)
		copy(b[len(b)-64:], footer)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		orig := uint64(800000)
		for _, o := range []*uint64{nil, &orig} {
			opts := appendCases[0].options([]byte{1})
			opts.OriginalSize = o
			_, err := Format(context.Background(), path, "", opts)
			msg := "is an AVB image (it ends in an AVB footer; the image is its first 800000 bytes)"
			if provisional {
				msg = "ends in the provisional AVB footer of an interrupted AVB run"
			}
			e := fmtWantError(t, err, KindRefused, "", msg)
			advice := AdviceAVB
			if provisional {
				advice = AdviceAVBInterrupted
			}
			if !strings.Contains(e.Hint, fmt.Sprintf("avb.EraseFooter(%q, false)", path)) || e.Advice != advice || e.Path != path || e.Role != RoleData {
				t.Errorf("hint %q, advice %v on %s %s", e.Hint, e.Advice, e.Role, e.Path)
			}
			if !bytes.Equal(fmtRead(t, path), b) {
				t.Fatal("the refused run changed DATA")
			}
		}
	}
	opts := appendCases[0].options([]byte{1})
	opts.Force = true
	if res, err := Format(context.Background(), path, "", opts); err != nil || res.Layout.Append.OriginalSize != 1<<20 {
		t.Fatalf("Force: %v", err)
	}
}

// TestFormatAppendResume: what an Append killed at any moment leaves (the
// record past a half-written tree and parity) is finished by the same call
// into the uninterrupted run's file; a different OriginalSize is refused
// unless Force. A cancellation cuts DATA back to the image. Before, the
// second run took what the first had written for data.
func TestFormatAppendResume(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img")
	const size = 1<<20 + 5
	img := fmtImage(t, path, size)
	opts := appendCases[1].options([]byte{7})
	if _, err := Format(context.Background(), path, "", opts); err != nil {
		t.Fatal(err)
	}
	want := fmtRead(t, path)
	for _, cut := range []int{size, size + 4096, len(want) - 100, len(want)} {
		b := append(append([]byte{}, want[:cut]...), randomData(len(want)-cut, uint64(cut))...)
		rec := &safefile.ResumeRecord{OriginalSize: size, End: uint64(len(want)) + safefile.ResumeRecordSize}
		b = append(b, rec.Encode()...)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		other := uint64(4096)
		o := *opts
		o.OriginalSize = &other
		_, err := Format(context.Background(), path, "", &o)
		fmtWantError(t, err, KindRefused, "", fmt.Sprintf("ends in the record of an interrupted FormatOptions.Append of its first %d bytes, not 4096", size))
		if _, err := Format(context.Background(), path, "", opts); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fmtRead(t, path), want) {
			t.Errorf("resumed after %d bytes: DATA is not the uninterrupted run's", cut)
		}
	}

	// Canceled once the record is written: DATA is the image again.
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := *opts
	var sawRecord bool
	o.OnLayout = func(*Layout) {
		f, _ := os.Open(path)
		info, _ := f.Stat()
		sawRecord = safefile.ReadResumeRecord(f, info.Size()) != nil
		f.Close()
		cancel()
	}
	_, err := Format(ctx, path, "", &o)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "is as it was: cut back to its original") || !sawRecord {
		t.Fatalf("err %v, record seen %v", err, sawRecord)
	}
	if !bytes.Equal(fmtRead(t, path), img) {
		t.Fatal("the canceled run did not cut DATA back")
	}
}

// TestResumeRecord: a record reads back as written, only at the end it
// names, and not with any byte changed.
func TestResumeRecord(t *testing.T) {
	rec := &safefile.ResumeRecord{OriginalSize: 12345, Sparse: true, End: 4096 + safefile.ResumeRecordSize}
	b := append(make([]byte, 4096), rec.Encode()...)
	if got := safefile.ReadResumeRecord(bytes.NewReader(b), int64(len(b))); got == nil || *got != *rec {
		t.Fatalf("read back %+v, want %+v", got, rec)
	}
	if safefile.ReadResumeRecord(bytes.NewReader(append(b, 0)), int64(len(b)+1)) != nil {
		t.Error("a record not at the end it names was taken")
	}
	for i := 4096; i < len(b); i += 7 {
		c := bytes.Clone(b)
		c[i] ^= 1
		if safefile.ReadResumeRecord(bytes.NewReader(c), int64(len(c))) != nil {
			t.Fatalf("a record with byte %d changed was taken", i-4096)
		}
	}
	raw := &safefile.ResumeRecord{OriginalSize: 5000, End: 4096 + safefile.ResumeRecordSize}
	b = append(make([]byte, 4096), raw.Encode()...)
	if safefile.ReadResumeRecord(bytes.NewReader(b), int64(len(b))) != nil {
		t.Error("a raw image's record with an original size past the record was taken")
	}
}

// FuzzAppendTail: whatever a file ends in, the readers of what an earlier
// run left (a record, an AVB footer, an earlier Append's tree) do not
// panic, and what they find fits in the file.
func FuzzAppendTail(f *testing.F) {
	sha256, err := hashes.Lookup("sha256")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(randomData(9000, 1), uint8(0), true)
	rec := (&safefile.ResumeRecord{OriginalSize: 100, End: 4096 + safefile.ResumeRecordSize}).Encode()
	f.Add(append(make([]byte, 4096), rec...), uint8(1), false)
	f.Add(append(make([]byte, 8192), []byte("AVBf\x00\x00\x00\x01")...), uint8(2), false)
	f.Fuzz(func(t *testing.T, b []byte, bs uint8, salted bool) {
		n := int64(len(b))
		if r := safefile.ReadResumeRecord(bytes.NewReader(b), n); r != nil && r.End != uint64(n) {
			t.Fatalf("record %+v in %d bytes", r, n)
		}
		if av := appendscan.FindAVBFooter(bytes.NewReader(b), uint64(n)); av != nil && av.OriginalSize > uint64(n) {
			t.Fatalf("AVB footer %+v in %d bytes", av, n)
		}
		size := 512 << (bs % 4)
		p := merkle.Params{Hash: sha256, DataBlockSize: size, HashBlockSize: size}
		if salted {
			p.Salt = []byte{1}
		}
		found, err := appendscan.Find(bytes.NewReader(b), uint64(n), p, int(bs%3))
		if err != nil {
			t.Fatal(err)
		}
		if found != nil && (found.Padded >= uint64(n) || found.Original > found.Padded || found.Original+uint64(size) <= found.Padded) {
			t.Fatalf("found %+v in %d bytes", found, n)
		}
	})
}
