package verity

// The kernel table and boot arguments: their format, and the checks of
// the names written into them.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// tblGeometry is a 4096/4096 sha256 tree of blocks blocks.
func tblGeometry(t *testing.T, blocks uint64, mod func(*merkle.Params)) *merkle.Geometry {
	t.Helper()
	p := merkle.Params{Hash: hashes.SHA256, Salt: []byte{0xab, 0xcd}, DataBlockSize: 4096, HashBlockSize: 4096,
		DataBlocks: blocks, Superblock: true}
	if mod != nil {
		mod(&p)
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTableFormat: the table line of FORMAT.md's kernel table section, the
// optional arguments counted and ordered as cryptsetup does, and the two
// boot forms around it.
func TestTableFormat(t *testing.T) {
	root, _ := hex.DecodeString("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	rootHex := hex.EncodeToString(root)
	fecRes := &FECInfo{Roots: 2, Blocks: 2066, Start: 17}
	for _, tc := range []struct {
		name string
		g    *merkle.Geometry
		o    TableOptions
		f    *FECInfo
		want string
	}{
		{"plain", tblGeometry(t, 2048, nil), TableOptions{}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha256 " + rootHex + " abcd"},
		{"no superblock, offset, no salt, format 0", tblGeometry(t, 100, func(p *merkle.Params) {
			p.Superblock, p.HashOffset, p.Salt, p.LegacyFormat, p.Hash = false, 1<<20, nil, true, hashes.SHA1
			p.DataBlockSize, p.HashBlockSize = 512, 1024
		}), TableOptions{}, nil, "0 /dev/sda1 /dev/sda2 512 1024 100 1024 sha1 " + rootHex + " -"},
		{"superblock past an offset", tblGeometry(t, 7, func(p *merkle.Params) { p.HashOffset = 8192 + 512 }), TableOptions{}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 7 3 sha256 " + rootHex + " abcd"},
		{"all flags", tblGeometry(t, 2048, nil), TableOptions{OnCorruption: RestartOnCorruption, IgnoreZeroBlocks: true, CheckAtMostOnce: true}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha256 " + rootHex + " abcd 3 restart_on_corruption ignore_zero_blocks check_at_most_once"},
		{"panic", tblGeometry(t, 2048, nil), TableOptions{OnCorruption: PanicOnCorruption}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha256 " + rootHex + " abcd 1 panic_on_corruption"},
		{"ignore corruption", tblGeometry(t, 2048, nil), TableOptions{OnCorruption: IgnoreCorruption, IgnoreZeroBlocks: true}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha256 " + rootHex + " abcd 2 ignore_corruption ignore_zero_blocks"},
		{"fec", tblGeometry(t, 2048, nil), TableOptions{}, fecRes,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha256 " + rootHex + " abcd 8 use_fec_from_device /dev/sda3 fec_start 17 fec_blocks 2066 fec_roots 2"},
		// veritysetup's other name, which the superblock keeps: the
		// table names the kernel's algorithm.
		{"spelled ripemd160", tblGeometry(t, 2048, func(p *merkle.Params) { p.Hash, p.HashName = hashes.RMD160, "ripemd160" }), TableOptions{}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 rmd160 " + rootHex + " abcd"},
		{"spelled by its OID", tblGeometry(t, 2048, func(p *merkle.Params) { p.Hash, p.HashName = hashes.SHA3_512, "2.16.840.1.101.3.4.2.10" }), TableOptions{}, nil,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha3-512 " + rootHex + " abcd"},
		{"fec and flags", tblGeometry(t, 2048, nil), TableOptions{IgnoreZeroBlocks: true}, fecRes,
			"1 /dev/sda1 /dev/sda2 4096 4096 2048 1 sha256 " + rootHex + " abcd 9 ignore_zero_blocks use_fec_from_device /dev/sda3 fec_start 17 fec_blocks 2066 fec_roots 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.DataDevice, o.HashDevice, o.FECDevice = "/dev/sda1", "/dev/sda2", "/dev/sda3"
			bp, err := Table(tc.g, root, tc.f, &o)
			if err != nil {
				t.Fatal(err)
			}
			if bp.Table != tc.want {
				t.Errorf("table\n got %s\nwant %s", bp.Table, tc.want)
			}
			sectors := tc.g.DataSize() / 512
			if bp.Sectors != sectors {
				t.Errorf("sectors %d, want %d", bp.Sectors, sectors)
			}
			if want := fmt.Sprintf(`dm-mod.create="vroot,,,ro,0 %d verity %s"`, sectors, tc.want); bp.DMModCreate != want {
				t.Errorf("dm-mod.create\n got %s\nwant %s", bp.DMModCreate, want)
			}
			if want := fmt.Sprintf(`dm="1 vroot none ro 1,0 %d verity %s"`, sectors, tc.want); bp.AndroidDM != want {
				t.Errorf("dm=\n got %s\nwant %s", bp.AndroidDM, want)
			}
		})
	}
}

// tblAvbtoolCmdline is the kernel command line avbtool 1.1 put in the
// vbmeta of an Android system image (from an Android emulator image's
// "avbtool info_image"): 10 optional arguments, the FEC ones in avbtool's
// order.
const tblAvbtoolCmdline = `dm="1 vroot none ro 1,0 5159992 verity 1 PARTUUID=$(ANDROID_SYSTEM_PARTUUID) PARTUUID=$(ANDROID_SYSTEM_PARTUUID) 4096 4096 644999 644999 sha1 07e8da3c6ffe2ea52d14ad342beb6bb15060cd45 27e6b2075f9a47160d21f824b923f4ebdb755c3f 10 $(ANDROID_VERITY_MODE) ignore_zero_blocks use_fec_from_device PARTUUID=$(ANDROID_SYSTEM_PARTUUID) fec_roots 2 fec_blocks 650080 fec_start 650080"`

// TestTableAndroidForm: for avbtool's layout and parameters, the dm= form
// is avbtool's but for the FEC arguments' order (cryptsetup's; the kernel
// takes any order) and the corruption mode avbtool leaves to the
// bootloader ($(ANDROID_VERITY_MODE)).
func TestTableAndroidForm(t *testing.T) {
	g := tblGeometry(t, 644999, func(p *merkle.Params) {
		p.Hash, p.Superblock, p.HashOffset = hashes.SHA1, false, 644999*4096
		p.Salt, _ = hex.DecodeString("27e6b2075f9a47160d21f824b923f4ebdb755c3f")
	})
	root, _ := hex.DecodeString("07e8da3c6ffe2ea52d14ad342beb6bb15060cd45")
	dev := "PARTUUID=$(ANDROID_SYSTEM_PARTUUID)"
	// avbtool's fec_start and fec_blocks are the FEC offset in blocks,
	// which is where the tree ends: check that against the geometry.
	if end := g.HashEnd() / 4096; end != 650080 {
		t.Fatalf("the tree ends at block %d, avbtool's FEC starts at 650080", end)
	}
	f := &FECInfo{Roots: 2, Blocks: 650080, Start: 650080, InHash: true}
	bp, err := Table(g, root, f, &TableOptions{DataDevice: dev, HashDevice: dev, FECDevice: dev, OnCorruption: RestartOnCorruption, IgnoreZeroBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	got := bp.AndroidDM
	want := strings.Replace(tblAvbtoolCmdline, "$(ANDROID_VERITY_MODE)", "restart_on_corruption", 1)
	want = strings.Replace(want, "fec_roots 2 fec_blocks 650080 fec_start 650080", "fec_start 650080 fec_blocks 650080 fec_roots 2", 1)
	if got != want {
		t.Errorf("dm=\n got %s\nwant %s", got, want)
	}
}

// TestTableErrors: names the kernel would split, and missing devices, are
// KindParam errors naming the option, with the flag's spelling.
func TestTableErrors(t *testing.T) {
	g := tblGeometry(t, 16, nil)
	root := make([]byte, 32)
	for _, c := range []struct {
		name  string
		o     TableOptions
		f     *FECInfo
		field string
		msg   string
	}{
		{"no data device", TableOptions{HashDevice: "/dev/b"}, nil, "DataDevice", "TableOptions.DataDevice is needed for the table"},
		{"no hash device", TableOptions{DataDevice: "/dev/a"}, nil, "HashDevice", "TableOptions.HashDevice is needed for the table"},
		{"no FEC device", TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b"}, &FECInfo{Roots: 2}, "FECDevice", "TableOptions.FECDevice is needed"},
		{"space", TableOptions{DataDevice: "/dev/a b", HashDevice: "/dev/b"}, nil, "DataDevice", `TableOptions.DataDevice "/dev/a b" contains ' '`},
		{"byte 0xA0", TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/\u0920"}, nil, "HashDevice", "contains the byte 0xa0 (at 7)"},
		{"comma in the dm name", TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b", DMName: "a,b"}, nil, "DMName", `TableOptions.DMName "a,b" contains ','`},
		{"long dm name", TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b", DMName: strings.Repeat("n", 32)}, nil, "DMName", "the kernel's dm= parser keeps 31"},
		{"mode", TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b", OnCorruption: 9}, nil, "OnCorruption", "unknown corruption mode 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Table(g, root, c.f, &c.o)
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindParam || e.Field != c.field || !strings.Contains(e.Error(), c.msg) || !errors.Is(err, ErrParam) {
				t.Errorf("error %#v (%v), want KindParam about %s saying %q", e, err, c.field, c.msg)
			}
		})
	}
	// The default dm name.
	bp, err := Table(g, root, nil, &TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b"})
	if err != nil || !strings.HasPrefix(bp.DMModCreate, `dm-mod.create="vroot,,,ro,0 128 verity 1 /dev/a /dev/b `) {
		t.Errorf("%v, %+v", err, bp)
	}
}
