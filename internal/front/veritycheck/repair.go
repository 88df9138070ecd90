package veritycheck

// What error correction can do, or did, in the report: text and JSON.

import (
	"fmt"
	"io"
	"strings"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// maxRepairList caps the repairable blocks the JSON report lists (the
// library names at most as many unrecoverable ones).
const maxRepairList = 1000

// fecFlagsWithoutDevice refuses the FEC flags when --fec-device is absent.
func fecFlagsWithoutDevice(o *options) error {
	if o.fecDevice != "" {
		return nil
	}
	for _, name := range []string{"fec-roots", "fec-offset", "repair"} {
		if o.tree.Changed(name) {
			hint := "e.g. --fec-device=HASH.fec, the file given to veritygen or veritysetup format as --fec-device"
			if name == "repair" {
				hint = "--repair rebuilds blocks from error-correction parity: give it with --fec-device (and --fec-roots, --fec-offset as when it was made)"
			}
			return cli.Errorf(hint, "--%s needs --fec-device", name)
		}
	}
	return nil
}

// count says what a whole repair fixes, e.g. "3 blocks" or "1 block and 2
// superblock bytes".
func repairCount(rp *verity.RepairPlan) string {
	var parts []string
	if rp.RebuiltCount() > 0 {
		parts = append(parts, plural(rp.RebuiltCount(), "block"))
	}
	if rp.SuperblockBytes() > 0 {
		parts = append(parts, plural(int(rp.SuperblockBytes()), "superblock byte"))
	}
	return strings.Join(parts, " and ")
}

// files names the files a whole repair writes to.
func repairFiles(rp *verity.RepairPlan, dataPath, hashPath string) string {
	inData, inHash := false, rp.SuperblockBytes() > 0
	rp.EachRebuilt(func(r verity.BlockRef) bool {
		inData, inHash = inData || !r.InHash, inHash || r.InHash
		return !inData || !inHash
	})
	switch {
	case dataPath == hashPath || !inHash:
		return dataPath
	case !inData:
		return hashPath
	}
	return dataPath + " and " + hashPath
}

// describe says how a whole repair fixes things.
func describeRepair(rp *verity.RepairPlan, fecPath string) string {
	var parts []string
	switch rp.RebuiltCount() {
	case 0:
	case 1:
		parts = append(parts, "1 block rebuilt from the FEC parity in "+fecPath+" matches the tree")
	default:
		parts = append(parts, fmt.Sprintf("%d blocks rebuilt from the FEC parity in %s match the tree", rp.RebuiltCount(), fecPath))
	}
	if rp.SuperblockBytes() > 0 {
		parts = append(parts, plural(int(rp.SuperblockBytes()), "superblock byte")+" restored from the superblock's own fields")
	}
	return strings.Join(parts, ", and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// describeRef names a block as the problem lines do.
func describeRef(r verity.BlockRef, dataPath, hashPath string) string {
	switch r.Level {
	case merkle.DataLevel:
		return fmt.Sprintf("data block %d (byte %d of %s)", r.Index, r.Offset, dataPath)
	case merkle.PastTreeLevel:
		return fmt.Sprintf("block %d of %s, past the tree (byte %d)", r.Index, hashPath, r.Offset)
	}
	return fmt.Sprintf("hash block %d of level %d (byte %d of %s)", r.Index, r.Level, r.Offset, hashPath)
}

// describeLost names the lost blocks briefly: "data blocks 0, 2 and hash
// block 5 of level 0", at most ten of them.
func describeLost(rp *verity.RepairPlan) string {
	ls := rp.Lost()
	const most = 10
	var parts []string
	var data []string
	for i, l := range ls {
		if i == most {
			break
		}
		switch l.Level {
		case merkle.DataLevel:
			data = append(data, fmt.Sprint(l.Index))
		case merkle.PastTreeLevel:
			parts = append(parts, fmt.Sprintf("hash device block %d", l.Index))
		default:
			parts = append(parts, fmt.Sprintf("hash block %d of level %d", l.Index, l.Level))
		}
	}
	if len(data) == 1 {
		parts = append([]string{"data block " + data[0]}, parts...)
	} else if len(data) > 1 {
		parts = append([]string{"data blocks " + joinList(data)}, parts...)
	}
	s := fmt.Sprintf("%s (%s", plural(rp.LostCount(), "corrupted block"), joinList(parts))
	if rp.LostCount() > most {
		s += fmt.Sprintf(" and %d more", rp.LostCount()-most)
	}
	return s + ")"
}

func joinList(s []string) string { return strings.Join(s, ", ") }

// lostReasons returns the distinct reasons, the first two.
func lostReasons(rp *verity.RepairPlan) string {
	reasons, distinct := rp.Reasons()
	s := strings.Join(reasons, "; ")
	if distinct > len(reasons) {
		s += fmt.Sprintf("; and %d other reasons", distinct-len(reasons))
	}
	return s
}

// printRepair prints what error correction can do or did: one line per
// block (at most max, unless max < 0).
func printRepair(w io.Writer, rp *verity.RepairPlan, wrote bool, max int, dataPath, hashPath, fecPath string) {
	verb := "repairable"
	if wrote {
		verb = "repaired"
	}
	lines := 0
	more := func() bool {
		if max >= 0 && lines >= max {
			return false
		}
		lines++
		return true
	}
	if rp.Whole() {
		i := 0
		rp.EachRebuilt(func(r verity.BlockRef) bool {
			if !more() {
				fmt.Fprintf(w, "... and %d more %s blocks\n", rp.RebuiltCount()-i, verb)
				return false
			}
			fmt.Fprintf(w, "%s: %s: rebuilt from the FEC parity in %s, matches the tree\n", verb, describeRef(r, dataPath, hashPath), fecPath)
			i++
			return true
		})
		if rp.SuperblockBytes() > 0 {
			fmt.Fprintf(w, "%s: superblock area of %s: %s restored from the superblock's own fields (the FEC parity does not cover the superblock)\n",
				verb, hashPath, plural(int(rp.SuperblockBytes()), "byte"))
		}
		if wrote {
			fmt.Fprintf(w, "repaired: wrote %s back into %s\n", repairCount(rp), repairFiles(rp, dataPath, hashPath))
		}
		return
	}
	lost := rp.Lost()
	for i, l := range lost {
		if !more() {
			fmt.Fprintf(w, "... and %d more unrecoverable blocks\n", rp.LostCount()-i)
			return
		}
		fmt.Fprintf(w, "unrecoverable: %s: %s\n", describeRef(l.BlockRef, dataPath, hashPath), cli.Flags.Say(l.Reason))
	}
	if rp.LostCount() > len(lost) {
		fmt.Fprintf(w, "... and %d more unrecoverable blocks (only the first %d are named)\n", rp.LostCount()-len(lost), len(lost))
	}
}

// repairJSON is what the --json report says of error correction.
type repairJSON struct {
	FECDevice       string `json:"fec_device"`
	FECRoots        int    `json:"fec_roots"`
	FECOffset       uint64 `json:"fec_offset"`
	FECBlocks       uint64 `json:"fec_blocks"` // message blocks: the kernel table's fec_blocks
	FECParityBlocks uint64 `json:"fec_parity_blocks"`
	// Repairable: every corrupted block can be rebuilt and matches the tree
	// (true when nothing is corrupted). Repaired: the repair was written.
	Repairable bool `json:"repairable"`
	Repaired   bool `json:"repaired"`
	// The blocks the repair rebuilds (or rebuilt), and the superblock-area
	// bytes it restores from the superblock's fields.
	RepairableCount  int        `json:"repairable_count"`
	RepairableBlocks []fecBlock `json:"repairable_blocks"`
	SuperblockBytes  uint64     `json:"repairable_superblock_bytes"`
	// The corrupted blocks that cannot be recovered, and how many blocks
	// under them cannot be checked.
	UnrecoverableCount     int        `json:"unrecoverable_count"`
	UnrecoverableBlocks    []fecBlock `json:"unrecoverable_blocks"`
	UnrecoverableUnchecked uint64     `json:"unrecoverable_unchecked_blocks"`
	// The two lists are capped at --max-problems, and at 1000 blocks.
	RepairListsTruncated bool `json:"repair_lists_truncated"`
}

type fecBlock struct {
	Where    string `json:"where"` // data, hash, or hash_past_tree
	Level    *int   `json:"level,omitempty"`
	Index    uint64 `json:"index"`
	Offset   uint64 `json:"offset"`
	FECBlock uint64 `json:"fec_block"` // index in the FEC message
	Reason   string `json:"reason,omitempty"`
}

func toFECBlock(r verity.BlockRef, reason string) fecBlock {
	b := fecBlock{Index: r.Index, Offset: r.Offset, FECBlock: r.FECBlock, Reason: reason}
	switch r.Level {
	case merkle.DataLevel:
		b.Where = "data"
	case merkle.PastTreeLevel:
		b.Where = "hash_past_tree"
	default:
		b.Where = "hash"
		level := int(r.Level)
		b.Level = &level
	}
	return b
}

func newRepairJSON(s *verity.FECInfo, rp *verity.RepairPlan, wrote bool, max int) *repairJSON {
	j := &repairJSON{FECDevice: s.Path, FECRoots: s.Roots, FECOffset: s.Offset, FECBlocks: s.Blocks,
		FECParityBlocks: s.ParityBlocks, Repairable: rp == nil || rp.Whole(), Repaired: wrote,
		RepairableBlocks: []fecBlock{}, UnrecoverableBlocks: []fecBlock{}}
	if rp == nil {
		return j
	}
	room := func(n int) bool {
		if max >= 0 && n >= max {
			j.RepairListsTruncated = true
			return false
		}
		return true
	}
	if rp.Whole() {
		j.RepairableCount, j.SuperblockBytes = rp.RebuiltCount(), rp.SuperblockBytes()
		rp.EachRebuilt(func(r verity.BlockRef) bool {
			if !room(len(j.RepairableBlocks)) {
				return false
			}
			if len(j.RepairableBlocks) == maxRepairList {
				j.RepairListsTruncated = true
				return false
			}
			j.RepairableBlocks = append(j.RepairableBlocks, toFECBlock(r, ""))
			return true
		})
		return j
	}
	j.UnrecoverableCount, j.UnrecoverableUnchecked = rp.LostCount(), rp.Unchecked()
	for _, l := range rp.Lost() {
		if !room(len(j.UnrecoverableBlocks)) {
			break
		}
		j.UnrecoverableBlocks = append(j.UnrecoverableBlocks, toFECBlock(l.BlockRef, cli.Flags.Say(l.Reason)))
	}
	if len(j.UnrecoverableBlocks) < rp.LostCount() {
		j.RepairListsTruncated = true // capped at --max-problems, or at maxRepairList
	}
	return j
}

// describeBelow says what under a corrupted hash block could not be
// checked, e.g. "data blocks 128-255 (bytes 524288-1048575 of DATA) and
// hash blocks 4-5 of level 0 could not be checked: hash block 1 of level
// 1 above them is corrupted".
func describeBelow(g *merkle.Geometry, level merkle.Level, index uint64, dataPath string) string {
	var parts []string
	var data string
	for _, r := range rangesBelow(g, level, index) {
		span := fmt.Sprintf("%d-%d", r.First, r.Last)
		if r.First == r.Last {
			span = fmt.Sprint(r.First)
		}
		if r.Level == int(merkle.DataLevel) {
			bs := uint64(g.DataBlockSize)
			what := "data blocks"
			if r.First == r.Last {
				what = "data block"
			}
			data = fmt.Sprintf("%s %s (bytes %d-%d of %s)", what, span, r.First*bs, (r.Last+1)*bs-1, dataPath)
			continue
		}
		what := "hash blocks"
		if r.First == r.Last {
			what = "hash block"
		}
		parts = append(parts, fmt.Sprintf("%s %s of level %d", what, span, r.Level))
	}
	parts = append([]string{data}, parts...)
	return fmt.Sprintf("%s could not be checked: hash block %d of level %d above them is corrupted", strings.Join(parts, " and "), index, level)
}

// blockRange is a run of blocks of one level (merkle.DataLevel for data
// blocks), first to last.
type blockRange struct {
	Level int    `json:"level"`
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// rangesBelow returns, level by level down to the data, the blocks under
// hash block index of level: what cannot be checked while it is corrupted.
func rangesBelow(g *merkle.Geometry, level merkle.Level, index uint64) []blockRange {
	hpb := uint64(g.HashesPerBlock)
	var out []blockRange
	lo, hi := index, index+1
	for l := level - 1; l >= merkle.DataLevel; l-- {
		n := g.DataBlocks
		if l >= 0 {
			n = g.LevelBlocks[l]
		}
		lo, hi = min(lo*hpb, n), min(hi*hpb, n)
		if hi > lo {
			out = append(out, blockRange{Level: int(l), First: lo, Last: hi - 1})
		}
	}
	return out
}
