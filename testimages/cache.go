package testimages

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Cache makes each random image size once, in Dir, and shares it (read
// only) between tests, which may run in parallel. The image of a size is
// Random with the size as seed.
type Cache struct {
	Dir  string
	mu   sync.Mutex
	once map[int64]*sync.Once
	errs map[int64]error
}

// Random returns the path of the random image of size bytes.
func (c *Cache) Random(t testing.TB, size int64) string {
	t.Helper()
	c.mu.Lock()
	if c.once == nil {
		c.once, c.errs = map[int64]*sync.Once{}, map[int64]error{}
	}
	o := c.once[size]
	if o == nil {
		o = new(sync.Once)
		c.once[size] = o
	}
	c.mu.Unlock()
	path := filepath.Join(c.Dir, fmt.Sprintf("img-%d", size))
	o.Do(func() {
		err := WriteFile(path, func(w io.Writer) error { return Random(w, size, uint64(size)) })
		c.mu.Lock()
		c.errs[size] = err
		c.mu.Unlock()
	})
	c.mu.Lock()
	err := c.errs[size]
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Holes makes a file at path of size bytes, all hole but for chunk bytes of
// non-zero data at each of the given offsets, and returns the bytes it reads
// as.
func Holes(t testing.TB, path string, size int64, at []int64, chunk int) []byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for i, off := range at {
		b := make([]byte, chunk)
		for j := range b {
			b[j] = byte(j*31 + i*7 + 1)
		}
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, size)
	if _, err := f.ReadAt(img, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return img
}
