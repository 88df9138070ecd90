package dm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// put32 and put64 write the machine's byte order, as the kernel reads it.
func put32(b []byte, off int, v uint32) { binary.NativeEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.NativeEndian.PutUint64(b[off:], v) }

// TestRequestLayout checks a create request byte by byte against
// linux/dm-ioctl.h's struct dm_ioctl: version at 0, data_size at 12,
// data_start at 16, target_count at 20, flags at 28, event_nr at 32, name
// at 48 (128 bytes), uuid at 176 (129 bytes), data from 312.
func TestRequestLayout(t *testing.T) {
	r := &request{name: "vroot", uuid: "CRYPT-VERITY-vroot", flags: flagReadOnly | flagSecureData, eventNr: 0x00420007,
		targetCount: 1, data: []byte("payload")}
	b, err := r.encode(2048)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 2048)
	put32(want, 0, 4)
	put32(want, 12, 2048)
	put32(want, 16, 312)
	put32(want, 20, 1)
	put32(want, 28, 0x8001)
	put32(want, 32, 0x00420007)
	copy(want[48:], "vroot")
	copy(want[176:], "CRYPT-VERITY-vroot")
	copy(want[312:], "payload")
	if !bytes.Equal(b, want) {
		t.Fatalf("request differs from struct dm_ioctl's layout:\n got %x\nwant %x", b[:320], want[:320])
	}
	if uintptrOf(b)%8 != 0 {
		t.Errorf("buffer not 8-byte aligned")
	}
	// The data never fits in less than it needs.
	if b, _ := (&request{data: make([]byte, 100)}).encode(16); len(b) != 412 {
		t.Errorf("buffer of %d bytes for 312+100", len(b))
	}
	for _, r := range []*request{{name: strings.Repeat("n", 128)}, {uuid: strings.Repeat("u", 129)}} {
		if _, err := r.encode(1024); err == nil {
			t.Errorf("a %d-byte name and %d-byte UUID encoded", len(r.name), len(r.uuid))
		}
	}
}

// TestReplyLayout decodes a reply laid out as the kernel writes it.
func TestReplyLayout(t *testing.T) {
	b := make([]byte, 1024)
	put32(b, 0, 4)
	put32(b, 4, 47)
	put32(b, 8, 0)
	put32(b, 12, 320)
	put32(b, 16, 312)
	put32(b, 20, 1)
	put32(b, 24, 2)
	put32(b, 28, flagReadOnly|uint32(FlagActivePresent)|flagDeferredRemove)
	put32(b, 32, 9)
	// dev 253:300 as huge_encode_dev writes it: minor's low byte, major
	// << 8, the minor's upper bits << 12.
	put64(b, 40, 300&0xff|253<<8|(300&^0xff)<<12)
	copy(b[48:], "vroot")
	copy(b[176:], "CRYPT-VERITY-abc-vroot")
	copy(b[312:], "12345678")
	r, err := decodeReply(b)
	if err != nil {
		t.Fatal(err)
	}
	got := r.info()
	want := &Info{Name: "vroot", UUID: "CRYPT-VERITY-abc-vroot", Major: 253, Minor: 300, OpenCount: 2, EventNr: 9, TargetCount: 1,
		Flags: FlagReadOnly | FlagActivePresent | FlagDeferredRemove}
	if *got != *want {
		t.Errorf("info %+v, want %+v", got, want)
	}
	if !got.ReadOnly() || !got.Active() || !got.DeferredRemove() || got.Suspended() {
		t.Errorf("flag methods of %v", got.Flags)
	}
	if r.version != (Version{4, 47, 0}) || string(r.data) != "12345678" {
		t.Errorf("version %v, data %q", r.version, r.data)
	}
	// What the kernel leaves for a command that answers nothing.
	put32(b, 12, 305)
	if r, err := decodeReply(b); err != nil || len(r.data) != 0 {
		t.Errorf("no data: %v, data %q", err, r.data)
	}
	for _, bad := range []struct{ start, size uint32 }{{100, 320}, {312, 2000}} {
		put32(b, 16, bad.start)
		put32(b, 12, bad.size)
		if _, err := decodeReply(b); err == nil {
			t.Errorf("data from %d to %d accepted in a %d-byte buffer", bad.start, bad.size, len(b))
		}
	}
	put32(b, 28, flagBufferFull)
	if r, err := decodeReply(b); err != nil || r.data != nil {
		t.Errorf("buffer full: %v, data %q", err, r.data)
	}
}

// TestEncodeTargets checks a two-target table against dm_target_spec's
// layout (sector_start, length, status, next from this spec, type at 24,
// parameters at 40, padded to 8 bytes), backslashes doubled as
// libdevmapper doubles them.
func TestEncodeTargets(t *testing.T) {
	b, err := encodeTargets([]Target{{0, 2048, "linear", "7:0 0"}, {2048, 8, "error", `a\b`}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 48+48)
	put64(want, 0, 0)
	put64(want, 8, 2048)
	put32(want, 20, 48)
	copy(want[24:], "linear")
	copy(want[40:], "7:0 0")
	put64(want, 48, 2048)
	put64(want, 56, 8)
	put32(want, 68, 48)
	copy(want[72:], "error")
	copy(want[88:], `a\\b`)
	if !bytes.Equal(b, want) {
		t.Fatalf("targets:\n got %x\nwant %x", b, want)
	}
	for _, bad := range []Target{{Type: ""}, {Type: "sixteen-letters!"}, {Type: "linear", Params: "a\x00b"}} {
		if _, err := encodeTargets([]Target{bad}); err == nil {
			t.Errorf("target %+v encoded", bad)
		}
	}
}

// kernelTargets lays out a status or table reply as the kernel's
// retrieve_status does: next is the following spec's offset from the
// start of the data.
func kernelTargets(ts []Target) []byte {
	var b []byte
	for _, t := range ts {
		start := len(b)
		spec := make([]byte, align8(specSize+len(t.Params)+1))
		put64(spec, 0, t.Start)
		put64(spec, 8, t.Length)
		copy(spec[24:], t.Type)
		copy(spec[40:], t.Params)
		put32(spec, 20, uint32(start+len(spec)))
		b = append(b, spec...)
	}
	return b
}

func TestDecodeTargets(t *testing.T) {
	ts := []Target{{0, 1024, "verity", "1 7:1 7:0 4096 4096 128 1 sha256 ab -"}, {1024, 1024, "linear", "7:2 0"}, {2048, 1, "error", ""}}
	got, err := decodeTargets(kernelTargets(ts), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != ts[0] || got[1] != ts[1] || got[2] != ts[2] {
		t.Errorf("decoded %+v, want %+v", got, ts)
	}
	if got, err := decodeTargets(nil, 0); err != nil || len(got) != 0 {
		t.Errorf("no targets: %v, %v", got, err)
	}
	b := kernelTargets(ts)
	for name, bad := range map[string]func([]byte) ([]byte, uint32){
		"count past the data": func(b []byte) ([]byte, uint32) { return b, 4 },
		"unterminated text":   func(b []byte) ([]byte, uint32) { return b[:40+5], 1 },
		"next going back":     func(b []byte) ([]byte, uint32) { put32(b, 20, 0); return b, 2 },
	} {
		data, n := bad(bytes.Clone(b))
		if _, err := decodeTargets(data, n); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// kernelNames lays out DM_LIST_DEVICES's answer as the kernel's
// list_devices does (6.1): dev, next (from the entry), the name, at the
// next 8-byte boundary event_nr and flags, then the UUID if there is one.
func kernelNames(ds []Device, uuids bool) []byte {
	var b []byte
	if len(ds) == 0 {
		return make([]byte, 16) // dev 0: no devices
	}
	for i, d := range ds {
		start := len(b)
		e := make([]byte, 12+len(d.Name)+1)
		put64(e, 0, uint64(d.Minor&0xff)|uint64(d.Major)<<8|uint64(d.Minor&^0xff)<<12)
		copy(e[12:], d.Name)
		b = append(b, e...)
		b = append(b, make([]byte, align8(len(b))-len(b))...)
		tail := make([]byte, 8)
		put32(tail, 0, d.EventNr)
		if uuids && d.UUID != "" {
			put32(tail, 4, nameListHasUUID)
		} else if uuids {
			put32(tail, 4, 2)
		}
		b = append(b, tail...)
		if uuids && d.UUID != "" {
			b = append(b, d.UUID...)
			b = append(b, 0)
			b = append(b, make([]byte, align8(len(b))-len(b))...)
		}
		if i < len(ds)-1 {
			put32(b[start:], 8, uint32(len(b)-start))
		}
	}
	return b
}

func TestDecodeNames(t *testing.T) {
	ds := []Device{{Name: "vroot", UUID: "CRYPT-VERITY-0123-vroot", Major: 253, Minor: 0, EventNr: 3},
		{Name: "no-uuid", Major: 253, Minor: 1}, {Name: strings.Repeat("x", 127), UUID: strings.Repeat("u", 128), Major: 253, Minor: 1000, EventNr: 1}}
	got, err := decodeNames(kernelNames(ds, true), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != ds[0] || got[1] != ds[1] || got[2] != ds[2] {
		t.Errorf("decoded %+v\nwant %+v", got, ds)
	}
	// Before dm-ioctl 4.38 there is nothing after the name.
	old := []Device{{Name: "a", Major: 253}, {Name: "bb", Major: 253, Minor: 1}}
	var b []byte
	for i, d := range old {
		e := make([]byte, align8(12+len(d.Name)+1))
		put64(e, 0, uint64(d.Major)<<8|uint64(d.Minor))
		copy(e[12:], d.Name)
		if i == 0 {
			put32(e, 8, uint32(len(e)))
		}
		b = append(b, e...)
	}
	if got, err := decodeNames(b, false); err != nil || len(got) != 2 || got[0] != old[0] || got[1] != old[1] {
		t.Errorf("old kernel's list: %+v, %v", got, err)
	}
	if got, err := decodeNames(kernelNames(nil, true), true); err != nil || got != nil {
		t.Errorf("empty list: %+v, %v", got, err)
	}
	good := kernelNames(ds, true)
	for name, bad := range map[string][]byte{
		"short":          good[:8],
		"next past data": func() []byte { b := bytes.Clone(good); put32(b, 8, 10000); return b }(),
		"next too small": func() []byte { b := bytes.Clone(good); put32(b, 8, 4); return b }(),
		"name unterminated": func() []byte {
			b := make([]byte, 24)
			put64(b, 0, 1<<8)
			copy(b[12:], "abcdefghijkl")
			return b
		}(),
	} {
		if _, err := decodeNames(bad, true); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestDecodeVersions(t *testing.T) {
	var b []byte
	for i, v := range []TargetVersion{{"verity", Version{1, 9, 0}}, {"linear", Version{1, 4, 0}}} {
		e := make([]byte, align8(16+len(v.Name)+1))
		for j, n := range v.Version {
			put32(e, 4+4*j, n)
		}
		copy(e[16:], v.Name)
		if i == 0 {
			put32(e, 0, uint32(len(e)))
		}
		b = append(b, e...)
	}
	got, err := decodeVersions(b)
	if err != nil || len(got) != 2 || got[0] != (TargetVersion{"verity", Version{1, 9, 0}}) || got[1].Name != "linear" {
		t.Errorf("versions %+v, %v", got, err)
	}
	if got[0].Version.String() != "1.9.0" || !got[0].Version.AtLeast(1, 9) || got[0].Version.AtLeast(1, 10) || !got[0].Version.AtLeast(0, 99) {
		t.Errorf("version %v: String or AtLeast wrong", got[0].Version)
	}
	if _, err := decodeVersions(b[:10]); err == nil {
		t.Error("a short list decoded")
	}
}

func TestEncodeMessage(t *testing.T) {
	b := encodeMessage(7, "@cancel_deferred_remove")
	want := make([]byte, 32)
	put64(want, 0, 7)
	copy(want[8:], "@cancel_deferred_remove")
	if !bytes.Equal(b, want) {
		t.Errorf("message %x, want %x", b, want)
	}
}

// TestErrors checks the words of each errno and what errors.Is matches.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		op    string
		errno syscall.Errno
		words string
		is    []error
		isNot []error
	}{
		{opCreate, syscall.EBUSY, "already exists", []error{ErrExist, syscall.EBUSY}, []error{ErrBusy}},
		{opRemove, syscall.EBUSY, "in use", []error{ErrBusy}, []error{ErrExist}},
		{opCreate, syscall.EEXIST, "already exists", []error{ErrExist}, nil},
		{opInfo, syscall.ENXIO, "no such device", []error{ErrNoDevice, syscall.ENXIO}, []error{ErrBusy}},
		{opRemove, syscall.ENODEV, "no such device", []error{ErrNoDevice}, nil},
		{opLoad, syscall.EPERM, "needs root", []error{fs.ErrPermission}, nil},
		{opLoad, syscall.EACCES, "needs root", []error{fs.ErrPermission}, nil},
		{opLoad, enokeyErrno, "keyring", []error{ErrNoKey}, nil},
		{opLoad, syscall.EINVAL, "refused it as invalid (the kernel log, dmesg, says why)", []error{syscall.EINVAL}, []error{ErrNoDevice}},
		{opLoad, syscall.ENOMEM, "out of memory", nil, nil},
	} {
		err := error(&Error{Op: c.op, Name: "vroot", Err: c.errno})
		msg := err.Error()
		if !strings.HasPrefix(msg, "device-mapper: "+c.op+" vroot: ") || !strings.Contains(msg, c.words) {
			t.Errorf("%s %v: %q, want it to say %q", c.op, c.errno, msg, c.words)
		}
		for _, target := range c.is {
			if !errors.Is(err, target) {
				t.Errorf("%s %v: not errors.Is %v", c.op, c.errno, target)
			}
		}
		for _, target := range c.isNot {
			if errors.Is(err, target) {
				t.Errorf("%s %v: errors.Is %v", c.op, c.errno, target)
			}
		}
	}
	e := &Error{Op: opLoad, Name: "v", Err: syscall.EINVAL, Kernel: "verity: Invalid root digest (-EINVAL)"}
	if got := e.Error(); got != "device-mapper: load the table of v: the kernel refused it as invalid; the kernel says: verity: Invalid root digest (-EINVAL)" {
		t.Errorf("with the kernel's reason: %q", got)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"vroot", "a", strings.Repeat("n", 127), "with space", "ünïcode"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("n", 128), "a/b", "a\x00", ".", "..", "control"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDMMessage(t *testing.T) {
	for _, c := range []struct {
		record, want string
		ok           bool
	}{
		{"3,812,4095123,-;device-mapper: table: 253:2: verity: Invalid root digest (-EINVAL)\n", "verity: Invalid root digest (-EINVAL)", true},
		{"3,813,4095124,-;device-mapper: ioctl: error adding target to table\n", "", false},
		{"3,814,4095125,-;device-mapper: table: 253:20: verity: other device\n", "", false},
		{"6,815,4095126,-;loop0: detected capacity change\n", "", false},
		{"4,816,1,c;device-mapper: verity: 253:2: data block 7 is corrupted\n SUBSYSTEM=block\n", "verity: 253:2: data block 7 is corrupted", true},
		{"garbage", "", false},
	} {
		got, ok := dmMessage(c.record, "253:2")
		if got != c.want || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.record, got, ok, c.want, c.ok)
		}
	}
}
