package avb_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors"
)

// slotSetsFile holds libavb's own avb_slot_verify on the sets of
// slotCases (testdata/libavb/record_slots.sh: slot_harness.c is a
// bootloader whose partitions are the set's files, requesting boot).
const slotSetsFile = "testdata/libavb/slot_sets.tsv"

// recordSlotSets, when set, is a directory TestVerifySlotIsLibavbs writes
// the sets into (DIR/CASE/*.img, and DIR/cases.tsv) for record_slots.sh.
const recordSlotSets = "VERITYTREE_RECORD_SLOT_SETS"

// libavbView is the slot's verdict on what libavb reads: the vbmetas and
// the hash descriptors of the requested partition (boot). The hashtrees,
// which libavb leaves to the kernel, are what VerifySlot adds.
func libavbView(r *avb.SlotResult) avb.SlotVerifyResult {
	worst := avb.SlotOK
	more := func(x avb.SlotVerifyResult) {
		if x != avb.SlotOK && (worst == avb.SlotOK || x.Fatal() && !worst.Fatal()) {
			worst = x
		}
	}
	for _, v := range r.VBMetas {
		more(v.Result)
	}
	for _, p := range r.Partitions {
		if _, ok := p.Descriptor.(*avb.HashDescriptor); ok && p.Partition == "boot" {
			more(p.Result)
		}
	}
	return worst
}

// TestVerifySlotIsLibavbs: on every set of slotCases, VerifySlot's verdict
// on what libavb reads is libavb's with the device unlocked (and locked,
// each case having one fault, but for a read past a partition's end), its androidboot.vbmeta.digest is libavb's, and where the
// slot's verdict is worse, a hashtree partition (which libavb does not
// read) says why.
func TestVerifySlotIsLibavbs(t *testing.T) {
	ctx := context.Background()
	if out := os.Getenv(recordSlotSets); out != "" {
		var lines []string
		for _, tc := range slotCases {
			dir, _ := devSet(t)
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			if err := os.CopyFS(filepath.Join(out, tc.name), os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			key := "-"
			if tc.opts.key != "" {
				key = tc.opts.key
			}
			lines = append(lines, tc.name+"\t"+key+"\t"+strings.Join(tc.opts.rollback, " "))
		}
		if err := os.WriteFile(filepath.Join(out, "cases.tsv"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	rows, err := avbvectors.ReadTSV(slotSetsFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]string{}
	for _, row := range rows {
		if len(row) != 6 {
			t.Fatalf("%s: row %q", slotSetsFile, row)
		}
		byName[row[0]] = row
	}
	for _, tc := range slotCases {
		t.Run(tc.name, func(t *testing.T) {
			row := byName[tc.name]
			if row == nil {
				t.Fatalf("%s: no row for %s (run testdata/libavb/record_slots.sh)", slotSetsFile, tc.name)
			}
			locked, unlocked, digest := row[3], row[4], row[5]
			dir, _ := devSet(t)
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			r, err := avb.VerifySlot(ctx, filepath.Join(dir, "vbmeta.img"), &avb.SlotImages{Dir: dir}, tc.opts.options(t))
			if err != nil {
				t.Fatal(err)
			}
			view := libavbView(r).String()
			if r.VBMetas[0].Image != nil && r.VBMetas[0].Image.VBMeta.Header.Flags&avb.FlagVerificationDisabled != 0 {
				// libavb checks nothing more, and loads no chained vbmeta;
				// VerifySlot checks everything (and says so).
				if got := hex.EncodeToString(r.VBMetaDigest); unlocked != "OK" || len(r.VBMetas[0].Notes) == 0 || got != digest {
					t.Errorf("verification disabled: libavb %s, notes %v, digest %s, libavb's %s", unlocked, r.VBMetas[0].Notes, got, digest)
				}
				return
			}
			// VerifySlot decides as an unlocked device does, so as to find
			// every problem; a locked one stops at the first, and fails a
			// read past a partition's end (ERROR_IO) where an unlocked one
			// hashes what there is.
			if view != unlocked || locked != unlocked && !(locked == "ERROR_IO" && tc.name == "boot-truncated") {
				t.Errorf("libavb's part of the verdict %s; libavb: %s locked, %s unlocked (%s)", view, locked, unlocked, verdicts(r))
			}
			if got := hex.EncodeToString(r.VBMetaDigest); digest != "-" && got != digest {
				t.Errorf("androidboot.vbmeta.digest %s, libavb's %s", got, digest)
			}
			if r.Result != libavbView(r) {
				explained := false
				for _, p := range r.Partitions {
					if _, ok := p.Descriptor.(*avb.HashtreeDescriptor); ok && p.Result == r.Result {
						explained = true
					}
				}
				if !explained {
					t.Errorf("slot %s, libavb's part %s, and no hashtree partition says why: %s", r.Result, libavbView(r), verdicts(r))
				}
			}
		})
	}
}
