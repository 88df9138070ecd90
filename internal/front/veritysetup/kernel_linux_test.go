package veritysetup

// The front's open, close and status in a real kernel, side by side with
// veritysetup 2.6.1: tests/kernel boots a guest where
// VERITYTREE_KERNEL_TESTS is set, VERITYTREE_GUEST_OURS names our
// veritysetup binary, veritysetup is in PATH, and VERITYTREE_GUEST_BLOCK
// names a partition pair (DATA,HASH,ROOT,SHA256 of the data). Each case
// runs the same commands through both tools, one after the other (the same
// loop devices come free again), and compares exit codes and output.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/dm"
	"github.com/veritytree/veritytree/loop"
	"github.com/veritytree/veritytree/verity"
)

// guestTools are our veritysetup and the real one, in the guest.
type guestTools struct{ ours, real string }

func requireGuest(t *testing.T) guestTools {
	t.Helper()
	if os.Getenv("VERITYTREE_KERNEL_TESTS") == "" {
		t.Skip("opens devices in this machine's device-mapper: tests/kernel runs it in a guest")
	}
	ours := os.Getenv("VERITYTREE_GUEST_OURS")
	real, err := exec.LookPath("veritysetup")
	if ours == "" || err != nil {
		t.Fatalf("the guest lacks a tool: VERITYTREE_GUEST_OURS=%q, veritysetup: %v", ours, err)
	}
	return guestTools{ours, real}
}

// result is one command's outcome.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

func runTool(t *testing.T, tool string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tool, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var x *exec.ExitError
	switch {
	case errors.As(err, &x):
		r.code = x.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", tool, err)
	}
	return r
}

// image is a data file and its tree (made with Format), and a spoiled
// copy of the data where asked.
type image struct {
	dir, data, hash, fec string
	bytes                []byte
	root                 string
}

func newImage(t *testing.T, blocks int, opts *verity.FormatOptions, hashName string) *image {
	t.Helper()
	dir := t.TempDir()
	im := &image{dir: dir, data: filepath.Join(dir, "data.img"), bytes: make([]byte, blocks*4096)}
	mrand.NewChaCha8([32]byte{byte(blocks), 1}).Read(im.bytes)
	if err := os.WriteFile(im.data, im.bytes, 0o644); err != nil {
		t.Fatal(err)
	}
	im.hash = filepath.Join(dir, "data.img.verity")
	if hashName == "DATA" {
		im.hash = im.data
	}
	if opts != nil && opts.FECDevice != "" {
		im.fec = filepath.Join(dir, "data.img.fec")
		opts.FECDevice = im.fec
	}
	res, err := verity.Format(context.Background(), im.data, im.hash, opts)
	if err != nil {
		t.Fatal(err)
	}
	im.root = hex.EncodeToString(res.RootHash)
	return im
}

func (im *image) sum() string {
	s := sha256.Sum256(im.bytes)
	return hex.EncodeToString(s[:])
}

// spoil writes bytes at off of the data file; im.bytes keeps the
// original.
func (im *image) spoil(t *testing.T, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(im.data, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// readMapped reads the mapped device whole: its SHA-256, or the error.
func readMapped(name string) (string, error) {
	b, err := os.ReadFile("/dev/mapper/" + name)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// loopsOn are the loop devices reading any of the files.
func loopsOn(files ...string) []string {
	var all []string
	for _, f := range files {
		if f == "" {
			continue
		}
		found, _ := loop.Find(f)
		all = append(all, found...)
	}
	return all
}

// cleanup removes the device whatever happened, with our tool.
func cleanup(t *testing.T, g guestTools, name string) {
	t.Cleanup(func() { runTool(t, g.ours, "close", name) })
}

// sameAs compares our result with veritysetup's: exit code and stdout
// exactly; stderr exactly when exactErr, else only logged.
func sameAs(t *testing.T, what string, ours, theirs result, exactErr bool) {
	t.Helper()
	if ours.code != theirs.code || ours.stdout != theirs.stdout || exactErr && ours.stderr != theirs.stderr {
		t.Errorf("%s:\nours        %v\nveritysetup %v", what, ours, theirs)
	} else if ours.stderr != theirs.stderr {
		t.Logf("%s: the same exit %d; stderr: ours %q, veritysetup's %q", what, ours.code, ours.stderr, theirs.stderr)
	}
}

// TestKernelFrontOpenFile: open (loops), the whole device read back,
// status byte for byte, close (loops released), with each tool; a second
// open of the name; close and status of a name no device has.
func TestKernelFrontOpenFile(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 512, nil, "")
	cleanup(t, g, "vt-front")
	var status, byPath [2]result
	for i, tool := range []string{g.ours, g.real} {
		if r := runTool(t, tool, "open", im.data, "vt-front", im.hash, im.root); r.code != 0 {
			t.Fatalf("%s open: %v", tool, r)
		}
		if sum, err := readMapped("vt-front"); err != nil || sum != im.sum() {
			t.Errorf("%s: reading the device: %v (sha256 %s, want %s)", tool, err, sum, im.sum())
		}
		status[i] = runTool(t, tool, "status", "vt-front")
		byPath[i] = runTool(t, tool, "status", "/dev/mapper/vt-front")
		// A second open of the name: refused, no loop left for it.
		before := loopsOn(im.data, im.hash)
		again := runTool(t, tool, "open", im.data, "vt-front", im.hash, im.root)
		if again.code != 5 || again.stderr != "Device vt-front already exists.\n" {
			t.Errorf("%s: second open: %v", tool, again)
		}
		if after := loopsOn(im.data, im.hash); !slices.Equal(before, after) {
			t.Errorf("%s: loops %v before the second open, %v after", tool, before, after)
		}
		if r := runTool(t, tool, "close", "vt-front"); r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("%s close: %v", tool, r)
		}
		if l := loopsOn(im.data, im.hash); len(l) > 0 {
			t.Errorf("%s: %v still attached after close", tool, l)
		}
	}
	if !strings.Contains(status[0].stdout, "  data loop:   "+im.data+"\n") {
		t.Errorf("our status:\n%s", status[0].stdout)
	}
	sameAs(t, "status", status[0], status[1], true)
	t.Logf("status (the same from both):\n%s", status[0].stdout)
	sameAs(t, "status /dev/mapper/NAME", byPath[0], byPath[1], true)
	if byPath[0].stdout != status[0].stdout {
		t.Errorf("status /dev/mapper/vt-front:\n%s", byPath[0].stdout)
	}
	sameAs(t, "status of an inactive name", runTool(t, g.ours, "status", "vt-front"), runTool(t, g.real, "status", "vt-front"), true)
	sameAs(t, "close of an inactive name", runTool(t, g.ours, "close", "vt-front"), runTool(t, g.real, "close", "vt-front"), true)
}

// TestKernelFrontBlockDevice: an image and its tree on two partitions (no
// loop).
func TestKernelFrontBlockDevice(t *testing.T) {
	g := requireGuest(t)
	f := strings.Split(os.Getenv("VERITYTREE_GUEST_BLOCK"), ",")
	if len(f) != 4 {
		t.Fatalf("VERITYTREE_GUEST_BLOCK=%q", os.Getenv("VERITYTREE_GUEST_BLOCK"))
	}
	cleanup(t, g, "vt-fblk")
	var status [2]result
	for i, tool := range []string{g.ours, g.real} {
		if r := runTool(t, tool, "open", f[0], "vt-fblk", f[1], f[2]); r.code != 0 {
			t.Fatalf("%s open: %v", tool, r)
		}
		if sum, err := readMapped("vt-fblk"); err != nil || sum != f[3] {
			t.Errorf("%s: reading the device: %v (sha256 %s, want %s)", tool, err, sum, f[3])
		}
		status[i] = runTool(t, tool, "status", "vt-fblk")
		if r := runTool(t, tool, "close", "vt-fblk"); r.code != 0 {
			t.Errorf("%s close: %v", tool, r)
		}
	}
	sameAs(t, "status", status[0], status[1], true)
	if strings.Contains(status[0].stdout, "loop:") {
		t.Errorf("loop lines for partitions:\n%s", status[0].stdout)
	}
}

// TestKernelFrontWrongRoot: a wrong root hash opens; the first read fails
// with EIO; status says corrupted.
func TestKernelFrontWrongRoot(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 64, nil, "")
	wrong := []byte(im.root)
	wrong[0] = map[bool]byte{true: '1', false: '0'}[wrong[0] == '0']
	cleanup(t, g, "vt-fwrong")
	var open, status [2]result
	for i, tool := range []string{g.ours, g.real} {
		open[i] = runTool(t, tool, "open", im.data, "vt-fwrong", im.hash, string(wrong))
		if open[i].code != 0 {
			t.Fatalf("%s open: %v", tool, open[i])
		}
		if _, err := readMapped("vt-fwrong"); !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: reading with a wrong root: %v, want EIO", tool, err)
		}
		status[i] = runTool(t, tool, "status", "vt-fwrong")
		runTool(t, tool, "close", "vt-fwrong")
	}
	sameAs(t, "open with a wrong root", open[0], open[1], true)
	sameAs(t, "status after the failed read", status[0], status[1], true)
	if !strings.Contains(status[0].stdout, "  status:      corrupted\n") {
		t.Errorf("status:\n%s", status[0].stdout)
	}
}

// TestKernelFrontCorruption: a spoiled data block reads EIO (the others
// read); --ignore-corruption reads it through, and status says the flag.
func TestKernelFrontCorruption(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 64, nil, "")
	im.spoil(t, 5*4096+100, []byte{0xde, 0xad})
	spoiled, _ := os.ReadFile(im.data)
	want := sha256.Sum256(spoiled)
	cleanup(t, g, "vt-fbad")
	var status [2]result
	for i, tool := range []string{g.ours, g.real} {
		if r := runTool(t, tool, "open", im.data, "vt-fbad", im.hash, im.root); r.code != 0 {
			t.Fatalf("%s open: %v", tool, r)
		}
		if _, err := readMapped("vt-fbad"); !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: reading a spoiled block: %v, want EIO", tool, err)
		}
		f, err := os.Open("/dev/mapper/vt-fbad")
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4096)
		if _, err := f.ReadAt(b, 6*4096); err != nil || !bytes.Equal(b, im.bytes[6*4096:7*4096]) {
			t.Errorf("%s: block 6 beside the spoiled one: %v", tool, err)
		}
		f.Close()
		runTool(t, tool, "close", "vt-fbad")
		if r := runTool(t, tool, "open", "--ignore-corruption", im.data, "vt-fbad", im.hash, im.root); r.code != 0 {
			t.Fatalf("%s open --ignore-corruption: %v", tool, r)
		}
		if sum, err := readMapped("vt-fbad"); err != nil || sum != hex.EncodeToString(want[:]) {
			t.Errorf("%s: reading through with --ignore-corruption: %v", tool, err)
		}
		status[i] = runTool(t, tool, "status", "vt-fbad")
		runTool(t, tool, "close", "vt-fbad")
	}
	sameAs(t, "status --ignore-corruption", status[0], status[1], true)
	if !strings.Contains(status[0].stdout, "  flags:       ignore_corruption \n") {
		t.Errorf("status:\n%s", status[0].stdout)
	}
}

// TestKernelFrontFEC: FEC corrects a few spoiled bytes; status shows the
// FEC lines (with --fec-device, its loop line too).
func TestKernelFrontFEC(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 256, &verity.FormatOptions{FECDevice: "FEC", FECRoots: 2}, "")
	im.spoil(t, 10*4096+7, []byte{1, 2, 3, 4, 5})
	cleanup(t, g, "vt-ffec")
	var status [2]result
	var withFEC [2][2]result
	for i, tool := range []string{g.ours, g.real} {
		if r := runTool(t, tool, "open", "--fec-device="+im.fec, "--fec-roots=2", im.data, "vt-ffec", im.hash, im.root); r.code != 0 {
			t.Fatalf("%s open: %v", tool, r)
		}
		if sum, err := readMapped("vt-ffec"); err != nil || sum != im.sum() {
			t.Errorf("%s: reading with FEC: %v (sha256 %s, want the original %s)", tool, err, sum, im.sum())
		}
		status[i] = runTool(t, tool, "status", "vt-ffec")
		// veritysetup prints the FEC loop's file only when --fec-device
		// names the loop device: status of a device opened with
		// --fec-device, given the file, then its loop.
		fecLoop := ""
		for _, l := range strings.Split(status[i].stdout, "\n") {
			if v, ok := strings.CutPrefix(l, "  FEC device:  "); ok {
				fecLoop = v
			}
		}
		for j, opt := range []string{"--fec-device=" + im.fec, "--fec-device=" + fecLoop} {
			withFEC[j][i] = runTool(t, tool, "status", opt, "vt-ffec")
		}
		runTool(t, tool, "close", "vt-ffec")
		if l := loopsOn(im.data, im.hash, im.fec); len(l) > 0 {
			t.Errorf("%s: %v still attached after close", tool, l)
		}
	}
	sameAs(t, "status with FEC", status[0], status[1], true)
	if !strings.Contains(status[0].stdout, "  FEC roots:   2\n") {
		t.Errorf("status:\n%s", status[0].stdout)
	}
	sameAs(t, "status --fec-device=FILE", withFEC[0][0], withFEC[0][1], true)
	sameAs(t, "status --fec-device=LOOP", withFEC[1][0], withFEC[1][1], true)
	if !strings.Contains(withFEC[1][0].stdout, "  FEC loop:    "+im.fec+"\n") || strings.Contains(withFEC[0][0].stdout, "FEC loop") {
		t.Errorf("status --fec-device=FILE:\n%s\nstatus --fec-device=LOOP:\n%s", withFEC[0][0].stdout, withFEC[1][0].stdout)
	}
}

// TestKernelFrontHashOffset: the tree in the image (--hash-offset), and a
// tree without superblock (--no-superblock with its parameters).
func TestKernelFrontHashOffset(t *testing.T) {
	g := requireGuest(t)
	in := newImage(t, 64, &verity.FormatOptions{TreeOptions: verity.TreeOptions{HashOffset: 64 * 4096}}, "DATA")
	salt := "00112233"
	nosb := newImage(t, 48, &verity.FormatOptions{TreeOptions: verity.TreeOptions{NoSuperblock: true, Salt: []byte{0, 0x11, 0x22, 0x33}, Hash: "sha1"}}, "")
	cleanup(t, g, "vt-foff")
	for _, c := range []struct {
		name string
		im   *image
		args []string
	}{
		{"hash-offset", in, []string{"--hash-offset=262144", in.data, "vt-foff", in.data, in.root}},
		{"no-superblock", nosb, []string{"--no-superblock", "--hash=sha1", "--salt=" + salt, nosb.data, "vt-foff", nosb.hash, nosb.root}},
	} {
		var status [2]result
		for i, tool := range []string{g.ours, g.real} {
			if r := runTool(t, tool, append([]string{"open"}, c.args...)...); r.code != 0 {
				t.Fatalf("%s: %s open: %v", c.name, tool, r)
			}
			if sum, err := readMapped("vt-foff"); err != nil || sum != c.im.sum() {
				t.Errorf("%s: %s: reading the device: %v", c.name, tool, err)
			}
			status[i] = runTool(t, tool, "status", "vt-foff")
			runTool(t, tool, "close", "vt-foff")
			if l := loopsOn(c.im.data, c.im.hash); len(l) > 0 {
				t.Errorf("%s: %s: %v still attached after close", c.name, tool, l)
			}
		}
		sameAs(t, c.name+": status", status[0], status[1], true)
	}
}

// TestKernelFrontDeferred: close --deferred of a device held open: exit 0
// and the message; the device goes at the last close.
func TestKernelFrontDeferred(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 16, nil, "")
	cleanup(t, g, "vt-fdef")
	var closes [2]result
	for i, tool := range []string{g.ours, g.real} {
		if r := runTool(t, tool, "open", im.data, "vt-fdef", im.hash, im.root); r.code != 0 {
			t.Fatalf("%s open: %v", tool, r)
		}
		held, err := os.Open("/dev/mapper/vt-fdef")
		if err != nil {
			t.Fatal(err)
		}
		closes[i] = runTool(t, tool, "close", "--deferred", "vt-fdef")
		if st := runTool(t, tool, "status", "vt-fdef"); st.code != 0 || !strings.Contains(st.stdout, "is active and is in use.") {
			t.Errorf("%s: status of the held device: %v", tool, st)
		}
		held.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if st := runTool(t, tool, "status", "vt-fdef"); st.code == 4 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: vt-fdef still there 10 s after its last close", tool)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sameAs(t, "close --deferred of a held device", closes[0], closes[1], true)
	if closes[0].stdout != "Device vt-fdef is still active and scheduled for deferred removal.\n" {
		t.Errorf("close --deferred: %v", closes[0])
	}
}

// TestKernelFrontSignature: a signature by a key the kernel does not
// trust is refused by the kernel (ENOKEY), a cut one before that
// (EBADMSG): both tools exit 4 and leave nothing.
func TestKernelFrontSignature(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 16, nil, "")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "veritytree test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := hex.DecodeString(im.root)
	sig, err := verity.SignRootHash(root, key, cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	whole, cut := filepath.Join(im.dir, "root.sig"), filepath.Join(im.dir, "cut.sig")
	os.WriteFile(whole, sig, 0o644)
	os.WriteFile(cut, sig[:len(sig)/2], 0o644)
	cleanup(t, g, "vt-fsig")
	for _, c := range []struct{ file, reason string }{{whole, "Required key not available"}, {cut, "Bad message"}} {
		var open [2]result
		for i, tool := range []string{g.ours, g.real} {
			open[i] = runTool(t, tool, "open", "--root-hash-signature="+c.file, im.data, "vt-fsig", im.hash, im.root)
			if st := runTool(t, tool, "status", "vt-fsig"); st.code != 4 {
				t.Errorf("%s: a device is left after the refused signature: %v", tool, st)
				runTool(t, tool, "close", "vt-fsig")
			}
			if l := loopsOn(im.data, im.hash); len(l) > 0 {
				t.Errorf("%s: %v still attached after the refused open", tool, l)
			}
		}
		sameAs(t, filepath.Base(c.file), open[0], open[1], true)
		if open[0].code != 4 || !strings.Contains(open[0].stderr, c.reason) {
			t.Errorf("%s: ours %v, want exit 4 and %q", filepath.Base(c.file), open[0], c.reason)
		}
		t.Logf("%s: veritysetup's %v", filepath.Base(c.file), open[1])
	}
}

// TestKernelFrontOpenTiming measures, alternately on the same image, the
// time from each tool's open to the first block read from the mapped
// device (nothing is asserted of durations).
func TestKernelFrontOpenTiming(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 1024, nil, "")
	cleanup(t, g, "vt-ftime")
	const rounds = 5
	var times [2][]time.Duration
	for range rounds {
		for i, tool := range []string{g.ours, g.real} {
			start := time.Now()
			if r := runTool(t, tool, "open", im.data, "vt-ftime", im.hash, im.root); r.code != 0 {
				t.Fatalf("%s open: %v", tool, r)
			}
			f, err := os.Open("/dev/mapper/vt-ftime")
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 4096)
			_, err = f.ReadAt(b, 0)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
			if r := runTool(t, tool, "close", "vt-ftime"); r.code != 0 {
				t.Fatalf("%s close: %v", tool, r)
			}
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("TIMING front: open to the first block read, %d rounds alternating: our veritysetup median %v %v; veritysetup 2.6.1 median %v %v",
		rounds, median(times[0]), times[0], median(times[1]), times[1])
}

// runToolAs is runTool as another user than root.
func runToolAs(t *testing.T, uid uint32, tool string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var x *exec.ExitError
	switch {
	case errors.As(err, &x):
		r.code = x.ExitCode()
	case err != nil:
		t.Fatalf("%s as uid %d: %v", tool, uid, err)
	}
	return r
}

// makeDevice makes a device-mapper device with the targets ("" for none),
// as dmsetup create would, and its node.
func makeDevice(t *testing.T, name, uuid string, targets []dm.Target) {
	t.Helper()
	c, err := dm.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(name, uuid); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	if len(targets) == 0 {
		return
	}
	if err := c.Load(name, targets, &dm.LoadOptions{ReadOnly: true}); err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	if _, err := c.Resume(context.Background(), name); err != nil {
		t.Fatalf("resuming %s: %v", name, err)
	}
}

// deviceExists reports whether device-mapper has a device of that name.
func deviceExists(t *testing.T, name string) bool {
	t.Helper()
	c, err := dm.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Info(name)
	if err != nil && !errors.Is(err, dm.ErrNoDevice) {
		t.Fatal(err)
	}
	return err == nil
}

// removeDevice removes the device if it is there.
func removeDevice(t *testing.T, name string) {
	c, err := dm.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Remove(context.Background(), name, nil)
}

// TestKernelFrontOtherDevices: status and close of device-mapper devices
// that are not dm-verity ones (made as dmsetup makes them): linear, with
// and without a UUID of cryptsetup's, error, striped (a target libcryptsetup
// does not know), linear then striped, none with no table; by name and by
// node path; and paths that are no device-mapper device's node. The same
// output and exit codes from both tools, and close leaves the device
// there or not as veritysetup does.
func TestKernelFrontOtherDevices(t *testing.T) {
	g := requireGuest(t)
	f := strings.Split(os.Getenv("VERITYTREE_GUEST_BLOCK"), ",")
	if len(f) != 4 {
		t.Fatalf("VERITYTREE_GUEST_BLOCK=%q", os.Getenv("VERITYTREE_GUEST_BLOCK"))
	}
	part := f[0]
	regular := filepath.Join(t.TempDir(), "plain.img")
	os.WriteFile(regular, make([]byte, 4096), 0o644)
	// Each tool run costs the loaded guest up to a second: the paths are
	// tried on two devices only.
	for _, c := range []struct {
		name, uuid string
		targets    []dm.Target
		paths      bool
	}{
		{"vt-olin", "", []dm.Target{{Length: 8, Type: "linear", Params: part + " 0"}}, true},
		{"vt-oplain", "CRYPT-PLAIN-vt-oplain", []dm.Target{{Length: 8, Type: "linear", Params: part + " 0"}}, false},
		{"vt-oerror", "", []dm.Target{{Length: 8, Type: "error"}}, false},
		{"vt-ostriped", "", []dm.Target{{Length: 8, Type: "striped", Params: "1 8 " + part + " 0"}}, true},
		{"vt-omixed", "", []dm.Target{{Length: 8, Type: "linear", Params: part + " 0"}, {Start: 8, Length: 8, Type: "striped", Params: "1 8 " + part + " 8"}}, false},
		{"vt-onotable", "", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { removeDevice(t, c.name) })
			makeDevice(t, c.name, c.uuid, c.targets)
			node := "/dev/mapper/" + c.name
			var st unix.Stat_t
			args, closeArgs := [][]string{{"status", c.name}}, []string{c.name}
			if c.paths {
				args, closeArgs = append(args, []string{"status", node}), append(closeArgs, node)
				if unix.Stat(node, &st) == nil {
					args = append(args, []string{"status", fmt.Sprintf("/dev/dm-%d", unix.Minor(st.Rdev))})
				}
			}
			for _, a := range args {
				ours, theirs := runTool(t, g.ours, a...), runTool(t, g.real, a...)
				sameAs(t, strings.Join(a, " "), ours, theirs, true)
				t.Logf("%v: %v", a, theirs)
			}
			// close, by name then by node: each tool on a device of its own
			// making.
			for _, arg := range closeArgs {
				var closes [2]result
				var left [2]bool
				for i, tool := range []string{g.ours, g.real} {
					if !deviceExists(t, c.name) {
						makeDevice(t, c.name, c.uuid, c.targets)
					}
					closes[i] = runTool(t, tool, "close", arg)
					left[i] = deviceExists(t, c.name)
				}
				sameAs(t, "close "+arg, closes[0], closes[1], true)
				if left[0] != left[1] {
					t.Errorf("close %s: the device is there after ours: %v, after veritysetup's: %v", arg, left[0], left[1])
				}
				t.Logf("close %s: %v, the device left: %v", arg, closes[1], left[1])
			}
		})
	}
	// Paths that are not device-mapper nodes.
	for _, a := range [][]string{{"status", part}, {"status", regular}, {"close", part}, {"close", regular}} {
		sameAs(t, strings.Join(a, " "), runTool(t, g.ours, a...), runTool(t, g.real, a...), true)
	}
}

// TestKernelFrontCancelDeferred: close --deferred of a held device, then
// close --cancel-deferred: the device stays after its last close; and
// --cancel-deferred of a device with no removal pending, and of a name no
// device has.
func TestKernelFrontCancelDeferred(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 16, nil, "")
	cleanup(t, g, "vt-fcancel")
	var deferred, cancelled, again, statusAfter [2]result
	for i, tool := range []string{g.ours, g.real} {
		if r := runTool(t, tool, "open", im.data, "vt-fcancel", im.hash, im.root); r.code != 0 {
			t.Fatalf("%s open: %v", tool, r)
		}
		held, err := os.Open("/dev/mapper/vt-fcancel")
		if err != nil {
			t.Fatal(err)
		}
		deferred[i] = runTool(t, tool, "close", "--deferred", "vt-fcancel")
		cancelled[i] = runTool(t, tool, "close", "--cancel-deferred", "vt-fcancel")
		held.Close()
		// The removal was cancelled: the device is still there after its
		// last close (removal at the last close is synchronous).
		statusAfter[i] = runTool(t, tool, "status", "vt-fcancel")
		again[i] = runTool(t, tool, "close", "--cancel-deferred", "vt-fcancel")
		if r := runTool(t, tool, "close", "vt-fcancel"); r.code != 0 {
			t.Errorf("%s: close after the cancelled removal: %v", tool, r)
		}
	}
	sameAs(t, "close --deferred", deferred[0], deferred[1], true)
	sameAs(t, "close --cancel-deferred", cancelled[0], cancelled[1], true)
	sameAs(t, "status after the last close", statusAfter[0], statusAfter[1], true)
	sameAs(t, "close --cancel-deferred with none pending", again[0], again[1], true)
	if cancelled[0].code != 0 || statusAfter[0].code != 0 || !strings.HasPrefix(statusAfter[0].stdout, "/dev/mapper/vt-fcancel is active.\n") {
		t.Errorf("cancel: %v; status after the last close: %v", cancelled[0], statusAfter[0])
	}
	sameAs(t, "close --cancel-deferred of no device", runTool(t, g.ours, "close", "--cancel-deferred", "vt-fcancel"),
		runTool(t, g.real, "close", "--cancel-deferred", "vt-fcancel"), true)
}

// TestKernelFrontNotRoot: open, status and close as a user who is not
// root: device-mapper does not answer, and both tools say so alike.
func TestKernelFrontNotRoot(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 16, nil, "")
	// t.TempDir's directories are root's alone.
	for _, p := range []string{filepath.Dir(im.dir), im.dir, im.data, im.hash} {
		os.Chmod(p, 0o755)
	}
	const nobody = 65534
	for _, a := range [][]string{{"open", im.data, "vt-fuser", im.hash, im.root}, {"status", "vt-fuser"}, {"close", "vt-fuser"},
		{"status", "/dev/mapper/vt-fuser"}} {
		ours, theirs := runToolAs(t, nobody, g.ours, a...), runToolAs(t, nobody, g.real, a...)
		sameAs(t, strings.Join(a, " "), ours, theirs, true)
		t.Logf("veritysetup's %v as uid %d: %v", a[0], nobody, theirs)
	}
	if deviceExists(t, "vt-fuser") {
		t.Error("a device was made")
		removeDevice(t, "vt-fuser")
	}
	if l := loopsOn(im.data, im.hash); len(l) > 0 {
		t.Errorf("%v attached", l)
	}
}

// TestKernelFrontFlags: open's table flags, as status shows them: the
// whole device read (intact: restart and panic never fire), status the
// same from both tools; the old create NAME DATA HASH ROOT once.
func TestKernelFrontFlags(t *testing.T) {
	g := requireGuest(t)
	im := newImage(t, 32, nil, "")
	cleanup(t, g, "vt-fflags")
	for _, flags := range [][]string{
		{"--ignore-zero-blocks", "--check-at-most-once", "--use-tasklets"},
		{"--restart-on-corruption", "--check-at-most-once"},
		{"--panic-on-corruption", "--ignore-zero-blocks"},
		{"create"},
	} {
		var status [2]result
		for i, tool := range []string{g.ours, g.real} {
			args := append(append([]string{"open"}, flags...), im.data, "vt-fflags", im.hash, im.root)
			if flags[0] == "create" {
				args = []string{"create", "vt-fflags", im.data, im.hash, im.root}
			}
			if r := runTool(t, tool, args...); r.code != 0 {
				t.Fatalf("%s %v: %v", tool, args, r)
			}
			if sum, err := readMapped("vt-fflags"); err != nil || sum != im.sum() {
				t.Errorf("%s %v: reading the device: %v", tool, flags, err)
			}
			status[i] = runTool(t, tool, "status", "vt-fflags")
			if r := runTool(t, tool, "close", "vt-fflags"); r.code != 0 {
				t.Errorf("%s close: %v", tool, r)
			}
		}
		sameAs(t, fmt.Sprint(flags), status[0], status[1], true)
		_, tail, _ := strings.Cut(status[1].stdout, "  root hash:")
		t.Logf("%v: veritysetup's status ends %q", flags, tail)
	}
}
