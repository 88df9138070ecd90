package veritycheck

// A device's whole set of AVB images checked as its bootloader would
// (libavb's avb_slot_verify): --avb-slot VBMETA [DIR], or a vbmeta image
// given alone.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/verity"
)

const slotUsage = `
--avb-slot VBMETA [DIR] checks a device's whole set of AVB images as its
bootloader would (libavb's avb_slot_verify): VBMETA is the top-level
vbmeta (vbmeta.img, or boot.img on a device without a vbmeta partition),
and each partition's image is DIR/PARTITION.img (DIR: VBMETA's directory
by default; the extension is VBMETA's), or the file --partition
NAME=PATH names. Every vbmeta is verified: the top-level one signed (with
--avb-key, by that key), each chained one signed with the key of its
chain partition descriptor, with no flags and no further chain;
--rollback-index LOCATION=INDEX gives the device's stored rollback index
of a location (a vbmeta below it is refused; without it, indexes are
reported, not enforced). Every hash descriptor's digest is checked
against its image, and every hashtree descriptor's data and tree block
by block, as for one image (--repair rebuilds them from the FEC the
descriptor points at). Each vbmeta and each partition gets libavb's
verdict (OK, ERROR_VERIFICATION, ERROR_PUBLIC_KEY_REJECTED,
ERROR_ROLLBACK_INDEX, ERROR_INVALID_METADATA, ERROR_IO, ...), and the
report gives androidboot.vbmeta.digest. A partition whose image is not
there is ERROR_IO, as libavb's read of it would be; --allow-missing
reports it without failing. 'veritycheck vbmeta.img' alone is this check
of the set beside it.

--ab-suffix SUFFIX checks one slot of an A/B device (libavb's ab_suffix,
e.g. _a): the partitions are read as libavb reads them, vbmeta_a,
boot_a, a chained vbmeta_system_a (DIR/boot_a.img...; --partition names
them so too, boot_a=PATH), but for the chain, hash and hashtree
descriptors whose do-not-use-A/B flag is set (avbtool --do_not_use_ab,
--chain_partition_do_not_use_ab), read without the suffix. A persistent
digest without that flag is ERROR_INVALID_METADATA with a suffix.

A hash or hashtree descriptor without a digest (avbtool
--use_persistent_digest) is held to the device's persistent value
avb.persistent_digest.PARTITION, which --persistent-digest
PARTITION=HEX gives (PARTITION= for none). Once one is given, those are
all the device holds: a missing one is ERROR_VERIFICATION (a locked
device writes a hash partition's digest there on its first boot, and
the report says which), one of another size ERROR_INVALID_METADATA, a
hash partition whose digest differs ERROR_VERIFICATION, and a hashtree
partition's tree is checked against its value. Without
--persistent-digest the values are not known: the image's own digest
is shown, and the tree checked against its own root.

The report ends with what avb_slot_verify gives the bootloader, on a
locked device and on an unlocked one: its result, the partitions it
loads and the kernel command line it builds (the kernel command-line
descriptors for the top-level flags, $(ANDROID_VERITY_MODE), the
androidboot.vbmeta.* options, the GUIDs and persistent root digests
substituted). --request NAME (repeated, or NAME,NAME) names the
partitions the bootloader requests (libavb's requested_partitions, boot
and the like, without suffix): libavb loads and checks the hash
partitions among them only; the others are still checked here, a
missing image of one not held against the slot (without --request,
every hash partition is requested). --partuuid NAME=GUID gives a
partition's unique GUID as libavb asks for it (system_a, boot_a, vbmeta_a
with --ab-suffix): once one is given, they are all the device has, and a
$(ANDROID_*_PARTUUID) of another partition fails the slot as libavb
fails it (ERROR_OOM); without --partuuid the variables are left in.
--hashtree-error-mode MODE is the bootloader's (restart_and_invalidate,
the default, restart, eio, logging, managed_restart_and_eio, panic),
which sets dm-verity's option and androidboot.veritymode (a locked device
refuses logging; managed_restart_and_eio reads the persistent value
avb.managed_verity_mode, given as --persistent-digest
avb.managed_verity_mode=HEX).

Exit 0 when everything verifies; 1 for what a locked device refuses (a
signature, key, rollback index, digest or tree); 2 for what no device
boots (malformed metadata, a missing image).
`

// slotFlags are the whole-set check's flags.
type slotFlags struct {
	slot         bool
	partitions   []string
	rollback     []string
	allowMissing bool
	abSuffix     string
	persistent   []string
	request      []string
	partuuids    []string
	errorMode    string
}

func (s *slotFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&s.slot, "avb-slot", false, "check a device's set: VBMETA [DIR]")
	fs.StringArrayVar(&s.partitions, "partition", nil, "image `NAME=PATH` of a partition of the set")
	fs.StringArrayVar(&s.rollback, "rollback-index", nil, "a stored rollback index, `LOC=N`")
	fs.BoolVar(&s.allowMissing, "allow-missing", false, "report a missing image, not fail")
	fs.StringVar(&s.abSuffix, "ab-suffix", "", "the slot's `SUFFIX` (_a): NAME_a is read")
	fs.StringArrayVar(&s.persistent, "persistent-digest", nil, "a persistent digest `NAME=HEX`")
	fs.StringArrayVar(&s.request, "request", nil, "a partition the bootloader requests, `NAME`")
	fs.StringArrayVar(&s.partuuids, "partuuid", nil, "the unique GUID of a partition, `NAME=GUID`")
	fs.StringVar(&s.errorMode, "hashtree-error-mode", "", "the bootloader's `MODE` on corruption")
}

// slotFlagNames are the flags only the whole-set check takes: any of
// them asks for it.
var slotFlagNames = []string{"avb-slot", "partition", "rollback-index", "allow-missing", "ab-suffix", "persistent-digest", "request", "partuuid", "hashtree-error-mode"}

// wantsSlot says whether the command line asks for the whole-set check:
// one of its flags, or one argument that is a vbmeta image (the AVB0
// magic at its start, no footer) and no root hash.
func wantsSlot(o *options, args []string) bool {
	for _, name := range slotFlagNames {
		if o.tree.Changed(name) {
			return true
		}
	}
	if len(args) != 1 || o.avb || o.tree.Changed("root-hash") || o.tree.Changed("root-hash-file") || o.rootPositional || o.sign.wanted() {
		return false
	}
	fi, err := os.Stat(args[0])
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	img, err := avb.ReadImage(args[0])
	return err == nil && img.Footer == nil
}

// slotArgs checks the whole-set check's command line.
func slotArgs(ctx context.Context, o *options, args []string) (string, *avb.SlotImages, *avb.SlotOptions, error) {
	for _, name := range append([]string{"avb", "kernel"}, avbFlagConflicts...) {
		if o.tree.Changed(name) {
			return "", nil, nil, cli.Errorf("the whole-set check takes every partition's parameters from the vbmetas; leave --"+name+" out",
				"--%s does not go with --avb-slot", name)
		}
	}
	if len(args) < 1 || len(args) > 2 {
		return "", nil, nil, cli.Errorf("usage: veritycheck --avb-slot [--avb-key KEY] [--ab-suffix SUFFIX] [--partition NAME=PATH]... VBMETA [DIR]",
			"--avb-slot takes VBMETA and optionally DIR; got %d arguments", len(args))
	}
	if o.jobs < 1 {
		return "", nil, nil, cli.Errorf("e.g. --jobs=1", "--jobs must be at least 1")
	}
	top := args[0]
	images := &avb.SlotImages{Dir: filepath.Dir(top), Ext: filepath.Ext(top), Files: map[string]string{}}
	if len(args) == 2 {
		fi, err := os.Stat(args[1])
		if err != nil || !fi.IsDir() {
			return "", nil, nil, cli.Errorf("DIR holds the images as PARTITION.img; name single files with --partition NAME=PATH",
				"%s is not a directory", args[1])
		}
		images.Dir = args[1]
	}
	if err := partitionFiles(images, o.slot.partitions); err != nil {
		return "", nil, nil, err
	}
	so := &avb.SlotOptions{AllowMissing: o.slot.allowMissing, Jobs: o.jobs, MaxProblems: o.maxProblems, Repair: o.repair}
	if o.maxProblems == 0 {
		so.MaxProblems = 1 // 0 would be the library's default; none is listed
	}
	var err error
	if so.StoredRollbackIndexes, err = rollbackIndexes(o.slot.rollback); err != nil {
		return "", nil, nil, err
	}
	if sfx := o.slot.abSuffix; strings.ContainsAny(sfx, "/\x00") || o.tree.Changed("ab-suffix") && sfx == "" {
		return "", nil, nil, cli.Errorf("e.g. --ab-suffix=_a (leave it out on a device without A/B slots)", "--ab-suffix %q: a suffix is appended to partition names, which are file names here", sfx)
	}
	so.ABSuffix = o.slot.abSuffix
	if so.PersistentValues, err = persistentValues(o.slot.persistent); err != nil {
		return "", nil, nil, err
	}
	if !o.tree.Changed("hashtree-error-mode") {
		o.slot.errorMode = avb.HashtreeRestartAndInvalidate.String()
	}
	if so.HashtreeErrorMode, err = avb.ParseHashtreeErrorMode(o.slot.errorMode); err != nil {
		return "", nil, nil, cli.Errorf("e.g. --hashtree-error-mode=restart", "--hashtree-error-mode %q is not one of libavb's modes: %s", o.slot.errorMode,
			"restart_and_invalidate, restart, eio, logging, managed_restart_and_eio, panic")
	}
	if so.Requested, err = requestedPartitions(o.slot.request); err != nil {
		return "", nil, nil, err
	}
	if so.PartUUIDs, err = partUUIDs(o.slot.partuuids); err != nil {
		return "", nil, nil, err
	}
	if o.avbKey != "" {
		key, err := readAVBKey(ctx, o.avbKey)
		if err != nil {
			return "", nil, nil, err
		}
		so.Key = key
	}
	return top, images, so, nil
}

// partitionFiles reads --partition NAME=PATH options into images.Files.
func partitionFiles(images *avb.SlotImages, specs []string) error {
	for _, spec := range specs {
		name, path, ok := strings.Cut(spec, "=")
		if !ok || name == "" || path == "" {
			return cli.Errorf("e.g. --partition system=out/system.img", "--partition %q is not NAME=PATH", spec)
		}
		if _, dup := images.Files[name]; dup {
			return cli.Errorf("keep one of them", "--partition names partition %q twice", name)
		}
		images.Files[name] = path
	}
	return nil
}

// requestedPartitions reads --request NAME[,NAME...] options (nil: none
// given, every hash partition requested).
func requestedPartitions(specs []string) ([]string, error) {
	if specs == nil {
		return nil, nil
	}
	names := []string{}
	for _, spec := range specs {
		for _, name := range strings.Split(spec, ",") {
			if name == "" {
				return nil, cli.Errorf("e.g. --request boot --request vendor_boot", "--request %q names an empty partition", spec)
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// partUUIDs reads --partuuid NAME=GUID options (nil: none given).
func partUUIDs(specs []string) (map[string]string, error) {
	var guids map[string]string
	for _, spec := range specs {
		name, guid, ok := strings.Cut(spec, "=")
		if !ok || name == "" || guid == "" || strings.ContainsRune(guid, 0) {
			return nil, cli.Errorf("e.g. --partuuid system_a=1f5b1c0e-...", "--partuuid %q is not NAME=GUID", spec)
		}
		if len(guid) > 36 {
			return nil, cli.Errorf("a GUID is 36 characters", "--partuuid %q: libavb takes at most 36 characters", spec)
		}
		if guids == nil {
			guids = map[string]string{}
		}
		if _, dup := guids[name]; dup {
			return nil, cli.Errorf("keep one of them", "--partuuid gives partition %q twice", name)
		}
		guids[name] = guid
	}
	return guids, nil
}

// rollbackIndexes reads --rollback-index LOCATION=INDEX options: the
// device's stored indexes (nil: none enforced).
func rollbackIndexes(specs []string) (map[uint32]uint64, error) {
	var stored map[uint32]uint64
	for _, spec := range specs {
		l, i, ok := strings.Cut(spec, "=")
		loc, err1 := strconv.ParseUint(l, 10, 32)
		index, err2 := strconv.ParseUint(i, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, cli.Errorf("e.g. --rollback-index 0=9 (location 0, the top-level vbmeta's by default)", "--rollback-index %q is not LOCATION=INDEX", spec)
		}
		if loc >= avb.MaxRollbackIndexLocations {
			return nil, cli.Errorf("", "--rollback-index %q: libavb has locations 0 to %d", spec, avb.MaxRollbackIndexLocations-1)
		}
		if stored == nil {
			stored = map[uint32]uint64{}
		}
		if _, dup := stored[uint32(loc)]; dup {
			return nil, cli.Errorf("keep one of them", "--rollback-index gives location %d twice", loc)
		}
		stored[uint32(loc)] = index
	}
	return stored, nil
}

// persistentValues reads --persistent-digest PARTITION=HEX options: the
// device's persistent values by their names (nil: none given).
func persistentValues(specs []string) (map[string][]byte, error) {
	var values map[string][]byte
	for _, spec := range specs {
		name, h, ok := strings.Cut(spec, "=")
		value, err := hex.DecodeString(h)
		if !ok || name == "" || err != nil {
			return nil, cli.Errorf("e.g. --persistent-digest factory=43877ac0... (the hex digest; factory= when the device holds none)",
				"--persistent-digest %q is not PARTITION=HEX", spec)
		}
		if values == nil {
			values = map[string][]byte{}
		}
		// The value's own name (avb.persistent_digest.NAME) is taken too,
		// and the managed hashtree error mode's.
		key := avb.PersistentDigestPrefix + strings.TrimPrefix(name, avb.PersistentDigestPrefix)
		if name == avb.ManagedVerityModeValue {
			key = name
		}
		if _, dup := values[key]; dup {
			return nil, cli.Errorf("keep one of them", "--persistent-digest gives partition %q twice", name)
		}
		values[key] = value
	}
	return values, nil
}

// slotJSON is the "avb_slot" part of the JSON report.
type slotJSON struct {
	Top    string `json:"top"`
	Result string `json:"result"` // libavb's AvbSlotVerifyResult name
	// ABSuffix is the slot's suffix (--ab-suffix).
	ABSuffix string `json:"ab_suffix,omitempty"`
	// VBMetaDigest is androidboot.vbmeta.digest ("" when the top-level
	// vbmeta could not be loaded), of VBMetaHashAlg; VBMetaSize is
	// androidboot.vbmeta.size.
	VBMetaDigest  string              `json:"vbmeta_digest"`
	VBMetaHashAlg string              `json:"vbmeta_hash_alg"`
	VBMetaSize    uint64              `json:"vbmeta_size"`
	VBMetas       []slotVBMetaJSON    `json:"vbmetas"`
	Partitions    []slotPartitionJSON `json:"partitions"`
	// Requested are --request's partitions (null: every hash partition);
	// HashtreeErrorMode is --hashtree-error-mode's.
	Requested         []string `json:"requested"`
	HashtreeErrorMode string   `json:"hashtree_error_mode"`
	// Locked and Unlocked are what avb_slot_verify gives the bootloader.
	Locked   *slotBootJSON `json:"locked"`
	Unlocked *slotBootJSON `json:"unlocked"`
}

// slotBootJSON is what avb_slot_verify returns for a device state.
type slotBootJSON struct {
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
	// Data: it returns slot data (the fields below).
	Data    bool             `json:"data"`
	Loaded  []slotLoadedJSON `json:"loaded_partitions"`
	Cmdline string           `json:"cmdline"`
	// HashtreeErrorMode is the one the command line says (managed
	// resolved); Unsubstituted the variables left in it.
	HashtreeErrorMode string   `json:"resolved_hashtree_error_mode,omitempty"`
	Unsubstituted     []string `json:"unsubstituted,omitempty"`
}

type slotLoadedJSON struct {
	Partition string `json:"partition"`
	Size      uint64 `json:"size"`
	Result    string `json:"verify_result"`
}

func newSlotBootJSON(b *avb.SlotBoot) *slotBootJSON {
	j := &slotBootJSON{Result: b.Result.String(), Data: b.Data, Loaded: []slotLoadedJSON{}, Cmdline: b.Cmdline, Unsubstituted: b.Unsubstituted}
	if b.Err != nil {
		j.Error = b.Err.Error()
	}
	if b.Data {
		j.HashtreeErrorMode = b.HashtreeErrorMode.String()
	}
	for _, l := range b.Loaded {
		j.Loaded = append(j.Loaded, slotLoadedJSON{Partition: l.Partition, Size: l.Size, Result: l.Result.String()})
	}
	return j
}

type slotVBMetaJSON struct {
	Partition          string `json:"partition"`
	Path               string `json:"path"`
	Chained            bool   `json:"chained"`
	Result             string `json:"result"`
	Error              string `json:"error,omitempty"`
	VBMetaVerifyResult string `json:"vbmeta_verify_result,omitempty"`
	Algorithm          string `json:"algorithm,omitempty"`
	PublicKeySHA1      string `json:"public_key_sha1,omitempty"`
	// ExpectedKeySHA1: a chained vbmeta's chain descriptor's key.
	// KeyChecked: the signing key was held to a key (that one, or
	// --avb-key), not only taken from the vbmeta.
	ExpectedKeySHA1       string   `json:"expected_public_key_sha1,omitempty"`
	KeyChecked            bool     `json:"key_checked"`
	RollbackIndex         uint64   `json:"rollback_index"`
	RollbackIndexLocation uint32   `json:"rollback_index_location"`
	StoredRollbackIndex   *uint64  `json:"stored_rollback_index,omitempty"`
	Flags                 uint32   `json:"flags"`
	Notes                 []string `json:"notes,omitempty"`
	// NotLoadedByLibavb: libavb stops before its chain descriptor (see
	// the notes); it is not in the vbmeta digest.
	NotLoadedByLibavb bool `json:"not_loaded_by_libavb,omitempty"`
}

type slotPartitionJSON struct {
	Partition string `json:"partition"`
	Path      string `json:"path"`
	VBMeta    string `json:"vbmeta"` // the vbmeta holding the descriptor
	Index     int    `json:"index"`  // among its descriptors, from 1
	Type      string `json:"type"`   // hash or hashtree
	Result    string `json:"result"`
	Error     string `json:"error,omitempty"`
	Checked   bool   `json:"checked"`
	Missing   bool   `json:"missing"`
	Note      string `json:"note,omitempty"`
	// NotRequested: a hash partition not in --request, which libavb
	// neither loads nor checks.
	NotRequested bool `json:"not_requested,omitempty"`
	// PersistentValue is the device's value a descriptor without a
	// digest is held to (with --persistent-digest); PersistentInit the
	// digest a locked device writes there when it holds none.
	PersistentValue string `json:"persistent_value,omitempty"`
	PersistentInit  string `json:"persistent_initial_digest,omitempty"`
	// For a hashtree partition whose tree was checked.
	CorruptDataBlocks   *uint64   `json:"corrupt_data_blocks,omitempty"`
	CorruptHashBlocks   *uint64   `json:"corrupt_hash_blocks,omitempty"`
	UncheckedDataBlocks uint64    `json:"unchecked_data_blocks,omitempty"`
	UncheckedHashBlocks uint64    `json:"unchecked_hash_blocks,omitempty"`
	Repairable          bool      `json:"repairable,omitempty"`
	Repaired            bool      `json:"repaired,omitempty"`
	Problems            []problem `json:"problems,omitempty"`
	ProblemsTruncated   bool      `json:"problems_truncated,omitempty"`
	// FEC is the parity the descriptor points at and what it can (or
	// did) rebuild, as one image's report gives it.
	FEC *repairJSON `json:"fec,omitempty"`
}

// checkSlot is the whole-set check.
func checkSlot(ctx context.Context, o *options, args []string, stdout, stderr io.Writer, showProgress bool) (int, error) {
	top, images, so, err := slotArgs(ctx, o, args)
	if err != nil {
		return cli.ExitError, err
	}
	so.Prepare = func(_ *avb.SlotPartition, vo *verity.VerifyOptions) func() {
		return reportTo(vo, stderr, showProgress, nil)
	}
	problems := map[*avb.SlotPartition][]problem{}
	truncated := map[*avb.SlotPartition]bool{}
	fecs := map[*avb.SlotPartition]*repairJSON{}
	so.OnTree = func(p *avb.SlotPartition, res *verity.VerifyResult) error {
		if !o.json {
			// The problems and the repair, as for one image.
			return report(o, res, nil, p.Path, p.Path, stdout)
		}
		ps := []problem{}
		for pr, err := range res.Problems() {
			if err != nil {
				return err
			}
			if o.maxProblems >= 0 && len(ps) >= o.maxProblems {
				truncated[p] = true
				break
			}
			ps = append(ps, toProblem(pr))
		}
		problems[p] = ps
		if res.FEC != nil {
			fecs[p] = newRepairJSON(res.FEC, res.Repair, res.Repaired, o.maxProblems)
		}
		return nil
	}
	if !o.json {
		// Each verdict as it is made, the problems of a tree before it.
		so.OnVBMeta = func(v *avb.SlotVBMeta) { printSlotVBMeta(stdout, o, v) }
		so.OnPartition = func(p *avb.SlotPartition) { printSlotPartition(stdout, o, p) }
	}
	r, err := avb.VerifySlot(ctx, top, images, so)
	if err != nil {
		return cli.ExitError, err
	}
	code, verr := slotVerdict(o, r)
	if o.json {
		sj := newSlotJSON(top, r, problems, truncated)
		sj.Requested, sj.HashtreeErrorMode = so.Requested, so.HashtreeErrorMode.String()
		for i, p := range r.Partitions {
			sj.Partitions[i].FEC = fecs[p]
		}
		out := struct {
			Verified bool      `json:"verified"`
			Slot     *slotJSON `json:"avb_slot"`
			Error    string    `json:"error,omitempty"`
			Hint     string    `json:"hint,omitempty"`
		}{Verified: code == cli.ExitOK, Slot: sj}
		if verr != nil {
			out.Error = verr.Error()
			var ce *cli.Error
			if errors.As(verr, &ce) {
				out.Hint = ce.Hint
			}
		}
		if err := cli.WriteJSON(stdout, out); err != nil {
			return cli.ExitError, err
		}
		o.jsonWritten = true
		return code, verr
	}
	printSlotEnd(stdout, r)
	return code, verr
}

// slotVerdict is the exit code and the error saying why it is not 0.
func slotVerdict(o *options, r *avb.SlotResult) (int, error) {
	if r.Result == avb.SlotOK {
		return cli.ExitOK, nil
	}
	var why []string
	missing, repairable, other := 0, 0, 0
	for _, v := range r.VBMetas {
		if v.Result != avb.SlotOK {
			other++
			why = append(why, fmt.Sprintf("vbmeta %q: %s", v.Partition, v.Result))
		}
	}
	for _, p := range r.Partitions {
		switch {
		case p.Result == avb.SlotOK:
			continue
		case p.Missing && o.slot.allowMissing:
			continue
		case p.Missing:
			missing++
		case p.Repairable && !p.Repaired:
			repairable++
		default:
			other++
		}
		why = append(why, fmt.Sprintf("partition %q: %s", p.Partition, p.Result))
	}
	const most = 8
	if len(why) > most {
		why = append(why[:most], fmt.Sprintf("and %d more", len(why)-most))
	}
	var hints []string
	if missing > 0 {
		h := "name an image with --partition NAME=PATH, or give the directory that holds them; --allow-missing checks only the images there are"
		if o.slot.abSuffix == "" {
			h += "; one slot's images of an A/B device (boot_a.img) need --ab-suffix=_a"
		}
		hints = append(hints, h)
	}
	if repairable > 0 && other == 0 && missing == 0 {
		hints = append(hints, "run again with --repair to rebuild the corrupted blocks from the FEC parity")
	}
	code := cli.ExitCorrupt
	if r.Result.Fatal() {
		code = cli.ExitError
	}
	return code, cli.Errorf(strings.Join(hints, "\n"), "the slot does not verify, libavb's verdict is %s: %s", r.Result, strings.Join(why, "; "))
}

func newSlotJSON(top string, r *avb.SlotResult, problems map[*avb.SlotPartition][]problem, truncated map[*avb.SlotPartition]bool) *slotJSON {
	sj := &slotJSON{Top: top, Result: r.Result.String(), ABSuffix: r.ABSuffix, VBMetaDigest: hex.EncodeToString(r.VBMetaDigest), VBMetaHashAlg: r.VBMetaHashAlg,
		VBMetaSize: r.VBMetaSize, VBMetas: []slotVBMetaJSON{}, Partitions: []slotPartitionJSON{}, Locked: newSlotBootJSON(r.Locked), Unlocked: newSlotBootJSON(r.Unlocked)}
	for _, v := range r.VBMetas {
		vj := slotVBMetaJSON{Partition: clip(v.Partition), Path: v.Path, Chained: v.Chained, Result: v.Result.String(), KeyChecked: v.KeyChecked,
			RollbackIndexLocation: v.RollbackIndexLocation, Notes: v.Notes, NotLoadedByLibavb: v.NotLoadedByLibavb}
		if v.Err != nil {
			vj.Error = v.Err.Error()
		}
		if v.Chained {
			vj.ExpectedKeySHA1 = sha1Hex(v.ExpectedKey)
		}
		if v.RollbackChecked {
			stored := v.StoredRollbackIndex
			vj.StoredRollbackIndex = &stored
		}
		if img := v.Image; img != nil {
			vm := img.VBMeta
			vj.VBMetaVerifyResult, vj.Algorithm = v.VerifyResult.String(), vm.Algorithm.Name
			vj.RollbackIndex, vj.Flags = vm.Header.RollbackIndex, vm.Header.Flags
			if len(vm.PublicKey) > 0 {
				vj.PublicKeySHA1 = sha1Hex(vm.PublicKey)
			}
		}
		sj.VBMetas = append(sj.VBMetas, vj)
	}
	for _, p := range r.Partitions {
		pj := slotPartitionJSON{Partition: clip(p.Partition), Path: p.Path, VBMeta: clip(p.VBMeta), Index: p.Index, Type: descriptorType(p.Descriptor),
			Result: p.Result.String(), Checked: p.Checked, Missing: p.Missing, Note: p.Note, NotRequested: p.NotRequested, Repairable: p.Repairable, Repaired: p.Repaired,
			Problems: problems[p], ProblemsTruncated: truncated[p], PersistentValue: p.PersistentName, PersistentInit: hex.EncodeToString(p.PersistentInit)}
		if p.Err != nil {
			pj.Error = p.Err.Error()
		}
		if t := p.Tree; t != nil {
			d, h := t.CorruptDataBlocks, t.CorruptHashBlocks
			pj.CorruptDataBlocks, pj.CorruptHashBlocks = &d, &h
			pj.UncheckedDataBlocks, pj.UncheckedHashBlocks = t.UncheckedDataBlocks, t.UncheckedHashBlocks
		}
		sj.Partitions = append(sj.Partitions, pj)
	}
	return sj
}

// printSlotVBMeta prints a vbmeta's line.
func printSlotVBMeta(w io.Writer, o *options, v *avb.SlotVBMeta) {
	{
		fmt.Fprintf(w, "avb-slot: vbmeta %q (%s)", clip(v.Partition), v.Path)
		if v.Chained {
			fmt.Fprintf(w, ", chained")
		}
		if img := v.Image; img != nil {
			vm := img.VBMeta
			key := "no public key"
			if len(vm.PublicKey) > 0 {
				key = "public key (sha1) " + sha1Hex(vm.PublicKey)
			}
			fmt.Fprintf(w, ": %s, %s, rollback index %d (location %d", vm.Algorithm.Name, key, vm.Header.RollbackIndex, v.RollbackIndexLocation)
			if v.Chained {
				fmt.Fprintf(w, ", the chain descriptor's")
			}
			if v.RollbackChecked {
				fmt.Fprintf(w, ", %d stored", v.StoredRollbackIndex)
			}
			fmt.Fprintf(w, "), flags %d", vm.Header.Flags)
		}
		fmt.Fprintf(w, ": %s", v.Result)
		switch {
		case v.Err != nil:
			fmt.Fprintf(w, ": %s", strings.TrimPrefix(v.Err.Error(), v.Path+": "))
		case v.Chained:
			fmt.Fprintf(w, ", signed with the chain partition descriptor's key")
		case v.KeyChecked:
			fmt.Fprintf(w, ", signed with the key of %s", o.avbKey)
		default:
			fmt.Fprintf(w, ", verified with the embedded key (--avb-key checks that it is the key the device trusts)")
		}
		fmt.Fprintln(w)
		for _, n := range v.Notes {
			fmt.Fprintf(w, "avb-slot: note: vbmeta %q: %s\n", clip(v.Partition), n)
		}
	}
}

// printSlotPartition prints a partition's line.
func printSlotPartition(w io.Writer, o *options, p *avb.SlotPartition) {
	{
		path := p.Path
		if path == "" {
			path = "no image"
		}
		fmt.Fprintf(w, "avb-slot: partition %q (%s): %s descriptor %d of vbmeta %q: %s", clip(p.Partition), path, descriptorType(p.Descriptor), p.Index, clip(p.VBMeta), p.Result)
		switch {
		case p.Missing && o.slot.allowMissing:
			fmt.Fprintf(w, " (not checked, --allow-missing): %v", p.Err)
		case p.Err != nil:
			fmt.Fprintf(w, ": %s", strings.TrimPrefix(p.Err.Error(), p.Path+": "))
		default:
			fmt.Fprintf(w, ": %s", slotMatched(p))
		}
		if p.Note != "" {
			fmt.Fprintf(w, " (%s)", p.Note)
		}
		fmt.Fprintln(w)
	}
}

// printSlotEnd prints the vbmeta digest and, when the slot verifies, the
// verdict.
func printSlotEnd(w io.Writer, r *avb.SlotResult) {
	if r.VBMetaDigest != nil {
		fmt.Fprintf(w, "avb-slot: vbmeta digest: %s %x of %d bytes (androidboot.vbmeta.digest and .size)\n", r.VBMetaHashAlg, r.VBMetaDigest, r.VBMetaSize)
	}
	for _, b := range []*avb.SlotBoot{r.Locked, r.Unlocked} {
		printSlotBoot(w, b)
	}
	if r.Result != avb.SlotOK && r.Locked.Result == avb.SlotOK {
		fmt.Fprintf(w, "avb-slot: note: libavb boots this slot on a locked device, though this check finds it %s (libavb checks less: see the lines above)\n", r.Result)
	}
	if r.Result == avb.SlotOK {
		checked, trees := 0, 0
		for _, p := range r.Partitions {
			if p.Checked {
				checked++
				if p.Tree != nil {
					trees++
				}
			}
		}
		how := ""
		if trees > 0 {
			how = ", the trees block by block"
		}
		fmt.Fprintf(w, "verified: %s and %s, libavb's verdict OK%s\n", plural(len(r.VBMetas), "vbmeta"), plural(checked, "partition"), how)
	}
}

// slotMatched says what matched for a partition whose check holds.
func slotMatched(p *avb.SlotPartition) string {
	switch d := p.Descriptor.(type) {
	case *avb.HashDescriptor:
		return fmt.Sprintf("the %s digest of its %d bytes matches", d.HashAlgorithm, d.ImageSize)
	case *avb.HashtreeDescriptor:
		root := "the root digest " + clipHex(d.RootDigest)
		switch {
		case len(d.RootDigest) > 0:
		case p.PersistentName != "":
			root = "the root digest the device holds"
		default:
			root = "their own root digest"
		}
		s := fmt.Sprintf("%d data blocks of %d bytes and the tree match %s", d.ImageSize/uint64(d.DataBlockSize), d.DataBlockSize, root)
		if p.Repaired {
			s += ", once repaired"
		}
		return s
	}
	return "matches"
}

// printSlotBoot prints what avb_slot_verify returns for a device state:
// its result, the partitions it loads, its kernel command line.
func printSlotBoot(w io.Writer, b *avb.SlotBoot) {
	state, device := "unlocked", "an unlocked"
	if b.Locked {
		state, device = "locked", "a locked"
	}
	fmt.Fprintf(w, "avb-slot: avb_slot_verify on %s device returns %s", device, b.Result)
	if !b.Data {
		if b.Err != nil {
			fmt.Fprintf(w, " (%v)", b.Err)
		}
		fmt.Fprintf(w, ", no slot data: the bootloader does not boot the slot\n")
		return
	}
	var loaded []string
	for _, l := range b.Loaded {
		s := fmt.Sprintf("%s (%d bytes", clip(l.Partition), l.Size)
		if l.Result != avb.SlotOK {
			s += ", " + l.Result.String()
		}
		loaded = append(loaded, s+")")
	}
	if len(loaded) == 0 {
		loaded = []string{"no partition"}
	}
	fmt.Fprintf(w, ", loads %s, hashtree error mode %s\n", strings.Join(loaded, ", "), b.HashtreeErrorMode)
	line := b.Cmdline
	if line == "" || strings.IndexFunc(line, unicode.IsControl) >= 0 {
		line = strconv.Quote(line) // an empty one, or one a terminal would garble
	}
	fmt.Fprintf(w, "avb-slot: kernel command line, %s: %s\n", state, line)
	if len(b.Unsubstituted) > 0 {
		fmt.Fprintf(w, "avb-slot: note: the kernel command line keeps %s: the device's values are not given (--partuuid, --persistent-digest)\n", strings.Join(b.Unsubstituted, ", "))
	}
}
