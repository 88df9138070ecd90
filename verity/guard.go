package verity

import (
	"bytes"
	"encoding/binary"
	"io"
)

// detectFormat names the kind of image r (size bytes) is by its magic
// numbers ("an ext2/3/4 filesystem", "an Android sparse image", ...), or
// returns "" when it knows none. It guards against replacing an image
// named where an output belongs; the checks are specific enough that a hash
// tree or parity (random-looking bytes) almost never matches one.
func detectFormat(r io.ReaderAt, size int64) string {
	at := func(off int64, n int) []byte {
		if off < 0 || off+int64(n) > size {
			return nil
		}
		b := make([]byte, n)
		if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
			return nil
		}
		return b
	}
	is := func(off int64, magic string) bool {
		b := at(off, len(magic))
		return b != nil && string(b) == magic
	}
	le32 := func(off int64) (uint32, bool) {
		b := at(off, 4)
		if b == nil {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b), true
	}
	if v, ok := le32(0); ok && v == 0xed26ff3a {
		return "an Android sparse image"
	}
	switch {
	case is(0, "AVB0"):
		return "an Android vbmeta image"
	case is(0, "hsqs"):
		return "a squashfs filesystem"
	case is(0, "XFSB"):
		return "an XFS filesystem"
	case is(0, "LUKS\xba\xbe"):
		return "a LUKS volume"
	case is(512, "EFI PART"):
		return "a GPT-partitioned disk"
	}
	if size >= 64 {
		if is(size-64, "AVBf") {
			return "an Android image with an AVB footer"
		}
	}
	if v, ok := le32(1024); ok {
		switch v {
		case 0xE0F5E1E2:
			return "an EROFS filesystem"
		case 0xF2F52010:
			return "an F2FS filesystem"
		}
	}
	// ext2/3/4: the magic at 1080, and a block size (1024 << s_log_block_size
	// at 1048) of at most 64 KiB, so that 2 random bytes alone do not count.
	if m := at(1080, 2); m != nil && m[0] == 0x53 && m[1] == 0xEF {
		if lbs, ok := le32(1048); ok && lbs <= 6 {
			return "an ext2/3/4 filesystem"
		}
	}
	switch {
	case is(32769, "CD001"):
		return "an ISO 9660 image"
	case is(65600, "_BHRfS_M"):
		return "a btrfs filesystem"
	}
	if sig := at(510, 2); sig != nil && sig[0] == 0x55 && sig[1] == 0xAA {
		boot := at(0, 512)
		if boot[0] == 0xEB || boot[0] == 0xE9 {
			if bytes.HasPrefix(boot[54:], []byte("FAT")) || bytes.HasPrefix(boot[82:], []byte("FAT32")) {
				return "a FAT filesystem"
			}
		}
		// An MBR: four partition entries whose boot flags are 0x00 or 0x80,
		// at least one in use.
		used := false
		valid := true
		for i := range 4 {
			e := boot[446+16*i:]
			valid = valid && (e[0] == 0 || e[0] == 0x80)
			used = used || e[4] != 0
		}
		if valid && used {
			return "an MBR-partitioned disk"
		}
	}
	return ""
}
