package safefile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/internal/testtool"
)

// TestSizeRegularFile: a regular file's size is its length, and the
// BLKGETSIZE64 ioctl refuses it.
func TestSizeRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	f, size, err := OpenImage("DATA", path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size != 12345 {
		t.Errorf("openImage size %d, want 12345", size)
	}
	info, _ := f.Stat()
	if IsBlockDevice(info) {
		t.Error("a regular file is a block device")
	}
	if _, err := BlockDeviceSize(f); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("BLKGETSIZE64 on a regular file: %v, want ENOTTY", err)
	}
}

// TestSizeCharDevice: a character device is not a block device; its size
// is where seeking to the end puts it.
func TestSizeCharDevice(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	if IsBlockDevice(info) {
		t.Error("/dev/zero is a block device")
	}
	if n, err := FileSize(f); err != nil || n != 0 {
		t.Errorf("Size(/dev/zero) = %d, %v", n, err)
	}
}

// TestSizeBlockDevice: a loop device's size comes from BLKGETSIZE64 (its
// Stat size is 0). Skipped where no loop device can be attached.
func TestSizeBlockDevice(t *testing.T) {
	losetup := testtool.Require(t, "losetup")
	path := filepath.Join(t.TempDir(), "backing")
	if err := os.WriteFile(path, make([]byte, 3<<20+512), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "--find", "--show", "--read-only", path).CombinedOutput()
	if err != nil {
		t.Skipf("cannot attach a loop device here: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	defer exec.Command(losetup, "-d", dev).Run()
	f, size, err := OpenImage("DATA", dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	if !IsBlockDevice(info) || info.Size() != 0 {
		t.Errorf("%s: block device %v, Stat size %d", dev, IsBlockDevice(info), info.Size())
	}
	if size != 3<<20+512 {
		t.Errorf("openImage size %d, want %d", size, 3<<20+512)
	}
	if n, err := BlockDeviceSize(f); err != nil || n != 3<<20+512 {
		t.Errorf("blockDeviceSize = %d, %v", n, err)
	}
}
