//go:build !linux

package safefile

import "os"

// BlockDeviceSize refuses: block devices are written and read as images
// on Linux only, where their size comes from the BLKGETSIZE64 ioctl.
func BlockDeviceSize(*os.File) (uint64, error) {
	return 0, unsupported("reading the size of a block device")
}
