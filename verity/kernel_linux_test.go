package verity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/loop"
)

// The TestKernel tests open devices in this machine's device-mapper: they
// run where VERITYTREE_KERNEL_TESTS is set, which tests/kernel does in the
// Linux guest it boots. There, VERITYTREE_GUEST_BLOCK names a partition
// pair for the block device case (DATA,HASH,ROOT,SHA256 of the data), and
// veritysetup is in PATH for the cases run against it.

func requireKernel(t *testing.T) {
	t.Helper()
	if os.Getenv("VERITYTREE_KERNEL_TESTS") == "" {
		t.Skip("opens devices in this machine's device-mapper: set VERITYTREE_KERNEL_TESTS=1 to run it (tests/kernel runs it in a guest)")
	}
}

// kimage is an image and its tree, made by Format.
type kimage struct {
	data, hash, fec string
	bytes           []byte
	root            []byte
	res             *FormatResult
}

func (k *kimage) sum() string {
	s := sha256.Sum256(k.bytes[:k.res.Layout.Geometry.DataSize()])
	return hex.EncodeToString(s[:])
}

// newKImage writes blocks random 4 KiB blocks (every 7th zero) and their
// tree with opts (HASH "" is DATA.verity).
func newKImage(t *testing.T, blocks int, hashPath string, opts *FormatOptions) *kimage {
	t.Helper()
	dir := t.TempDir()
	k := &kimage{data: filepath.Join(dir, "data.img"), bytes: make([]byte, blocks*4096)}
	rand.NewChaCha8([32]byte{byte(blocks)}).Read(k.bytes)
	for b := 0; b < blocks; b += 7 {
		clear(k.bytes[b*4096 : (b+1)*4096])
	}
	if err := os.WriteFile(k.data, k.bytes, 0o644); err != nil {
		t.Fatal(err)
	}
	switch hashPath {
	case "":
		k.hash = k.data + ".verity"
	case "DATA":
		k.hash = k.data
	default:
		k.hash = filepath.Join(dir, hashPath)
	}
	if opts != nil && opts.FECDevice == "FEC" {
		k.fec = k.data + ".fec"
		opts.FECDevice = k.fec
	}
	res, err := Format(context.Background(), k.data, k.hash, opts)
	if err != nil {
		t.Fatal(err)
	}
	k.res, k.root = res, res.RootHash
	return k
}

// readAll reads the mapped device whole and returns its SHA-256.
func readAll(t *testing.T, path string) (string, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// readBlock reads 4 KiB at block b of the mapped device.
func readBlock(path string, b int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := make([]byte, 4096)
	_, err = f.ReadAt(p, int64(b)*4096)
	return p, err
}

// closeAtEnd deactivates the device whatever happened, and checks no
// loop device still reads the files.
func closeAtEnd(t *testing.T, name string, files ...string) {
	t.Cleanup(func() {
		Deactivate(context.Background(), name, nil)
		noLoopsLeft(t, files...)
	})
}

// checkGone checks the device and its node are gone and its loops
// released.
func checkGone(t *testing.T, d *Device) {
	t.Helper()
	if _, err := Status(context.Background(), d.Name); !errors.Is(err, dm.ErrNoDevice) {
		t.Errorf("status after close: %v, want not active", err)
	}
	if _, err := os.Lstat(d.Path); err == nil {
		t.Errorf("%s is still there", d.Path)
	}
	for _, l := range d.Loops {
		if f, _ := loop.BackingFile(l); f != "" {
			t.Errorf("%s still reads %s", l, f)
		}
		if _, err := os.Stat("/sys/block/" + strings.TrimPrefix(l, "/dev/") + "/loop/backing_file"); err == nil {
			t.Errorf("/sys/block/%s/loop/backing_file is still there", strings.TrimPrefix(l, "/dev/"))
		}
	}
}

// TestKernelActivateFile opens an image and its tree (files: loops),
// reads the whole mapped device, checks what the kernel says of it, and
// closes it.
func TestKernelActivateFile(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 1024, "", nil)
	closeAtEnd(t, "vt-file", k.data, k.hash)
	ctx := context.Background()
	start := time.Now()
	d, err := Activate(ctx, "vt-file", k.data, k.hash, k.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readBlock(d.Path, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING ours: Activate to the first block read: %v", time.Since(start))
	var st unix.Stat_t
	if err := unix.Stat(d.Path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || unix.Minor(uint64(st.Rdev)) != d.Minor {
		t.Errorf("%s: %v, mode %o, minor %d; want the block device dm-%d", d.Path, err, st.Mode, unix.Minor(uint64(st.Rdev)), d.Minor)
	}
	if sum, err := readAll(t, d.Path); err != nil || sum != k.sum() {
		t.Fatalf("reading the mapped device: %v; SHA-256 %s, want %s", err, sum, k.sum())
	}
	if len(d.Loops) != 2 {
		t.Errorf("loops %v, want the hash's and the data's", d.Loops)
	}
	for i, f := range []string{k.hash, k.data} {
		if bf, _ := loop.BackingFile(d.Loops[i]); bf != f {
			t.Errorf("loop %s reads %q, want %s", d.Loops[i], bf, f)
		}
	}
	s, err := Status(ctx, "vt-file")
	if err != nil {
		t.Fatal(err)
	}
	if s.Corrupted || s.StatusText != "V" || !s.ReadOnly || s.Suspended || s.OpenCount != 0 || s.UUID != d.UUID ||
		s.Sectors != 1024*8 || s.Data.File != k.data || s.Hash.File != k.hash || s.Data.Path != d.Loops[1] || s.FEC.Number != "" {
		t.Errorf("status %+v", s)
	}
	// The kernel gives back the very table loaded: its devices are
	// MAJOR:MINOR already.
	if s.Table.String() != d.Table {
		t.Errorf("the kernel's table\n %s\nwe loaded\n %s", s.Table, d.Table)
	}
	if want := "CRYPT-VERITY-" + hex.EncodeToString(k.res.Layout.Geometry.UUID[:]) + "-vt-file"; s.UUID != want {
		t.Errorf("UUID %q, want %q", s.UUID, want)
	}
	if g := s.Geometry; g == nil || g.TreeOffset() != k.res.Layout.Geometry.TreeOffset() || g.DataBlocks != 1024 || !bytes.Equal(s.Table.RootHash, k.root) {
		t.Errorf("the table's tree %+v", g)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)
}

// guestBlock is the block device case tests/kernel prepares: DATA and
// HASH partitions, the root hash, the SHA-256 of the data.
func guestBlock(t *testing.T) (data, hash string, root []byte, sum string) {
	v := os.Getenv("VERITYTREE_GUEST_BLOCK")
	f := strings.Split(v, ",")
	if len(f) != 4 {
		return "", "", nil, ""
	}
	root, err := hex.DecodeString(f[2])
	if err != nil {
		t.Fatalf("VERITYTREE_GUEST_BLOCK %q: %v", v, err)
	}
	return f[0], f[1], root, f[3]
}

// TestKernelActivateBlockDevice opens an image on block devices: no loop
// device; the table names them.
func TestKernelActivateBlockDevice(t *testing.T) {
	requireKernel(t)
	data, hash, root, sum := guestBlock(t)
	if data == "" {
		// Elsewhere, loop devices stand in for the partitions.
		k := newKImage(t, 256, "", nil)
		var devs []string
		for _, f := range []string{k.data, k.hash} {
			l, err := loop.Attach(context.Background(), f, &loop.AttachOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Detach()
			devs = append(devs, l.Path)
		}
		data, hash, root, sum = devs[0], devs[1], k.root, k.sum()
	}
	closeAtEnd(t, "vt-blk")
	d, err := Activate(context.Background(), "vt-blk", data, hash, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Loops) != 0 {
		t.Errorf("loops %v for block devices", d.Loops)
	}
	kt, _ := ParseTable(d.Table)
	for _, c := range [][2]string{{kt.DataDevice, data}, {kt.HashDevice, hash}} {
		if p := devicePath(c[0]); p != c[1] {
			t.Errorf("the table names %s, which is %s, not %s", c[0], p, c[1])
		}
	}
	if got, err := readAll(t, d.Path); err != nil || got != sum {
		t.Errorf("reading: %v; SHA-256 %s, want %s", err, got, sum)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)
}

// TestKernelWrongRoot: a wrong root hash opens, as in veritysetup, and
// the first read fails with an I/O error; the kernel then says C.
func TestKernelWrongRoot(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 64, "", nil)
	closeAtEnd(t, "vt-wrongroot", k.data, k.hash)
	root := slices.Clone(k.root)
	root[0] ^= 1
	d, err := Activate(context.Background(), "vt-wrongroot", k.data, k.hash, root, nil)
	if err != nil {
		t.Fatalf("a wrong root hash must open: %v", err)
	}
	if _, err := readBlock(d.Path, 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("first read: %v, want an I/O error", err)
	}
	if s, err := Status(context.Background(), d.Name); err != nil || !s.Corrupted {
		t.Errorf("status %+v, %v; want corrupted", s, err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)
}

// TestKernelCorruption: a spoiled data block fails to read (EIO), the
// others read; with IgnoreCorruption everything reads, the spoiled block
// as it is.
func TestKernelCorruption(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 64, "", nil)
	spoiled := slices.Clone(k.bytes)
	spoiled[9*4096+100] ^= 0x40
	os.WriteFile(k.data, spoiled, 0o644)
	closeAtEnd(t, "vt-corrupt", k.data, k.hash)
	d, err := Activate(context.Background(), "vt-corrupt", k.data, k.hash, k.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readBlock(d.Path, 9); !errors.Is(err, syscall.EIO) {
		t.Errorf("reading the spoiled block: %v, want an I/O error", err)
	}
	if b, err := readBlock(d.Path, 10); err != nil || !bytes.Equal(b, k.bytes[10*4096:11*4096]) {
		t.Errorf("reading a sound block: %v", err)
	}
	if s, _ := Status(context.Background(), d.Name); s == nil || !s.Corrupted {
		t.Errorf("status %+v, want corrupted", s)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	d, err = Activate(context.Background(), "vt-corrupt", k.data, k.hash, k.root, &ActivateOptions{OnCorruption: IgnoreCorruption})
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(spoiled)
	if sum, err := readAll(t, d.Path); err != nil || sum != hex.EncodeToString(want[:]) {
		t.Errorf("with ignore_corruption: %v; SHA-256 %s, want the spoiled image's %x", err, sum, want)
	}
	if s, _ := Status(context.Background(), d.Name); s == nil || !s.Corrupted || s.Table.OnCorruption != IgnoreCorruption {
		t.Errorf("status %+v, want corrupted, ignore_corruption", s)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)
}

// TestKernelFEC: a few spoiled bytes read back whole through the parity.
func TestKernelFEC(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 300, "", &FormatOptions{FECDevice: "FEC", FECRoots: 4})
	spoiled := slices.Clone(k.bytes)
	for i := range 5 {
		spoiled[20*4096+7*i] ^= 0xff
	}
	os.WriteFile(k.data, spoiled, 0o644)
	closeAtEnd(t, "vt-fec", k.data, k.hash, k.fec)
	d, err := Activate(context.Background(), "vt-fec", k.data, k.hash, k.root, &ActivateOptions{FECDevice: k.fec, FECRoots: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Loops) != 3 {
		t.Errorf("loops %v, want hash, data, FEC", d.Loops)
	}
	if sum, err := readAll(t, d.Path); err != nil || sum != k.sum() {
		t.Errorf("reading through FEC: %v; SHA-256 %s, want the original %s", err, sum, k.sum())
	}
	s, err := Status(context.Background(), d.Name)
	if err != nil || s.Table.FECRoots != 4 || s.Table.FECBlocks != k.res.FEC.Blocks || s.FEC.File != k.fec {
		t.Errorf("status %+v, %v", s, err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)
}

// TestKernelHashOffsetNoSuperblock: the tree inside the image, with and
// without a superblock; one loop device.
func TestKernelHashOffsetNoSuperblock(t *testing.T) {
	requireKernel(t)
	offset := uint64(200*4096 + 8192)
	for _, noSB := range []bool{false, true} {
		name := fmt.Sprintf("vt-inplace-%v", noSB)
		opts := &FormatOptions{TreeOptions: TreeOptions{HashOffset: offset, NoSuperblock: noSB, Salt: []byte{}, Hash: "sha512"}}
		if !noSB {
			opts.Salt = nil
		}
		k := newKImage(t, 200, "DATA", opts)
		closeAtEnd(t, name, k.data)
		var ao *ActivateOptions
		if noSB {
			ao = &ActivateOptions{TreeOptions: TreeOptions{HashOffset: offset, NoSuperblock: true, Hash: "sha512", Salt: []byte{}, DataBlocks: 200}}
		} else {
			ao = &ActivateOptions{TreeOptions: TreeOptions{HashOffset: offset}}
		}
		d, err := Activate(context.Background(), name, k.data, k.data, k.root, ao)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Loops) != 1 {
			t.Errorf("%s: loops %v, want one", name, d.Loops)
		}
		wantUUID := "CRYPT-VERITY-" + name
		if !noSB {
			wantUUID = "CRYPT-VERITY-" + hex.EncodeToString(k.res.Layout.Geometry.UUID[:]) + "-" + name
		}
		s, err := Status(context.Background(), name)
		if err != nil || s.UUID != wantUUID || s.Table.Hash != "sha512" || noSB && len(s.Table.Salt) != 0 || s.Table.DataDevice != s.Table.HashDevice {
			t.Errorf("%s: status %+v, %v; want UUID %s", name, s, err, wantUUID)
		}
		if sum, err := readAll(t, d.Path); err != nil || sum != k.sum() {
			t.Errorf("%s: %v; SHA-256 %s, want %s", name, err, sum, k.sum())
		}
		if err := d.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkGone(t, d)
	}
}

// TestKernelActivateTwice: a second Activate of the same name is refused
// and leaves no loop device of its own.
func TestKernelActivateTwice(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 32, "", nil)
	k2 := newKImage(t, 33, "", nil)
	closeAtEnd(t, "vt-twice", k.data, k.hash, k2.data, k2.hash)
	d, err := Activate(context.Background(), "vt-twice", k.data, k.hash, k.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Activate(context.Background(), "vt-twice", k2.data, k2.hash, k2.root, nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRefused || !errors.Is(err, dm.ErrExist) || err.Error() != "device vt-twice already exists" {
		t.Errorf("a second Activate: %v, want KindRefused 'device vt-twice already exists'", err)
	}
	noLoopsLeft(t, k2.data, k2.hash)
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)

	// What an Activate killed before its table went live leaves (this
	// image's UUID, no table) does not stop the rerun.
	ctl, err := dm.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if _, err := ctl.Create("vt-twice", dmUUID(k.res.Layout.Geometry, "vt-twice")); err != nil {
		t.Fatal(err)
	}
	d, err = Activate(context.Background(), "vt-twice", k.data, k.hash, k.root, nil)
	if err != nil {
		t.Fatalf("a rerun after a killed Activate: %v", err)
	}
	if sum, err := readAll(t, d.Path); err != nil || sum != k.sum() {
		t.Errorf("reading: %v", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, d)
}

// TestKernelDeferred: a device held open is not closed; deferred, it is
// closed at its last close, releasing its loops; the deferral can be
// cancelled.
func TestKernelDeferred(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 32, "", nil)
	closeAtEnd(t, "vt-deferred", k.data, k.hash)
	ctx := context.Background()
	d, err := Activate(ctx, "vt-deferred", k.data, k.hash, k.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = Deactivate(ctx, d.Name, nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRefused || !errors.Is(err, dm.ErrBusy) {
		t.Errorf("closing a held device: %v, want KindRefused, dm.ErrBusy", err)
	}
	res, err := Deactivate(ctx, d.Name, &DeactivateOptions{Deferred: true})
	if err != nil || !res.Deferred || len(res.Released) != 0 {
		t.Fatalf("deferred: %+v, %v", res, err)
	}
	if s, err := Status(ctx, d.Name); err != nil || !s.DeferredRemove || s.OpenCount != 1 {
		t.Errorf("status %+v, %v; want deferred removal, open once", s, err)
	}
	if _, err := Deactivate(ctx, d.Name, &DeactivateOptions{CancelDeferred: true}); err != nil {
		t.Fatal(err)
	}
	if s, _ := Status(ctx, d.Name); s == nil || s.DeferredRemove {
		t.Errorf("after the cancel: %+v", s)
	}
	if res, err := Deactivate(ctx, d.Name, &DeactivateOptions{Deferred: true}); err != nil || !res.Deferred {
		t.Fatalf("deferred again: %+v, %v", res, err)
	}
	held.Close()
	// The kernel removes it from a work queue after the last close.
	for i := 0; ; i++ {
		if _, err := Status(ctx, d.Name); errors.Is(err, dm.ErrNoDevice) {
			if f, _ := loop.BackingFile(d.Loops[0]); f == "" {
				break
			}
		}
		if i == 500 {
			t.Fatal("not removed after its last close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkGone(t, d)
}

// TestKernelUndo makes each step of Activate fail in the real
// device-mapper: no device, no loop device is left.
func TestKernelUndo(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 40, "", &FormatOptions{FECDevice: "FEC"})
	ctl, err := dm.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	for _, failAt := range []string{"loop HASH", "loop DATA", "loop FEC device", "create", "load", "resume"} {
		activateStep = func(s string) error {
			if s == failAt {
				return errors.New("injected at " + s)
			}
			return nil
		}
		_, err := Activate(context.Background(), "vt-undo", k.data, k.hash, k.root, &ActivateOptions{FECDevice: k.fec})
		activateStep = func(string) error { return nil }
		if err == nil || !strings.Contains(err.Error(), "injected at "+failAt) {
			t.Errorf("failing at %s: %v", failAt, err)
		}
		if _, err := ctl.Info("vt-undo"); !errors.Is(err, dm.ErrNoDevice) {
			t.Errorf("failing at %s: the device is left (%v)", failAt, err)
			Deactivate(context.Background(), "vt-undo", nil)
		}
		if _, err := os.Lstat(dm.NodePath("vt-undo")); err == nil {
			t.Errorf("failing at %s: the node is left", failAt)
		}
		noLoopsLeft(t, k.data, k.hash, k.fec)
	}
}

// TestKernelSignatureKeyMissing: a root hash signature key that is not in
// the keyring is refused by the kernel; nothing is left.
func TestKernelSignatureKeyMissing(t *testing.T) {
	requireKernel(t)
	k := newKImage(t, 16, "", nil)
	closeAtEnd(t, "vt-sig", k.data, k.hash)
	_, err := Activate(context.Background(), "vt-sig", k.data, k.hash, k.root, &ActivateOptions{RootHashSigKey: "vt:no-such-key"})
	if err == nil {
		t.Fatal("opened with a signature key that is not in the keyring")
	}
	t.Logf("%v", err)
	if !errors.Is(err, dm.ErrNoKey) && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("%v: want ENOKEY (or EINVAL from a kernel without signatures)", err)
	}
	noLoopsLeft(t, k.data, k.hash)
}

// TestKernelVeritysetup opens with one tool and queries and closes with
// the other, both ways, and compares what the kernel has of each: the
// same table (the loops' numbers aside), the same dm UUID.
func TestKernelVeritysetup(t *testing.T) {
	requireKernel(t)
	vs, err := exec.LookPath("veritysetup")
	if err != nil {
		if os.Getenv("VERITYTREE_GUEST_VERITYSETUP") != "" {
			t.Fatal("veritysetup is not in PATH")
		}
		t.Skip("no veritysetup here")
	}
	ctx := context.Background()
	k := newKImage(t, 512, "", &FormatOptions{FECDevice: "FEC"})
	closeAtEnd(t, "vt-vs", k.data, k.hash, k.fec)
	run := func(args ...string) (string, int) {
		out, err := exec.Command(vs, args...).CombinedOutput()
		code := 0
		if x, ok := err.(*exec.ExitError); ok {
			code = x.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	theirs := veritysetupOpensWeClose(t, ctx, run, k)
	ours := weOpenVeritysetupCloses(t, ctx, run, k)
	compareKernelViews(t, theirs, ours)
	checkNamesHeld(t, ctx, run, k)
}

// veritysetupRun runs veritysetup with args: its output and exit code.
type veritysetupRun func(args ...string) (string, int)

// kernelView is what the kernel has of an open device: its status, its
// node, its loops' logical block sizes.
type kernelView struct {
	status *DeviceStatus
	node   string
	lbs    []string
}

// veritysetupOpensWeClose: veritysetup opens k; we query and close.
func veritysetupOpensWeClose(t *testing.T, ctx context.Context, run veritysetupRun, k *kimage) kernelView {
	t.Helper()
	rootHex := hex.EncodeToString(k.root)
	start := time.Now()
	if out, code := run("open", k.data, "vt-vs", k.hash, rootHex, "--fec-device="+k.fec, "--ignore-zero-blocks", "--check-at-most-once"); code != 0 {
		t.Fatalf("veritysetup open: exit %d: %s", code, out)
	}
	if _, err := readBlock(dm.NodePath("vt-vs"), 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING veritysetup: open to the first block read: %v", time.Since(start))
	theirs, err := Status(ctx, "vt-vs")
	if err != nil {
		t.Fatal(err)
	}
	view := kernelView{status: theirs, node: nodeInfo(t, "vt-vs"), lbs: logicalBlockSizes(theirs)}
	if theirs.Data.File != k.data || theirs.Hash.File != k.hash || theirs.FEC.File != k.fec || theirs.Corrupted || !theirs.ReadOnly {
		t.Errorf("status of veritysetup's device: %+v", theirs)
	}
	if sum, err := readAll(t, dm.NodePath("vt-vs")); err != nil || sum != k.sum() {
		t.Errorf("reading veritysetup's device: %v", err)
	}
	res, err := Deactivate(ctx, "vt-vs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Released) != 3 {
		t.Errorf("closing veritysetup's device released %v, want its three loops", res.Released)
	}
	if out, code := run("status", "vt-vs"); code != 4 || !strings.Contains(out, "is inactive") {
		t.Errorf("veritysetup status after our close: exit %d: %s", code, out)
	}
	noLoopsLeft(t, k.data, k.hash, k.fec)
	return view
}

// weOpenVeritysetupCloses: we open k; veritysetup queries and closes.
func weOpenVeritysetupCloses(t *testing.T, ctx context.Context, run veritysetupRun, k *kimage) kernelView {
	t.Helper()
	rootHex := hex.EncodeToString(k.root)
	start := time.Now()
	d, err := Activate(ctx, "vt-vs", k.data, k.hash, k.root, &ActivateOptions{FECDevice: k.fec, IgnoreZeroBlocks: true, CheckAtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readBlock(d.Path, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING ours: Activate to the first block read: %v", time.Since(start))
	ours, err := Status(ctx, "vt-vs")
	if err != nil {
		t.Fatal(err)
	}
	view := kernelView{status: ours, node: nodeInfo(t, "vt-vs"), lbs: logicalBlockSizes(ours)}
	out, code := run("status", "vt-vs")
	if code != 0 {
		t.Fatalf("veritysetup status of our device: exit %d: %s", code, out)
	}
	for _, want := range []string{"/dev/mapper/vt-vs is active", "type:        VERITY", "status:      verified", "root hash:   " + rootHex,
		"data loop:   " + k.data, "hash loop:   " + k.hash, "FEC device:  " + d.Loops[2], "flags:       ignore_zero_blocks check_at_most_once",
		"mode:        readonly"} {
		if !strings.Contains(out, want) {
			t.Errorf("veritysetup status lacks %q:\n%s", want, out)
		}
	}
	t.Logf("veritysetup status of our device:\n%s", out)
	if out, code := run("close", "vt-vs"); code != 0 {
		t.Fatalf("veritysetup close of our device: exit %d: %s", code, out)
	}
	checkGone(t, d)
	return view
}

// compareKernelViews: the kernel has the same of both, but for the loops'
// numbers.
func compareKernelViews(t *testing.T, theirs, ours kernelView) {
	t.Helper()
	norm := func(s *DeviceStatus) string {
		kt := *s.Table
		kt.DataDevice, kt.HashDevice, kt.FECDevice = s.Data.File, s.Hash.File, s.FEC.File
		return kt.String()
	}
	if norm(theirs.status) != norm(ours.status) {
		t.Errorf("tables, devices as their files:\nveritysetup's %s\nours          %s", norm(theirs.status), norm(ours.status))
	}
	if theirs.status.UUID != ours.status.UUID || theirs.status.Sectors != ours.status.Sectors {
		t.Errorf("veritysetup's UUID %q over %d sectors, ours %q over %d", theirs.status.UUID, theirs.status.Sectors, ours.status.UUID, ours.status.Sectors)
	}
	if theirs.node != ours.node {
		t.Errorf("/dev/mapper/vt-vs: veritysetup's %s, ours %s", theirs.node, ours.node)
	}
	if !slices.Equal(theirs.lbs, ours.lbs) {
		t.Errorf("the loops' logical block sizes: veritysetup's %v, ours %v", theirs.lbs, ours.lbs)
	}
	t.Logf("veritysetup's UUID %s; table %s; loops' block sizes %v; node %s", theirs.status.UUID, theirs.status.Table, theirs.lbs, theirs.node)
}

// checkNamesHeld: veritysetup refuses a name we hold, as we refuse one it
// holds.
func checkNamesHeld(t *testing.T, ctx context.Context, run veritysetupRun, k *kimage) {
	t.Helper()
	rootHex := hex.EncodeToString(k.root)
	d, err := Activate(ctx, "vt-vs", k.data, k.hash, k.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := run("open", k.data, "vt-vs", k.hash, rootHex); code != 5 || !strings.Contains(out, "Device vt-vs already exists.") {
		t.Errorf("veritysetup open of a name we hold: exit %d: %s", code, out)
	}
	d.Close(ctx)
	if out, code := run("open", k.data, "vt-vs", k.hash, rootHex); code != 0 {
		t.Fatalf("veritysetup open: exit %d: %s", code, out)
	}
	if _, err := Activate(ctx, "vt-vs", k.data, k.hash, k.root, nil); !errors.Is(err, dm.ErrExist) {
		t.Errorf("Activate of a name veritysetup holds: %v", err)
	}
	if out, code := run("close", "vt-vs"); code != 0 {
		t.Errorf("veritysetup close: exit %d: %s", code, out)
	}
}

// nodeInfo describes /dev/mapper/NAME: its type and mode.
func nodeInfo(t *testing.T, name string) string {
	var st unix.Stat_t
	if err := unix.Lstat(dm.NodePath(name), &st); err != nil {
		t.Fatal(err)
	}
	kind := map[uint32]string{unix.S_IFBLK: "block device", unix.S_IFLNK: "link"}[st.Mode&unix.S_IFMT]
	return fmt.Sprintf("%s, mode %o, uid %d, gid %d", kind, st.Mode&0o7777, st.Uid, st.Gid)
}

// logicalBlockSizes are those of the device's loops (hash, data, FEC).
func logicalBlockSizes(s *DeviceStatus) []string {
	var lbs []string
	for _, d := range []BackingDevice{s.Hash, s.Data, s.FEC} {
		b, _ := os.ReadFile("/sys/dev/block/" + d.Number + "/queue/logical_block_size")
		lbs = append(lbs, strings.TrimSpace(string(b)))
	}
	return lbs
}

// TestKernelLoopsAsVeritysetup opens trees of several block sizes with
// veritysetup and with Activate: the loop devices must be alike (logical
// block size, read-only or not).
func TestKernelLoopsAsVeritysetup(t *testing.T) {
	requireKernel(t)
	vs, err := exec.LookPath("veritysetup")
	if err != nil {
		if os.Getenv("VERITYTREE_GUEST_VERITYSETUP") != "" {
			t.Fatal("veritysetup is not in PATH")
		}
		t.Skip("no veritysetup here")
	}
	ctx := context.Background()
	for _, c := range []struct {
		dbs, hbs int
		inPlace  bool
	}{{512, 1024, false}, {1024, 4096, false}, {4096, 512, false}, {2048, 2048, false}, {512, 4096, true}, {4096, 1024, true}} {
		opts := &FormatOptions{TreeOptions: TreeOptions{DataBlockSize: c.dbs, HashBlockSize: c.hbs}}
		if c.dbs == c.hbs {
			opts.FECDevice = "FEC"
		}
		hashPath := ""
		var ao ActivateOptions
		if c.inPlace {
			hashPath, opts.HashOffset, ao.HashOffset = "DATA", 64*4096, 64*4096
		}
		k := newKImage(t, 64, hashPath, opts)
		name := fmt.Sprintf("vt-lbs-%d-%d-%v", c.dbs, c.hbs, c.inPlace)
		closeAtEnd(t, name, k.data, k.hash, k.fec)
		ao.FECDevice = k.fec
		args := []string{"open", k.data, name, k.hash, hex.EncodeToString(k.root)}
		if k.fec != "" {
			args = append(args, "--fec-device="+k.fec)
		}
		if c.inPlace {
			args = append(args, fmt.Sprintf("--hash-offset=%d", ao.HashOffset))
		}
		bs := [2]int{c.dbs, c.hbs}
		var theirLoops []string
		if out, err := exec.Command(vs, args...).CombinedOutput(); err != nil {
			// veritysetup gives a loop shared by data and tree the data
			// block size, which a smaller hash block size cannot be read
			// through.
			t.Logf("block sizes %d/%d, in place %v: veritysetup cannot open it: %v: %s", c.dbs, c.hbs, c.inPlace, err, strings.TrimSpace(string(out)))
		} else {
			theirs, err := Status(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			theirLoops = loopTraits(theirs)
			if out, err := exec.Command(vs, "close", name).CombinedOutput(); err != nil {
				t.Fatalf("veritysetup close: %v: %s", err, out)
			}
		}
		d, err := Activate(ctx, name, k.data, k.hash, k.root, &ao)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ourLoops := loopTraits(ours)
		if sum, err := readAll(t, d.Path); err != nil || sum != k.sum() {
			t.Errorf("block sizes %d/%d: reading: %v", bs[0], bs[1], err)
		}
		d.Close(ctx)
		t.Logf("block sizes %d/%d, in place %v: veritysetup's loops (hash, data, FEC) %v, ours %v", bs[0], bs[1], c.inPlace, theirLoops, ourLoops)
		if theirLoops == nil {
			continue
		}
		// The logical block sizes must be the same; ours are read-only.
		for i := range max(len(theirLoops), len(ourLoops)) {
			if i >= len(theirLoops) || i >= len(ourLoops) || strings.Split(theirLoops[i], ",")[0] != strings.Split(ourLoops[i], ",")[0] ||
				!strings.HasSuffix(ourLoops[i], "ro=1") {
				t.Errorf("block sizes %d/%d: veritysetup's loops %v, ours %v", bs[0], bs[1], theirLoops, ourLoops)
				break
			}
		}
	}
}

// loopTraits are the logical block size and read-only flag of the
// device's hash, data and FEC loops, one for each loop.
func loopTraits(s *DeviceStatus) []string {
	var traits []string
	seen := map[string]bool{}
	for _, d := range []BackingDevice{s.Hash, s.Data, s.FEC} {
		if d.Number == "" || seen[d.Number] {
			continue
		}
		seen[d.Number] = true
		lbs, _ := os.ReadFile("/sys/dev/block/" + d.Number + "/queue/logical_block_size")
		ro, _ := os.ReadFile("/sys/dev/block/" + d.Number + "/ro")
		traits = append(traits, fmt.Sprintf("lbs=%s,ro=%s", strings.TrimSpace(string(lbs)), strings.TrimSpace(string(ro))))
	}
	return traits
}

// TestKernelOpenTiming measures, alternately on the same image, the time
// from Activate, and from veritysetup open, to the first block read from
// the mapped device; it logs them (nothing is asserted of durations).
func TestKernelOpenTiming(t *testing.T) {
	requireKernel(t)
	vs, err := exec.LookPath("veritysetup")
	if err != nil {
		if os.Getenv("VERITYTREE_GUEST_VERITYSETUP") != "" {
			t.Fatal("veritysetup is not in PATH")
		}
		t.Skip("no veritysetup here")
	}
	ctx := context.Background()
	k := newKImage(t, 1024, "", nil)
	closeAtEnd(t, "vt-time", k.data, k.hash)
	const rounds = 5
	var ours, theirs []time.Duration
	for range rounds {
		start := time.Now()
		if out, err := exec.Command(vs, "open", k.data, "vt-time", k.hash, hex.EncodeToString(k.root)).CombinedOutput(); err != nil {
			t.Fatalf("veritysetup open: %v: %s", err, out)
		}
		if _, err := readBlock(dm.NodePath("vt-time"), 0); err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, time.Since(start))
		if out, err := exec.Command(vs, "close", "vt-time").CombinedOutput(); err != nil {
			t.Fatalf("veritysetup close: %v: %s", err, out)
		}
		start = time.Now()
		d, err := Activate(ctx, "vt-time", k.data, k.hash, k.root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readBlock(d.Path, 0); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, time.Since(start))
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("TIMING open to the first block read, %d rounds alternating: Activate median %v %v; veritysetup open median %v %v",
		rounds, median(ours), ours, median(theirs), theirs)
}
