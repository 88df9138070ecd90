//go:build !unix

package safefile

import "os"

// openImageFile opens path, which was an image when OpenImage looked, and
// checks again on the open file that it still is one. Without FIFOs that
// block their opener, a plain open does.
func openImageFile(role, path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, openError(role, path, err)
	}
	info, err := f.Stat()
	if err == nil {
		err = CheckImageType(role, path, info.Mode(), "read")
	} else {
		err = errorf(KindIO, "", "%s %s: %v", role, path, unwrapPath(err))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
