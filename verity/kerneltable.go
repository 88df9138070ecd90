package verity

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// KernelTable is a dm-verity table line taken apart: the target's
// arguments as Table makes them, or as the kernel gives them back (its
// devices then as MAJOR:MINOR). See ParseTable.
type KernelTable struct {
	// Format is the hash type, 0 or 1.
	Format int
	// DataDevice and HashDevice name the devices.
	DataDevice, HashDevice string
	// DataBlockSize and HashBlockSize are in bytes.
	DataBlockSize, HashBlockSize int
	// DataBlocks is the number of data blocks covered.
	DataBlocks uint64
	// HashStartBlock is where the tree starts in the hash device, in hash
	// blocks (past the superblock when there is one).
	HashStartBlock uint64
	// Hash is the algorithm's name, as the kernel's crypto API names it.
	Hash string
	// RootHash is the root digest; Salt the salt, empty for none ("-").
	RootHash, Salt []byte
	// The optional arguments.
	OnCorruption     CorruptionMode
	IgnoreZeroBlocks bool
	CheckAtMostOnce  bool
	UseTasklets      bool
	// FECDevice, FECStart (in blocks), FECBlocks and FECRoots are the
	// error correction's, FECDevice "" without.
	FECDevice           string
	FECStart, FECBlocks uint64
	FECRoots            int
	// RootHashSigKey is root_hash_sig_key_desc's key description.
	RootHashSigKey string
	// Other holds optional arguments of later kernels that take no value
	// (restart_on_error, panic_on_error, ...), as given.
	Other []string
}

// ParseTable takes a dm-verity table line apart: the ten arguments
// (format, data device, hash device, data and hash block sizes, data
// blocks, hash start block, algorithm, root hash, salt), then optionally
// the count of optional arguments and those, in any order, as the
// kernel's verity_ctr reads them. The line may start with the target's
// "START LENGTH verity".
func ParseTable(line string) (*KernelTable, error) {
	f := strings.Fields(line)
	if len(f) >= 3 && f[2] == "verity" {
		f = f[3:]
	}
	if len(f) < 10 {
		return nil, fmt.Errorf("dm-verity table %q: %d arguments, at least 10 needed", line, len(f))
	}
	t := &KernelTable{DataDevice: f[1], HashDevice: f[2], Hash: f[7]}
	var err error
	fail := func(what string, e error) (*KernelTable, error) {
		return nil, fmt.Errorf("dm-verity table: %s: %v", what, e)
	}
	if t.Format, err = tableInt(f[0], 1); err != nil {
		return fail("format", err)
	}
	if t.DataBlockSize, err = tableBlockSize(f[3]); err != nil {
		return fail("data block size", err)
	}
	if t.HashBlockSize, err = tableBlockSize(f[4]); err != nil {
		return fail("hash block size", err)
	}
	if t.DataBlocks, err = strconv.ParseUint(f[5], 10, 64); err != nil {
		return fail("data blocks", err)
	}
	if t.HashStartBlock, err = strconv.ParseUint(f[6], 10, 64); err != nil {
		return fail("hash start block", err)
	}
	if t.RootHash, err = hex.DecodeString(f[8]); err != nil || len(t.RootHash) == 0 {
		if err == nil {
			err = errors.New("empty")
		}
		return fail("root hash", err)
	}
	if f[9] != "-" {
		if t.Salt, err = hex.DecodeString(f[9]); err != nil {
			return fail("salt", err)
		}
	}
	if len(f) == 10 {
		return t, nil
	}
	n, err := tableInt(f[10], len(f)-11)
	if err != nil || n != len(f)-11 {
		return fail("optional arguments", fmt.Errorf("the count %q is not the %d that follow", f[10], len(f)-11))
	}
	if err := t.parseOptions(f[11:]); err != nil {
		return fail("optional arguments", err)
	}
	return t, nil
}

// tableInt parses a decimal from 0 to max.
func tableInt(s string, max int) (int, error) {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil || n > uint64(max) {
		return 0, fmt.Errorf("%q is not a number from 0 to %d", s, max)
	}
	return int(n), nil
}

func tableBlockSize(s string) (int, error) {
	n, err := tableInt(s, merkle.MaxBlockSize)
	if err != nil {
		return 0, err
	}
	return n, merkle.CheckBlockSize(n)
}

// parseOptions reads the optional arguments.
func (t *KernelTable) parseOptions(args []string) error {
	value := func(i int) (string, error) {
		if i+1 >= len(args) {
			return "", fmt.Errorf("%s without its value", args[i])
		}
		return args[i+1], nil
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "ignore_corruption":
			t.OnCorruption = IgnoreCorruption
		case "restart_on_corruption":
			t.OnCorruption = RestartOnCorruption
		case "panic_on_corruption":
			t.OnCorruption = PanicOnCorruption
		case "ignore_zero_blocks":
			t.IgnoreZeroBlocks = true
		case "check_at_most_once":
			t.CheckAtMostOnce = true
		case "try_verify_in_tasklet":
			t.UseTasklets = true
		case "use_fec_from_device", "fec_start", "fec_blocks", "fec_roots", "root_hash_sig_key_desc":
			v, err := value(i)
			if err != nil {
				return err
			}
			i++
			if err := t.setValue(a, v); err != nil {
				return err
			}
		default:
			t.Other = append(t.Other, a)
		}
	}
	if t.FECDevice == "" && (t.FECStart != 0 || t.FECBlocks != 0 || t.FECRoots != 0) {
		return errors.New("fec_start, fec_blocks or fec_roots without use_fec_from_device")
	}
	if t.FECDevice != "" && t.FECRoots == 0 {
		t.FECRoots = 2 // the kernel's default (verity_fec_ctr_alloc)
	}
	return nil
}

func (t *KernelTable) setValue(name, v string) error {
	var err error
	switch name {
	case "use_fec_from_device":
		t.FECDevice = v
	case "fec_start":
		t.FECStart, err = strconv.ParseUint(v, 10, 64)
	case "fec_blocks":
		t.FECBlocks, err = strconv.ParseUint(v, 10, 64)
	case "fec_roots":
		t.FECRoots, err = tableInt(v, 24)
		if err == nil && t.FECRoots < 2 {
			err = fmt.Errorf("%d roots: at least 2", t.FECRoots)
		}
	case "root_hash_sig_key_desc":
		t.RootHashSigKey = v
	}
	if err != nil {
		return fmt.Errorf("%s %s: %v", name, v, err)
	}
	return nil
}

// String gives the table line back, its optional arguments in the order
// Table writes them (veritysetup's).
func (t *KernelTable) String() string {
	salt := "-"
	if len(t.Salt) > 0 {
		salt = hex.EncodeToString(t.Salt)
	}
	s := fmt.Sprintf("%d %s %s %d %d %d %d %s %x %s", t.Format, t.DataDevice, t.HashDevice, t.DataBlockSize, t.HashBlockSize,
		t.DataBlocks, t.HashStartBlock, t.Hash, t.RootHash, salt)
	var opts []string
	if m := [...]string{IgnoreCorruption: "ignore_corruption", RestartOnCorruption: "restart_on_corruption",
		PanicOnCorruption: "panic_on_corruption"}; int(t.OnCorruption) < len(m) && m[t.OnCorruption] != "" {
		opts = append(opts, m[t.OnCorruption])
	}
	for _, o := range []struct {
		on   bool
		name string
	}{{t.IgnoreZeroBlocks, "ignore_zero_blocks"}, {t.CheckAtMostOnce, "check_at_most_once"}, {t.UseTasklets, "try_verify_in_tasklet"}} {
		if o.on {
			opts = append(opts, o.name)
		}
	}
	opts = append(opts, t.Other...)
	if t.FECDevice != "" {
		opts = append(opts, "use_fec_from_device", t.FECDevice, "fec_start", strconv.FormatUint(t.FECStart, 10),
			"fec_blocks", strconv.FormatUint(t.FECBlocks, 10), "fec_roots", strconv.Itoa(t.FECRoots))
	}
	if t.RootHashSigKey != "" {
		opts = append(opts, "root_hash_sig_key_desc", t.RootHashSigKey)
	}
	if len(opts) > 0 {
		s += fmt.Sprintf(" %d %s", len(opts), strings.Join(opts, " "))
	}
	return s
}

// Geometry returns the tree the table describes, as a tree without
// superblock whose HashOffset is where the tree starts
// (HashStartBlock * HashBlockSize): a table does not say whether a
// superblock precedes it. The algorithm must be one of hashes.Names.
func (t *KernelTable) Geometry() (*merkle.Geometry, error) {
	alg, err := hashes.Lookup(t.Hash)
	if err != nil {
		return nil, err
	}
	if t.Format != 0 && t.Format != 1 {
		return nil, fmt.Errorf("format (hash type) %d is not 0 or 1", t.Format)
	}
	if t.HashBlockSize == 0 || t.HashStartBlock > (1<<63-1)/uint64(t.HashBlockSize) {
		return nil, fmt.Errorf("hash start block %d is past the end of any device", t.HashStartBlock)
	}
	g, err := merkle.NewGeometry(merkle.Params{Hash: alg, LegacyFormat: t.Format == 0, Salt: t.Salt, DataBlockSize: t.DataBlockSize,
		HashBlockSize: t.HashBlockSize, DataBlocks: t.DataBlocks, HashOffset: t.HashStartBlock * uint64(t.HashBlockSize)})
	if err != nil {
		return nil, err
	}
	if len(t.RootHash) != g.DigestSize {
		return nil, fmt.Errorf("the root hash is %d bytes; %s digests are %d", len(t.RootHash), alg.Name(), g.DigestSize)
	}
	return g, nil
}
