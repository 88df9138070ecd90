package veritysetup

// open, close and status: dm-verity devices through the verity package's
// Activate, Deactivate and Status (device-mapper's ioctls and loop
// devices, no libdevmapper), with veritysetup 2.6.1's messages, output
// and exit codes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/verity"
)

// optionActions are the options veritysetup allows with some actions
// only (veritysetup_args.h), in its order of checking (its option list,
// alphabetical); the others go with every action.
var optionActions = []struct {
	name    string
	actions []string
}{
	{"cancel-deferred", []string{"close"}},
	{"deferred", []string{"close"}},
	{"ignore-corruption", []string{"open"}},
	{"ignore-zero-blocks", []string{"open"}},
	{"panic-on-corruption", []string{"open"}},
	{"restart-on-corruption", []string{"open"}},
	{"root-hash-file", []string{"format", "open", "verify"}},
	{"root-hash-signature", []string{"open"}},
	{"use-tasklets", []string{"open"}},
}

// checkActionOptions refuses what veritysetup refuses before it runs an
// action: an option of other actions, then options that exclude each
// other.
func (o *options) checkActionOptions(verb string) error {
	for _, oa := range optionActions {
		if o.changed(oa.name) && !slices.Contains(oa.actions, verb) {
			return usageFail("Option --%s is not allowed with %s action.", oa.name, verb)
		}
	}
	for _, pair := range [][2]string{{"ignore-corruption", "restart-on-corruption"}, {"panic-on-corruption", "restart-on-corruption"}} {
		if o.changed(pair[0]) && o.changed(pair[1]) {
			return usageFail("Option --%s and --%s cannot be used together.", pair[0], pair[1])
		}
	}
	if o.changed("cancel-deferred") && o.changed("deferred") {
		return usageFail("Options --cancel-deferred and --deferred cannot be used at the same time.")
	}
	return nil
}

func (o *options) flag(name string) bool { return o.set[name] }

// deviceAction runs open, close or status, once their arguments are
// counted as veritysetup counts them (extra ones are ignored).
func (o *options) deviceAction(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	switch verb {
	case "open":
		if len(args) < 3 {
			return usageFail("open: requires <data_device> <name> <hash_device> [<root_hash>] as arguments")
		}
		root := ""
		if len(args) > 3 {
			root = args[3]
		}
		return o.openAction(ctx, args[0], args[1], args[2], root, stderr)
	case "close":
		if len(args) < 1 {
			return usageFail("close: requires <name> as arguments")
		}
		return o.closeAction(ctx, args[0], stdout)
	}
	if len(args) < 1 {
		return usageFail("status: requires <name> as arguments")
	}
	return o.statusAction(ctx, args[0], stdout)
}

// activateOptions are open's options as Activate takes them.
func (o *options) activateOptions(t verity.TreeOptions, fecOffset uint64, fecRoots int) *verity.ActivateOptions {
	ao := &verity.ActivateOptions{TreeOptions: t, FECDevice: o.fecDevice, FECOffset: fecOffset, FECRoots: fecRoots,
		IgnoreZeroBlocks: o.flag("ignore-zero-blocks"), CheckAtMostOnce: o.flag("check-at-most-once"), UseTasklets: o.flag("use-tasklets")}
	switch {
	case o.flag("ignore-corruption"):
		ao.OnCorruption = verity.IgnoreCorruption
	case o.flag("restart-on-corruption"):
		ao.OnCorruption = verity.RestartOnCorruption
	case o.flag("panic-on-corruption"):
		ao.OnCorruption = verity.PanicOnCorruption
	}
	return ao
}

// openAction is veritysetup's open: verify's checks (_activate runs
// both), the signature file, device-mapper's answer, then Activate.
func (o *options) openAction(ctx context.Context, dataPath, name, hashPath, rootText string, stderr io.Writer) error {
	a, err := o.activation(dataPath, hashPath, rootText)
	if err != nil {
		return err
	}
	ao := o.activateOptions(a.tree, a.fecOffset, a.fecRoots)
	if sigPath := o.rootHashSignature; o.changed("root-hash-signature") {
		if ao.RootHashSignature, err = readSignature(sigPath); err != nil {
			return err
		}
	}
	// veritysetup asks device-mapper whether the name is free before it
	// attaches anything.
	c, err := openMapper(exitEINVAL)
	if err != nil {
		f := err.(*failure)
		f.lines = append(f.lines, fmt.Sprintf("Cannot use device %s, name is invalid or still in use.", name))
		return f
	}
	c.Close()
	d, err := verity.Activate(ctx, name, dataPath, hashPath, a.root, ao)
	if err != nil {
		return activateError(err, name, o.verbose || o.debug)
	}
	// veritysetup looks at the device's status once it is live.
	if s, err := verity.Status(ctx, d.Name); err == nil && s.Corrupted {
		fmt.Fprintln(stderr, "Verity device detected corruption after activation.")
	}
	return nil
}

// nonRoot reports whether the process runs as another user than root
// (getuid or geteuid not 0), as libcryptsetup asks.
var nonRoot = func() bool { return os.Getuid() != 0 || os.Geteuid() != 0 }

// openControl opens device-mapper's control device; tests put a fake in
// its place.
var openControl = func() (control, error) { return dm.Open(&dm.Options{Udev: dm.UdevOff}) }

// control is what status and close ask device-mapper directly.
type control interface {
	Table(name string) (*dm.Info, []dm.Target, error)
	Close() error
}

// openMapper opens device-mapper, or fails, with libcryptsetup's words
// and the exit code given, where it does not answer: a user who is not
// root, or no dm_mod.
func openMapper(code int) (control, error) {
	c, err := openControl()
	if err != nil {
		if nonRoot() {
			return nil, fail(code, "Cannot initialize device-mapper, running as non-root user.")
		}
		return nil, fail(code, "Cannot initialize device-mapper. Is dm_mod kernel module loaded?")
	}
	return c, nil
}

// maxSignatureFile bounds what is read of a signature file: PKCS#7
// signatures are a few KiB, the kernel takes a key of at most 32 KiB.
const maxSignatureFile = 1 << 20

// readSignature reads --root-hash-signature's file: a regular, non-empty
// file, handed to the kernel as it is.
func readSignature(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 || info.Size() > maxSignatureFile {
		return nil, fail(exitEINVAL, "Invalid signature file %s.", path)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil, fail(exitEINVAL, "Cannot read signature file %s.", path)
	}
	return b, nil
}

// activateError words Activate's errors as veritysetup's.
// verbose adds the kernel's reason for a table it refused, which
// veritysetup does not print.
func activateError(err error, name string, verbose bool) error {
	var de *dm.Error
	var e *verity.Error
	switch {
	case errors.Is(err, dm.ErrExist):
		return fail(exitEBUSY, "Device %s already exists.", name)
	case errors.As(err, &de) && de.Op == "load the table of":
		// libdevmapper removes the device the kernel refused a table for,
		// and veritysetup then finds no device: exit 4.
		var n syscall.Errno
		reason := de.Err.Error()
		if errors.As(de.Err, &n) {
			reason = n.Error()
		}
		device := name
		if de.Major != 0 {
			device = fmt.Sprintf("%s (%d:%d)", name, de.Major, de.Minor)
		}
		lines := []string{fmt.Sprintf("device-mapper: reload ioctl on %s failed: %s", device, capitalize(reason))}
		if de.Kernel != "" && verbose {
			lines = append(lines, "The kernel says: "+de.Kernel)
		}
		return &failure{code: exitENODEV, lines: lines}
	case errors.As(err, &e) && e.Kind == verity.KindSystem && e.Field == "RootHashSignature":
		if errors.Is(err, syscall.ENOSYS) {
			return fail(exitEINVAL, "Kernel keyring missing: required for passing signature to kernel.")
		}
		var n syscall.Errno
		errors.As(err, &n)
		return fail(errnoCode(n), "Failed to load key in kernel keyring.")
	case errors.As(err, &e) && e.Kind == verity.KindRefused:
		return &failure{code: exitEBUSY, lines: []string{flags.Message(err) + "."}}
	}
	return err
}

// errnoCode is veritysetup's exit code for a failure of errno n
// (translate_errno).
func errnoCode(n syscall.Errno) int {
	switch n {
	case syscall.EEXIST, syscall.EBUSY:
		return exitEBUSY
	case syscall.ENOTBLK, syscall.ENODEV:
		return exitENODEV
	case syscall.ENOMEM:
		return exitENOMEM
	case syscall.EPERM:
		return exitEPERM
	}
	return exitEINVAL
}

// capitalize gives strerror's capital to Go's lower-case errno text.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// knownTargets are the targets whose devices libcryptsetup's status
// takes for its own (dm_status_dmi): a device whose first target is
// another is not one it can say anything of.
var knownTargets = []string{"crypt", "verity", "integrity", "linear", "zero", "error"}

// queryable reports whether libcryptsetup can take all of a device's
// table apart (dm_query_device): it knows all of its targets.
func queryable(targets []dm.Target) bool {
	for _, t := range targets {
		if !slices.Contains(knownTargets, t.Type) {
			return false
		}
	}
	return true
}

// lookup is what libcryptsetup finds of the device arg names (a name,
// or a path to its node), in its order: a path that is not there is no
// device (ErrNoDevice, without asking device-mapper), then device-mapper
// must answer (code is the exit code when it does not), then a path
// must be a device-mapper device's node. known is false for a device
// whose live table libcryptsetup does not take for one of its own (none,
// or a first target it does not know).
func lookup(arg string, code int) (name string, info *dm.Info, targets []dm.Target, known bool, err error) {
	isPath := strings.Contains(arg, "/")
	if isPath {
		if _, err := os.Stat(arg); err != nil {
			return "", nil, nil, false, dm.ErrNoDevice
		}
	}
	c, err := openMapper(code)
	if err != nil {
		return "", nil, nil, false, err
	}
	defer c.Close()
	name = arg
	if isPath {
		if name = dmNodeName(arg); name == "" {
			// libdevmapper's words, from its scan of /dev/mapper.
			return "", nil, nil, false, fail(code, "Device %s not found", filepath.Base(arg))
		}
	}
	info, targets, err = c.Table(name)
	if err != nil {
		return "", nil, nil, false, err
	}
	known = len(targets) > 0 && targets[0].Start == 0 && slices.Contains(knownTargets, targets[0].Type)
	return name, info, targets, known, nil
}

// dmNodeName is the name of the device-mapper device whose node path
// is, "" if it is none's.
func dmNodeName(path string) string {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/dm/name", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))))
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\n")
}

// closeAction is veritysetup's close (and remove): of any device
// libcryptsetup knows (a linear one too), by name or node.
func (o *options) closeAction(ctx context.Context, arg string, stdout io.Writer) error {
	name, _, targets, known, err := lookup(arg, exitENODEV)
	var f *failure
	switch {
	case errors.As(err, &f):
		return f
	case errors.Is(err, dm.ErrNoDevice):
		return fail(exitENODEV, "Device %s is not active.", arg)
	case err != nil:
		return err
	case !known:
		// crypt_init_by_name fails without a word.
		return &failure{code: exitENODEV}
	case !queryable(targets), targets[0].Type == "verity" && len(targets) > 1:
		// Neither can it take the table apart.
		return &failure{code: exitEINVAL}
	}
	opts := &verity.DeactivateOptions{Deferred: o.flag("deferred"), CancelDeferred: o.flag("cancel-deferred"), AnyTable: true}
	res, err := verity.Deactivate(ctx, name, opts)
	switch {
	case errors.Is(err, dm.ErrNoDevice):
		return fail(exitENODEV, "Device %s is not active.", arg)
	case err != nil && errors.Is(err, dm.ErrBusy):
		return fail(exitEBUSY, "Device %s is still in use.", arg)
	case err != nil && opts.CancelDeferred:
		return fail(exitEINVAL, "Could not cancel deferred remove from device %s.", arg)
	case err != nil:
		return err
	}
	if res.Deferred {
		fmt.Fprintf(stdout, "Device %s is still active and scheduled for deferred removal.\n", arg)
	}
	return nil
}

// statusAction is veritysetup's status: NAME, or a path to the device's
// node, shown as given.
func (o *options) statusAction(ctx context.Context, arg string, stdout io.Writer) error {
	shown := arg
	if !strings.Contains(arg, "/") {
		shown = dm.NodePath(arg)
	}
	name, info, targets, known, err := lookup(arg, exitEINVAL)
	var f *failure
	switch {
	case errors.As(err, &f):
		return f
	case errors.Is(err, dm.ErrNoDevice):
		if _, serr := os.Stat(arg); serr != nil || !strings.Contains(arg, "/") {
			// A path that is not there is shown as a name.
			shown = dm.NodePath(arg)
		}
		fmt.Fprintf(stdout, "%s is inactive.\n", shown)
		return &failure{code: exitENODEV}
	case err != nil:
		return err
	case !known:
		return &failure{code: exitEINVAL} // crypt_status: invalid, without a word
	}
	inUse := ""
	if info.OpenCount > 0 {
		inUse = " and is in use"
	}
	active := fmt.Sprintf("%s is active%s.\n", shown, inUse)
	switch {
	case !queryable(targets):
		// libcryptsetup cannot take the table apart (ENOTSUP), which
		// veritysetup's status takes for success.
		fmt.Fprint(stdout, active)
		return nil
	case targets[0].Type == "verity" && len(targets) > 1:
		fmt.Fprint(stdout, active)
		return &failure{code: exitEINVAL}
	}
	typ := deviceType(info.UUID)
	if typ != "VERITY" || targets[0].Type != "verity" {
		if typ == "" {
			typ = "n/a"
		}
		// veritysetup prints the rest of verity devices only.
		fmt.Fprintf(stdout, "%s  type:        %s\n", active, typ)
		return &failure{code: exitEINVAL}
	}
	s, err := verity.Status(ctx, name)
	if err != nil {
		return err
	}
	if code := writeStatus(stdout, shown, s, loopBackingFile(o.fecDevice)); code != exitOK {
		return &failure{code: code}
	}
	return nil
}

// loopMajor is the loop driver's block major.
const loopMajor = 7

// loopBackingFile is the file of the loop device at path, "" if path is
// not a loop device (or "").
func loopBackingFile(path string) string {
	if path == "" {
		return ""
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || unix.Major(uint64(st.Rdev)) != loopMajor {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/loop/backing_file", loopMajor, unix.Minor(uint64(st.Rdev))))
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\n")
}

// deviceType is the type veritysetup reads from a device's dm UUID
// (crypt_init_by_name_and_header): the word after CRYPT-, "" for a
// device that is not cryptsetup's.
func deviceType(uuid string) string {
	rest, ok := strings.CutPrefix(uuid, "CRYPT-")
	if !ok {
		return ""
	}
	for _, t := range []string{"PLAIN", "LOOPAES", "LUKS1", "LUKS2", "VERITY", "TCRYPT", "INTEGRITY", "BITLK", "FVAULT2"} {
		if strings.HasPrefix(rest, t) {
			return t
		}
	}
	return ""
}

// writeStatus writes veritysetup 2.6.1's status of an active dm-verity
// device, byte for byte, and returns its exit code. shown names the
// device; fecLoop is the file of the loop device --fec-device names ("" for
// none: veritysetup prints its FEC loop line only for that option, not
// for the device's own FEC device).
func writeStatus(w io.Writer, shown string, s *verity.DeviceStatus, fecLoop string) int {
	inUse := ""
	if s.OpenCount > 0 {
		inUse = " and is in use"
	}
	fmt.Fprintf(w, "%s is active%s.\n", shown, inUse)
	typ := deviceType(s.UUID)
	if typ == "" {
		fmt.Fprintf(w, "  type:        n/a\n")
	} else {
		fmt.Fprintf(w, "  type:        %s\n", typ)
	}
	if typ != "VERITY" {
		return exitEINVAL // veritysetup prints the rest of verity devices only
	}
	t := s.Table
	state, signed := "verified", ""
	if s.Corrupted {
		state = "corrupted"
	}
	if t.RootHashSigKey != "" {
		signed = " (with signature)"
	}
	fmt.Fprintf(w, "  status:      %s%s\n", state, signed)
	fmt.Fprintf(w, "  hash type:   %d\n", t.Format)
	fmt.Fprintf(w, "  data block:  %d\n", t.DataBlockSize)
	fmt.Fprintf(w, "  hash block:  %d\n", t.HashBlockSize)
	fmt.Fprintf(w, "  hash name:   %s\n", t.Hash)
	if len(t.Salt) > 0 {
		fmt.Fprintf(w, "  salt:        %x\n", t.Salt)
	} else {
		fmt.Fprintf(w, "  salt:        -\n")
	}
	fmt.Fprintf(w, "  data device: %s\n", devicePath(s.Data))
	if s.Data.File != "" {
		fmt.Fprintf(w, "  data loop:   %s\n", s.Data.File)
	}
	fmt.Fprintf(w, "  size:        %d sectors\n", s.Sectors)
	mode := "read/write"
	if s.ReadOnly {
		mode = "readonly"
	}
	fmt.Fprintf(w, "  mode:        %s\n", mode)
	fmt.Fprintf(w, "  hash device: %s\n", devicePath(s.Hash))
	if s.Hash.File != "" {
		fmt.Fprintf(w, "  hash loop:   %s\n", s.Hash.File)
	}
	fmt.Fprintf(w, "  hash offset: %d sectors\n", t.HashStartBlock*uint64(t.HashBlockSize)/sectorSize)
	if t.FECDevice != "" {
		fmt.Fprintf(w, "  FEC device:  %s\n", devicePath(s.FEC))
		if fecLoop != "" {
			fmt.Fprintf(w, "  FEC loop:    %s\n", fecLoop)
		}
		fmt.Fprintf(w, "  FEC offset:  %d sectors\n", t.FECStart*uint64(t.HashBlockSize)/sectorSize)
		fmt.Fprintf(w, "  FEC roots:   %d\n", t.FECRoots)
	}
	fmt.Fprintf(w, "  root hash:   %x\n", t.RootHash)
	flags := ""
	switch t.OnCorruption {
	case verity.IgnoreCorruption:
		flags += "ignore_corruption "
	case verity.RestartOnCorruption:
		flags += "restart_on_corruption "
	case verity.PanicOnCorruption:
		flags += "panic_on_corruption "
	}
	if t.IgnoreZeroBlocks {
		flags += "ignore_zero_blocks "
	}
	// veritysetup puts no space after these two.
	if t.CheckAtMostOnce {
		flags += "check_at_most_once"
	}
	if t.UseTasklets {
		flags += "try_verify_in_tasklet"
	}
	if flags != "" {
		fmt.Fprintf(w, "  flags:       %s\n", flags)
	}
	return exitOK
}

// devicePath is a table device's node, as veritysetup finds it, or its
// number when it has none.
func devicePath(d verity.BackingDevice) string {
	if d.Path != "" {
		return d.Path
	}
	return d.Number
}

// sectorSize is device-mapper's unit of size.
const sectorSize = 512
