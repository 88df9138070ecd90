package veritygen

// Tests of what veritygen refuses to destroy (issue 12): outputs that are
// not its own, device nodes and FIFOs named as --root-hash-file, an
// --append --data-size that would cut off more than an earlier tree, a
// failure after the tree is replaced, concurrent runs (locks), and the
// temporary files of killed runs.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// safeExt4 writes a file of size bytes that carries the ext2/3/4 magic, as
// mkfs.ext4 leaves it: 0xEF53 at 1080, a 4 KiB block size at 1048.
func safeExt4(t *testing.T, path string, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b[1048:], 2)
	binary.LittleEndian.PutUint16(b[1080:], 0xEF53)
	copy(b[4096:], "some files")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// safeRefused runs veritygen, wants exit 2 and want in stderr.
func safeRefused(t *testing.T, want string, args ...string) cliResult {
	t.Helper()
	res := cliRun(t, context.Background(), args...)
	if res.code != 2 || !strings.Contains(res.stderr, want) {
		t.Errorf("veritygen %s: exit %d, want 2 and %q in stderr:\n%s", strings.Join(args, " "), res.code, want, res.stderr)
	}
	return res
}

// safeSame fails the test unless path holds want.
func safeSame(t *testing.T, path string, want []byte) {
	t.Helper()
	if got := fronttest.Read(t, path); !bytes.Equal(got, want) {
		t.Errorf("%s changed (%d bytes, was %d)", path, len(got), len(want))
	}
}

// TestSafetySwappedArguments: DATA and HASH swapped (issue 12, item 1).
func TestSafetySwappedArguments(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	before := safeExt4(t, img, 512<<10)
	cliOK(t, img) // img.verity
	tree := filepath.Join(dir, "img.verity")
	treeBytes := fronttest.Read(t, tree)

	res := safeRefused(t, "HASH "+img+" is not a tree veritygen could have written (an ext2/3/4 filesystem)", tree, img)
	if want := fmt.Sprintf("veritygen: hint: DATA comes first: did you mean veritygen %s %s?\n", img, tree); !strings.Contains(res.stderr, want) {
		t.Errorf("no hint with the swapped command %q:\n%s", want, res.stderr)
	}
	if !strings.Contains(res.stderr, "add --force") {
		t.Errorf("the hint does not mention --force:\n%s", res.stderr)
	}
	safeSame(t, img, before)
	safeSame(t, tree, treeBytes)

	// --force is the user saying so.
	cliOK(t, "--force", tree, img)
	if info, _ := os.Stat(img); info.Size() >= int64(len(before)) {
		t.Errorf("--force did not replace HASH: %d bytes", info.Size())
	}
}

// TestSafetyForeignHash: which existing HASH and FEC files are replaced.
func TestSafetyForeignHash(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 20*4096, 1) // a --no-superblock tree of one 4096-byte block
	hashPath := filepath.Join(dir, "h")
	write := func(b []byte) []byte {
		t.Helper()
		if err := os.WriteFile(hashPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return b
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*131 + i>>8*7 + 3)
		}
		return b
	}

	// Ours: empty, an earlier tree, a --no-superblock tree's size.
	write(nil)
	cliOK(t, data, hashPath)
	cliOK(t, data, hashPath) // over a tree with a superblock
	cliOK(t, "--no-superblock", "--salt=-", data, hashPath)
	write(random(4096))
	cliOK(t, "--no-superblock", "--salt=-", data, hashPath)
	// Made for the tree beforehand (truncate, or zeros written): nothing
	// to lose, as veritysetup would write over it too.
	write(make([]byte, 3<<20))
	cliOK(t, data, hashPath)
	err := os.Truncate(hashPath, 0)
	if err == nil {
		err = os.Truncate(hashPath, 200<<20) // holes only, past maxZeroScan
	}
	if err != nil {
		t.Fatal(err)
	}
	cliOK(t, data, hashPath)

	for _, c := range []struct {
		name  string
		b     []byte
		flags []string
		want  string
	}{
		{"no superblock where one belongs", random(8192), nil, "(8192 bytes without a verity superblock at byte 0)"},
		{"superblock past --hash-offset missing", random(8192), []string{"--hash-offset=4096"}, "without a verity superblock at byte 4096"},
		{"longer than the tree", random(8192), []string{"--no-superblock", "--salt=-"}, "(8192 bytes, more than the 4096 written there)"},
		{"zeros but one byte", append(make([]byte, 8191), 1), nil, "(8192 bytes without a verity superblock at byte 0)"},
		{"a filesystem as small as the tree", safeExt4Bytes(4096), []string{"--no-superblock", "--salt=-"}, "(an ext2/3/4 filesystem)"},
		{"an Android sparse image", append([]byte{0x3a, 0xff, 0x26, 0xed}, make([]byte, 100)...), []string{"--no-superblock", "--salt=-"}, "(an Android sparse image)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := write(c.b)
			safeRefused(t, c.want, append(append([]string{}, c.flags...), data, hashPath)...)
			safeSame(t, hashPath, old)
			cliOK(t, append(append([]string{"--force"}, c.flags...), data, hashPath)...)
		})
	}

	t.Run("FEC file", func(t *testing.T) {
		fecPath := filepath.Join(dir, "data.fec")
		hashPath := filepath.Join(dir, "fec.verity")
		cliOK(t, "--fec-device="+fecPath, data, hashPath)
		cliOK(t, "--fec-device="+fecPath, data, hashPath) // over its own parity
		old := safeExt4(t, fecPath, 64<<10)
		safeRefused(t, "--fec-device "+fecPath+" is not error correction veritygen could have written (an ext2/3/4 filesystem)",
			"--fec-device="+fecPath, data, hashPath)
		safeSame(t, fecPath, old)
		old = bytes.Repeat([]byte{1}, 1<<20)
		if err := os.WriteFile(fecPath, old, 0o644); err != nil {
			t.Fatal(err)
		}
		safeRefused(t, "1048576 bytes, more than", "--fec-device="+fecPath, data, hashPath)
		safeSame(t, fecPath, old)
	})
}

func safeExt4Bytes(n int) []byte {
	b := make([]byte, n)
	binary.LittleEndian.PutUint32(b[1048:], 2)
	binary.LittleEndian.PutUint16(b[1080:], 0xEF53)
	return b
}

// safeNode makes a character device node like the one named (1,3 is
// /dev/null, 1,7 /dev/full) at path; without the privilege to, a link to
// the system's node.
func safeNode(t *testing.T, path string, minor uint32, system string) {
	t.Helper()
	err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, minor)))
	if errors.Is(err, unix.EPERM) {
		err = os.Symlink(system, path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestSafetyRootHashFileSpecial: a device node, FIFO or /proc link named as
// --root-hash-file is written through, never replaced (item 2).
func TestSafetyRootHashFileSpecial(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 20*4096, 2)
	hashPath := filepath.Join(dir, "data.verity")
	isChar := func(t *testing.T, path string) {
		t.Helper()
		info, err := os.Stat(path)
		if err != nil || info.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("%s is no longer a character device: %v %v", path, info.Mode(), err)
		}
	}

	t.Run("character device", func(t *testing.T) {
		n := filepath.Join(dir, "n")
		safeNode(t, n, 3, "/dev/null")
		cliOK(t, "--root-hash-file="+n, data, hashPath)
		isChar(t, n)
	})

	t.Run("FIFO with a reader", func(t *testing.T) {
		p := testtool.MkFIFO(t, dir, "fifo")
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		m := cliJSON(t, cliOK(t, "--json", "--root-hash-file="+p, data, hashPath).stdout)
		buf := make([]byte, 200)
		n, err := unix.Read(fd, buf)
		if err != nil || string(buf[:n]) != cliString(t, m, "root_hash") {
			t.Errorf("the FIFO's reader got %q (%v), want the root hash", buf[:max(n, 0)], err)
		}
		if info, err := os.Lstat(p); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was replaced")
		}
	})

	t.Run("FIFO without a reader", func(t *testing.T) {
		p := testtool.MkFIFO(t, dir, "lonely")
		h := filepath.Join(dir, "never.verity")
		safeRefused(t, "is a FIFO that no process is reading", "--root-hash-file="+p, data, h)
		if _, err := os.Stat(h); err == nil {
			t.Error("HASH was written although the root hash could not be")
		}
	})

	t.Run("link to /proc/self/fd", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		l := filepath.Join(dir, "stdout")
		if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", w.Fd()), l); err != nil {
			t.Fatal(err)
		}
		m := cliJSON(t, cliOK(t, "--json", "--root-hash-file="+l, data, hashPath).stdout)
		w.Close()
		buf := make([]byte, 200)
		n, _ := r.Read(buf)
		if string(buf[:n]) != cliString(t, m, "root_hash") {
			t.Errorf("the pipe got %q, want the root hash", buf[:n])
		}
		if info, err := os.Lstat(l); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link was replaced")
		}
	})

	// As /dev/stdout redirected to a file: written through the descriptor,
	// at its offset, not by replacing the file it has open.
	t.Run("link to /proc/self/fd of a file", func(t *testing.T) {
		out := filepath.Join(dir, "out.txt")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("before\n"); err != nil {
			t.Fatal(err)
		}
		before, _ := f.Stat()
		l := filepath.Join(dir, "stdout-file")
		if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), l); err != nil {
			t.Fatal(err)
		}
		m := cliJSON(t, cliOK(t, "--json", "--root-hash-file="+l, data, hashPath).stdout)
		if _, err := f.WriteString("\nafter\n"); err != nil {
			t.Fatal(err)
		}
		if got, want := string(fronttest.Read(t, out)), "before\n"+cliString(t, m, "root_hash")+"\nafter\n"; got != want {
			t.Errorf("the file holds %q, want %q", got, want)
		}
		if now, err := os.Stat(out); err != nil || !os.SameFile(now, before) {
			t.Error("the file open as the descriptor was replaced")
		}
	})

	t.Run("regular file that is not a root hash", func(t *testing.T) {
		p := filepath.Join(dir, "notes.txt")
		old := []byte("my notes, not a root hash\n")
		if err := os.WriteFile(p, old, 0o644); err != nil {
			t.Fatal(err)
		}
		safeRefused(t, "--root-hash-file "+p+" is not a root hash file (not hexadecimal)", "--root-hash-file="+p, data, hashPath)
		safeSame(t, p, old)
		// A root hash file, with a newline, is replaced.
		if err := os.WriteFile(p, []byte(strings.Repeat("ab", 32)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		m := cliJSON(t, cliOK(t, "--json", "--root-hash-file="+p, data, hashPath).stdout)
		if got := string(fronttest.Read(t, p)); got != cliString(t, m, "root_hash") {
			t.Errorf("root hash file holds %q", got)
		}
	})
}

// TestSafetyOutputsCheckedFirst: an output that cannot be written fails the
// run before the old tree is replaced; one that fails after it names the
// new root hash (item 4).
func TestSafetyOutputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "m.img")
	fronttest.Image(t, data, 64*4096, 3)
	old := filepath.Join(dir, "old.verity")
	cliOK(t, data, old)
	oldTree := fronttest.Read(t, old)

	// Nobody, not even root, creates files in /proc/self.
	safeRefused(t, "cannot create --root-hash-file /proc/self/r.root", "--root-hash-file=/proc/self/r.root", data, old)
	safeSame(t, old, oldTree)
	fecPath := filepath.Join(dir, "m.fec")
	safeRefused(t, "cannot create --root-hash-file", "--fec-device="+fecPath, "--root-hash-file=/proc/self/r.root", data, old)
	safeSame(t, old, oldTree)
	if _, err := os.Stat(fecPath); err == nil {
		t.Error("the FEC file was written although the run failed")
	}

	// /dev/full opens but fails the write, after the tree is committed:
	// the message gives the new root.
	full := filepath.Join(dir, "full")
	safeNode(t, full, 7, "/dev/full")
	args := []string{"--salt=" + cliSalt, "--uuid=12345678-1234-4234-8234-123456789abc"}
	res := safeRefused(t, "; --root-hash-file: writing "+full+": no space left on device", append(args, "--root-hash-file="+full, data, old)...)
	m := cliJSON(t, cliOK(t, append(args, "--json", data, filepath.Join(dir, "same.verity"))...).stdout)
	if want := fmt.Sprintf("the new tree is in %s, root hash %s;", old, cliString(t, m, "root_hash")); !strings.Contains(res.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
	}
	safeSame(t, old, fronttest.Read(t, filepath.Join(dir, "same.verity")))
}

// TestSafetyAppendDataSize: --data-size cuts off only an earlier appended
// tree (item 3).
func TestSafetyAppendDataSize(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "d.img")
	img := fronttest.Image(t, d, 1<<20, 4)
	safeRefused(t, "is 1048576 bytes, more than an --append of its first 4096 bytes makes", "--append", "--data-size=4096", d)
	safeSame(t, d, img)
	// Bytes past --data-size where an --append would have written zero
	// padding are the image's own.
	small := apndCopy(t, dir, "small.img", img[:4000])
	safeRefused(t, "has a non-zero byte at 1000, past --data-size 1000", "--append", "--data-size=1000", "--fec", small)
	safeSame(t, small, img[:4000])
}

// TestSafetyLocks: a file another process reads or writes is not written,
// and one it writes is not read (item 5); flock locks of two opens of one
// file conflict as two processes' do.
func TestSafetyLocks(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "x.img")
	fronttest.Image(t, data, 64*4096, 5)
	hold := func(t *testing.T, path string, how int) func() {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		return func() { f.Close() }
	}
	locked := func(role, path string) string {
		return fmt.Sprintf("veritygen: error: %s %s is locked by another process (another veritygen or veritycheck?); wait for it to finish\n", role, path)
	}

	t.Run("tree into DATA while another reads it", func(t *testing.T) {
		release := hold(t, data, unix.LOCK_SH)
		defer release()
		before := fronttest.Read(t, data)
		res := safeRefused(t, locked("DATA", data), "--hash-offset=262144", data, data)
		if res.stderr != locked("DATA", data) {
			t.Errorf("stderr:\n%s", res.stderr)
		}
		safeSame(t, data, before)
		cliOK(t, data, filepath.Join(dir, "x.verity")) // reading beside a reader is fine
	})

	t.Run("reading DATA while another writes it", func(t *testing.T) {
		release := hold(t, data, unix.LOCK_EX)
		defer release()
		safeRefused(t, locked("DATA", data), data, filepath.Join(dir, "y.verity"))
	})

	t.Run("HASH being replaced by another run", func(t *testing.T) {
		hashPath := filepath.Join(dir, "x.verity")
		before := fronttest.Read(t, hashPath)
		release := hold(t, hashPath, unix.LOCK_EX)
		defer release()
		safeRefused(t, locked("HASH", hashPath), data, hashPath)
		safeSame(t, hashPath, before)
	})

	t.Run("two runs into the same DATA", func(t *testing.T) {
		// The first holds DATA; the second fails at once.
		release := hold(t, data, unix.LOCK_EX)
		defer release()
		safeRefused(t, locked("DATA", data), "--hash-offset=262144", data, data)
	})
}

// TestSafetyStaleTemporaryFiles: temporary files of a killed run (no lock)
// are removed by the next run writing the same file; a live run's (locked)
// and other names are left (item 12). A live run's, beside a HASH that
// does not exist yet, is another run writing it: this one fails at once.
func TestSafetyStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 20*4096, 6)
	mk := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	mk(".data.img.verity.tmp0123456789ab").Close()
	mk(".data.img.verity.tmp0123456789abc").Close() // not the pattern
	mk(".other.tmp0123456789ab").Close()
	live := mk(".data.img.verity.tmpabcdef012345")
	defer live.Close()
	if err := unix.Flock(int(live.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	res := cliRun(t, context.Background(), data)
	want := "veritygen: removed 1 stale temporary file left by an interrupted run: .data.img.verity.tmp0123456789ab\n" +
		"veritygen: error: HASH " + data + ".verity is locked by another process, which is writing it (its temporary file .data.img.verity.tmpabcdef012345 is held); wait for it to finish\n"
	if res.code != 2 || res.stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 and\n%s", res.code, res.stderr, want)
	}
	exist := func(names map[string]bool) {
		t.Helper()
		for name, want := range names {
			if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
				t.Errorf("%s: exists %v, want %v", name, err == nil, want)
			}
		}
	}
	exist(map[string]bool{
		".data.img.verity.tmp0123456789ab":  false,
		".data.img.verity.tmp0123456789abc": true,
		".other.tmp0123456789ab":            true,
		".data.img.verity.tmpabcdef012345":  true,
		"data.img.verity":                   false,
	})
	live.Close() // that run dies: its file is stale now
	res = cliOK(t, data)
	if want := "veritygen: removed 1 stale temporary file left by an interrupted run: .data.img.verity.tmpabcdef012345\n"; res.stderr != want {
		t.Errorf("stderr:\n%s\nwant\n%s", res.stderr, want)
	}
	exist(map[string]bool{".data.img.verity.tmpabcdef012345": false, "data.img.verity": true, ".data.img.verity.tmp0123456789abc": true})
}

// TestSafetyBlockDeviceHash: a block device named as HASH carrying a
// filesystem is refused unless --force; one without a known format is
// written in place as before; a block device as --root-hash-file is refused.
func TestSafetyBlockDeviceHash(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 64*4096, 7)
	backing := filepath.Join(dir, "fs.img")
	fsImg := safeExt4(t, backing, 1<<20)
	dev := testtool.LoopDevice(t, backing, false)
	safeRefused(t, "HASH "+dev+" is not a tree veritygen could have written (an ext2/3/4 filesystem)", data, dev)
	safeRefused(t, "--root-hash-file "+dev+" is a block device", "--root-hash-file="+dev, data, filepath.Join(dir, "x.verity"))
	safeSame(t, backing, fsImg)
	cliOK(t, "--force", data, dev)
	cliOK(t, data, dev) // now a tree: replaced without --force
	if got := fronttest.Read(t, backing); bytes.Equal(got, fsImg) || string(got[:6]) != "verity" {
		t.Error("the tree was not written into the device")
	}
}

// TestSafetySpecialOutputs: a FIFO or socket as HASH or FEC file is refused
// before anything is written.
func TestSafetySpecialOutputs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 16*4096, 8)
	p := testtool.MkFIFO(t, dir, "fifo")
	safeRefused(t, "HASH "+p+" is a FIFO", data, p)
	safeRefused(t, "FEC device "+p+" is a FIFO", "--fec-device="+p, data, filepath.Join(dir, "h"))
	if _, err := os.Stat(filepath.Join(dir, "h")); err == nil {
		t.Error("HASH was written")
	}
}
