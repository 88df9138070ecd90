package kernel

// All images go into one virtio disk, each in its own GPT partition: under
// TCG every extra PCI device costs the guest about half a second to probe
// (and SeaBIOS more), while a partition is free. A partition is a plain
// block device to dm-verity (the block layer only shifts the sector), so
// the kernel reads each image as it would a disk of its own.

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"unicode/utf16"
)

const (
	sector        = 512
	gptEntrySize  = 128
	partAlignment = 64 << 10 // bytes
)

// partition is an image file to place on the disk.
type partition struct {
	name string // GPT partition name (at most 36 UTF-16 units)
	path string
	size int64 // of the partition: the file's size rounded up to whole sectors
}

// writeGPTDisk writes a disk image holding the files as partitions 1, 2,
// ... in order, with a protective MBR and primary and backup GPT.
func writeGPTDisk(path string, parts []partition) error {
	entries := max(128, (len(parts)+3)/4*4)
	entrySectors := int64(entries*gptEntrySize) / sector
	firstUsable := 2 + entrySectors
	alignLBA := int64(partAlignment / sector)

	table := make([]byte, entries*gptEntrySize)
	lba := (firstUsable + alignLBA - 1) / alignLBA * alignLBA
	starts := make([]int64, len(parts))
	for i, p := range parts {
		st, err := os.Stat(p.path)
		if err != nil {
			return err
		}
		parts[i].size = (st.Size() + sector - 1) / sector * sector
		starts[i] = lba
		last := lba + parts[i].size/sector - 1
		e := table[i*gptEntrySize:]
		// Type: Linux filesystem data, 0FC63DAF-8483-4772-8E79-3D69D8477DE4.
		copy(e[0:16], []byte{0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4})
		uid := partGUID(i, p.name)
		copy(e[16:32], uid[:])
		binary.LittleEndian.PutUint64(e[32:], uint64(lba))
		binary.LittleEndian.PutUint64(e[40:], uint64(last))
		for j, u := range utf16.Encode([]rune(p.name)) {
			if j >= 36 {
				break
			}
			binary.LittleEndian.PutUint16(e[56+2*j:], u)
		}
		lba = (last + 1 + alignLBA - 1) / alignLBA * alignLBA
	}
	lastUsable := lba - 1
	backupEntries := lba
	lastLBA := backupEntries + entrySectors // the backup header
	total := lastLBA + 1

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(total * sector); err != nil {
		return err
	}

	// Protective MBR: one partition of type 0xEE over the whole disk.
	mbr := make([]byte, sector)
	pe := mbr[446:]
	copy(pe, []byte{0x00, 0x00, 0x02, 0x00, 0xee, 0xff, 0xff, 0xff})
	binary.LittleEndian.PutUint32(pe[8:], 1)
	binary.LittleEndian.PutUint32(pe[12:], uint32(min(total-1, 0xffffffff)))
	mbr[510], mbr[511] = 0x55, 0xaa

	tableCRC := crc32.ChecksumIEEE(table)
	diskGUID := sha256.Sum256([]byte(fmt.Sprintf("veritytree disk %d", len(parts))))
	header := func(my, alternate, entriesLBA int64) []byte {
		h := make([]byte, sector)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x00010000)
		binary.LittleEndian.PutUint32(h[12:], 92)
		binary.LittleEndian.PutUint64(h[24:], uint64(my))
		binary.LittleEndian.PutUint64(h[32:], uint64(alternate))
		binary.LittleEndian.PutUint64(h[40:], uint64(firstUsable))
		binary.LittleEndian.PutUint64(h[48:], uint64(lastUsable))
		copy(h[56:72], diskGUID[:16])
		binary.LittleEndian.PutUint64(h[72:], uint64(entriesLBA))
		binary.LittleEndian.PutUint32(h[80:], uint32(entries))
		binary.LittleEndian.PutUint32(h[84:], gptEntrySize)
		binary.LittleEndian.PutUint32(h[88:], tableCRC)
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
		return h
	}
	writes := []struct {
		lba  int64
		data []byte
	}{
		{0, mbr},
		{1, header(1, lastLBA, 2)},
		{2, table},
		{backupEntries, table},
		{lastLBA, header(lastLBA, 1, backupEntries)},
	}
	for _, w := range writes {
		if _, err := f.WriteAt(w.data, w.lba*sector); err != nil {
			return err
		}
	}
	for i, p := range parts {
		src, err := os.Open(p.path)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.NewOffsetWriter(f, starts[i]*sector), src)
		src.Close()
		if err != nil {
			return err
		}
	}
	return f.Close()
}

// partGUID is the unique GUID of partition i+1 named name, as stored
// (mixed-endian, as GPT stores GUIDs).
func partGUID(i int, name string) [16]byte {
	uid := sha256.Sum256([]byte(fmt.Sprintf("veritytree partition %d %s", i, name)))
	return [16]byte(uid[:16])
}

// partUUID is partition i+1's PARTUUID as Linux spells it (root=PARTUUID=...,
// and in device-mapper tables): the GUID's text form, its first three fields
// read little-endian.
func partUUID(i int, name string) string {
	g := partGUID(i, name)
	return fmt.Sprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%x-%x", g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8:10], g[10:16])
}

// maxPartitions is what Linux reads of a GPT (DISK_MAX_PARTS - 1).
const maxPartitions = 255
