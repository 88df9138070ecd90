package dm

// The dm-ioctl buffer: struct dm_ioctl, then the command's data (target
// specs and their parameters, a message, or the kernel's answer), laid out
// as linux/dm-ioctl.h says, in the machine's byte order. Kept apart from
// the system calls so that it is tested on its own.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Sizes and offsets of linux/dm-ioctl.h's structs (the same on every
// architecture: the fields are fixed-size and 8-byte aligned).
const (
	headerSize     = 312 // struct dm_ioctl
	specSize       = 40  // struct dm_target_spec
	nameLen        = 128 // DM_NAME_LEN
	uuidLen        = 129 // DM_UUID_LEN
	maxTypeName    = 16  // DM_MAX_TYPE_NAME
	offDataSize    = 12
	offDataStart   = 16
	offTargetCount = 20
	offOpenCount   = 24
	offFlags       = 28
	offEventNr     = 32
	offDev         = 40
	offName        = 48
	offUUID        = offName + nameLen // 176
)

// dm-ioctl's flags, in and out (linux/dm-ioctl.h).
const (
	flagReadOnly        = 1 << 0
	flagSuspend         = 1 << 1
	flagExists          = 1 << 2
	flagStatusTable     = 1 << 4
	flagBufferFull      = 1 << 8
	flagSkipLockFS      = 1 << 10
	flagNoFlush         = 1 << 11
	flagUeventGenerated = 1 << 13
	flagUUID            = 1 << 14
	flagSecureData      = 1 << 15
	flagDataOut         = 1 << 16
	flagDeferredRemove  = 1 << 17

	nameListHasUUID = 1 // DM_NAME_LIST_FLAG_HAS_UUID
)

// ioctlVersion is the dm-ioctl version a request asks for: 4.0.0, which
// every version-4 kernel serves (it answers with its own).
var ioctlVersion = Version{4, 0, 0}

var order = binary.NativeEndian

// request is one command's input.
type request struct {
	name, uuid  string
	flags       uint32
	eventNr     uint32
	targetCount uint32
	data        []byte // after the header
}

// alignedBuffer returns n zero bytes 8-byte aligned, as the kernel's
// structs in them need.
func alignedBuffer(n int) []byte {
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)[:n:n]
}

// encode lays the request out in a buffer of size bytes (at least the
// header and the data).
func (r *request) encode(size int) ([]byte, error) {
	if len(r.name) >= nameLen || len(r.uuid) >= uuidLen {
		return nil, fmt.Errorf("name or UUID too long")
	}
	size = max(size, headerSize+len(r.data))
	b := alignedBuffer(size)
	for i, v := range ioctlVersion {
		order.PutUint32(b[4*i:], v)
	}
	order.PutUint32(b[offDataSize:], uint32(size))
	order.PutUint32(b[offDataStart:], headerSize)
	order.PutUint32(b[offTargetCount:], r.targetCount)
	order.PutUint32(b[offFlags:], r.flags)
	order.PutUint32(b[offEventNr:], r.eventNr)
	copy(b[offName:offName+nameLen-1], r.name)
	copy(b[offUUID:offUUID+uuidLen-1], r.uuid)
	copy(b[headerSize:], r.data)
	return b, nil
}

// reply is the kernel's answer: the header's fields and its data.
type reply struct {
	version     Version
	targetCount uint32
	openCount   int32
	flags       uint32
	eventNr     uint32
	dev         uint64
	name, uuid  string
	data        []byte // from data_start to data_size
}

// decodeReply reads the header the kernel wrote back into b.
func decodeReply(b []byte) (*reply, error) {
	if len(b) < headerSize {
		return nil, errors.New("short reply")
	}
	r := &reply{
		targetCount: order.Uint32(b[offTargetCount:]),
		openCount:   int32(order.Uint32(b[offOpenCount:])),
		flags:       order.Uint32(b[offFlags:]),
		eventNr:     order.Uint32(b[offEventNr:]),
		dev:         order.Uint64(b[offDev:]),
		name:        cString(b[offName : offName+nameLen]),
		uuid:        cString(b[offUUID : offUUID+uuidLen]),
	}
	for i := range r.version {
		r.version[i] = order.Uint32(b[4*i:])
	}
	// A command that answers nothing leaves data_size at offsetof(struct
	// dm_ioctl, data), before data_start: no data.
	start, size := order.Uint32(b[offDataStart:]), order.Uint32(b[offDataSize:])
	if r.flags&flagBufferFull == 0 && size > start {
		if start < headerSize || uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("reply's data from byte %d to %d is outside its %d-byte buffer", start, size, len(b))
		}
		r.data = b[start:size]
	}
	return r, nil
}

// info is the reply's device information.
func (r *reply) info() *Info {
	return &Info{Name: r.name, UUID: r.uuid, Major: devMajor(r.dev), Minor: devMinor(r.dev), OpenCount: int(r.openCount),
		EventNr: r.eventNr, TargetCount: int(r.targetCount), Flags: Flags(r.flags)}
}

// devMajor and devMinor take a device number apart as the kernel encodes
// it in dm-ioctl (huge_encode_dev), the same as glibc's makedev.
func devMajor(dev uint64) uint32 { return uint32((dev>>8)&0xfff | (dev>>32)&^0xfff) }
func devMinor(dev uint64) uint32 { return uint32(dev&0xff | (dev>>12)&^0xff) }

// cString is b up to its first NUL byte.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func align8(n int) int { return (n + 7) &^ 7 }

// encodeTargets lays a table out for DM_TABLE_LOAD: each target spec, its
// parameters NUL-terminated and padded to 8 bytes, the spec's next the
// offset of the following one from itself. Backslashes are doubled, as
// libdevmapper does: the kernel reads a backslash as an escape.
func encodeTargets(targets []Target) ([]byte, error) {
	var b []byte
	for i, t := range targets {
		if t.Type == "" || len(t.Type) >= maxTypeName || bytes.IndexByte([]byte(t.Type), 0) >= 0 {
			return nil, fmt.Errorf("target %d: type %q is not 1 to %d bytes", i, t.Type, maxTypeName-1)
		}
		if bytes.IndexByte([]byte(t.Params), 0) >= 0 {
			return nil, fmt.Errorf("target %d: its parameters hold a NUL byte", i)
		}
		params := bytes.ReplaceAll([]byte(t.Params), []byte(`\`), []byte(`\\`))
		n := align8(specSize + len(params) + 1)
		spec := make([]byte, n)
		order.PutUint64(spec[0:], t.Start)
		order.PutUint64(spec[8:], t.Length)
		order.PutUint32(spec[20:], uint32(n))
		copy(spec[24:24+maxTypeName], t.Type)
		copy(spec[specSize:], params)
		b = append(b, spec...)
	}
	return b, nil
}

// decodeTargets reads count target specs from a status or table reply;
// there each spec's next is its follower's offset from the data's start.
func decodeTargets(data []byte, count uint32) ([]Target, error) {
	var ts []Target
	off := 0
	for i := uint32(0); i < count; i++ {
		if off < 0 || off+specSize > len(data) {
			return nil, fmt.Errorf("target %d is past the end of the reply", i)
		}
		s := data[off:]
		t := Target{Start: order.Uint64(s[0:]), Length: order.Uint64(s[8:]), Type: cString(s[24 : 24+maxTypeName])}
		p := s[specSize:]
		end := bytes.IndexByte(p, 0)
		if end < 0 {
			return nil, fmt.Errorf("target %d's text is not terminated", i)
		}
		t.Params = string(p[:end])
		ts = append(ts, t)
		next := int(order.Uint32(s[20:]))
		if i+1 < count && next <= off {
			return nil, fmt.Errorf("target %d's next offset %d does not move forward", i, next)
		}
		off = next
	}
	return ts, nil
}

// decodeNames reads DM_LIST_DEVICES's dm_name_list entries: dev, next
// (from the entry), the name, then (dm-ioctl 4.38 on, withEventNr) the
// event number and flags at the next 8-byte boundary, and the UUID at the
// following one when the flags say there is one.
func decodeNames(data []byte, withEventNr bool) ([]Device, error) {
	var ds []Device
	for off := 0; ; {
		if off+12 > len(data) {
			return nil, fmt.Errorf("device entry at byte %d is past the end of the reply", off)
		}
		e := data[off:]
		dev, next := order.Uint64(e[0:]), int(order.Uint32(e[8:]))
		if dev == 0 && off == 0 {
			return nil, nil // no devices
		}
		limit := len(e)
		if next != 0 {
			if next < 12 || next > len(e) {
				return nil, fmt.Errorf("device entry at byte %d: next offset %d is outside the reply", off, next)
			}
			limit = next
		}
		end := bytes.IndexByte(e[12:limit], 0)
		if end < 0 {
			return nil, fmt.Errorf("device entry at byte %d: name not terminated", off)
		}
		d := Device{Name: string(e[12 : 12+end]), Major: devMajor(dev), Minor: devMinor(dev)}
		// The alignment is the buffer's: data starts 8-byte aligned.
		if p := align8(off+12+end+1) - off; withEventNr && p+8 <= limit {
			d.EventNr = order.Uint32(e[p:])
			if order.Uint32(e[p+4:])&nameListHasUUID != 0 {
				u := align8(off+p+8) - off
				if u > limit {
					return nil, fmt.Errorf("device entry at byte %d: UUID past the entry", off)
				}
				uend := bytes.IndexByte(e[u:limit], 0)
				if uend < 0 {
					return nil, fmt.Errorf("device entry at byte %d: UUID not terminated", off)
				}
				d.UUID = string(e[u : u+uend])
			}
		}
		ds = append(ds, d)
		if next == 0 {
			return ds, nil
		}
		off += next
	}
}

// decodeVersions reads DM_LIST_VERSIONS's dm_target_versions entries:
// next (from the entry), the version, the name.
func decodeVersions(data []byte) ([]TargetVersion, error) {
	var vs []TargetVersion
	for off := 0; ; {
		if off+16 > len(data) {
			return nil, fmt.Errorf("target entry at byte %d is past the end of the reply", off)
		}
		e := data[off:]
		next := int(order.Uint32(e[0:]))
		limit := len(e)
		if next != 0 {
			if next < 16 || next > len(e) {
				return nil, fmt.Errorf("target entry at byte %d: next offset %d is outside the reply", off, next)
			}
			limit = next
		}
		end := bytes.IndexByte(e[16:limit], 0)
		if end < 0 {
			return nil, fmt.Errorf("target entry at byte %d: name not terminated", off)
		}
		vs = append(vs, TargetVersion{Name: string(e[16 : 16+end]),
			Version: Version{order.Uint32(e[4:]), order.Uint32(e[8:]), order.Uint32(e[12:])}})
		if next == 0 {
			return vs, nil
		}
		off += next
	}
}

// encodeMessage lays out a dm_target_msg: the sector, the message.
func encodeMessage(sector uint64, msg string) []byte {
	b := make([]byte, align8(8+len(msg)+1))
	order.PutUint64(b, sector)
	copy(b[8:], msg)
	return b
}
