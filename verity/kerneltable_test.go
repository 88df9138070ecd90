package verity

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// TestParseTableRoundTrip takes Table's lines apart: every field comes
// back, and String gives the same line.
func TestParseTableRoundTrip(t *testing.T) {
	fx := newFixture(t, 100, 4096, 4, 7)
	fecInfo := &FECInfo{Roots: 4, Blocks: 102, Start: 3}
	for _, c := range []struct {
		opts TableOptions
		fec  *FECInfo
	}{
		{TableOptions{DataDevice: "7:1", HashDevice: "7:0"}, nil},
		{TableOptions{DataDevice: "/dev/sda1", HashDevice: "/dev/sda2", OnCorruption: IgnoreCorruption, IgnoreZeroBlocks: true, CheckAtMostOnce: true}, nil},
		{TableOptions{DataDevice: "7:1", HashDevice: "7:0", FECDevice: "7:2", OnCorruption: RestartOnCorruption, UseTasklets: true, RootHashSigKey: "vt:sig"}, fecInfo},
		{TableOptions{DataDevice: "PARTUUID=abc", HashDevice: "PARTUUID=abc", FECDevice: "PARTUUID=abc", OnCorruption: PanicOnCorruption}, fecInfo},
	} {
		bp, err := Table(fx.g, fx.root, c.fec, &c.opts)
		if err != nil {
			t.Fatal(err)
		}
		kt, err := ParseTable(bp.Table)
		if err != nil {
			t.Fatalf("%s: %v", bp.Table, err)
		}
		if kt.String() != bp.Table {
			t.Errorf("String()\n %s\nwant\n %s", kt, bp.Table)
		}
		if !tableMatches(kt, fx, &c.opts) {
			t.Errorf("%s taken apart as %+v", bp.Table, kt)
		}
		if c.fec != nil && (kt.FECRoots != 4 || kt.FECBlocks != 102 || kt.FECStart != 3) {
			t.Errorf("FEC %+v", kt)
		}
		// With the target's head, as dmsetup table prints it.
		if head, err := ParseTable("0 800 verity " + bp.Table); err != nil || !reflect.DeepEqual(head, kt) {
			t.Errorf("with the target's head: %+v, %v", head, err)
		}
		g, err := kt.Geometry()
		if err != nil {
			t.Fatal(err)
		}
		if g.Superblock || g.TreeOffset() != fx.g.TreeOffset() || g.HashEnd() != fx.g.HashEnd() || g.HashStartBlock != fx.g.HashStartBlock {
			t.Errorf("the table's tree at %d..%d (start block %d), the superblock's at %d..%d", g.TreeOffset(), g.HashEnd(), g.HashStartBlock, fx.g.TreeOffset(), fx.g.HashEnd())
		}
	}
}

// tableMatches reports whether kt has every field but the FEC's of the
// table of fx's tree (100 blocks of 4096 bytes, sha256) with opts.
func tableMatches(kt *KernelTable, fx *fixture, opts *TableOptions) bool {
	return kt.Format == 1 && kt.DataDevice == opts.DataDevice && kt.HashDevice == opts.HashDevice && kt.DataBlockSize == 4096 &&
		kt.HashBlockSize == 4096 && kt.DataBlocks == 100 && kt.HashStartBlock == fx.g.HashStartBlock && kt.Hash == "sha256" &&
		bytes.Equal(kt.RootHash, fx.root) && bytes.Equal(kt.Salt, fx.g.Salt) && kt.OnCorruption == opts.OnCorruption &&
		kt.IgnoreZeroBlocks == opts.IgnoreZeroBlocks && kt.CheckAtMostOnce == opts.CheckAtMostOnce && kt.UseTasklets == opts.UseTasklets &&
		kt.RootHashSigKey == opts.RootHashSigKey && kt.FECDevice == opts.FECDevice && len(kt.Other) == 0
}

// TestParseTableKernelLines parses tables as Linux 6.1 gives them back
// (its own order of the optional arguments, devices as MAJOR:MINOR).
func TestParseTableKernelLines(t *testing.T) {
	root := strings.Repeat("5c", 32)
	for _, c := range []struct {
		line string
		want KernelTable
	}{
		{"0 254:5 254:5 4096 4096 256 257 sha512 " + strings.Repeat("aa", 64) + " - 9 ignore_zero_blocks use_fec_from_device 254:5 fec_roots 24 fec_blocks 261 fec_start 263",
			KernelTable{Format: 0, DataDevice: "254:5", HashDevice: "254:5", DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 256, HashStartBlock: 257,
				Hash: "sha512", RootHash: bytes.Repeat([]byte{0xaa}, 64), IgnoreZeroBlocks: true, FECDevice: "254:5", FECRoots: 24, FECBlocks: 261, FECStart: 263}},
		{"1 7:1 7:0 512 4096 1000 1 sha256 " + root + " 0011 2 restart_on_error check_at_most_once",
			KernelTable{Format: 1, DataDevice: "7:1", HashDevice: "7:0", DataBlockSize: 512, HashBlockSize: 4096, DataBlocks: 1000, HashStartBlock: 1,
				Hash: "sha256", RootHash: bytes.Repeat([]byte{0x5c}, 32), Salt: []byte{0, 0x11}, CheckAtMostOnce: true, Other: []string{"restart_on_error"}}},
	} {
		got, err := ParseTable(c.line)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s\n got %+v\nwant %+v", c.line, *got, c.want)
		}
	}
}

func TestParseTableErrors(t *testing.T) {
	root := strings.Repeat("5c", 32)
	for _, line := range []string{
		"",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root,
		"2 7:1 7:0 4096 4096 8 1 sha256 " + root + " -",
		"1 7:1 7:0 4095 4096 8 1 sha256 " + root + " -",
		"1 7:1 7:0 4096 256 8 1 sha256 " + root + " -",
		"1 7:1 7:0 4096 4096 -8 1 sha256 " + root + " -",
		"1 7:1 7:0 4096 4096 8 x sha256 " + root + " -",
		"1 7:1 7:0 4096 4096 8 1 sha256 5g -",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root + " salt",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root + " - 2 ignore_zero_blocks",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root + " - 1 use_fec_from_device",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root + " - 2 fec_roots 1",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root + " - 2 fec_start -1",
		"1 7:1 7:0 4096 4096 8 1 sha256 " + root + " - x",
	} {
		if kt, err := ParseTable(line); err == nil {
			t.Errorf("%q parsed: %+v", line, kt)
		}
	}
	kt, _ := ParseTable("1 7:1 7:0 4096 4096 8 1 sm3 " + root + " -")
	if _, err := kt.Geometry(); err == nil {
		t.Error("a tree of an unknown algorithm")
	}
	kt, _ = ParseTable("1 7:1 7:0 4096 4096 8 1 sha1 " + root + " -")
	if _, err := kt.Geometry(); err == nil {
		t.Error("a 32-byte root hash taken for sha1's")
	}
	kt, _ = ParseTable("1 7:1 7:0 4096 4096 8 9223372036854775807 sha256 " + root + " -")
	if _, err := kt.Geometry(); err == nil {
		t.Error("a tree past the end of any device")
	}
	kt, _ = ParseTable("1 7:1 7:0 4096 4096 8 1 sha256 " + root + " -")
	kt.Format = 2 // a table of no format the kernel knows, made by hand
	if _, err := kt.Geometry(); err == nil {
		t.Error("a tree of format 2")
	}
}

// FuzzParseTable: any line is an error or a table whose String parses
// back to the same.
func FuzzParseTable(f *testing.F) {
	g, _ := merkle.NewGeometry(merkle.Params{Hash: hashes.SHA256, Salt: []byte{1}, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 8})
	bp, _ := Table(g, make([]byte, 32), &FECInfo{Roots: 2, Blocks: 9}, &TableOptions{DataDevice: "7:0", HashDevice: "7:1", FECDevice: "7:2",
		OnCorruption: IgnoreCorruption, IgnoreZeroBlocks: true, CheckAtMostOnce: true, UseTasklets: true, RootHashSigKey: "k"})
	f.Add(bp.Table)
	f.Add("0 8 verity 0 254:5 254:5 4096 4096 256 257 sha512 aa - 3 ignore_zero_blocks restart_on_error panic_on_corruption")
	f.Fuzz(func(t *testing.T, line string) {
		kt, err := ParseTable(line)
		if err != nil {
			return
		}
		again, err := ParseTable(kt.String())
		if err != nil {
			t.Fatalf("%q parsed, its String %q does not: %v", line, kt.String(), err)
		}
		if !reflect.DeepEqual(again, kt) {
			t.Fatalf("%q: %+v\nagain %+v", line, kt, again)
		}
		kt.Geometry()
	})
}
