package dm

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestLayoutMatchesHeaders checks this package's sizes, offsets and flags
// against x/sys/unix's, which are generated from linux/dm-ioctl.h.
func TestLayoutMatchesHeaders(t *testing.T) {
	var h unix.DmIoctl
	var s unix.DmTargetSpec
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(dm_ioctl)", headerSize, unix.SizeofDmIoctl},
		{"sizeof(dm_target_spec)", specSize, unix.SizeofDmTargetSpec},
		{"data_size", offDataSize, unsafe.Offsetof(h.Data_size)},
		{"data_start", offDataStart, unsafe.Offsetof(h.Data_start)},
		{"target_count", offTargetCount, unsafe.Offsetof(h.Target_count)},
		{"open_count", offOpenCount, unsafe.Offsetof(h.Open_count)},
		{"flags", offFlags, unsafe.Offsetof(h.Flags)},
		{"event_nr", offEventNr, unsafe.Offsetof(h.Event_nr)},
		{"dev", offDev, unsafe.Offsetof(h.Dev)},
		{"name", offName, unsafe.Offsetof(h.Name)},
		{"uuid", offUUID, unsafe.Offsetof(h.Uuid)},
		{"len(name)", nameLen, unsafe.Sizeof(h.Name)},
		{"len(uuid)", uuidLen, unsafe.Sizeof(h.Uuid)},
		{"spec.next", 20, unsafe.Offsetof(s.Next)},
		{"spec.target_type", 24, unsafe.Offsetof(s.Target_type)},
		{"DM_MAX_TYPE_NAME", maxTypeName, unix.DM_MAX_TYPE_NAME},
		{"DM_READONLY_FLAG", flagReadOnly, unix.DM_READONLY_FLAG},
		{"DM_SUSPEND_FLAG", flagSuspend, unix.DM_SUSPEND_FLAG},
		{"DM_STATUS_TABLE_FLAG", flagStatusTable, unix.DM_STATUS_TABLE_FLAG},
		{"DM_ACTIVE_PRESENT_FLAG", uintptr(FlagActivePresent), unix.DM_ACTIVE_PRESENT_FLAG},
		{"DM_INACTIVE_PRESENT_FLAG", uintptr(FlagInactivePresent), unix.DM_INACTIVE_PRESENT_FLAG},
		{"DM_BUFFER_FULL_FLAG", flagBufferFull, unix.DM_BUFFER_FULL_FLAG},
		{"DM_SKIP_LOCKFS_FLAG", flagSkipLockFS, unix.DM_SKIP_LOCKFS_FLAG},
		{"DM_NOFLUSH_FLAG", flagNoFlush, unix.DM_NOFLUSH_FLAG},
		{"DM_UEVENT_GENERATED_FLAG", flagUeventGenerated, unix.DM_UEVENT_GENERATED_FLAG},
		{"DM_UUID_FLAG", flagUUID, unix.DM_UUID_FLAG},
		{"DM_SECURE_DATA_FLAG", flagSecureData, unix.DM_SECURE_DATA_FLAG},
		{"DM_DATA_OUT_FLAG", flagDataOut, unix.DM_DATA_OUT_FLAG},
		{"DM_DEFERRED_REMOVE", flagDeferredRemove, unix.DM_DEFERRED_REMOVE},
		{"DM_INTERNAL_SUSPEND_FLAG", uintptr(FlagInternalSuspend), unix.DM_INTERNAL_SUSPEND_FLAG},
		{"DM_NAME_LIST_FLAG_HAS_UUID", nameListHasUUID, unix.DM_NAME_LIST_FLAG_HAS_UUID},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d here, %d in linux/dm-ioctl.h", c.name, c.got, c.want)
		}
	}
	if unix.DM_VERSION_MAJOR != ioctlVersion[0] {
		t.Errorf("dm-ioctl major %d, asked for %d", unix.DM_VERSION_MAJOR, ioctlVersion[0])
	}
	if MaxNameLen != unix.DM_NAME_LEN-1 || MaxUUIDLen != unix.DM_UUID_LEN-1 {
		t.Errorf("MaxNameLen %d, MaxUUIDLen %d", MaxNameLen, MaxUUIDLen)
	}
	// The device number as glibc encodes it, which dm-ioctl's matches.
	for _, d := range [][2]uint32{{253, 0}, {253, 255}, {253, 256}, {254, 1 << 19}, {4095, 1}} {
		dev := unix.Mkdev(d[0], d[1])
		if devMajor(dev) != d[0] || devMinor(dev) != d[1] {
			t.Errorf("%d:%d encoded %#x decodes as %d:%d", d[0], d[1], dev, devMajor(dev), devMinor(dev))
		}
	}
}
