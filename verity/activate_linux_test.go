package verity

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/loop"
)

// fakeMapper stands in for device-mapper where the kernel has none (the
// machine the tests usually run on): it keeps its devices in memory and,
// as the kernel does, holds the devices a loaded table names open, so that
// loop devices stay attached until the device is removed.
type fakeMapper struct {
	mu      sync.Mutex
	devs    map[string]*fakeDevice
	calls   []string
	minor   uint32
	removed int
	// lose: another process removes the device before its table loads.
	lose bool
	// onLoad, when set, runs as Load starts, on the caller's thread.
	onLoad func(name string)
}

type fakeDevice struct {
	info   dm.Info
	table  []dm.Target
	live   bool
	held   []*os.File
	status string
}

func newFakeMapper() *fakeMapper { return &fakeMapper{devs: map[string]*fakeDevice{}} }

// use makes Activate, Deactivate and Status use f for the test.
func (f *fakeMapper) use(t *testing.T) {
	old := openMapper
	openMapper = func(bool) (mapper, error) { return f, nil }
	t.Cleanup(func() {
		openMapper = old
		f.mu.Lock()
		defer f.mu.Unlock()
		for name, d := range f.devs {
			t.Errorf("device %s left behind", name)
			for _, h := range d.held {
				h.Close()
			}
		}
	})
}

func (f *fakeMapper) call(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeMapper) get(op, name string) (*fakeDevice, error) {
	d := f.devs[name]
	if d == nil {
		return nil, &dm.Error{Op: op, Name: name, Err: syscall.ENXIO}
	}
	return d, nil
}

func (f *fakeMapper) Info(name string) (*dm.Info, error) {
	f.call("info " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.get("query", name)
	if err != nil {
		return nil, err
	}
	i := d.info
	return &i, nil
}

func (f *fakeMapper) Create(name, uuid string) (*dm.Info, error) {
	f.call("create " + name + " " + uuid)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.devs[name] != nil {
		return nil, &dm.Error{Op: "create", Name: name, Err: syscall.EBUSY}
	}
	f.minor++
	d := &fakeDevice{info: dm.Info{Name: name, UUID: uuid, Major: 253, Minor: f.minor}}
	f.devs[name] = d
	i := d.info
	return &i, nil
}

func (f *fakeMapper) Load(name string, targets []dm.Target, opts *dm.LoadOptions) error {
	f.call(fmt.Sprintf("load %s %d %s %s readonly=%v", name, targets[0].Length, targets[0].Type, targets[0].Params, opts.ReadOnly))
	if f.onLoad != nil {
		f.onLoad(name)
	}
	t, err := ParseTable(targets[0].Params)
	if err != nil {
		return &dm.Error{Op: "load the table of", Name: name, Err: syscall.EINVAL}
	}
	// Hold the devices, as the kernel does.
	var held []*os.File
	for _, n := range []string{t.DataDevice, t.HashDevice, t.FECDevice} {
		if n == "" {
			continue
		}
		h, err := os.Open(devicePath(n))
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			return &dm.Error{Op: "load the table of", Name: name, Err: syscall.ENODEV}
		}
		held = append(held, h)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose {
		delete(f.devs, name)
	}
	d, err := f.get("load the table of", name)
	if err != nil {
		for _, h := range held {
			h.Close()
		}
		return err
	}
	d.table, d.held = targets, held
	d.info.Flags |= dm.FlagInactivePresent
	if opts.ReadOnly {
		d.info.Flags |= dm.FlagReadOnly
	}
	return nil
}

func (f *fakeMapper) Resume(ctx context.Context, name string) (*dm.Info, error) {
	f.call("resume " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.get("resume", name)
	if err != nil {
		return nil, err
	}
	d.live, d.status = true, "V"
	d.info.Flags = d.info.Flags&^dm.FlagInactivePresent | dm.FlagActivePresent
	d.info.TargetCount = len(d.table)
	i := d.info
	return &i, nil
}

func (f *fakeMapper) Remove(ctx context.Context, name string, opts *dm.RemoveOptions) (bool, error) {
	f.call("remove " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.get("remove", name)
	if err != nil {
		return false, err
	}
	if d.info.OpenCount > 0 {
		if opts != nil && opts.Deferred {
			d.info.Flags |= dm.FlagDeferredRemove
			return true, nil
		}
		return false, &dm.Error{Op: "remove", Name: name, Err: syscall.EBUSY}
	}
	for _, h := range d.held {
		h.Close()
	}
	delete(f.devs, name)
	f.removed++
	return false, nil
}

func (f *fakeMapper) CancelDeferredRemove(name string) error {
	f.call("cancel " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.get("send a message to", name)
	if err != nil {
		return err
	}
	d.info.Flags &^= dm.FlagDeferredRemove
	return nil
}

func (f *fakeMapper) Table(name string) (*dm.Info, []dm.Target, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.get("query the table of", name)
	if err != nil {
		return nil, nil, err
	}
	i := d.info
	if !d.live {
		return &i, nil, nil
	}
	return &i, slices.Clone(d.table), nil
}

func (f *fakeMapper) Status(name string) (*dm.Info, []dm.Target, error) {
	info, ts, err := f.Table(name)
	if err == nil && len(ts) == 1 {
		ts[0].Params = f.devs[name].status
	}
	return info, ts, err
}

func (f *fakeMapper) Close() error { return nil }

// requireLoops skips where loop devices cannot be attached, unless the
// kernel tests run (VERITYTREE_KERNEL_TESTS, in tests/kernel's guest).
func requireLoops(t *testing.T) {
	t.Helper()
	fd, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		if os.Geteuid() == 0 {
			return
		}
	}
	if os.Getenv("VERITYTREE_KERNEL_TESTS") != "" {
		t.Fatalf("loop devices are needed here: /dev/loop-control: %v, uid %d", err, os.Geteuid())
	}
	t.Skipf("no loop devices here (/dev/loop-control: %v, uid %d); tests/kernel runs the kernel's side in a guest", err, os.Geteuid())
}

// attachedTo fails the test if a loop device reads one of the files.
func noLoopsLeft(t *testing.T, files ...string) {
	t.Helper()
	for _, f := range files {
		if found, _ := loop.Find(f); len(found) > 0 {
			t.Errorf("%s is still attached to %v", f, found)
			for _, l := range found {
				loop.Detach(l)
			}
		}
	}
}

// TestActivateFake activates through the fake device-mapper with real
// loop devices: veritysetup's UUID, its table over the loops' numbers,
// loops hash first, then data, then FEC; Status reads the table back;
// Deactivate releases the loops.
func TestActivateFake(t *testing.T) {
	requireLoops(t)
	fx := newFixture(t, 64, 4096, 2, 1)
	fm := newFakeMapper()
	fm.use(t)
	defer noLoopsLeft(t, fx.dataPath, fx.hashPath, fx.fecPath)
	ctx := context.Background()
	d, err := Activate(ctx, "vt-fake", fx.dataPath, fx.hashPath, fx.root, &ActivateOptions{FECDevice: fx.fecPath, IgnoreZeroBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "CRYPT-VERITY-" + hex.EncodeToString(fx.g.UUID[:]) + "-vt-fake"; d.UUID != want {
		t.Errorf("UUID %q, want %q", d.UUID, want)
	}
	if d.Path != "/dev/mapper/vt-fake" || d.Sectors != 64*8 || len(d.Loops) != 3 || d.FEC == nil || !bytes.Equal(d.RootHash, fx.root) {
		t.Fatalf("device %+v", d)
	}
	checkLoopsRead(t, d.Loops, fx.hashPath, fx.dataPath, fx.fecPath)
	number := func(l string) string {
		var st unix.Stat_t
		unix.Stat(l, &st)
		return fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	}
	want, err := Table(fx.g, fx.root, d.FEC, &TableOptions{HashDevice: number(d.Loops[0]), DataDevice: number(d.Loops[1]),
		FECDevice: number(d.Loops[2]), IgnoreZeroBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Table != want.Table {
		t.Errorf("table %q\nwant  %q", d.Table, want.Table)
	}
	wantCalls := []string{"info vt-fake", "create vt-fake " + d.UUID, fmt.Sprintf("load vt-fake %d verity %s readonly=true", 64*8, want.Table), "resume vt-fake"}
	if !slices.Equal(fm.calls, wantCalls) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(fm.calls, "\n"), strings.Join(wantCalls, "\n"))
	}

	// The loops hold the descriptors Activate share-locked: a writer
	// (veritygen, a repair) is refused while the device is there.
	if locked(t, fx.hashPath) != unix.EWOULDBLOCK || locked(t, fx.dataPath) != unix.EWOULDBLOCK {
		t.Error("the files are not locked against writers while the device is active")
	}

	checkFakeStatus(t, ctx, d, fx)

	res, err := Deactivate(ctx, "vt-fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deferred || !slices.Equal(res.Released, d.Loops) {
		t.Errorf("deactivation %+v, want the loops %v released", res, d.Loops)
	}
	if err := locked(t, fx.hashPath); err != nil {
		t.Errorf("HASH still locked after Deactivate: %v", err)
	}
}

// checkLoopsRead: loop i reads files[i], read-only.
func checkLoopsRead(t *testing.T, loops []string, files ...string) {
	t.Helper()
	for i, file := range files {
		if bf, err := loop.BackingFile(loops[i]); err != nil || bf != file {
			t.Errorf("loop %d (%s) reads %q (%v), want %s", i, loops[i], bf, err, file)
		}
		if ro, _ := os.ReadFile("/sys/block/" + strings.TrimPrefix(loops[i], "/dev/") + "/ro"); string(ro) != "1\n" {
			t.Errorf("%s is not read-only", loops[i])
		}
	}
}

// checkFakeStatus: Status reads back TestActivateFake's device d of fx's
// files and tree.
func checkFakeStatus(t *testing.T, ctx context.Context, d *Device, fx *fixture) {
	t.Helper()
	s, err := Status(ctx, "vt-fake")
	if err != nil {
		t.Fatal(err)
	}
	if s.UUID != d.UUID || s.Corrupted || !s.ReadOnly || s.Sectors != d.Sectors || s.Table.String() != d.Table ||
		s.Data.File != fx.dataPath || s.Hash.File != fx.hashPath || s.FEC.File != fx.fecPath || s.Data.Path != d.Loops[1] {
		t.Errorf("status %+v", s)
	}
	if s.Geometry == nil || s.Geometry.TreeOffset() != fx.g.TreeOffset() || s.Geometry.HashEnd() != fx.g.HashEnd() || s.Geometry.DataBlocks != 64 {
		t.Errorf("the table's tree %+v, want the superblock's %+v", s.Geometry, fx.g)
	}
}

// locked tries an exclusive lock on the file, as a writer takes it, and
// returns the error (EWOULDBLOCK when someone holds a lock).
func locked(t *testing.T, path string) error {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// TestActivateOneLoopPerFile: the tree (and the parity) in the image
// itself take one loop device.
func TestActivateOneLoopPerFile(t *testing.T) {
	requireLoops(t)
	fx := newFixture(t, 32, 4096, 2, 2)
	image := append(append(slices.Clone(fx.data), fx.hash...), fx.parity...)
	os.WriteFile(fx.dataPath, image, 0o644)
	fm := newFakeMapper()
	fm.use(t)
	defer noLoopsLeft(t, fx.dataPath)
	hashOffset := uint64(len(fx.data))
	d, err := Activate(context.Background(), "vt-one", fx.dataPath, fx.dataPath, fx.root, &ActivateOptions{
		TreeOptions: TreeOptions{HashOffset: hashOffset}, FECDevice: fx.dataPath, FECOffset: hashOffset + uint64(len(fx.hash))})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Loops) != 1 {
		t.Errorf("loops %v, want one", d.Loops)
	}
	tab, _ := ParseTable(d.Table)
	if tab.DataDevice != tab.HashDevice || tab.FECDevice != tab.DataDevice || tab.HashStartBlock != hashOffset/4096+1 {
		t.Errorf("table %s: want one device, the tree at block %d", d.Table, hashOffset/4096+1)
	}
	if _, err := Deactivate(context.Background(), "vt-one", nil); err != nil {
		t.Fatal(err)
	}
}

// TestActivateUndo makes each step fail in turn (and ctx end at each):
// nothing is left, neither a device nor a loop device.
func TestActivateUndo(t *testing.T) {
	requireLoops(t)
	fx := newFixture(t, 16, 4096, 2, 3)
	steps := []string{"loop HASH", "loop DATA", "loop FEC device", "create", "load", "resume"}
	for _, cancelIt := range []bool{false, true} {
		for _, failAt := range steps {
			t.Run(fmt.Sprintf("%s/cancel=%v", failAt, cancelIt), func(t *testing.T) {
				fm := newFakeMapper()
				fm.use(t)
				injected := errors.New("injected failure")
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var seen []string
				activateStep = func(s string) error {
					seen = append(seen, s)
					if s != failAt {
						return nil
					}
					if cancelIt {
						cancel()
						return nil
					}
					return injected
				}
				defer func() { activateStep = func(string) error { return nil } }()
				_, err := Activate(ctx, "vt-undo", fx.dataPath, fx.hashPath, fx.root, &ActivateOptions{FECDevice: fx.fecPath})
				want := injected
				if cancelIt {
					want = context.Canceled
				}
				if !errors.Is(err, want) {
					t.Fatalf("Activate: %v, want %v (steps seen: %v)", err, want, seen)
				}
				if seen[len(seen)-1] != failAt {
					t.Errorf("steps seen %v, want them to end at %s", seen, failAt)
				}
				noLoopsLeft(t, fx.dataPath, fx.hashPath, fx.fecPath)
				if created := slices.Index(steps, failAt) >= 3; created != (fm.removed == 1) {
					t.Errorf("failing at %s: %d devices removed", failAt, fm.removed)
				}
			})
		}
	}
}

// TestActivateRefused: a name in use, bad names and options, a sparse
// image: refused before anything is attached.
func TestActivateRefused(t *testing.T) {
	requireLoops(t)
	fx := newFixture(t, 16, 4096, 2, 4)
	fm := newFakeMapper()
	fm.use(t)
	defer noLoopsLeft(t, fx.dataPath, fx.hashPath)
	ctx := context.Background()
	fm.Create("taken", "")
	defer fm.Remove(ctx, "taken", nil)
	_, err := Activate(ctx, "taken", fx.dataPath, fx.hashPath, fx.root, nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRefused || !errors.Is(err, dm.ErrExist) || err.Error() != "device taken already exists" {
		t.Errorf("an active name: %v, want KindRefused, dm.ErrExist, 'device taken already exists'", err)
	}
	// What an Activate killed between creating the device and making
	// its table live leaves (this image's UUID, no live table) is
	// removed, so that the rerun completes; with a live table, or
	// another UUID, it is another device.
	uuid := dmUUID(fx.g, "left")
	for _, c := range []struct {
		uuid string
		live bool
		ok   bool
	}{{uuid, false, true}, {uuid, true, false}, {"CRYPT-VERITY-left", false, false}} {
		fm.Create("left", c.uuid)
		if c.live {
			fm.devs["left"].live = true
			fm.devs["left"].info.Flags |= dm.FlagActivePresent
		}
		_, err := Activate(ctx, "left", fx.dataPath, fx.hashPath, fx.root, nil)
		if (err == nil) != c.ok || !c.ok && !errors.Is(err, dm.ErrExist) {
			t.Errorf("a device left with UUID %s, live %v: %v", c.uuid, c.live, err)
		}
		if d := fm.devs["left"]; err == nil && (d.info.UUID != uuid || !d.live || len(d.table) != 1) {
			t.Errorf("the device made: %+v", d)
		}
		fm.Remove(ctx, "left", nil)
		noLoopsLeft(t, fx.dataPath, fx.hashPath)
	}
	// Another process takes the device away half-way.
	fm.lose = true
	_, err = Activate(ctx, "lost", fx.dataPath, fx.hashPath, fx.root, nil)
	fm.lose = false
	if !errors.As(err, &e) || e.Kind != KindRefused || err.Error() != "device lost was removed by another process while it was being made" {
		t.Errorf("a device removed half-way: %v", err)
	}
	noLoopsLeft(t, fx.dataPath, fx.hashPath)
	sparseImage := fx.dataPath + ".simg"
	writeSparse(t, sparseImage, fx.data)
	for _, c := range []struct {
		name, data string
		root       []byte
		opts       *ActivateOptions
		kind       Kind
		want       string
	}{
		{"", fx.dataPath, fx.root, nil, KindParam, "the device name is empty"},
		{"a/b", fx.dataPath, fx.root, nil, KindParam, "holds '/'"},
		{"control", fx.dataPath, fx.root, nil, KindParam, "device-mapper's own node"},
		{"vt", fx.dataPath, nil, nil, KindParam, "the root hash is empty"},
		{"vt", fx.dataPath, fx.root[:20], nil, KindParam, "the root hash is 20 bytes"},
		{"vt", fx.dataPath, fx.root, &ActivateOptions{TreeOptions: TreeOptions{Hash: "sha1"}}, KindParam, "parameters come from HASH's superblock"},
		{"vt", fx.dataPath, fx.root, &ActivateOptions{OnCorruption: 9}, KindParam, "unknown corruption mode"},
		{"vt", fx.dataPath, fx.root, &ActivateOptions{RootHashSigKey: "a b"}, KindParam, "key description"},
		{"vt", fx.dataPath, fx.root, &ActivateOptions{TreeOptions: TreeOptions{NoSuperblock: true}}, KindParam, "TreeOptions.NoSuperblock needs TreeOptions.Salt"},
		{"vt", sparseImage, fx.root, nil, KindInput, "Android sparse image"},
		{"vt", "/dev/null", fx.root, nil, KindInput, "character device"},
	} {
		_, err := Activate(ctx, c.name, c.data, fx.hashPath, c.root, c.opts)
		if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %s %+v: %v, want kind %d saying %q", c.name, c.data, c.opts, err, c.kind, c.want)
		}
	}
	noLoopsLeft(t, sparseImage)
	if len(fm.devs) != 1 || fm.devs["taken"] == nil {
		t.Errorf("devices %v", fm.devs)
	}
}

// TestDeactivateFake: an unknown name, a device in use (refused; deferred
// if asked, then cancelled), and a device that is not dm-verity.
func TestDeactivateFake(t *testing.T) {
	fm := newFakeMapper()
	fm.use(t)
	ctx := context.Background()
	var e *Error
	_, err := Deactivate(ctx, "nothing", nil)
	if !errors.As(err, &e) || e.Kind != KindInput || !errors.Is(err, dm.ErrNoDevice) || err.Error() != "device nothing is not active" {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := Status(ctx, "nothing"); !errors.Is(err, dm.ErrNoDevice) || err.Error() != "device nothing is not active" {
		t.Errorf("status of an unknown name: %v", err)
	}
	fm.Create("lin", "")
	fm.devs["lin"].table, fm.devs["lin"].live = []dm.Target{{Length: 8, Type: "linear", Params: "7:0 0"}}, true
	if _, err := Deactivate(ctx, "lin", nil); !errors.As(err, &e) || e.Kind != KindInput || !strings.Contains(err.Error(), "not a dm-verity device") {
		t.Errorf("a linear device: %v", err)
	}
	if _, err := Status(ctx, "lin"); !strings.Contains(fmt.Sprint(err), "not a dm-verity device") {
		t.Errorf("status of a linear device: %v", err)
	}
	// AnyTable removes it, as veritysetup close does.
	if res, err := Deactivate(ctx, "lin", &DeactivateOptions{AnyTable: true}); err != nil || res.Deferred || fm.devs["lin"] != nil {
		t.Errorf("a linear device with AnyTable: %+v, %v", res, err)
	}

	fm.Create("held", "CRYPT-VERITY-held")
	d := fm.devs["held"]
	d.table, d.live, d.info.OpenCount = []dm.Target{{Length: 8, Type: "verity", Params: "1 7:0 7:0 4096 4096 1 1 sha256 " + strings.Repeat("ab", 32) + " -"}}, true, 1
	_, err = Deactivate(ctx, "held", nil)
	if !errors.As(err, &e) || e.Kind != KindRefused || !errors.Is(err, dm.ErrBusy) {
		t.Errorf("a device in use: %v, want KindRefused, dm.ErrBusy", err)
	}
	res, err := Deactivate(ctx, "held", &DeactivateOptions{Deferred: true})
	if err != nil || !res.Deferred || d.info.Flags&dm.FlagDeferredRemove == 0 {
		t.Errorf("deferred: %+v, %v", res, err)
	}
	if s, err := Status(ctx, "held"); err != nil || !s.DeferredRemove {
		t.Errorf("status of a device to be removed: %+v, %v", s, err)
	}
	if _, err := Deactivate(ctx, "held", &DeactivateOptions{CancelDeferred: true}); err != nil || d.info.Flags&dm.FlagDeferredRemove != 0 {
		t.Errorf("cancelling: %v", err)
	}
	d.info.OpenCount = 0
	if _, err := Deactivate(ctx, "held", nil); err != nil {
		t.Errorf("closed at last: %v", err)
	}
}

func TestDMUUID(t *testing.T) {
	fx := newFixture(t, 1, 4096, 2, 5)
	if got, want := dmUUID(fx.g, "vroot"), "CRYPT-VERITY-"+hex.EncodeToString(fx.g.UUID[:])+"-vroot"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	nosb := *fx.g
	nosb.Superblock = false
	if got := dmUUID(&nosb, "vroot"); got != "CRYPT-VERITY-vroot" {
		t.Errorf("without superblock: %q", got)
	}
	if got := dmUUID(fx.g, strings.Repeat("n", 127)); len(got) != 128 || !strings.HasPrefix(got, "CRYPT-VERITY-") {
		t.Errorf("a long name: %d bytes", len(got))
	}
}

func TestDeviceErrorKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind Kind
		hint string
	}{
		{&dm.Error{Op: "open the control device", Err: fmt.Errorf("x: %w", dm.ErrUnsupported)}, KindSystem, "modprobe dm_verity"},
		{&dm.Error{Op: "create", Err: syscall.EPERM}, KindSystem, "root"},
		{&dm.Error{Op: "create", Err: syscall.EBUSY}, KindRefused, "close it first"},
		{&dm.Error{Op: "remove", Err: syscall.EBUSY}, KindRefused, "deferred"},
		{&dm.Error{Op: "remove", Err: syscall.ENXIO}, KindInput, ""},
		{&dm.Error{Op: "load the table of", Err: syscall.EINVAL}, KindInput, ""},
		{&dm.Error{Op: "load the table of", Err: unix.ENOKEY}, KindInput, "keyring"},
		{&loop.Error{Op: "attach", Err: loop.ErrNoFreeDevice}, KindSystem, ""},
		{&loop.Error{Op: "attach", Err: syscall.EIO}, KindIO, ""},
	} {
		err := deviceError(c.err)
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(e.Hint, c.hint) || !errors.Is(err, c.err) {
			t.Errorf("%v: %+v, want kind %d, hint with %q", c.err, e, c.kind, c.hint)
		}
		if errors.Is(c.err, fs.ErrPermission) && !errors.Is(err, ErrSystem) {
			t.Errorf("%v: not ErrSystem", err)
		}
	}
}
