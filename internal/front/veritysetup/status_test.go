package veritysetup

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/verity"
)

// fakeStatus is what Status says of a device veritysetup opened from
// files with a superblock and FEC in a file of its own.
func fakeStatus(t *testing.T) *verity.DeviceStatus {
	kt, err := verity.ParseTable("1 7:1 7:0 4096 4096 512 1 sha256 " +
		"8b8c5dbf1ab1e7f6ea0f1b0b1e0e1c1d1e1f2021222324252627282930313233 " +
		"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf " +
		"10 ignore_zero_blocks check_at_most_once use_fec_from_device 7:2 fec_start 0 fec_blocks 518 fec_roots 2")
	if err != nil {
		t.Fatal(err)
	}
	return &verity.DeviceStatus{Name: "vroot", Path: "/dev/mapper/vroot", UUID: "CRYPT-VERITY-0123456789abcdef0123456789abcdef-vroot",
		ReadOnly: true, Table: kt, Sectors: 4096,
		Data: verity.BackingDevice{Number: "7:1", Path: "/dev/loop1", File: "/tmp/d.img"},
		Hash: verity.BackingDevice{Number: "7:0", Path: "/dev/loop0", File: "/tmp/h.img"},
		FEC:  verity.BackingDevice{Number: "7:2", Path: "/dev/loop2", File: "/tmp/f.img"}}
}

// TestWriteStatus: veritysetup 2.6.1's action_status, line by line (its
// format strings in src/veritysetup.c), for a fake device.
func TestWriteStatus(t *testing.T) {
	want := `/dev/mapper/vroot is active.
  type:        VERITY
  status:      verified
  hash type:   1
  data block:  4096
  hash block:  4096
  hash name:   sha256
  salt:        a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf
  data device: /dev/loop1
  data loop:   /tmp/d.img
  size:        4096 sectors
  mode:        readonly
  hash device: /dev/loop0
  hash loop:   /tmp/h.img
  hash offset: 8 sectors
  FEC device:  /dev/loop2
  FEC offset:  0 sectors
  FEC roots:   2
  root hash:   8b8c5dbf1ab1e7f6ea0f1b0b1e0e1c1d1e1f2021222324252627282930313233
  flags:       ignore_zero_blocks check_at_most_once
`
	var b bytes.Buffer
	if code := writeStatus(&b, "/dev/mapper/vroot", fakeStatus(t), ""); code != exitOK || b.String() != want {
		t.Errorf("exit %d, status:\n%s\nwant:\n%s", code, b.String(), want)
	}

	// In use, corrupted, signed, no salt, block devices, FEC loop named by
	// --fec-device, the other flags (veritysetup glues the last two).
	s := fakeStatus(t)
	s.OpenCount, s.Corrupted, s.ReadOnly = 2, true, false
	s.Table.RootHashSigKey, s.Table.Salt = "cryptsetup:x-vroot", nil
	s.Table.OnCorruption, s.Table.IgnoreZeroBlocks, s.Table.UseTasklets = verity.RestartOnCorruption, false, true
	s.Table.FECStart, s.Table.HashStartBlock = 130, 0
	s.Data, s.Hash = verity.BackingDevice{Number: "254:1", Path: "/dev/vda1"}, verity.BackingDevice{Number: "254:2"}
	b.Reset()
	writeStatus(&b, "/dev/dm-0", s, "/tmp/f.img")
	for _, line := range []string{"/dev/dm-0 is active and is in use.\n", "  status:      corrupted (with signature)\n", "  salt:        -\n",
		"  data device: /dev/vda1\n  size:", "  mode:        read/write\n  hash device: 254:2\n  hash offset: 0 sectors\n",
		"  FEC device:  /dev/loop2\n  FEC loop:    /tmp/f.img\n  FEC offset:  1040 sectors\n",
		"  flags:       restart_on_corruption check_at_most_oncetry_verify_in_tasklet\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, b.String())
		}
	}
	if strings.Contains(b.String(), "data loop") || strings.Contains(b.String(), "hash loop") {
		t.Errorf("loop lines for block devices:\n%s", b.String())
	}

	// A device that is not veritysetup's: its type, then exit 1.
	s = fakeStatus(t)
	s.UUID = ""
	b.Reset()
	if code := writeStatus(&b, "/dev/mapper/vroot", s, ""); code != exitEINVAL || b.String() != "/dev/mapper/vroot is active.\n  type:        n/a\n" {
		t.Errorf("exit %d:\n%s", code, b.String())
	}
}

func TestDeviceType(t *testing.T) {
	for uuid, want := range map[string]string{"CRYPT-VERITY-abc-n": "VERITY", "CRYPT-VERITY-n": "VERITY", "CRYPT-LUKS2-x": "LUKS2",
		"CRYPT-": "", "": "", "LVM-xyz": "", "CRYPT-SUBDEV-x": ""} {
		if got := deviceType(uuid); got != want {
			t.Errorf("deviceType(%q) = %q, want %q", uuid, got, want)
		}
	}
}

// fakeControl is device-mapper as status and close see it: one device,
// vx, with a table; or no control device at all.
type fakeControl struct {
	info    *dm.Info
	targets []dm.Target
	fail    bool
}

func (f *fakeControl) Table(name string) (*dm.Info, []dm.Target, error) {
	if name != "vx" || f.info == nil {
		return nil, nil, &dm.Error{Op: "query the table of", Name: name, Err: syscall.ENXIO}
	}
	return f.info, f.targets, nil
}

func (f *fakeControl) Close() error { return nil }

func (f *fakeControl) use(t *testing.T, nonroot bool) {
	saved, savedRoot := openControl, nonRoot
	t.Cleanup(func() { openControl, nonRoot = saved, savedRoot })
	openControl = func() (control, error) {
		if f.fail {
			return nil, &dm.Error{Op: "open the control device", Err: syscall.EACCES}
		}
		return f, nil
	}
	nonRoot = func() bool { return nonroot }
}

func targets(types ...string) []dm.Target {
	var ts []dm.Target
	for i, typ := range types {
		ts = append(ts, dm.Target{Start: uint64(i) * 8, Length: 8, Type: typ})
	}
	return ts
}

// TestStatusCloseOtherDevices: status and close of devices that are not
// dm-verity ones, and of none, as libcryptsetup 2.6.1 sees them
// (crypt_status, crypt_init_by_name_and_header, dm_query_device): the
// targets it knows, and where it gives up. tests/kernel compares the
// real ones with veritysetup's.
func TestStatusCloseOtherDevices(t *testing.T) {
	for _, c := range []struct {
		what           string
		ctl            fakeControl
		nonroot        bool
		args           []string
		code           int
		stdout, stderr string
	}{
		{"status: none", fakeControl{}, false, []string{"status", "vx"}, 4, "/dev/mapper/vx is inactive.\n", ""},
		{"status: linear", fakeControl{info: &dm.Info{}, targets: targets("linear")}, false, []string{"status", "vx"}, 1,
			"/dev/mapper/vx is active.\n  type:        n/a\n", ""},
		{"status: LUKS2, in use", fakeControl{info: &dm.Info{UUID: "CRYPT-LUKS2-0123-vx", OpenCount: 1}, targets: targets("crypt")}, false,
			[]string{"status", "vx"}, 1, "/dev/mapper/vx is active and is in use.\n  type:        LUKS2\n", ""},
		{"status: verity without veritysetup's UUID", fakeControl{info: &dm.Info{}, targets: targets("verity")}, false, []string{"status", "vx"}, 1,
			"/dev/mapper/vx is active.\n  type:        n/a\n", ""},
		{"status: a first target it does not know", fakeControl{info: &dm.Info{}, targets: targets("striped")}, false, []string{"status", "vx"}, 1, "", ""},
		{"status: no live table", fakeControl{info: &dm.Info{}}, false, []string{"status", "vx"}, 1, "", ""},
		{"status: a later target it does not know", fakeControl{info: &dm.Info{}, targets: targets("linear", "striped")}, false,
			[]string{"status", "vx"}, 0, "/dev/mapper/vx is active.\n", ""},
		{"status: two verity targets", fakeControl{info: &dm.Info{UUID: "CRYPT-VERITY-vx"}, targets: targets("verity", "verity")}, false,
			[]string{"status", "vx"}, 1, "/dev/mapper/vx is active.\n", ""},
		{"status: not root", fakeControl{fail: true}, true, []string{"status", "vx"}, 1, "", "Cannot initialize device-mapper, running as non-root user.\n"},
		{"status: no dm_mod", fakeControl{fail: true}, false, []string{"status", "vx"}, 1, "", "Cannot initialize device-mapper. Is dm_mod kernel module loaded?\n"},
		{"status: a path not there", fakeControl{fail: true}, true, []string{"status", "/nonexistent/vx"}, 4, "/dev/mapper//nonexistent/vx is inactive.\n", ""},
		{"status: a path that is no device-mapper node", fakeControl{}, false, []string{"status", "/dev/null"}, 1, "", "Device null not found\n"},
		{"close: none", fakeControl{}, false, []string{"close", "vx"}, 4, "", "Device vx is not active.\n"},
		{"close: a first target it does not know", fakeControl{info: &dm.Info{}, targets: targets("striped")}, false, []string{"close", "vx"}, 4, "", ""},
		{"close: a later target it does not know", fakeControl{info: &dm.Info{}, targets: targets("zero", "striped")}, false, []string{"close", "vx"}, 1, "", ""},
		{"close: two verity targets", fakeControl{info: &dm.Info{}, targets: targets("verity", "verity")}, false, []string{"close", "vx"}, 1, "", ""},
		{"close: not root", fakeControl{fail: true}, true, []string{"close", "vx"}, 4, "", "Cannot initialize device-mapper, running as non-root user.\n"},
		{"close: a path not there", fakeControl{fail: true}, true, []string{"close", "/nonexistent/vx"}, 4, "", "Device /nonexistent/vx is not active.\n"},
		{"close: a path that is no device-mapper node", fakeControl{}, false, []string{"close", "/dev/null"}, 4, "", "Device null not found\n"},
	} {
		t.Run(c.what, func(t *testing.T) {
			c.ctl.use(t, c.nonroot)
			var out, errOut bytes.Buffer
			code := Main(context.Background(), "veritysetup", c.args, &out, &errOut)
			if code != c.code || out.String() != c.stdout || errOut.String() != c.stderr {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out.String(), errOut.String(), c.code, c.stdout, c.stderr)
			}
		})
	}
}

// TestActivateErrorCodes: Activate's refusals as veritysetup's exit codes.
func TestActivateErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		line string
	}{
		{&verity.Error{Kind: verity.KindRefused, Err: &wrapped{"device vroot already exists", errExist}}, 5, "Device vroot already exists."},
		{&verity.Error{Kind: verity.KindInput, Err: loadError(enokey)}, 4, "device-mapper: reload ioctl on vroot (253:4) failed: Required key not available"},
		{&verity.Error{Kind: verity.KindInput, Err: loadError(ebadmsg)}, 4, "device-mapper: reload ioctl on vroot (253:4) failed: Bad message"},
		{&verity.Error{Kind: verity.KindRefused, Err: &wrapped{"DATA /dev/vda1 is in use", nil}}, 5, "DATA /dev/vda1 is in use."},
		{&verity.Error{Kind: verity.KindSystem, Field: "RootHashSignature", Err: &wrapped{"add_key", syscall.ENOSYS}}, 1,
			"Kernel keyring missing: required for passing signature to kernel."},
		{&verity.Error{Kind: verity.KindSystem, Field: "RootHashSignature", Err: &wrapped{"add_key", syscall.EDQUOT}}, 1,
			"Failed to load key in kernel keyring."},
		{&verity.Error{Kind: verity.KindSystem, Field: "RootHashSignature", Err: &wrapped{"add_key", syscall.ENOMEM}}, 3,
			"Failed to load key in kernel keyring."},
	} {
		f := toFailure(activateError(c.err, "vroot", false))
		if f.code != c.code || f.lines[0] != c.line {
			t.Errorf("%v: exit %d %q, want %d %q", c.err, f.code, f.lines, c.code, c.line)
		}
	}
}

type wrapped struct {
	msg   string
	cause error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.cause }

var (
	errExist = dm.ErrExist
	enokey   = syscall.ENOKEY
	ebadmsg  = syscall.EBADMSG
)

func loadError(n syscall.Errno) error {
	return &dm.Error{Op: "load the table of", Name: "vroot", Err: n, Major: 253, Minor: 4, Kernel: "verity: Root hash verification failed"}
}

func toFailure(err error) *failure {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	return fromLibrary(err)
}
