package veritycheck

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestRepairLocked: --repair writes nothing into DATA or HASH while another
// process (another veritycheck, a veritygen) holds it, and says so (issue
// 12, item 5).
func TestRepairLocked(t *testing.T) {
	master := fecMake(t, &fecCases[3], 31) // made by the library: no peer tool needed
	rng := rand.New(rand.NewPCG(7, 8))
	for _, role := range []string{"DATA", "HASH"} {
		t.Run(role, func(t *testing.T) {
			m := master.clone(t)
			m.corrupt(t, rng, map[fecBlk]bool{{-1, 3}: true, {0, 0}: true}, true)
			path := m.data
			if role == "HASH" {
				path = m.hash
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			data, hash := fronttest.Read(t, m.data), fronttest.Read(t, m.hash)
			r := vcRun(m.args("--repair")...)
			want := "veritycheck: error: " + role + " " + path + " is locked by another process (another veritygen or veritycheck?); wait for it to finish; nothing was written\n"
			if r.code != 2 || !strings.Contains(r.stderr, want) {
				t.Errorf("want exit 2 and %q:\n%v", want, r)
			}
			if !bytes.Equal(fronttest.Read(t, m.data), data) || !bytes.Equal(fronttest.Read(t, m.hash), hash) {
				t.Error("the refused repair wrote")
			}
			f.Close()
			if r := vcRun(m.args("--repair")...); r.code != 0 {
				t.Errorf("once the lock is gone the repair should succeed:\n%v", r)
			}
		})
	}
}

// A check takes shared locks: while a writer holds DATA, HASH or the FEC
// device, it fails at once instead of reading what is being written.
func TestCheckLockedByWriter(t *testing.T) {
	master := fecMake(t, &fecCases[3], 32)
	for _, role := range []string{"DATA", "HASH", "FEC device"} {
		t.Run(role, func(t *testing.T) {
			m := master.clone(t)
			path := map[string]string{"DATA": m.data, "HASH": m.hash, "FEC device": m.fecPath}[role]
			if path == "" {
				t.Fatalf("no file for %s", role)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			r := vcRun(m.args()...)
			want := role + " " + path + " is locked by another process"
			if r.code != 2 || !strings.Contains(r.stderr, want) {
				t.Errorf("want exit 2 and %q:\n%v", want, r)
			}
			f.Close()
			if r := vcRun(m.args()...); r.code != 0 {
				t.Errorf("once the lock is gone the check should pass:\n%v", r)
			}
		})
	}
}

// holdExclusive takes the exclusive lock a writer (veritygen, avbtool's
// front) holds on path, through an open of its own, as another process
// would, until the returned func (or the test's end) releases it.
func holdExclusive(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// TestReadsOfLockedFiles: while a writer holds an image or a tree, every
// read says it is locked (exit 2), never what it finds in a file being
// written: an image being given its footer has none yet, and was reported
// as "no root hash: give --root-hash"; an AVB image was half-checked
// (its vbmeta printed) first; --dump read a superblock being written.
func TestReadsOfLockedFiles(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "system.img") // no footer yet: being appended to
	fronttest.Image(t, raw, 1<<20, 41)
	m := avbMake(t, 64, true, nil)
	tree := filepath.Join(dir, "tree.verity")
	if err := os.WriteFile(tree, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		args       []string
		want       string
	}{
		{"image without footer", raw, []string{raw}, "DATA " + raw},
		{"AVB image", m.path, []string{m.path}, "DATA " + m.path},
		{"--avb", m.path, []string{"--avb", m.path}, "image " + m.path},
		{"--avb-key", m.path, []string{"--avb-key=" + filepath.Join(avbVectors, "keys/rsa4096.pem"), m.path}, "image " + m.path},
		{"--dump", tree, []string{"--dump", tree}, "HASH " + tree},
		{"dump verb", tree, []string{"dump", tree}, "HASH " + tree},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := holdExclusive(t, c.path)
			r := vcRun(c.args...)
			want := "veritycheck: error: " + c.want + " is locked by another process (another veritygen or veritycheck?); wait for it to finish\n"
			if r.code != 2 || r.stderr != want || r.stdout != "" {
				t.Errorf("want exit 2, nothing on stdout and only %q:\n%v", want, r)
			}
			release()
			if r := vcRun(c.args...); strings.Contains(r.stderr, "locked") {
				t.Errorf("still locked once released:\n%v", r)
			}
		})
	}
}
