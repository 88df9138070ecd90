package cli

import (
	"fmt"
	"io"
)

// Header is what veritysetup prints for a tree ("VERITY header information").
type Header struct {
	HashFile      string
	UUID          string
	HashType      int
	DataBlocks    uint64
	DataBlockSize int
	HashBlocks    uint64
	HashBlockSize int
	Algorithm     string
	Salt          string
	// FECRoots and FECBlocks (parity blocks) are printed when FECRoots > 0.
	FECRoots  int
	FECBlocks uint64
	// RootHash is printed when not empty.
	RootHash string
	// HashDeviceSize is printed when ShowHashDeviceSize (veritysetup
	// prints it for a hash device of its own, even when 0); FECDeviceSize
	// when not zero.
	HashDeviceSize     uint64
	ShowHashDeviceSize bool
	FECDeviceSize      uint64
	// NoSuperblock heads the lines as those of a tree without superblock,
	// without the UUID that only a superblock holds (veritysetup prints
	// "VERITY header information" and a blank UUID; its front keeps that).
	NoSuperblock bool
}

// Print writes h in veritysetup's layout (its labels, tab before values),
// so that scripts parsing veritysetup's output parse ours.
func (h *Header) Print(w io.Writer) {
	if h.NoSuperblock {
		fmt.Fprintf(w, "VERITY hash tree (no superblock) in %s\n", h.HashFile)
	} else {
		fmt.Fprintf(w, "VERITY header information for %s\n", h.HashFile)
		fmt.Fprintf(w, "UUID:            \t%s\n", h.UUID)
	}
	fmt.Fprintf(w, "Hash type:       \t%d\n", h.HashType)
	fmt.Fprintf(w, "Data blocks:     \t%d\n", h.DataBlocks)
	fmt.Fprintf(w, "Data block size: \t%d\n", h.DataBlockSize)
	fmt.Fprintf(w, "Hash blocks:     \t%d\n", h.HashBlocks)
	fmt.Fprintf(w, "Hash block size: \t%d\n", h.HashBlockSize)
	fmt.Fprintf(w, "Hash algorithm:  \t%s\n", h.Algorithm)
	if h.FECRoots > 0 {
		fmt.Fprintf(w, "FEC RS roots:   \t%d\n", h.FECRoots)
		fmt.Fprintf(w, "FEC blocks:     \t%d\n", h.FECBlocks)
	}
	fmt.Fprintf(w, "Salt:            \t%s\n", h.Salt)
	if h.RootHash != "" {
		fmt.Fprintf(w, "Root hash:      \t%s\n", h.RootHash)
	}
	if h.ShowHashDeviceSize {
		fmt.Fprintf(w, "Hash device size: \t%d [bytes]\n", h.HashDeviceSize)
	}
	if h.FECDeviceSize != 0 {
		fmt.Fprintf(w, "FEC device size: \t%d [bytes]\n", h.FECDeviceSize)
	}
}
