package veritygen

// Block devices as DATA and HASH, on loop devices (skipped where loop
// devices cannot be attached: not root, or no loop driver).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// TestBlockDeviceData: a block device as DATA gives the tree of its
// content, its size from the BLKGETSIZE64 ioctl.
func TestBlockDeviceData(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "backing.img")
	fronttest.Image(t, file, 3<<20, 50) // loop devices have whole 512-byte sectors
	dev := testtool.LoopDevice(t, file, true)
	fromFile := cliJSON(t, cliOK(t, "--json", "--salt="+cliSalt, "--uuid="+cliUUID, file, filepath.Join(dir, "f.verity")).stdout)
	fromDev := cliJSON(t, cliOK(t, "--json", "--salt="+cliSalt, "--uuid="+cliUUID, dev, filepath.Join(dir, "d.verity")).stdout)
	if fromDev["root_hash"] != fromFile["root_hash"] || fromDev["data_blocks"] != fromFile["data_blocks"] {
		t.Errorf("device: root %v, %v blocks; file: root %v, %v blocks", fromDev["root_hash"], fromDev["data_blocks"], fromFile["root_hash"], fromFile["data_blocks"])
	}
	andrSameFiles(t, filepath.Join(dir, "f.verity"), filepath.Join(dir, "d.verity"))

	// The default HASH beside a device would be a file in /dev.
	res := cliRun(t, t.Context(), "--salt=-", dev)
	if res.code != 2 || !strings.Contains(res.stderr, "is a block device: the default HASH "+dev+".verity would be a new file") {
		t.Errorf("exit %d:\n%s", res.code, res.stderr)
	}
	if _, err := os.Stat(dev + ".verity"); err == nil {
		os.Remove(dev + ".verity")
		t.Error("a HASH file was created in /dev")
	}
}

// TestBlockDeviceHash: a block device as HASH is written in place (never
// replaced by a rename), with the bytes outside the tree kept, and must be
// large enough.
func TestBlockDeviceHash(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 2<<20, 51)
	ref := filepath.Join(dir, "ref.verity")
	m := cliJSON(t, cliOK(t, "--json", "--salt="+cliSalt, "--uuid="+cliUUID, data, ref).stdout)
	treeSize := int(cliUint(t, m, "hash_end"))

	backing := filepath.Join(dir, "hashdev.img")
	junk := bytes.Repeat([]byte{0xa5}, 1<<20)
	if err := os.WriteFile(backing, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	dev := testtool.LoopDevice(t, backing, false)
	before, _ := os.Stat(dev)
	cliOK(t, "--salt="+cliSalt, "--uuid="+cliUUID, data, dev)
	after, err := os.Stat(dev)
	if err != nil || !os.SameFile(before, after) || after.Mode()&os.ModeDevice == 0 {
		t.Fatalf("HASH %s is no longer the same device: %v", dev, err)
	}
	// Read through the device: what the loop device wrote to its file.
	got, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:treeSize], fronttest.Read(t, ref)) {
		t.Error("the tree on the device differs from the tree in a file")
	}
	if !bytes.Equal(got[treeSize:], junk[treeSize:]) {
		t.Error("bytes past the tree changed on the device")
	}

	// Too small: a 64 KiB device cannot hold the tree of a 64 MiB image
	// with --hash-offset past it.
	small := filepath.Join(dir, "small.img")
	if err := os.WriteFile(small, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	sdev := testtool.LoopDevice(t, small, false)
	res := cliRun(t, t.Context(), "--salt=-", "--hash-offset=61440", data, sdev)
	want := fmt.Sprintf("veritygen: error: HASH %s is a block device of 65536 bytes, but what goes into it ends at byte", sdev)
	if res.code != 2 || !strings.HasPrefix(res.stderr, want) {
		t.Errorf("exit %d:\n%s\nwant %s", res.code, res.stderr, want)
	}
	if b, _ := os.ReadFile(small); !bytes.Equal(b, make([]byte, 64<<10)) {
		t.Error("the too small device was written")
	}
}

// TestBlockDeviceAppend: --append on a device needs --data-size (a device
// cannot grow) and puts the tree after the image inside the device; FEC
// into the device too.
func TestBlockDeviceAppend(t *testing.T) {
	dir := t.TempDir()
	const size = 1000000
	img := fronttest.Image(t, filepath.Join(dir, "img"), size, 52)
	backing := filepath.Join(dir, "part.img")
	if err := os.WriteFile(backing, append(append([]byte{}, img...), make([]byte, 4<<20-size)...), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := testtool.LoopDevice(t, backing, false)
	res := cliRun(t, t.Context(), "--append", dev)
	if res.code != 2 || !strings.Contains(res.stderr, "is a block device: --append cannot grow it, and needs --data-size") {
		t.Errorf("exit %d:\n%s", res.code, res.stderr)
	}
	file := filepath.Join(dir, "file.img")
	if err := os.WriteFile(file, img, 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--append", "--fec", "--salt=" + cliSalt}
	cliOK(t, append(flags, file)...)
	want := fronttest.Read(t, file)
	cliOK(t, append(flags, fmt.Sprintf("--data-size=%d", size), dev)...)
	got, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4<<20 || !bytes.Equal(got[:len(want)], want) {
		t.Error("the device does not start with what --append writes into a file")
	}
	if !bytes.Equal(got[len(want):], make([]byte, len(got)-len(want))) {
		t.Error("the device changed past the parity")
	}
}

// TestBlockDeviceLoopOverItsFile: a loop device and the file behind it are
// the same bytes, though two devices to veritysetup: a tree (or parity)
// written into one over the data the other shows is refused, nothing
// written; past the data it goes.
func TestBlockDeviceLoopOverItsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "backing.img")
	img := fronttest.Image(t, file, 1<<20, 51)
	dev := testtool.LoopDevice(t, file, false)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--hash-offset=524288", dev, file}, "DATA " + dev + " is a loop device over HASH " + file + ": what would be written there (bytes 524288 to 540672 of the file) goes over the data (bytes 0 to 1048576 of it)"},
		{[]string{"--force", "--data-blocks=16", file, dev}, "HASH " + dev + " is a loop device over DATA " + file + ": what would be written there (bytes 0 to 8192 of the file) goes over the data (bytes 0 to 65536 of it)"},
		{[]string{"--fec-device=" + dev, file, filepath.Join(dir, "h")}, "--fec-device " + dev + " is a loop device over DATA " + file},
	} {
		res := cliRun(t, t.Context(), append([]string{"--salt=" + cliSalt}, c.args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, c.msg) {
			t.Errorf("%v: exit %d, want 2 and %q", c.args, res.code, c.msg)
		}
		if !bytes.Equal(fronttest.Read(t, file), img) {
			t.Fatalf("%v: the file changed", c.args)
		}
	}
	// A tree into the device past the 16 data blocks it shows.
	cliOK(t, "--salt="+cliSalt, "--data-blocks=16", "--hash-offset=524288", file, dev)
	if !bytes.Equal(fronttest.Read(t, file)[:524288], img[:524288]) {
		t.Fatal("the data changed")
	}
}
