package safefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func lockOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLocks: flock locks of two opens of one file conflict as two
// processes' do; a lock this process holds for reading is converted, not
// fought, when it writes the same file through another open.
func TestLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := lockOpen(t, path) // "another process": never registered
	if err := unix.Flock(int(other.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	r := lockOpen(t, path)
	if err := LockShared(r, "DATA", path); err != nil {
		t.Errorf("a shared lock beside another reader: %v", err)
	}
	w := lockOpen(t, path)
	err := LockExclusive(w, "DATA", path)
	want := "DATA " + path + " is locked by another process; wait for it to finish"
	if err == nil || err.Error() != want || !errors.Is(err, ErrLocked) {
		t.Errorf("exclusive lock beside another reader: %v, want %q", err, want)
	}

	other.Close()
	if err := LockExclusive(w, "DATA", path); err != nil {
		t.Fatalf("exclusive lock over this process's own shared one: %v", err)
	}
	// The lock is really exclusive now.
	probe := lockOpen(t, path)
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_SH|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("another open could still lock the file: %v", err)
	}
	r.Close()
	w.Close()
	// Closed files hold nothing, and the registry must not pretend so.
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the lock outlived its files: %v", err)
	}
	again := lockOpen(t, path)
	if err := LockShared(again, "HASH", path); err == nil || !strings.Contains(err.Error(), "HASH "+path+" is locked") {
		t.Errorf("shared lock beside another writer: %v", err)
	}
}

// TestRemoveStaleTemps: only unlocked files of createTempBeside's exact
// pattern for that path go; a locked one is named as another run's.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "tree.bin")
	live, err := createTempBeside(target, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := createTempBeside(target, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	dead.Close() // as a SIGKILL closes it
	keep := []string{".tree.bin.tmp01234567890", ".tree.bin.tmp0123456789AB", ".tree.bin.tmp0123456789ab.x", "tree.bin.tmp0123456789ab", ".tree.bi.tmp0123456789ab"}
	for _, n := range keep {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".tree.bin.tmpabcdefabcdef"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, live2 := sweepTemps(target, "")
	if len(got) != 1 || got[0] != filepath.Base(dead.Name()) {
		t.Errorf("removed %q, want only %s", got, filepath.Base(dead.Name()))
	}
	if live2 != filepath.Base(live.Name()) {
		t.Errorf("live temporary file %q, want %s", live2, filepath.Base(live.Name()))
	}
	if _, own := sweepTemps(target, live.Name()); own != "" {
		t.Errorf("its own temporary file was taken for another run's: %s", own)
	}
	for _, n := range append(keep, filepath.Base(live.Name()), ".tree.bin.tmpabcdefabcdef") {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestDetectFormat: each known magic is named; random bytes (what a tree
// or parity looks like) and zeros are not.
func TestDetectFormat(t *testing.T) {
	const size = 128 << 10
	put := func(off int, b []byte) []byte {
		img := make([]byte, size)
		copy(img[off:], b)
		return img
	}
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	ext4 := put(1080, []byte{0x53, 0xEF})
	copy(ext4[1048:], le32(2))
	fat := put(510, []byte{0x55, 0xAA})
	fat[0] = 0xEB
	copy(fat[82:], "FAT32   ")
	mbr := put(510, []byte{0x55, 0xAA})
	mbr[446], mbr[446+4] = 0x80, 0x83
	avb := put(size-64, []byte("AVBf"))
	for _, c := range []struct {
		img  []byte
		want string
	}{
		{ext4, "an ext2/3/4 filesystem"},
		{put(0, le32(0xed26ff3a)), "an Android sparse image"},
		{put(0, []byte("AVB0")), "an Android vbmeta image"},
		{avb, "an Android image with an AVB footer"},
		{put(0, []byte("hsqs")), "a squashfs filesystem"},
		{put(1024, le32(0xE0F5E1E2)), "an EROFS filesystem"},
		{put(1024, le32(0xF2F52010)), "an F2FS filesystem"},
		{put(512, []byte("EFI PART")), "a GPT-partitioned disk"},
		{fat, "a FAT filesystem"},
		{mbr, "an MBR-partitioned disk"},
		{put(32769, []byte("CD001")), "an ISO 9660 image"},
		{put(65600, []byte("_BHRfS_M")), "a btrfs filesystem"},
		{put(0, []byte("XFSB")), "an XFS filesystem"},
		{put(0, []byte("LUKS\xba\xbe")), "a LUKS volume"},
		{make([]byte, size), ""},
		{put(510, []byte{0x55, 0xAA}), ""},                        // a bare boot signature
		{put(1080, []byte{0x53, 0xEF}), "an ext2/3/4 filesystem"}, // block size field 0: 1 KiB
	} {
		if got := DetectFormat(bytes.NewReader(c.img), int64(len(c.img))); got != c.want {
			t.Errorf("%q: got %q", c.want, got)
		}
	}
	// Short files: nothing read past the end.
	if got := DetectFormat(bytes.NewReader([]byte("hs")), 2); got != "" {
		t.Errorf("2 bytes: %q", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	img := make([]byte, size)
	for range 500 {
		for i := range img[:70000] {
			img[i] = byte(rng.Uint32())
		}
		if got := DetectFormat(bytes.NewReader(img), 70000); got != "" {
			t.Fatalf("random bytes taken for %s", got)
		}
	}
}
