package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
)

// bootFlags choose the devices and optional arguments of the kernel table
// and the boot arguments built from it.
type bootFlags struct {
	dataDevice, hashDevice, fecDevice string
	dmName                            string
	ignoreZeroBlocks, checkAtMostOnce bool
	ignoreCorruption                  bool
	restartOnCorruption               bool
	panicOnCorruption                 bool
	print                             bool

	fs *pflag.FlagSet
}

// bootFlagNames are the flags that ask for the boot parameters in the text
// report (--json always has them).
var bootFlagNames = []string{"data-device", "hash-device", "fec-device-name", "dm-name",
	"ignore-zero-blocks", "check-at-most-once", "ignore-corruption", "restart-on-corruption", "panic-on-corruption"}

func (b *bootFlags) register(fs *pflag.FlagSet) {
	b.fs = fs
	fs.BoolVar(&b.print, "boot-params", false, "also print the kernel table, a dm-mod.create= and an Android dm= boot argument (implied by the flags below; in --json by default)")
	fs.StringVar(&b.dataDevice, "data-device", "", "`DEV` naming the data device in the table: /dev/sda1, 8:1, PARTUUID=... (default: DATA as given)")
	fs.StringVar(&b.hashDevice, "hash-device", "", "`DEV` naming the hash device in the table (default: HASH as given; the data device when the tree is in DATA)")
	fs.StringVar(&b.fecDevice, "fec-device-name", "", "`DEV` naming a separate FEC device in the table (default: --fec-device as given)")
	fs.StringVar(&b.dmName, "dm-name", "vroot", "device-mapper `NAME` in the boot arguments (at most 31 characters)")
	fs.BoolVar(&b.ignoreZeroBlocks, "ignore-zero-blocks", false, "table option ignore_zero_blocks (Android's first-stage init always adds it)")
	fs.BoolVar(&b.checkAtMostOnce, "check-at-most-once", false, "table option check_at_most_once")
	fs.BoolVar(&b.ignoreCorruption, "ignore-corruption", false, "table option ignore_corruption (log, return the data)")
	fs.BoolVar(&b.restartOnCorruption, "restart-on-corruption", false, "table option restart_on_corruption")
	fs.BoolVar(&b.panicOnCorruption, "panic-on-corruption", false, "table option panic_on_corruption")
}

// wanted reports whether the text report shows the boot parameters.
func (b *bootFlags) wanted() bool {
	if b.print {
		return true
	}
	for _, name := range bootFlagNames {
		if b.fs.Changed(name) {
			return true
		}
	}
	return false
}

// check validates the flags that need no file.
func (b *bootFlags) check() error {
	n := 0
	for _, on := range []bool{b.ignoreCorruption, b.restartOnCorruption, b.panicOnCorruption} {
		if on {
			n++
		}
	}
	if n > 1 {
		return cli.Errorf("choose one of them", "--ignore-corruption, --restart-on-corruption and --panic-on-corruption exclude one another")
	}
	if err := checkDMName(b.dmName); err != nil {
		return err
	}
	for _, d := range []struct{ flag, v string }{{"data-device", b.dataDevice}, {"hash-device", b.hashDevice}, {"fec-device-name", b.fecDevice}} {
		if b.fs.Changed(d.flag) {
			if err := checkDeviceName(d.v); err != nil {
				return cli.Errorf("e.g. --"+d.flag+"=/dev/sda1, --"+d.flag+"=8:1 or --"+d.flag+"=PARTUUID=<uuid>", "--%s %q %v", d.flag, d.v, err)
			}
		}
	}
	return nil
}

// badNameChars are the characters a device name or dm name cannot hold:
// white space and the quote end a table field or the boot argument, a
// comma or semicolon splits the dm-mod.create= and dm= forms (the kernel's
// parsers have no escapes).
const badNameChars = " \t\n\r\v\f\",;"

func checkDeviceName(s string) error {
	if s == "" {
		return fmt.Errorf("is empty")
	}
	if i := strings.IndexAny(s, badNameChars); i >= 0 {
		return fmt.Errorf("contains %q, which the kernel's table and boot argument parsers would split at", s[i])
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains the control character %q", r)
		}
	}
	// The kernel's isspace() is Latin-1's: byte 0xa0 (no-break space) is
	// whitespace to it, also inside a UTF-8 character such as U+0920.
	if i := strings.IndexByte(s, 0xa0); i >= 0 {
		return fmt.Errorf("contains the byte 0xa0 (at %d), which the kernel counts as a space and would split at", i)
	}
	return nil
}

func checkDMName(s string) error {
	hint := "e.g. --dm-name=vroot"
	if err := checkDeviceName(s); err != nil {
		return cli.Errorf(hint, "--dm-name %q %v", s, err)
	}
	if len(s) > 31 {
		return cli.Errorf(hint, "--dm-name %q is %d characters; the kernel's dm= parser keeps 31", s, len(s))
	}
	return nil
}

// bootDevices are the device names the table uses.
type bootDevices struct{ data, hash, fec string }

// bootParams is the kernel table and the boot arguments that load it.
type bootParams struct {
	// Table is the dm-verity table line, as `veritysetup open` builds it
	// (its optional arguments in the same order).
	Table string `json:"table"`
	// Sectors is the mapped size in 512-byte sectors.
	Sectors uint64 `json:"table_sectors"`
	// DMModCreate is the dm-mod.create="..." kernel argument (Linux 5.1 on).
	DMModCreate string `json:"dm_mod_create"`
	// AndroidDM is the dm="..." argument of Android and Chrome OS kernels
	// before dm-mod.create, as avbtool writes it.
	AndroidDM string `json:"android_dm"`
}

// verityTable returns the dm-verity table line for the tree g with root
// hash root, on the given devices, with the optional arguments of b and
// the FEC arguments of f (nil without FEC). The layout and order are those
// of cryptsetup's get_dm_verity_params (lib/libdevmapper.c): the
// corruption mode, ignore_zero_blocks, check_at_most_once, then
// use_fec_from_device <dev> fec_start <n> fec_blocks <n> fec_roots <n>,
// each name and each value counted as one argument. The kernel accepts
// the optional arguments in any order; avbtool writes the FEC ones as
// fec_roots, fec_blocks, fec_start.
func verityTable(g *merkle.Geometry, root []byte, d bootDevices, b *bootFlags, f *fecResult) string {
	var opts []string
	switch {
	case b.ignoreCorruption:
		opts = append(opts, "ignore_corruption")
	case b.restartOnCorruption:
		opts = append(opts, "restart_on_corruption")
	case b.panicOnCorruption:
		opts = append(opts, "panic_on_corruption")
	}
	if b.ignoreZeroBlocks {
		opts = append(opts, "ignore_zero_blocks")
	}
	if b.checkAtMostOnce {
		opts = append(opts, "check_at_most_once")
	}
	if f != nil {
		opts = append(opts, "use_fec_from_device", d.fec, "fec_start", fmt.Sprint(f.Start),
			"fec_blocks", fmt.Sprint(f.Blocks), "fec_roots", fmt.Sprint(f.Roots))
	}
	t := fmt.Sprintf("%d %s %s %d %d %d %d %s %x %s", g.Format, d.data, d.hash, g.DataBlockSize, g.HashBlockSize,
		g.DataBlocks, g.HashStartBlock, g.Hash.Name(), root, cli.FormatSalt(g.Salt))
	if len(opts) > 0 {
		t += fmt.Sprintf(" %d %s", len(opts), strings.Join(opts, " "))
	}
	return t
}

// makeBootParams builds the table and the two boot arguments.
func makeBootParams(g *merkle.Geometry, root []byte, d bootDevices, b *bootFlags, f *fecResult) *bootParams {
	table := verityTable(g, root, d, b, f)
	sectors := g.DataSize() / 512
	target := fmt.Sprintf("0 %d verity %s", sectors, table)
	return &bootParams{
		Table:   table,
		Sectors: sectors,
		// name,uuid,minor,flags,table: no uuid, any minor, read-only.
		DMModCreate: fmt.Sprintf(`dm-mod.create="%s,,,ro,%s"`, b.dmName, target),
		// <devices> <name> <uuid> <ro|rw> <targets>,<target>.
		AndroidDM: fmt.Sprintf(`dm="1 %s none ro 1,%s"`, b.dmName, target),
	}
}
