package verity

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// DMTable is a whole table line: "0 <sectors> verity" and the parameters,
// which ParseTable takes back as it takes Table, and whose length covers
// the data the tree covers.
func TestDMTableLine(t *testing.T) {
	root := make([]byte, 32)
	for i := range root {
		root[i] = byte(i * 7)
	}
	fecInfo := &FECInfo{Roots: 4, Blocks: 1000, Start: 40}
	for _, c := range []struct {
		name string
		g    *merkle.Geometry
		fec  *FECInfo
		opts TableOptions
	}{
		{"4096-byte blocks", tblGeometry(t, 2048, nil), nil, TableOptions{}},
		{"512-byte blocks, an odd count", tblGeometry(t, 12345, func(p *merkle.Params) { p.DataBlockSize, p.HashBlockSize = 512, 512 }), nil,
			TableOptions{IgnoreZeroBlocks: true}},
		{"64 KiB blocks, format 0, sha1", tblGeometry(t, 3, func(p *merkle.Params) {
			p.DataBlockSize, p.HashBlockSize, p.LegacyFormat, p.Hash, p.Superblock = 65536, 65536, true, hashes.SHA1, false
		}), nil, TableOptions{OnCorruption: PanicOnCorruption, CheckAtMostOnce: true}},
		{"FEC and a signature key", tblGeometry(t, 960, nil), fecInfo,
			TableOptions{FECDevice: "/dev/sdc", RootHashSigKey: "veritykey", UseTasklets: true, OnCorruption: RestartOnCorruption}},
	} {
		o := c.opts
		o.DataDevice, o.HashDevice = "/dev/sda1", "8:2"
		bp, err := Table(c.g, root, c.fec, &o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := strings.Fields(bp.DMTable)
		if len(f) < 4 || f[0] != "0" || f[2] != "verity" {
			t.Fatalf("%s: %q does not start with \"0 <sectors> verity\"", c.name, bp.DMTable)
		}
		sectors, err := strconv.ParseUint(f[1], 10, 64)
		if want := c.g.DataBlocks * uint64(c.g.DataBlockSize) / 512; err != nil || sectors != want || bp.Sectors != want {
			t.Errorf("%s: %q maps %s sectors (Sectors %d), want %d: DataBlocks %d of %d bytes", c.name, bp.DMTable, f[1], bp.Sectors, want,
				c.g.DataBlocks, c.g.DataBlockSize)
		}
		if rest := strings.Join(f[3:], " "); rest != bp.Table {
			t.Errorf("%s: %q after \"verity\", want Table %q", c.name, rest, bp.Table)
		}
		whole, err := ParseTable(bp.DMTable)
		if err != nil {
			t.Fatalf("%s: ParseTable(%q): %v", c.name, bp.DMTable, err)
		}
		params, err := ParseTable(bp.Table)
		if err != nil || !reflect.DeepEqual(whole, params) {
			t.Errorf("%s: %+v from DMTable, %+v (%v) from Table", c.name, whole, params, err)
		}
		if whole.DataBlocks != c.g.DataBlocks || whole.DataBlockSize != c.g.DataBlockSize || whole.HashStartBlock != c.g.HashStartBlock ||
			whole.Hash != c.g.Hash.Name() || whole.Format != int(c.g.Format()) || fmt.Sprintf("%x", whole.RootHash) != fmt.Sprintf("%x", root) ||
			whole.DataDevice != "/dev/sda1" || whole.HashDevice != "8:2" {
			t.Errorf("%s: %+v does not describe the tree %+v", c.name, whole, c.g)
		}
		if c.fec != nil && (whole.FECDevice != "/dev/sdc" || whole.FECStart != c.fec.Start || whole.FECBlocks != c.fec.Blocks || whole.FECRoots != c.fec.Roots) {
			t.Errorf("%s: FEC %+v, want %+v", c.name, whole, c.fec)
		}
		for _, arg := range []string{bp.DMModCreate, bp.AndroidDM} {
			if !strings.HasSuffix(arg, ","+bp.DMTable+`"`) {
				t.Errorf("%s: %s does not end with the table line %q", c.name, arg, bp.DMTable)
			}
		}
	}
}
