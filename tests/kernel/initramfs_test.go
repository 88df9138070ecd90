package kernel

// The guest's initramfs, an uncompressed cpio "newc" archive (the kernel
// unpacks it faster than a compressed one under TCG): busybox, dmsetup and
// the shared libraries it loads, the modules, the init script and the list
// of cases. It is cheap to make, so every run makes it anew.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

// cpioWriter writes a cpio archive in the "newc" format the kernel reads.
type cpioWriter struct {
	w    *bufio.Writer
	n    int64
	ino  int
	dirs map[string]bool
	err  error
}

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriter(w), dirs: map[string]bool{"": true, ".": true, "/": true}}
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChar = 0o020000
)

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	_, c.err = c.w.Write(b)
	c.n += int64(len(b))
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) entry(name string, mode uint32, rmajor, rminor int, data []byte) {
	c.ino++
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmajor, rminor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write([]byte(name))
	c.write([]byte{0})
	c.pad()
	c.write(data)
	c.pad()
}

// mkdirAll adds the directory p and its parents, once each.
func (c *cpioWriter) mkdirAll(p string) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if c.dirs[p] {
		return
	}
	c.mkdirAll(path.Dir(p))
	c.dirs[p] = true
	c.entry(p, modeDir|0o755, 0, 0, nil)
}

func (c *cpioWriter) file(p string, perm uint32, data []byte) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	c.mkdirAll(path.Dir(p))
	c.entry(p, modeFile|perm, 0, 0, data)
}

func (c *cpioWriter) charDev(p string, major, minor int) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	c.mkdirAll(path.Dir(p))
	c.entry(p, modeChar|0o600, major, minor, nil)
}

func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// initramfs is what goes into the guest's initramfs.
type initramfs struct {
	init     []byte            // /init
	files    map[string][]byte // path in the guest -> contents (mode 0644)
	programs map[string]string // path in the guest -> host program (with its libraries)
}

func (r *initramfs) write(w io.Writer) error {
	c := newCpioWriter(w)
	for _, d := range []string{"dev", "proc", "sys", "tmp", "bin", "sbin", "usr/bin", "usr/sbin"} {
		c.mkdirAll(d)
	}
	c.charDev("dev/console", 5, 1)
	c.charDev("dev/null", 1, 3)
	c.file("init", 0o755, r.init)

	libs := map[string]bool{}
	for _, guest := range sortedKeys(r.programs) {
		host := r.programs[guest]
		data, err := os.ReadFile(host)
		if err != nil {
			return err
		}
		c.file(guest, 0o755, data)
		deps, err := sharedLibraries(host)
		if err != nil {
			return err
		}
		for _, l := range deps {
			libs[l] = true
		}
	}
	for _, l := range sortedKeys(libs) {
		data, err := os.ReadFile(l) // follows symbolic links
		if err != nil {
			return err
		}
		c.file(l, 0o755, data)
	}
	for _, p := range sortedKeys(r.files) {
		c.file(p, 0o644, r.files[p])
	}
	return c.close()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sharedLibraries lists the absolute paths of the shared libraries and the
// dynamic loader that a program needs, as ldd finds them; none for a
// static program.
func sharedLibraries(program string) ([]string, error) {
	f, err := elf.Open(program)
	if err != nil {
		return nil, err
	}
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	f.Close()
	if !dynamic {
		return nil, nil
	}
	out, err := exec.Command("ldd", program).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", program, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("ldd %s: %s", program, strings.TrimSpace(line))
		}
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	return libs, nil
}

// buildInitramfs writes the initramfs to a byte slice.
func buildInitramfs(r *initramfs) ([]byte, error) {
	var b bytes.Buffer
	err := r.write(&b)
	return b.Bytes(), err
}
