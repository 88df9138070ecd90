package testtool

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// FeedFIFO writes data into the FIFO at path, from a goroutine, once a
// reader has opened it, then closes it: the reader reads data and then its
// end. The goroutine gives up when the test ends.
func FeedFIFO(t testing.TB, path string, data []byte) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		if w := OpenFIFOWriter(path, done); w != nil {
			w.Write(data)
			w.Close()
		}
	}()
}

// OpenFIFOWriter opens the FIFO at path for writing once a reader has
// opened it, or returns nil when done is closed first. It opens without
// blocking, again until a reader is there (ENXIO until then), so that a
// reader that never comes (the bug a test looks for) leaves no goroutine
// blocked in open(2) for good.
func OpenFIFOWriter(path string, done <-chan struct{}) *os.File {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			if syscall.SetNonblock(fd, false) != nil {
				syscall.Close(fd)
				return nil
			}
			return os.NewFile(uintptr(fd), path)
		}
		if !errors.Is(err, syscall.ENXIO) && !errors.Is(err, syscall.EINTR) {
			return nil
		}
		select {
		case <-done:
			return nil
		case <-time.After(time.Millisecond): // a poll, not a timing
		}
	}
}
