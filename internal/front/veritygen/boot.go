package veritygen

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/dmname"
	"github.com/veritytree/veritytree/verity"
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
	fs.BoolVar(&b.print, "boot-params", false, "print the table, dm-mod.create= and dm=")
	fs.StringVar(&b.dataDevice, "data-device", "", "`DEV` /dev/sda1, 8:1, PARTUUID=... (default: DATA)")
	fs.StringVar(&b.hashDevice, "hash-device", "", "`DEV` the hash device (default: HASH)")
	fs.StringVar(&b.fecDevice, "fec-device-name", "", "`DEV` the FEC device (default: --fec-device)")
	fs.StringVar(&b.dmName, "dm-name", "vroot", "`NAME` device-mapper name (31 at most)")
	fs.BoolVar(&b.ignoreZeroBlocks, "ignore-zero-blocks", false, "ignore_zero_blocks (Android's init adds it)")
	fs.BoolVar(&b.checkAtMostOnce, "check-at-most-once", false, "check_at_most_once")
	fs.BoolVar(&b.ignoreCorruption, "ignore-corruption", false, "ignore_corruption")
	fs.BoolVar(&b.restartOnCorruption, "restart-on-corruption", false, "restart_on_corruption")
	fs.BoolVar(&b.panicOnCorruption, "panic-on-corruption", false, "panic_on_corruption")
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
	if err := dmname.Check(b.dmName); err != nil {
		// The library takes "" for the default name; the flag given empty
		// is a mistake.
		return cli.Errorf("e.g. --dm-name=vroot", "--dm-name %q %v", b.dmName, err)
	}
	if err := (&verity.TableOptions{DMName: b.dmName}).Check(); err != nil {
		return err
	}
	for _, d := range []struct{ flag, v string }{{"data-device", b.dataDevice}, {"hash-device", b.hashDevice}, {"fec-device-name", b.fecDevice}} {
		if b.fs.Changed(d.flag) {
			if err := dmname.Check(d.v); err != nil {
				return cli.Errorf("e.g. --"+d.flag+"=/dev/sda1, --"+d.flag+"=8:1 or --"+d.flag+"=PARTUUID=<uuid>", "--%s %q %v", d.flag, d.v, err)
			}
		}
	}
	return nil
}

// bootDevices are the device names the table uses.
type bootDevices struct{ data, hash, fec string }

// bootDevices returns the device names for the table: the flags', or the
// paths as given.
func (o *options) bootDevices(dataPath, hashPath string, treeInData bool, f *verity.FECInfo) (bootDevices, error) {
	b := &o.boot
	d := bootDevices{data: dataPath, hash: hashPath}
	if b.dataDevice != "" {
		d.data = b.dataDevice
	}
	switch {
	case b.hashDevice != "":
		d.hash = b.hashDevice
	case treeInData:
		d.hash = d.data
	}
	if f != nil {
		switch {
		case f.InHash:
			d.fec = d.hash
		case f.InData:
			d.fec = d.data
		case b.fecDevice != "":
			d.fec = b.fecDevice
		default:
			d.fec = f.Path
		}
	}
	for _, n := range []struct{ role, flag, v string }{{"DATA", "data-device", d.data}, {"HASH", "hash-device", d.hash}, {"the FEC device", "fec-device-name", d.fec}} {
		if n.v == "" && n.role == "the FEC device" {
			continue
		}
		if err := dmname.Check(n.v); err != nil {
			return d, cli.Errorf(fmt.Sprintf("name the device for the table: --%s=/dev/...", n.flag),
				"the kernel table names %s by its path, and %q %v", n.role, n.v, err)
		}
	}
	return d, nil
}

// tableOptions are the library's options for the table on devices d.
func (b *bootFlags) tableOptions(d bootDevices) *verity.TableOptions {
	t := &verity.TableOptions{DataDevice: d.data, HashDevice: d.hash, FECDevice: d.fec, DMName: b.dmName,
		IgnoreZeroBlocks: b.ignoreZeroBlocks, CheckAtMostOnce: b.checkAtMostOnce}
	switch {
	case b.ignoreCorruption:
		t.OnCorruption = verity.IgnoreCorruption
	case b.restartOnCorruption:
		t.OnCorruption = verity.RestartOnCorruption
	case b.panicOnCorruption:
		t.OnCorruption = verity.PanicOnCorruption
	}
	return t
}
