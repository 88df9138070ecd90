package safefile

import (
	"bytes"
	"encoding/binary"
	"io"
)

// A magic is a format known by fixed bytes at a fixed offset. Offsets
// past 4 GiB never occur; a negative offset counts from the end of the
// file (an AVB footer is the last 64 bytes).
type magic struct {
	off   int64
	bytes string
	name  string
}

// magics are the formats that DetectFormat knows by their bytes alone, in
// the order they are tried; checks a table cannot express (ext2/3/4, FAT,
// MBR) follow in formatChecks.
var magics = []magic{
	{0, "\x3a\xff\x26\xed", "an Android sparse image"}, // 0xed26ff3a little-endian
	{0, "AVB0", "an Android vbmeta image"},
	{0, "hsqs", "a squashfs filesystem"},
	{0, "XFSB", "an XFS filesystem"},
	{0, "LUKS\xba\xbe", "a LUKS volume"},
	{512, "EFI PART", "a GPT-partitioned disk"},
	{-64, "AVBf", "an Android image with an AVB footer"},
	{1024, "\xe2\xe1\xf5\xe0", "an EROFS filesystem"}, // 0xE0F5E1E2 little-endian
	{1024, "\x10\x20\xf5\xf2", "an F2FS filesystem"},  // 0xF2F52010 little-endian
}

// lateMagics are tried after the ext2/3/4 check, as before it was a table.
var lateMagics = []magic{
	{32769, "CD001", "an ISO 9660 image"},
	{65600, "_BHRfS_M", "a btrfs filesystem"},
}

// DetectFormat names the kind of image r (size bytes) is by its magic
// numbers ("an ext2/3/4 filesystem", "an Android sparse image", ...), or
// returns "" when it knows none. It guards against replacing an image
// named where an output belongs; the checks are specific enough that a hash
// tree or parity (random-looking bytes) almost never matches one.
func DetectFormat(r io.ReaderAt, size int64) string {
	h := header{r: r, size: size}
	if name := h.match(magics); name != "" {
		return name
	}
	if h.isExt() {
		return "an ext2/3/4 filesystem"
	}
	if name := h.match(lateMagics); name != "" {
		return name
	}
	return h.bootSector()
}

// header reads the bytes of an image that DetectFormat looks at.
type header struct {
	r    io.ReaderAt
	size int64
}

// at returns the n bytes at off, or nil if they lie outside the image or
// cannot be read.
func (h header) at(off int64, n int) []byte {
	if off < 0 || off+int64(n) > h.size {
		return nil
	}
	b := make([]byte, n)
	if _, err := h.r.ReadAt(b, off); err != nil && err != io.EOF {
		return nil
	}
	return b
}

// match returns the name of the first of ms whose bytes the image holds.
func (h header) match(ms []magic) string {
	for _, m := range ms {
		off := m.off
		if off < 0 {
			off += h.size
		}
		if b := h.at(off, len(m.bytes)); b != nil && string(b) == m.bytes {
			return m.name
		}
	}
	return ""
}

// isExt: the magic at 1080, and a block size (1024 << s_log_block_size at
// 1048) of at most 64 KiB, so that 2 random bytes alone do not count.
func (h header) isExt() bool {
	m := h.at(1080, 2)
	if m == nil || m[0] != 0x53 || m[1] != 0xEF {
		return false
	}
	lbs := h.at(1048, 4)
	return lbs != nil && binary.LittleEndian.Uint32(lbs) <= 6
}

// bootSector names a FAT filesystem or an MBR-partitioned disk by its
// first sector, which ends in 55 AA.
func (h header) bootSector() string {
	if sig := h.at(510, 2); sig == nil || sig[0] != 0x55 || sig[1] != 0xAA {
		return ""
	}
	boot := h.at(0, 512)
	if boot[0] == 0xEB || boot[0] == 0xE9 {
		if bytes.HasPrefix(boot[54:], []byte("FAT")) || bytes.HasPrefix(boot[82:], []byte("FAT32")) {
			return "a FAT filesystem"
		}
	}
	// An MBR: four partition entries whose boot flags are 0x00 or 0x80, at
	// least one in use.
	used, valid := false, true
	for i := range 4 {
		e := boot[446+16*i:]
		valid = valid && (e[0] == 0 || e[0] == 0x80)
		used = used || e[4] != 0
	}
	if valid && used {
		return "an MBR-partitioned disk"
	}
	return ""
}
