package avb_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
)

// slotBootFile holds what libavb's avb_slot_verify gives the bootloader,
// locked and unlocked, on the sets of slotCases, abCases and bootSetCases
// (record_slots.sh; slot_harness.c's mode=N form): its result, whether it
// returned slot data, the loaded partitions and the kernel command line.
const slotBootFile = "testdata/libavb/slot_boot.tsv"

// bootSetCases are A/B sets with kernel command-line descriptors, checked
// with each hashtree error mode and the cases of the command line.
var bootSetCases = []struct {
	name      string
	set       abSetOptions
	damage    func(t *testing.T, s *abSet)
	suffix    string
	requested string
	mode      avb.HashtreeErrorMode
	// managed: the device's managed verity value: "same" (this slot's
	// sha256 vbmeta digest), "other" (another), "short" (16 bytes).
	managed string
}{
	{name: "cl-restart-and-invalidate", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeRestartAndInvalidate},
	{name: "cl-restart", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeRestart},
	{name: "cl-eio", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeEIO},
	{name: "cl-logging", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeLogging},
	{name: "cl-managed", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeManagedRestartAndEIO},
	{name: "cl-managed-same", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeManagedRestartAndEIO, managed: "same"},
	{name: "cl-managed-other", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeManagedRestartAndEIO, managed: "other"},
	{name: "cl-managed-short", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreeManagedRestartAndEIO, managed: "short"},
	{name: "cl-panic", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "boot,vendor_boot,factory", mode: avb.HashtreePanic},
	{name: "cl-sha512", set: abSetOptions{cmdline: true, trees: 1, topSHA512: true}, suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-hashtree-disabled", set: abSetOptions{cmdline: true, trees: 1, topFlags: avb.FlagHashtreeDisabled}, suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-verification-disabled", set: abSetOptions{cmdline: true, trees: 1, topFlags: avb.FlagVerificationDisabled}, suffix: "_a", requested: "boot"},
	{name: "cl-verification-disabled-no-system", set: abSetOptions{cmdline: true, trees: 1, topFlags: avb.FlagVerificationDisabled},
		damage: func(t *testing.T, s *abSet) { os.Remove(filepath.Join(s.dir, "system_a.img")) }, suffix: "_a", requested: "boot"},
	{name: "cl-verification-disabled-unsuffixed", set: abSetOptions{cmdline: true, trees: 1, topFlags: avb.FlagVerificationDisabled}, suffix: "_a", requested: "boot,vendor_boot"},
	{name: "cl-boot-byte", set: abSetOptions{cmdline: true, trees: 1}, damage: func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "boot_a.img"), 100) },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-boot-only", set: abSetOptions{cmdline: true, trees: 1}, damage: func(t *testing.T, s *abSet) { os.Remove(filepath.Join(s.dir, "vendor_boot.img")) },
		suffix: "_a", requested: "boot"},
	{name: "cl-none-requested", set: abSetOptions{cmdline: true, trees: 1}, suffix: "_a", requested: "none"},
	{name: "cl-no-system", set: abSetOptions{cmdline: true, trees: 1}, damage: func(t *testing.T, s *abSet) { os.Remove(filepath.Join(s.dir, "system_a.img")) },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-t00-missing", set: abSetOptions{cmdline: true, trees: 1}, damage: func(t *testing.T, s *abSet) { delete(s.values, avb.PersistentDigestPrefix+"t00") },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
	// libavb returns from vbmeta_a at t00, before it takes its algorithm.
	{name: "cl-sha512-t00-missing", set: abSetOptions{cmdline: true, trees: 1, topSHA512: true}, damage: func(t *testing.T, s *abSet) { delete(s.values, avb.PersistentDigestPrefix+"t00") },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-factory-initialized", set: abSetOptions{cmdline: true, trees: 1}, damage: func(t *testing.T, s *abSet) { delete(s.values, pdFactory) },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-boot-top", set: abSetOptions{}, damage: bootTop, requested: "boot"},
	// A requested hash partition in a chained vbmeta: checked, damaged,
	// not requested (and missing), and in a chained vbmeta whose
	// signature fails (a locked device leaves it out, and boots).
	{name: "cl-chained-hash", set: abSetOptions{cmdline: true, trees: 1, chainedHash: true}, suffix: "_a", requested: "boot,dtbo,factory"},
	{name: "cl-chained-hash-byte", set: abSetOptions{cmdline: true, trees: 1, chainedHash: true}, damage: func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "dtbo_a.img"), 30) },
		suffix: "_a", requested: "boot,dtbo,factory"},
	{name: "cl-chained-hash-not-requested", set: abSetOptions{cmdline: true, trees: 1, chainedHash: true}, damage: func(t *testing.T, s *abSet) { os.Remove(filepath.Join(s.dir, "dtbo_a.img")) },
		suffix: "_a", requested: "boot,factory"},
	{name: "cl-chained-hash-sig", set: abSetOptions{cmdline: true, trees: 1, chainedHash: true}, damage: func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "vbmeta_system_a.img"), 256+32+10) },
		suffix: "_a", requested: "boot,dtbo,factory"},
	{name: "cl-chained-hash-sig-byte", set: abSetOptions{cmdline: true, trees: 1, chainedHash: true}, damage: func(t *testing.T, s *abSet) {
		flip(t, filepath.Join(s.dir, "vbmeta_system_a.img"), 256+32+10)
		flip(t, filepath.Join(s.dir, "dtbo_a.img"), 30)
	}, suffix: "_a", requested: "boot,dtbo,factory"},
	// A chained vbmeta whose signature fails, with and without a
	// persistent root digest in vbmeta_a after the chain descriptor.
	{name: "cl-chain-sig", set: abSetOptions{cmdline: true, trees: 1}, damage: func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "vbmeta_system_a.img"), 256+32+10) },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
	{name: "cl-chain-sig-no-trees", set: abSetOptions{cmdline: true}, damage: func(t *testing.T, s *abSet) { flip(t, filepath.Join(s.dir, "vbmeta_system_a.img"), 256+32+10) },
		suffix: "_a", requested: "boot,vendor_boot,factory"},
}

// bootRow is one run of the harness's mode=N form: a set, and how the
// bootloader calls avb_slot_verify.
type bootRow struct {
	name, key, requested, suffix string
	mode                         avb.HashtreeErrorMode
	args                         []string // LOCATION=INDEX, NAME:HEX
	// build makes the set; it returns its directory, the top-level
	// vbmeta's path and VerifySlot's options for it.
	build func(t *testing.T) (string, string, *avb.SlotOptions)
}

func bootRows() []bootRow {
	var rows []bootRow
	for _, tc := range slotCases {
		rows = append(rows, bootRow{name: "slot/" + tc.name, key: tc.opts.key, requested: "boot", args: tc.opts.rollback,
			build: func(t *testing.T) (string, string, *avb.SlotOptions) {
				dir, _ := devSet(t)
				if tc.damage != nil {
					tc.damage(t, dir)
				}
				o := tc.opts.options(t)
				o.Requested = []string{"boot"}
				return dir, filepath.Join(dir, "vbmeta.img"), o
			}})
	}
	ab := func(name string, set abSetOptions, damage func(*testing.T, *abSet), suffix, requested, managed string) func(t *testing.T) (string, string, *avb.SlotOptions) {
		return func(t *testing.T) (string, string, *avb.SlotOptions) {
			s := buildABSet(t, set)
			if damage != nil {
				damage(t, s)
			}
			top := filepath.Join(s.dir, "vbmeta"+suffix+".img")
			if !fileExists(top) {
				if boot := filepath.Join(s.dir, "boot"+suffix+".img"); fileExists(boot) {
					top = boot
				}
			}
			o := &avb.SlotOptions{ABSuffix: suffix, PersistentValues: s.values, Requested: strings.Split(requested, ",")}
			if managed != "" {
				r, err := avb.VerifySlot(context.Background(), top, &avb.SlotImages{Dir: s.dir}, o)
				if err != nil {
					t.Fatal(err)
				}
				v := r.VBMetaDigest
				switch managed {
				case "other":
					v = flipped(v)
				case "short":
					v = v[:16]
				}
				s.values[avb.ManagedVerityModeValue] = v
			}
			return s.dir, top, o
		}
	}
	for _, tc := range abCases {
		rows = append(rows, bootRow{name: "ab/" + tc.name, requested: tc.requested, suffix: tc.suffix,
			build: ab(tc.name, tc.set, tc.damage, tc.suffix, tc.requested, "")})
	}
	for _, tc := range bootSetCases {
		rows = append(rows, bootRow{name: "boot/" + tc.name, requested: tc.requested, suffix: tc.suffix, mode: tc.mode,
			build: ab(tc.name, tc.set, tc.damage, tc.suffix, tc.requested, tc.managed)})
	}
	return rows
}

// harnessGUID is slot_harness.c's guid_of.
func harnessGUID(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", h.Sum32(), len(name))
}

// setGUIDs are the harness's GUIDs of the set's partitions (its files).
func setGUIDs(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".img"); ok {
			m[name] = harnessGUID(name)
		}
	}
	return m
}

// loadedWords is the harness's LOADED column for a run.
func loadedWords(b *avb.SlotBoot) string {
	var w []string
	for _, p := range b.Loaded {
		w = append(w, p.Partition+":"+strconv.FormatUint(p.Size, 10)+":"+p.Result.String())
	}
	if len(w) == 0 {
		return "-"
	}
	return strings.Join(w, ",")
}

// TestSlotBootIsLibavbs: on every set of slotCases, abCases and
// bootSetCases, what VerifySlot says avb_slot_verify gives the bootloader,
// locked and unlocked, is what libavb gave: its result, whether there is
// slot data, the loaded partitions (name, size, result) and the kernel
// command line, byte for byte.
func TestSlotBootIsLibavbs(t *testing.T) {
	rows := bootRows()
	if out := os.Getenv(recordSlotSets); out != "" {
		recordBootSets(t, out, rows)
		return
	}
	recorded, err := avbvectors.ReadTSV(slotBootFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]string{}
	for _, row := range recorded {
		if len(row) != 7 {
			t.Fatalf("%s: row %q", slotBootFile, row)
		}
		byName[row[0]+" "+row[2]] = row
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			dir, top, o := tc.build(t)
			o.PartUUIDs = setGUIDs(t, dir)
			o.HashtreeErrorMode = tc.mode
			r, err := avb.VerifySlot(context.Background(), top, &avb.SlotImages{Dir: dir}, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []*avb.SlotBoot{r.Locked, r.Unlocked} {
				state := "unlocked"
				if b.Locked {
					state = "locked"
				}
				row := byName[tc.name+" "+state]
				if row == nil {
					t.Fatalf("%s: no row for %s %s (run testdata/libavb/record_slots.sh)", slotBootFile, tc.name, state)
				}
				if row[1] != strconv.Itoa(int(tc.mode)) {
					t.Fatalf("recorded with mode %s, checked with %d", row[1], tc.mode)
				}
				data := "no"
				if b.Data {
					data = "yes"
				}
				got := []string{b.Result.String(), data, loadedWords(b), b.Cmdline}
				if strings.Join(got, "\n") != strings.Join(row[3:], "\n") {
					t.Errorf("%s: VerifySlot says\n  %s %s %s\n  %q\nlibavb gave\n  %s %s %s\n  %q\n(%s; %v)", state, got[0], got[1], got[2], got[3],
						row[3], row[4], row[5], row[6], verdicts(r), b.Err)
				}
			}
		})
	}
}

// recordBootSets writes each row's set into out/boot/N and
// out/boot/cases.tsv (name, key, set, requested, suffix, mode, harness
// arguments) for record_slots.sh.
func recordBootSets(t *testing.T, out string, rows []bootRow) {
	var lines []string
	for i, tc := range rows {
		dir, _, o := tc.build(t)
		set := filepath.Join("boot", strconv.Itoa(i))
		if err := os.CopyFS(filepath.Join(out, set), os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		key, suffix := tc.key, tc.suffix
		if key == "" {
			key = "-"
		}
		if suffix == "" {
			suffix = "-"
		}
		args := tc.args
		if o.PersistentValues != nil {
			args = append(args, abValues(o.PersistentValues))
		}
		lines = append(lines, strings.Join([]string{tc.name, key, set, tc.requested, suffix, strconv.Itoa(int(tc.mode)), strings.Join(args, " ")}, "\t"))
	}
	if err := os.WriteFile(filepath.Join(out, "boot", "cases.tsv"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSlotBootInVerdict: what fails avb_slot_verify's command line (a GUID
// the device lacks, its image there) or its loading of a requested partition (verification
// disabled) counts in the slot's verdict; not when the GUIDs are not
// given, nor for a partition only named by a descriptor.
func TestSlotBootInVerdict(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		set       abSetOptions
		damage    func(t *testing.T, s *abSet)
		requested []string
		guids     bool
		want      avb.SlotVerifyResult
	}{
		{"no-system-guid", abSetOptions{cmdline: true}, nil, nil, true, avb.SlotErrorOOM},
		{"guids-not-given", abSetOptions{cmdline: true}, nil, nil, false, avb.SlotOK},
		{"disabled-requested-missing", abSetOptions{topFlags: avb.FlagVerificationDisabled}, nil, []string{"boot", "vendor_boot"}, false, avb.SlotErrorIO},
		{"disabled-named-missing", abSetOptions{topFlags: avb.FlagVerificationDisabled}, nil, nil, false, avb.SlotOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := buildABSet(t, tc.set)
			if tc.damage != nil {
				tc.damage(t, s)
			}
			o := &avb.SlotOptions{ABSuffix: "_a", PersistentValues: s.values, Requested: tc.requested}
			if tc.guids {
				// The device has every partition but system_a.
				o.PartUUIDs = setGUIDs(t, s.dir)
				delete(o.PartUUIDs, "system_a")
			}
			r, err := avb.VerifySlot(ctx, filepath.Join(s.dir, "vbmeta_a.img"), &avb.SlotImages{Dir: s.dir}, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Result != tc.want {
				t.Errorf("slot %s, want %s (unlocked: %s, %v; %s)", r.Result, tc.want, r.Unlocked.Result, r.Unlocked.Err, verdicts(r))
			}
		})
	}
}
