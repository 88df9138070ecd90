package verity

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/loop"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/sparse"
)

// mapper is what Activate, Deactivate and Status use of a *dm.Control;
// tests put a fake in its place where the kernel has no device-mapper.
type mapper interface {
	Info(name string) (*dm.Info, error)
	Create(name, uuid string) (*dm.Info, error)
	Load(name string, targets []dm.Target, opts *dm.LoadOptions) error
	Resume(ctx context.Context, name string) (*dm.Info, error)
	Remove(ctx context.Context, name string, opts *dm.RemoveOptions) (bool, error)
	CancelDeferredRemove(name string) error
	Table(name string) (*dm.Info, []dm.Target, error)
	Status(name string) (*dm.Info, []dm.Target, error)
	Close() error
}

var openMapper = func(noUdev bool) (mapper, error) {
	o := &dm.Options{}
	if noUdev {
		o.Udev = dm.UdevOff
	}
	c, err := dm.Open(o)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// activateStep is called after each step of Activate that leaves
// something to undo; tests make it fail there.
var activateStep = func(step string) error { return nil }

// undoTimeout bounds the removal of a half-made device, which runs even
// when ctx has ended.
const undoTimeout = 30 * time.Second

// Activate opens the image at dataPath with its tree in hashPath (they
// may be the same file, the tree at HashOffset) as the dm-verity device
// name, as `veritysetup open` does, through device-mapper's ioctls: the
// tree's parameters come from its superblock (or opts), files get loop
// devices (read-only; hash first, then data, then FEC; one per file), the
// device is created with veritysetup's dm UUID, its table (as Table makes
// it) loaded read-only and made live, and /dev/mapper/NAME made. The
// kernel then checks every block read against root: a wrong root hash
// opens, and the first read fails with an I/O error, as in veritysetup.
//
// The files stay share-locked while the device is there (its loop
// devices hold the descriptors Activate locked): veritygen and a repair,
// which lock them exclusively, are refused until Deactivate.
//
// When a step fails, or ctx ends, what the earlier steps did is undone:
// no device, no loop device is left. A name that is already active is a
// KindRefused error matching dm.ErrExist; no device-mapper, loop devices
// or root privileges, KindSystem.
func Activate(ctx context.Context, name, dataPath, hashPath string, root []byte, opts *ActivateOptions) (*Device, error) {
	if opts == nil {
		opts = &ActivateOptions{}
	}
	p, err := opts.check(name, root)
	if err != nil {
		return nil, err
	}
	files, err := openActivation(p, opts, dataPath, hashPath, root)
	if err != nil {
		return nil, err
	}
	defer files.close()
	ctl, err := openMapper(opts.NoUdev)
	if err != nil {
		return nil, deviceError(err)
	}
	defer ctl.Close()
	if err := checkInactive(ctx, ctl, name, dmUUID(files.g, name)); err != nil {
		return nil, err
	}
	a := &activation{ctl: ctl, name: name}
	d, err := a.run(ctx, files, opts, root)
	if err != nil {
		if uerr := a.undo(); uerr != nil {
			return nil, &Error{Kind: KindIO, Err: fmt.Errorf("%w; undoing it failed: %v", err, uerr),
				Hint: fmt.Sprintf("remove what is left with verity.Deactivate %s", name), Advice: AdviceDeactivateLeft, Device: name}
		}
		return nil, err
	}
	return d, nil
}

// check checks what needs no file.
func (o *ActivateOptions) check(name string, root []byte) (merkle.Params, error) {
	if err := dm.CheckName(name); err != nil {
		return merkle.Params{}, paramErrorf("name", "", "%v", err)
	}
	p, err := o.verifyOptions().Check()
	if err != nil {
		return p, err
	}
	if len(root) == 0 {
		return p, paramErrorf("root", "", "the root hash is empty")
	}
	if len(o.RootHashSignature) > 0 && o.RootHashSigKey != "" {
		return p, paramErrorf("RootHashSignature", "", "a root hash signature and a signature key description cannot both be given")
	}
	t := o.tableOptions("0:0", "0:0", "")
	return p, t.Check()
}

func (o *ActivateOptions) verifyOptions() *VerifyOptions {
	return &VerifyOptions{TreeOptions: o.TreeOptions, FECDevice: o.FECDevice, FECOffset: o.FECOffset, FECRoots: o.FECRoots}
}

func (o *ActivateOptions) tableOptions(data, hash, fecDev string) *TableOptions {
	return &TableOptions{DataDevice: data, HashDevice: hash, FECDevice: fecDev, OnCorruption: o.OnCorruption,
		IgnoreZeroBlocks: o.IgnoreZeroBlocks, CheckAtMostOnce: o.CheckAtMostOnce, UseTasklets: o.UseTasklets,
		RootHashSigKey: o.RootHashSigKey}
}

// activationFiles are the open files of an activation and the tree.
type activationFiles struct {
	g      *merkle.Geometry
	src    *Source
	hash   *os.File
	parity *fecSetup
	roles  []deviceRole // hash, data, then FEC: the order of the loops
}

// deviceRole is one of the devices the table names.
type deviceRole struct {
	role, path string
	f          *os.File
	info       os.FileInfo
	// blockSize is the block size the kernel reads it in: a loop device
	// for it gets it as its logical block size, as veritysetup's do; 0
	// for the FEC device (512, as veritysetup's).
	blockSize int
}

func (f *activationFiles) close() {
	f.parity.close()
	f.hash.Close()
	f.src.Close()
}

// openActivation opens and locks the files, as Verify does, and works out
// the tree and its error correction.
func openActivation(p merkle.Params, o *ActivateOptions, dataPath, hashPath string, root []byte) (*activationFiles, error) {
	src, err := OpenSource(dataPath, &SourceOptions{Raw: true})
	if err != nil {
		return nil, err
	}
	files := &activationFiles{src: src}
	fail := func(err error) (*activationFiles, error) {
		files.close()
		return nil, err
	}
	if sparse.IsSparse(src.file) {
		return fail(errorf(KindInput, fmt.Sprintf("expand it first (simg2img %s image.raw) and open that", dataPath),
			"DATA %s is an Android sparse image: the kernel reads the bytes as they are", dataPath))
	}
	hashFile, hashSize, err := openImage("HASH", hashPath)
	if err != nil {
		return fail(err)
	}
	files.hash = hashFile
	for _, l := range []struct {
		f          *os.File
		role, path string
	}{{src.file, "DATA", dataPath}, {hashFile, "HASH", hashPath}} {
		if err := lockShared(l.f, l.role, l.path); err != nil {
			return fail(err)
		}
	}
	dataInfo, err := src.file.Stat()
	if err != nil {
		return fail(errorf(KindIO, "", "DATA %s: %v", dataPath, unwrapPath(err)))
	}
	hashInfo, err := hashFile.Stat()
	if err != nil {
		return fail(errorf(KindIO, "", "HASH %s: %v", hashPath, unwrapPath(err)))
	}
	inPlace := os.SameFile(dataInfo, hashInfo)
	if inPlace && p.HashOffset == 0 {
		return fail(paramErrorf("HashOffset", "give the tree's place in DATA with TreeOptions.HashOffset", "HASH is DATA (%s) and no TreeOptions.HashOffset says where the tree is", hashPath))
	}
	if files.g, err = geometryFor(p, src, hashFile, hashPath, hashSize, inPlace, root); err != nil {
		return fail(err)
	}
	files.roles = []deviceRole{{"HASH", hashPath, hashFile, hashInfo, files.g.HashBlockSize}, {"DATA", dataPath, src.file, dataInfo, files.g.DataBlockSize}}
	if o.FECDevice != "" {
		if files.parity, err = openFEC(o.verifyOptions(), files.g, src, dataInfo, hashInfo, hashPath, hashSize); err != nil {
			return fail(err)
		}
		info, err := files.parity.f.Stat()
		if err != nil {
			return fail(errorf(KindIO, "", "FEC device %s: %v", o.FECDevice, unwrapPath(err)))
		}
		files.roles = append(files.roles, deviceRole{"FEC device", o.FECDevice, files.parity.f, info, 0})
	}
	return files, nil
}

// checkInactive fails unless no device has the name, but for the one an
// Activate killed before it made its table live leaves: the UUID this one
// would give, no live table, not open. That one is removed, so that a
// rerun completes.
func checkInactive(ctx context.Context, ctl mapper, name, uuid string) error {
	info, err := ctl.Info(name)
	switch {
	case err == nil && info.UUID == uuid && !info.Active() && info.OpenCount == 0:
		if _, err := ctl.Remove(ctx, name, nil); err == nil {
			return nil
		}
		fallthrough
	case err == nil:
		return &Error{Kind: KindRefused, Err: &causedError{msg: fmt.Sprintf("device %s already exists", name), cause: dm.ErrExist},
			Hint: fmt.Sprintf("close it first (verity.Deactivate %s), or choose another name", name), Advice: AdviceDeactivate, Device: name}
	case errors.Is(err, dm.ErrNoDevice):
		return nil
	}
	return deviceError(err)
}

// activation is what Activate made so far, to undo.
type activation struct {
	ctl     mapper
	name    string
	loops   []*loop.Device
	created bool
}

// run attaches the loops, then creates, loads and resumes the device.
func (a *activation) run(ctx context.Context, files *activationFiles, opts *ActivateOptions, root []byte) (*Device, error) {
	numbers, err := a.attach(ctx, files.roles)
	if err != nil {
		return nil, err
	}
	var fecInfo *FECInfo
	fecNumber := ""
	if files.parity != nil {
		fecInfo, fecNumber = files.parity.info(), numbers[2]
	}
	tableOpts := opts.tableOptions(numbers[1], numbers[0], fecNumber)
	if len(opts.RootHashSignature) > 0 {
		tableOpts.RootHashSigKey = signatureKeyDescription(files.g, a.name)
	}
	bp, err := Table(files.g, root, fecInfo, tableOpts)
	if err != nil {
		return nil, err
	}
	uuid := dmUUID(files.g, a.name)
	if _, err := a.ctl.Create(a.name, uuid); err != nil {
		return nil, deviceError(err)
	}
	a.created = true
	if err := step(ctx, "create"); err != nil {
		return nil, err
	}
	if len(opts.RootHashSignature) > 0 {
		// The key lives in this thread's keyring: the table must be
		// loaded from this thread, and the key goes once it is.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		key, err := addSignatureKey(tableOpts.RootHashSigKey, opts.RootHashSignature)
		if err != nil {
			return nil, err
		}
		defer dropSignatureKey(key)
	}
	if err := a.ctl.Load(a.name, []dm.Target{{Start: 0, Length: bp.Sectors, Type: "verity", Params: bp.Table}}, &dm.LoadOptions{ReadOnly: true}); err != nil {
		return nil, a.madeError(err)
	}
	if err := step(ctx, "load"); err != nil {
		return nil, err
	}
	info, err := a.ctl.Resume(ctx, a.name)
	if err != nil {
		return nil, a.madeError(err)
	}
	if err := step(ctx, "resume"); err != nil {
		return nil, err
	}
	d := &Device{Name: a.name, Path: dm.NodePath(a.name), UUID: uuid, Major: info.Major, Minor: info.Minor, Geometry: files.g,
		RootHash: append([]byte(nil), root...), FEC: fecInfo, Table: bp.Table, Sectors: bp.Sectors}
	// The table holds the loop devices now: ours go, and they clear
	// themselves when the device is removed.
	for _, l := range a.loops {
		d.Loops = append(d.Loops, l.Path)
		l.Close()
	}
	a.loops = nil
	return d, nil
}

// madeError is the error of a step on the device created: one that is
// gone was removed by another process (an Activate of the same name
// taking it for a killed one's leftover), which then has the name.
func (a *activation) madeError(err error) error {
	if errors.Is(err, dm.ErrNoDevice) {
		a.created = false
		return causedErrorf(KindRefused, err, "device %s was removed by another process while it was being made", a.name)
	}
	return deviceError(err)
}

// step ends Activate when ctx has ended, or a test makes the step fail.
func step(ctx context.Context, name string) error {
	if err := activateStep(name); err != nil {
		return err
	}
	return ctx.Err()
}

// attach gives each role's file its device number: a block device's own,
// a loop device's for a file (one per file, in the roles' order).
func (a *activation) attach(ctx context.Context, roles []deviceRole) ([]string, error) {
	numbers := make([]string, len(roles))
next:
	for i, r := range roles {
		for j := range i {
			if os.SameFile(r.info, roles[j].info) {
				numbers[i] = numbers[j]
				continue next
			}
		}
		if isBlockDevice(r.info) {
			n, err := blockNumber(r, i == 1)
			if err != nil {
				return nil, err
			}
			numbers[i] = n
			continue
		}
		l, err := loop.AttachFile(ctx, r.f, &loop.AttachOptions{ReadOnly: true, BlockSize: loopBlockSize(roles, i)})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, deviceError(fmt.Errorf("%s %s: %w", r.role, r.path, err))
		}
		a.loops = append(a.loops, l)
		numbers[i] = fmt.Sprintf("%d:%d", l.Major, l.Minor)
		if err := step(ctx, "loop "+r.role); err != nil {
			return nil, err
		}
	}
	return numbers, nil
}

// loopBlockSize is the logical block size of the loop device for role i
// and the later roles of the same file: the smallest block size the
// kernel reads them in (a larger one would refuse the smaller reads), at
// most a page (the loop driver's limit); 0 for the default, 512.
//
// veritysetup 2.6.1 gives its hash and data loops their block sizes and
// its FEC loop 512 (seen in tests/kernel); its loops are read-write,
// falling back to read-only, where these are read-only: nothing is ever
// written through them.
func loopBlockSize(roles []deviceRole, i int) int {
	bs := 0
	for _, r := range roles[i:] {
		if r.blockSize != 0 && os.SameFile(r.info, roles[i].info) && (bs == 0 || r.blockSize < bs) {
			bs = r.blockSize
		}
	}
	return min(bs, os.Getpagesize())
}

// blockNumber is a block device's MAJOR:MINOR. The data device must not
// be in use (mounted, or mapped by another device), which veritysetup
// checks by opening it O_EXCL.
func blockNumber(r deviceRole, data bool) (string, error) {
	st, ok := r.info.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errorf(KindIO, "", "%s %s: no device number", r.role, r.path)
	}
	if data {
		fd, err := unix.Open(r.path, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
		if err == unix.EBUSY {
			return "", errorf(KindRefused, "unmount it, or close the device that maps it",
				"%s %s is in use (mounted, or mapped by another device)", r.role, r.path)
		}
		if err == nil {
			unix.Close(fd)
		}
	}
	return fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))), nil
}

// undo removes the device if it was created and releases the loops.
func (a *activation) undo() error {
	var err error
	if a.created {
		ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
		_, err = a.ctl.Remove(ctx, a.name, nil)
		cancel()
		if errors.Is(err, dm.ErrNoDevice) {
			err = nil
		}
	}
	for _, l := range a.loops {
		l.Close()
	}
	return err
}

// dmUUID is veritysetup's device-mapper UUID (cryptsetup's
// dm_prepare_uuid): CRYPT-VERITY-, the superblock's UUID without dashes
// and a dash when there is a superblock, the name; at most 128 bytes.
func dmUUID(g *merkle.Geometry, name string) string {
	u := "CRYPT-VERITY-"
	if g.Superblock {
		u += hex.EncodeToString(g.UUID[:]) + "-"
	}
	u += name
	if len(u) > dm.MaxUUIDLen {
		u = u[:dm.MaxUUIDLen]
	}
	return u
}

// deviceError makes an error of the dm and loop packages an *Error of
// the kind it is, with what to do.
func deviceError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	kind, hint, advice := KindIO, "", AdviceNone
	switch {
	case errors.Is(err, dm.ErrUnsupported), errors.Is(err, loop.ErrUnsupported):
		kind, hint = KindSystem, "load device-mapper and dm-verity (modprobe dm_verity) and the loop driver (modprobe loop)"
	case errors.Is(err, fs.ErrPermission):
		kind, hint = KindSystem, "run it as root"
	case errors.Is(err, loop.ErrNoFreeDevice):
		kind = KindSystem
	case errors.Is(err, dm.ErrExist):
		kind, hint, advice = KindRefused, "close it first (verity.Deactivate NAME), or choose another name", AdviceDeactivate
	case errors.Is(err, dm.ErrBusy):
		kind, hint = KindRefused, "close or unmount what uses it, or remove it deferred (DeactivateOptions.Deferred)"
	case errors.Is(err, dm.ErrNoDevice):
		kind = KindInput
	case errors.Is(err, dm.ErrNoKey):
		kind, hint = KindInput, "add the root hash's signature to the kernel's keyring under that description first"
	case errors.Is(err, syscall.EINVAL):
		kind = KindInput
	}
	return &Error{Kind: kind, Err: err, Hint: hint, Advice: advice}
}

// notActive is the error for a name no device has.
func notActive(name string, err error) error {
	return causedErrorf(KindInput, err, "device %s is not active", name)
}

// Deactivate removes the dm-verity device name, as `veritysetup close`
// does; the loop devices it held clear themselves, and Deactivate waits
// (boundedly, while ctx lasts) until they have. A device in use is a
// KindRefused error matching dm.ErrBusy, unless opts.Deferred; a name no
// device has is KindInput, matching dm.ErrNoDevice.
func Deactivate(ctx context.Context, name string, opts *DeactivateOptions) (*DeactivateResult, error) {
	if opts == nil {
		opts = &DeactivateOptions{}
	}
	if err := dm.CheckName(name); err != nil {
		return nil, paramErrorf("name", "", "%v", err)
	}
	ctl, err := openMapper(opts.NoUdev)
	if err != nil {
		return nil, deviceError(err)
	}
	defer ctl.Close()
	_, targets, err := ctl.Table(name)
	if errors.Is(err, dm.ErrNoDevice) {
		return nil, notActive(name, err)
	}
	if err != nil {
		return nil, deviceError(err)
	}
	t, err := verityTarget(name, targets)
	if err != nil && !opts.AnyTable {
		return nil, err
	}
	if opts.CancelDeferred {
		if err := ctl.CancelDeferredRemove(name); err != nil {
			return nil, deviceError(err)
		}
		return &DeactivateResult{}, nil
	}
	var loops []string
	if t != nil {
		loops = autoclearLoops(t)
	}
	deferred, err := ctl.Remove(ctx, name, &dm.RemoveOptions{Deferred: opts.Deferred})
	if errors.Is(err, dm.ErrNoDevice) {
		return nil, notActive(name, err)
	}
	if err != nil {
		return nil, deviceError(err)
	}
	res := &DeactivateResult{Deferred: deferred}
	if !deferred {
		res.Released = waitReleased(ctx, loops)
	}
	return res, nil
}

// verityTarget is the table of a device that is a dm-verity device: one
// verity target.
func verityTarget(name string, targets []dm.Target) (*KernelTable, error) {
	if len(targets) == 0 {
		return nil, errorf(KindInput, "", "device %s has no live table: it is not a dm-verity device yet", name)
	}
	if len(targets) != 1 || targets[0].Type != "verity" {
		types := make([]string, len(targets))
		for i, t := range targets {
			types[i] = t.Type
		}
		return nil, errorf(KindInput, "", "device %s is not a dm-verity device (its table: %s)", name, strings.Join(types, ", "))
	}
	t, err := ParseTable(targets[0].Params)
	if err != nil {
		return nil, errorf(KindInput, "", "device %s: %v", name, err)
	}
	return t, nil
}

// autoclearLoops are the loop devices among the table's that clear
// themselves when released, with their paths.
func autoclearLoops(t *KernelTable) []string {
	var loops []string
	for _, n := range []string{t.HashDevice, t.DataDevice, t.FECDevice} {
		b, err := os.ReadFile("/sys/dev/block/" + n + "/loop/autoclear")
		if err != nil || strings.TrimSpace(string(b)) != "1" {
			continue
		}
		if p := devicePath(n); p != "" && !containsString(loops, p) {
			loops = append(loops, p)
		}
	}
	return loops
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// releaseWait bounds Deactivate's wait for the loop devices to clear.
const releaseWait = 5 * time.Second

// waitReleased waits until the loop devices have no file, for at most
// releaseWait and while ctx lasts, and returns those that cleared.
func waitReleased(ctx context.Context, loops []string) []string {
	var released []string
	deadline := time.Now().Add(releaseWait)
	for _, l := range loops {
		for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
			if f, err := loop.BackingFile(l); err == nil && f == "" {
				released = append(released, l)
				break
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(delay):
			}
		}
	}
	return released
}

// devicePath is the node of the block device MAJOR:MINOR, from sysfs, or
// "".
func devicePath(number string) string {
	b, err := os.ReadFile("/sys/dev/block/" + number + "/uevent")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "DEVNAME="); ok {
			return filepath.Join("/dev", v)
		}
	}
	return ""
}

// Status says what the kernel says of the dm-verity device name, as
// `veritysetup status` does: its flags, whether it has seen corruption,
// its table taken apart and its devices (a loop device's file too). It
// works on devices veritysetup made. A name no device has is KindInput,
// matching dm.ErrNoDevice.
func Status(ctx context.Context, name string) (*DeviceStatus, error) {
	if err := dm.CheckName(name); err != nil {
		return nil, paramErrorf("name", "", "%v", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctl, err := openMapper(true)
	if err != nil {
		return nil, deviceError(err)
	}
	defer ctl.Close()
	info, targets, err := ctl.Table(name)
	if errors.Is(err, dm.ErrNoDevice) {
		return nil, notActive(name, err)
	}
	if err != nil {
		return nil, deviceError(err)
	}
	t, err := verityTarget(name, targets)
	if err != nil {
		return nil, err
	}
	_, status, err := ctl.Status(name)
	if err != nil {
		return nil, deviceError(err)
	}
	s := &DeviceStatus{Name: name, Path: dm.NodePath(name), UUID: info.UUID, Major: info.Major, Minor: info.Minor,
		OpenCount: info.OpenCount, ReadOnly: info.ReadOnly(), Suspended: info.Suspended(), DeferredRemove: info.DeferredRemove(),
		Table: t, Sectors: targets[0].Length, Data: backingDevice(t.DataDevice), Hash: backingDevice(t.HashDevice)}
	if t.FECDevice != "" {
		s.FEC = backingDevice(t.FECDevice)
	}
	s.Geometry, _ = t.Geometry()
	if len(status) == 1 {
		s.StatusText = status[0].Params
		s.Corrupted = strings.HasPrefix(s.StatusText, "C")
	}
	return s, nil
}

// backingDevice describes a device the table names as MAJOR:MINOR.
func backingDevice(number string) BackingDevice {
	d := BackingDevice{Number: number, Path: devicePath(number)}
	if b, err := os.ReadFile("/sys/dev/block/" + number + "/loop/backing_file"); err == nil {
		d.File = strings.TrimSuffix(string(b), "\n")
	}
	return d
}
