package verity

import (
	"context"

	"github.com/veritytree/veritytree/merkle"
)

// ActivateOptions are what `veritysetup open` takes besides the devices
// and the root hash; the zero value is its default: parameters from the
// superblock at byte 0 of the hash file, I/O errors on corruption.
type ActivateOptions struct {
	// TreeOptions: HashOffset is where the superblock (or, with
	// NoSuperblock, the tree) starts in the hash file. The other fields
	// are for a tree without superblock, and must then be the ones it was
	// made with, Salt included (an empty non-nil Salt for none); with a
	// superblock they must be left zero. UUID is not used.
	TreeOptions

	// FECDevice is the file (or block device) holding the error-correction
	// parity, "" for none; it may be the hash or the data file, at
	// FECOffset. FECRoots: parity bytes per codeword, 0 meaning 2.
	FECDevice string
	FECOffset uint64
	FECRoots  int

	// OnCorruption is what the kernel does when a block does not match:
	// fail the read (the default), log and return the data
	// (IgnoreCorruption), restart or panic.
	OnCorruption CorruptionMode
	// IgnoreZeroBlocks, CheckAtMostOnce and UseTasklets add
	// ignore_zero_blocks, check_at_most_once and try_verify_in_tasklet.
	IgnoreZeroBlocks, CheckAtMostOnce, UseTasklets bool
	// RootHashSigKey names the key in the kernel's keyring that holds the
	// root hash's signature (root_hash_sig_key_desc); "" for none. Loading
	// the signature into the keyring is then the caller's business.
	RootHashSigKey string
	// RootHashSignature is the root hash's signature (a DER PKCS#7, as
	// SignRootHash makes it), nil for none: Activate hands it to the
	// kernel as veritysetup --root-hash-signature does, as a "user" key
	// cryptsetup:<the superblock's UUID>-<name> (cryptsetup:<name>
	// without a superblock) in the thread's keyring, named by the table's
	// root_hash_sig_key_desc, revoked and unlinked once the table is
	// loaded (the kernel checks the signature then). Stock kernels trust
	// only the keys built into them (and their secondary keyring): a
	// signature by another key is refused, a KindInput error matching
	// dm.ErrNoKey. Not with RootHashSigKey.
	RootHashSignature []byte

	// NoUdev makes /dev/mapper/NAME here even when udev runs, as
	// libdevmapper does with DM_DISABLE_UDEV.
	NoUdev bool
}

// Device is a dm-verity device Activate made.
type Device struct {
	// Name is its device-mapper name; Path its node, /dev/mapper/NAME.
	Name, Path string
	// UUID is its device-mapper UUID, as veritysetup makes it:
	// CRYPT-VERITY-<the superblock's UUID without dashes>-<name>, or
	// CRYPT-VERITY-<name> without a superblock.
	UUID string
	// Major and Minor are its device number (/dev/dm-Minor).
	Major, Minor uint32
	// Geometry is the tree, RootHash the root hash it is checked against.
	Geometry *merkle.Geometry
	RootHash []byte
	// FEC is the error correction, nil without.
	FEC *FECInfo
	// Table is the dm-verity table loaded (its devices as MAJOR:MINOR),
	// over Sectors 512-byte sectors.
	Table   string
	Sectors uint64
	// Loops are the loop devices attached for the files among the hash,
	// data and FEC devices, in that order, one per file. They clear
	// themselves when the device is removed.
	Loops []string
}

// Close removes the device (Deactivate without options).
func (d *Device) Close(ctx context.Context) error {
	_, err := Deactivate(ctx, d.Name, nil)
	return err
}

// DeactivateOptions are what `veritysetup close` takes.
type DeactivateOptions struct {
	// Deferred removes a device that is in use at its last close instead
	// of failing (DeactivateResult.Deferred then says it was).
	Deferred bool
	// CancelDeferred cancels a deferred removal instead: the device stays.
	CancelDeferred bool
	// AnyTable removes the device whatever its table, as veritysetup
	// close removes a linear device too; without it, a device that is
	// not dm-verity is refused.
	AnyTable bool
	// NoUdev removes /dev/mapper/NAME here even when udev runs.
	NoUdev bool
}

// DeactivateResult is what Deactivate did.
type DeactivateResult struct {
	// Deferred: the device is in use, and scheduled for removal at its
	// last close (DeactivateOptions.Deferred).
	Deferred bool
	// Released are the loop devices that the device held and that cleared
	// themselves when it went.
	Released []string
}

// BackingDevice is one of a verity device's devices.
type BackingDevice struct {
	// Number is MAJOR:MINOR, as the kernel's table names it.
	Number string
	// Path is its node (/dev/loop0, /dev/sda5), "" if unknown.
	Path string
	// File is a loop device's backing file, "" for another device.
	File string
}

// DeviceStatus is what Status says of a dm-verity device.
type DeviceStatus struct {
	Name, Path, UUID string
	Major, Minor     uint32
	// OpenCount is how many times the device is open.
	OpenCount int
	// ReadOnly, Suspended and DeferredRemove are device-mapper's flags.
	ReadOnly, Suspended, DeferredRemove bool
	// Corrupted: the kernel has found a block that does not match the
	// tree (status C); else it has found none yet (V, "verified").
	Corrupted bool
	// Table is the kernel's table, taken apart, over Sectors 512-byte
	// sectors; Geometry the tree it describes (see KernelTable.Geometry),
	// nil for an algorithm this package does not know.
	Table    *KernelTable
	Sectors  uint64
	Geometry *merkle.Geometry
	// Data, Hash and FEC are the table's devices (FEC's Number "" without
	// error correction).
	Data, Hash, FEC BackingDevice
	// StatusText is the kernel's status of the target, as it gives it.
	StatusText string
}
