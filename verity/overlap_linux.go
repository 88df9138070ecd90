package verity

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// loopMajor is the device major number of loop devices.
const loopMajor = 7

// loopWindow returns, when dev is a loop device whose backing file is
// file, the bytes of file it shows: from its offset, for its size.
func loopWindow(devPath string, dev, file fs.FileInfo) (extent, bool) {
	st, ok := dev.Sys().(*syscall.Stat_t)
	fst, fok := file.Sys().(*syscall.Stat_t)
	if !ok || !fok || !isBlockDevice(dev) || !file.Mode().IsRegular() || unix.Major(uint64(st.Rdev)) != loopMajor {
		return extent{}, false
	}
	f, err := os.Open(devPath)
	if err != nil {
		return extent{}, false
	}
	defer f.Close()
	var info *unix.LoopInfo64
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { info, err = unix.IoctlLoopGetStatus64(int(fd)) })
	}
	if err != nil || info == nil || info.Device != uint64(fst.Dev) || info.Inode != uint64(fst.Ino) {
		return extent{}, false
	}
	size, err := fileSize(f)
	if err != nil {
		return extent{}, false
	}
	return extent{info.Offset, info.Offset + uint64(size)}, true
}
