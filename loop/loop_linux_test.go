package loop

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// requireLoop skips the test where loop devices cannot be attached (not
// root, no loop driver), unless VERITYTREE_KERNEL_TESTS is set: tests/kernel
// sets it in the guest it boots, where these tests must run.
func requireLoop(t *testing.T) {
	t.Helper()
	fd, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	switch {
	case err == nil && os.Geteuid() == 0:
		return
	case os.Getenv("VERITYTREE_KERNEL_TESTS") != "":
		t.Fatalf("loop devices are needed here: /dev/loop-control: %v, uid %d", err, os.Geteuid())
	}
	t.Skipf("no loop devices to attach here (/dev/loop-control: %v, uid %d); tests/kernel runs this test in a guest", err, os.Geteuid())
}

// image writes a file of n random bytes.
func image(t *testing.T, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(t.TempDir(), "image.img")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// sysfs reads /sys/block/loopN/<attr>.
func sysfs(d *Device, attr string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/sys/block/loop%d/%s", d.Number, attr))
	return strings.TrimSpace(string(b))
}

// detachAtEnd makes sure a test leaves nothing attached.
func detachAtEnd(t *testing.T, file string) {
	t.Cleanup(func() {
		found, _ := Find(file)
		for _, l := range found {
			t.Errorf("%s is still attached to %s", file, l)
			Detach(l)
		}
	})
}

func TestAttachReadOnly(t *testing.T) {
	requireLoop(t)
	file, data := image(t, 1<<20)
	detachAtEnd(t, file)
	d, err := Attach(context.Background(), file, &AttachOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path != fmt.Sprintf("/dev/loop%d", d.Number) || d.Major != 7 || d.Minor != uint32(d.Number) || !d.ReadOnly || d.File != file {
		t.Errorf("device %+v", d)
	}
	got, err := os.ReadFile(d.Path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading %s: %v; %d bytes, equal to the file: %v", d.Path, err, len(got), bytes.Equal(got, data))
	}
	if ro, ac, lbs := sysfs(d, "ro"), sysfs(d, "loop/autoclear"), sysfs(d, "queue/logical_block_size"); ro != "1" || ac != "1" || lbs != "512" {
		t.Errorf("sysfs: ro %s, autoclear %s, logical block size %s; want 1, 1, 512", ro, ac, lbs)
	}
	if f, err := os.OpenFile(d.Path, os.O_WRONLY|os.O_SYNC, 0); err == nil {
		_, werr := f.WriteAt(make([]byte, 512), 0)
		f.Close()
		if werr == nil {
			t.Error("a write through the read-only device succeeded")
		}
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, data) {
		t.Error("the file changed")
	}
	if bf, err := BackingFile(d.Path); err != nil || bf != file {
		t.Errorf("BackingFile: %q, %v", bf, err)
	}
	if found, err := Find(file); err != nil || len(found) != 1 || found[0] != d.Path {
		t.Errorf("Find: %v, %v", found, err)
	}
	// Autoclear: the last close detaches.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if bf, err := BackingFile(d.Path); err != nil || bf != "" {
		t.Errorf("after Close: backing file %q, %v", bf, err)
	}
	if found, _ := Find(file); len(found) != 0 {
		t.Errorf("after Close: still attached to %v", found)
	}
}

func TestAttachReadWriteBlockSize(t *testing.T) {
	requireLoop(t)
	file, data := image(t, 64<<10)
	detachAtEnd(t, file)
	d, err := Attach(context.Background(), file, &AttachOptions{BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.ReadOnly || sysfs(d, "ro") != "0" || sysfs(d, "queue/logical_block_size") != "4096" {
		t.Errorf("read-only %v, sysfs ro %s, logical block size %s", d.ReadOnly, sysfs(d, "ro"), sysfs(d, "queue/logical_block_size"))
	}
	w, err := os.OpenFile(d.Path, os.O_WRONLY|os.O_SYNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	block := bytes.Repeat([]byte{0x5a}, 4096)
	if _, err := w.WriteAt(block, 8192); err != nil {
		t.Fatal(err)
	}
	w.Close()
	copy(data[8192:], block)
	if got, _ := os.ReadFile(file); !bytes.Equal(got, data) {
		t.Error("a write through the device did not reach the file")
	}
	if err := d.Detach(); err != nil {
		t.Fatal(err)
	}
	if found, _ := Find(file); len(found) != 0 {
		t.Errorf("after Detach: still attached to %v", found)
	}
	if err := d.Detach(); err != nil {
		t.Errorf("a second Detach: %v", err)
	}
}

// TestAttachFile: the device reads the file open, even renamed, and is
// read-only when it is open read-only.
func TestAttachFile(t *testing.T) {
	requireLoop(t)
	file, data := image(t, 16<<10)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	moved := file + ".moved"
	if err := os.Rename(file, moved); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte("another file"), 0o644)
	detachAtEnd(t, moved)
	d, err := AttachFile(context.Background(), f, nil)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.ReadOnly || sysfs(d, "ro") != "1" {
		t.Errorf("a file open read-only gave a device read-only %v (sysfs %s)", d.ReadOnly, sysfs(d, "ro"))
	}
	if got, _ := os.ReadFile(d.Path); !bytes.Equal(got, data) {
		t.Error("the device does not read the file that was open")
	}
	if bf, _ := BackingFile(d.Path); bf != moved {
		t.Errorf("backing file %q, want %q", bf, moved)
	}
}

// TestAttachLegacy binds as kernels before 5.8 do (LOOP_SET_FD,
// LOOP_SET_BLOCK_SIZE, LOOP_SET_STATUS64).
func TestAttachLegacy(t *testing.T) {
	requireLoop(t)
	legacyOnly = true
	defer func() { legacyOnly = false }()
	file, data := image(t, 32<<10)
	detachAtEnd(t, file)
	d, err := Attach(context.Background(), file, &AttachOptions{ReadOnly: true, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, _ := os.ReadFile(d.Path); !bytes.Equal(got, data) {
		t.Error("the device does not read the file")
	}
	if ro, ac, lbs := sysfs(d, "ro"), sysfs(d, "loop/autoclear"), sysfs(d, "queue/logical_block_size"); ro != "1" || ac != "1" || lbs != "1024" {
		t.Errorf("sysfs: ro %s, autoclear %s, logical block size %s; want 1, 1, 1024", ro, ac, lbs)
	}
	if !strings.HasSuffix(sysfs(d, "loop/backing_file"), "image.img") {
		t.Errorf("backing file %q", sysfs(d, "loop/backing_file"))
	}
}

func TestAttachNoAutoclear(t *testing.T) {
	requireLoop(t)
	file, _ := image(t, 4096)
	detachAtEnd(t, file)
	d, err := Attach(context.Background(), file, &AttachOptions{NoAutoclear: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if bf, _ := BackingFile(d.Path); bf != file {
		t.Fatalf("without autoclear, Close detached (backing file %q)", bf)
	}
	if err := Detach(d.Path); err != nil {
		t.Fatal(err)
	}
	if bf, _ := BackingFile(d.Path); bf != "" {
		t.Errorf("after Detach: backing file %q", bf)
	}
}

// TestAttachRefused: what is not a regular file is refused before it is
// opened for reading (a FIFO would block), and so is a bad block size or
// an ended context; nothing is attached.
func TestAttachRefused(t *testing.T) {
	requireLoop(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	file, _ := image(t, 4096)
	detachAtEnd(t, file)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		path string
		opts *AttachOptions
		want string
	}{
		{"directory", context.Background(), dir, nil, "not a regular file"},
		{"FIFO", context.Background(), fifo, nil, "not a regular file"},
		{"character device", context.Background(), "/dev/null", nil, "not a regular file"},
		{"missing", context.Background(), filepath.Join(dir, "missing"), nil, "no such file"},
		{"block size", context.Background(), file, &AttachOptions{BlockSize: 1000}, "block size 1000"},
		{"ended context", ended, file, nil, "context canceled"},
	} {
		d, err := Attach(c.ctx, c.path, c.opts)
		if err == nil {
			d.Detach()
			t.Errorf("%s: attached", c.name)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != "attach" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *Error saying %q", c.name, err, c.want)
		}
	}
	if _, err := BackingFile("/dev/null"); !errors.Is(err, ErrNotLoop) {
		t.Errorf("BackingFile(/dev/null): %v, want ErrNotLoop", err)
	}
	if err := Detach("/dev/null"); !errors.Is(err, ErrNotLoop) {
		t.Errorf("Detach(/dev/null): %v, want ErrNotLoop", err)
	}
	if _, err := BackingFile(filepath.Join(dir, "missing")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("BackingFile of a missing path: %v", err)
	}
}

// TestAttachConcurrent attaches files from several goroutines at once:
// they race for the same free device, and each gets one of its own.
func TestAttachConcurrent(t *testing.T) {
	requireLoop(t)
	const n = 4
	var wg sync.WaitGroup
	devs := make([]*Device, n)
	errs := make([]error, n)
	files := make([]string, n)
	for i := range n {
		files[i], _ = image(t, 4096*(i+1))
		detachAtEnd(t, files[i])
	}
	for i := range n {
		wg.Go(func() { devs[i], errs[i] = Attach(context.Background(), files[i], &AttachOptions{ReadOnly: true}) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, d := range devs {
		if errs[i] != nil {
			t.Errorf("attach %d: %v", i, errs[i])
			continue
		}
		defer d.Close()
		if seen[d.Path] {
			t.Errorf("%s given twice", d.Path)
		}
		seen[d.Path] = true
		if bf, _ := BackingFile(d.Path); bf != files[i] {
			t.Errorf("%s reads %q, want %q", d.Path, bf, files[i])
		}
	}
}
