package verity

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/veritytree/veritytree/internal/dmname"
	"github.com/veritytree/veritytree/merkle"
)

// CorruptionMode is what the kernel does when a block does not match the
// tree: a dm-verity table option.
type CorruptionMode uint8

const (
	// CorruptionEIO, the default, fails the read with an I/O error (no
	// option in the table).
	CorruptionEIO CorruptionMode = iota
	// IgnoreCorruption logs the mismatch and returns the data anyway
	// (ignore_corruption).
	IgnoreCorruption
	// RestartOnCorruption restarts the machine (restart_on_corruption).
	RestartOnCorruption
	// PanicOnCorruption panics the kernel (panic_on_corruption).
	PanicOnCorruption
)

// TableOptions choose the devices, the optional arguments of a dm-verity
// table and the device-mapper name in the boot arguments. Device names are
// what the kernel reads them as: a path (/dev/sda1), MAJOR:MINOR (8:1), or
// at boot PARTUUID=... and the like.
type TableOptions struct {
	// DataDevice and HashDevice name the data and hash devices; both are
	// needed (the same device when the tree is inside the data).
	DataDevice, HashDevice string
	// FECDevice names the device holding the error-correction parity;
	// needed only with FEC.
	FECDevice string
	// DMName is the device-mapper name in the boot arguments, at most 31
	// bytes; "" means "vroot".
	DMName string
	// IgnoreZeroBlocks adds ignore_zero_blocks (Android's first-stage init
	// always does).
	IgnoreZeroBlocks bool
	// CheckAtMostOnce adds check_at_most_once.
	CheckAtMostOnce bool
	// OnCorruption chooses the corruption mode.
	OnCorruption CorruptionMode
	// UseTasklets adds try_verify_in_tasklet (Linux 6.0 on: blocks in the
	// page cache are verified in softirq context).
	UseTasklets bool
	// RootHashSigKey, if not "", adds root_hash_sig_key_desc with it: the
	// description of a key in the kernel's keyring holding the PKCS#7
	// signature of the root hash, which the kernel then checks.
	RootHashSigKey string
}

// BootParams are a dm-verity table line and the two boot arguments that
// load it at boot.
type BootParams struct {
	// Table is the dm-verity target's parameters, as `veritysetup open`
	// builds them (its optional arguments in the same order): what follows
	// "verity" in a table line, not a line dmsetup takes (see DMTable).
	Table string `json:"table"`
	// Sectors is the mapped size in 512-byte sectors.
	Sectors uint64 `json:"table_sectors"`
	// DMTable is the whole table line, "0 <Sectors> verity <Table>", as
	// `dmsetup create NAME --readonly --table "<DMTable>"` takes it (and
	// as `dmsetup table` prints it back, but for the devices' names,
	// which the kernel shows as MAJOR:MINOR).
	DMTable string `json:"dm_table"`
	// DMModCreate is the dm-mod.create="..." kernel argument (Linux 5.1 on).
	DMModCreate string `json:"dm_mod_create"`
	// AndroidDM is the dm="..." argument of Android and Chrome OS kernels
	// before dm-mod.create, as avbtool writes it.
	AndroidDM string `json:"android_dm"`
}

// Table returns the dm-verity table line of the tree g with root hash
// root, and the dm-mod.create= and Android dm= boot arguments around it;
// fec is nil for a tree without error correction. The layout and order are
// those of cryptsetup's get_dm_verity_params (lib/libdevmapper.c): the
// corruption mode, ignore_zero_blocks, check_at_most_once,
// try_verify_in_tasklet, then use_fec_from_device <dev> fec_start <n>
// fec_blocks <n> fec_roots <n>, then root_hash_sig_key_desc <key>, each
// name and each value counted as one argument. The kernel accepts the
// optional arguments in any order; avbtool writes the FEC ones as
// fec_roots, fec_blocks, fec_start.
//
// A device or dm name that the kernel's parsers would split (white space,
// including byte 0xA0, quotes, commas, semicolons, control characters) is
// a KindParam error naming the option.
func Table(g *merkle.Geometry, root []byte, fec *FECInfo, opts *TableOptions) (*BootParams, error) {
	if opts == nil {
		opts = &TableOptions{}
	}
	o := *opts
	if o.DMName == "" {
		o.DMName = "vroot"
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	for _, d := range []struct {
		field, v string
		needed   bool
	}{{"DataDevice", o.DataDevice, true}, {"HashDevice", o.HashDevice, true}, {"FECDevice", o.FECDevice, fec != nil}} {
		if d.needed && d.v == "" {
			return nil, paramErrorf(d.field, deviceHint(d.field), "TableOptions.%s is needed for the table", d.field)
		}
	}
	return makeBootParams(g, root, &o, fec), nil
}

// Check checks the options on their own: the device names given (empty
// ones are left for Table to require), the dm name and the corruption
// mode. Callers that take the names from users can check them before any
// work.
func (o *TableOptions) Check() error {
	if o.OnCorruption > PanicOnCorruption {
		return paramErrorf("OnCorruption", "", "unknown corruption mode %d", o.OnCorruption)
	}
	if o.DMName != "" {
		if err := checkDMName(o.DMName); err != nil {
			return err
		}
	}
	if o.RootHashSigKey != "" {
		if err := dmname.Check(o.RootHashSigKey); err != nil {
			return paramErrorf("RootHashSigKey", "", "the root hash signature's key description %q %v", o.RootHashSigKey, err)
		}
	}
	for _, d := range []struct{ field, v string }{{"DataDevice", o.DataDevice}, {"HashDevice", o.HashDevice}, {"FECDevice", o.FECDevice}} {
		if d.v == "" {
			continue
		}
		if err := dmname.Check(d.v); err != nil {
			return paramErrorf(d.field, deviceHint(d.field), "TableOptions.%s %q %v", d.field, d.v, err)
		}
	}
	return nil
}

// deviceHint is the hint for a device name of TableOptions' field.
func deviceHint(field string) string {
	o := "TableOptions." + field
	return "e.g. " + o + "=/dev/sda1, " + o + "=8:1 or " + o + "=PARTUUID=<uuid>"
}

func checkDMName(s string) error {
	hint := "e.g. TableOptions.DMName=vroot"
	if err := dmname.Check(s); err != nil {
		return paramErrorf("DMName", hint, "TableOptions.DMName %q %v", s, err)
	}
	if len(s) > 31 {
		return paramErrorf("DMName", hint, "TableOptions.DMName %q is %d characters; the kernel's dm= parser keeps 31", s, len(s))
	}
	return nil
}

// verityTable returns the table line; see Table.
func verityTable(g *merkle.Geometry, root []byte, o *TableOptions, f *FECInfo) string {
	var opts []string
	switch o.OnCorruption {
	case IgnoreCorruption:
		opts = append(opts, "ignore_corruption")
	case RestartOnCorruption:
		opts = append(opts, "restart_on_corruption")
	case PanicOnCorruption:
		opts = append(opts, "panic_on_corruption")
	}
	if o.IgnoreZeroBlocks {
		opts = append(opts, "ignore_zero_blocks")
	}
	if o.CheckAtMostOnce {
		opts = append(opts, "check_at_most_once")
	}
	if o.UseTasklets {
		opts = append(opts, "try_verify_in_tasklet")
	}
	if f != nil {
		opts = append(opts, "use_fec_from_device", o.FECDevice, "fec_start", fmt.Sprint(f.Start),
			"fec_blocks", fmt.Sprint(f.Blocks), "fec_roots", fmt.Sprint(f.Roots))
	}
	if o.RootHashSigKey != "" {
		opts = append(opts, "root_hash_sig_key_desc", o.RootHashSigKey)
	}
	salt := "-"
	if len(g.Salt) > 0 {
		salt = hex.EncodeToString(g.Salt)
	}
	t := fmt.Sprintf("%d %s %s %d %d %d %d %s %x %s", g.Format(), o.DataDevice, o.HashDevice, g.DataBlockSize, g.HashBlockSize,
		g.DataBlocks, g.HashStartBlock, g.Hash.Name(), root, salt)
	if len(opts) > 0 {
		t += fmt.Sprintf(" %d %s", len(opts), strings.Join(opts, " "))
	}
	return t
}

// makeBootParams builds the table and the two boot arguments.
func makeBootParams(g *merkle.Geometry, root []byte, o *TableOptions, f *FECInfo) *BootParams {
	table := verityTable(g, root, o, f)
	sectors := g.DataSize() / 512
	target := fmt.Sprintf("0 %d verity %s", sectors, table)
	return &BootParams{
		Table:   table,
		Sectors: sectors,
		DMTable: target,
		// name,uuid,minor,flags,table: no uuid, any minor, read-only.
		DMModCreate: fmt.Sprintf(`dm-mod.create="%s,,,ro,%s"`, o.DMName, target),
		// <devices> <name> <uuid> <ro|rw> <targets>,<target>.
		AndroidDM: fmt.Sprintf(`dm="1 %s none ro 1,%s"`, o.DMName, target),
	}
}
