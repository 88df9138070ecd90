package kernel

// An AVB partition image made with avb.AddHashtreeFooter
// (--setup-as-rootfs-from-kernel, FEC on), opened by Linux's dm-verity with
// the table of the kernel command line avbtool's calculate_kernel_cmdline
// rule gives.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/testtool"
)

// androidDM is the one device of a kernel command line's dm="..."
// (Android's dm= format: "1 NAME UUID ro|rw 1,START LENGTH TYPE ARGS").
type androidDM struct {
	name, uuid string
	readOnly   bool
	start      uint64
	sectors    uint64
	target     string
	args       string
}

// parseAndroidDM takes the dm="..." of cmdline apart. The Debian kernel has
// neither Android's dm= parser nor dm-mod.create (CONFIG_DM_INIT needs
// device-mapper built in), so the test creates the device from its parts
// with dmsetup, as Android's init does from the same line.
func parseAndroidDM(cmdline string) (*androidDM, error) {
	_, rest, ok := strings.Cut(cmdline, `dm="`)
	if !ok {
		return nil, fmt.Errorf("no dm=\"...\" in %q", cmdline)
	}
	line, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return nil, fmt.Errorf("dm=\" not closed in %q", cmdline)
	}
	head, table, ok := strings.Cut(line, ",")
	h := strings.Fields(head)
	if !ok || len(h) != 5 || h[0] != "1" || h[4] != "1" || (h[3] != "ro" && h[3] != "rw") {
		return nil, fmt.Errorf("dm=%q: want one device with one target", line)
	}
	f := strings.SplitN(table, " ", 4)
	if len(f) != 4 {
		return nil, fmt.Errorf("dm=%q: target %q is not START LENGTH TYPE ARGS", line, table)
	}
	d := &androidDM{name: h[1], uuid: h[2], readOnly: h[3] == "ro", target: f[2], args: f[3]}
	var err1, err2 error
	d.start, err1 = strconv.ParseUint(f[0], 10, 64)
	d.sectors, err2 = strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("dm=%q: target %q: bad start or length", line, table)
	}
	return d, nil
}

// avbCase is one dm device made from the line.
type avbCase struct {
	name    string
	part    int    // the partition (1-based) the image is on
	device  string // what $(ANDROID_SYSTEM_PARTUUID) becomes, with PARTUUID=
	mode    string // what $(ANDROID_VERITY_MODE) becomes
	table   string // the target's arguments, substituted
	spoiled int    // bytes spoiled in data block 10 (FEC repairs them)
	loose   bool   // the kernel's table may differ from ours in its options
}

// TestAVBRootfs boots the kernel on an AVB image made as `avbtool
// add_hashtree_footer --setup_as_rootfs_from_kernel` makes it (FEC on,
// sha1 as avbtool's default, signed with RSA-2048), with the table of the
// kernel command line its descriptors give (avb.CalculateKernelCmdline),
// the placeholders substituted as the bootloader (libavb) does:
// $(ANDROID_SYSTEM_PARTUUID) by the partition's PARTUUID (and, as the
// other kernel tests name devices, by /dev/vdaN), $(ANDROID_VERITY_MODE)
// by restart_on_corruption (libavb's default mode) and, for a copy with a
// spoiled data block that the FEC must repair, by ignore_zero_blocks
// (libavb's EIO mode: no reboot if the repair failed, an I/O error).
// dm-verity must read back the image's data.
func TestAVBRootfs(t *testing.T) {
	testtool.Long(t, "the kernel boot")
	start := time.Now()
	tools := requireGuestTools(t)
	k := debianKernel(t)
	work := t.TempDir()

	image := filepath.Join(work, "system.img")
	wantSHA, ht := makeAVBRootfs(t, image)
	dm := avbKernelDM(t, image, ht)

	// Partition 1 is the image; partition 2 a copy with 16 bytes of data
	// block 10 spoiled.
	spoiledImage := filepath.Join(work, "system-spoiled.img")
	spoiledBytes := spoilAVBCopy(t, image, spoiledImage)
	parts := []partition{{name: "system", path: image}, {name: "system-spoiled", path: spoiledImage}}

	subst := func(device, mode string) string {
		s := strings.ReplaceAll(dm.args, "PARTUUID=$(ANDROID_SYSTEM_PARTUUID)", device)
		return strings.ReplaceAll(s, "$(ANDROID_VERITY_MODE)", mode)
	}
	// vroot comes first, so that it is dm-0, as the line's root= says.
	cases := []*avbCase{
		{name: dm.name, part: 1, device: "PARTUUID=" + partUUID(0, parts[0].name), mode: "restart_on_corruption"},
		{name: dm.name + "-dev", part: 1, device: vda(1), mode: "restart_on_corruption"},
		{name: dm.name + "-fec", part: 2, device: "PARTUUID=" + partUUID(1, parts[1].name), mode: "ignore_zero_blocks", spoiled: spoiledBytes, loose: true},
	}
	var list bytes.Buffer
	for _, c := range cases {
		c.table = subst(c.device, c.mode)
		if strings.Contains(c.table, "$(") {
			t.Fatalf("a placeholder is left: %s", c.table)
		}
		fmt.Fprintf(&list, "%s %d %s\n", c.name, dm.sectors, c.table)
	}
	g, console, vmTime := bootGuest(t, tools, k, work, parts, list.Bytes())
	t.Logf("VM ran %v; whole test %v", vmTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	for _, e := range g.errors {
		t.Errorf("guest: %s", e)
	}
	devOf := map[string]string{} // case -> the kernel's MAJ:MIN of its partition
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := g.cases[c.name]
			if rep == nil || !rep.ended {
				t.Fatalf("the guest did not report this case; console:\n%s", tail(console, 40))
			}
			devOf[c.name] = c.check(t, rep, ht.ImageSize, wantSHA)
		})
	}
	if devOf[dm.name] != "" && devOf[dm.name] != devOf[dm.name+"-dev"] {
		t.Errorf("PARTUUID=%s opened %s, but %s is %s", partUUID(0, "system"), devOf[dm.name], vda(1), devOf[dm.name+"-dev"])
	}
	if rep := g.cases[dm.name]; rep != nil && rep.dev != "dm-0" {
		t.Errorf("%s is %q, not dm-0 as the line's root=/dev/dm-0 says", dm.name, rep.dev)
	}
}

// makeAVBRootfs writes to image 700 blocks of random data, every 9th block
// zero (ignore_zero_blocks is in avbtool's line), and adds the hashtree
// footer; it returns the data's SHA-256 and the descriptor.
func makeAVBRootfs(t *testing.T, image string) (string, *avb.HashtreeDescriptor) {
	t.Helper()
	data := make([]byte, 700*4096)
	rand.NewChaCha8(sha256.Sum256([]byte("avb rootfs"))).Read(data)
	for b := 0; b < 700; b += 9 {
		clear(data[b*4096 : (b+1)*4096])
	}
	sum := sha256.Sum256(data)
	if err := os.WriteFile(image, data, 0o644); err != nil {
		t.Fatal(err)
	}
	key, err := avb.LoadPrivateKey(context.Background(), filepath.Join(testtool.ModuleRoot(t), "avb/testdata/vectors/keys/rsa2048.pem"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := avb.AddHashtreeFooter(context.Background(), image, &avb.HashtreeFooterOptions{
		PartitionName: "system", Algorithm: "SHA256_RSA2048", Key: key, FEC: true, SetupAsRootfsFromKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	ht := res.Descriptor
	if ht.FECNumRoots == 0 || ht.HashAlgorithm != "sha1" {
		t.Fatalf("descriptor: %+v", ht)
	}
	return hex.EncodeToString(sum[:]), ht
}

// avbKernelDM checks the kernel command line of image (and the one with
// the hashtree disabled) and returns its dm= device.
func avbKernelDM(t *testing.T, image string, ht *avb.HashtreeDescriptor) *androidDM {
	t.Helper()
	cmdline, err := avb.CalculateKernelCmdline(context.Background(), image, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("calculate_kernel_cmdline: %s", cmdline)
	if !strings.HasSuffix(cmdline, `" root=/dev/dm-0`) {
		t.Errorf("the line does not end in root=/dev/dm-0: %q", cmdline)
	}
	if disabled, err := avb.CalculateKernelCmdline(context.Background(), image, true); err != nil || disabled != "root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)" {
		t.Errorf("with the hashtree disabled: %q, %v", disabled, err)
	}
	dm, err := parseAndroidDM(cmdline)
	if err != nil {
		t.Fatal(err)
	}
	if dm.name != "vroot" || !dm.readOnly || dm.start != 0 || dm.target != "verity" || dm.sectors != ht.ImageSize/512 {
		t.Fatalf("dm=: %+v, want vroot, ro, verity over %d sectors", dm, ht.ImageSize/512)
	}
	for _, w := range []string{" use_fec_from_device PARTUUID=$(ANDROID_SYSTEM_PARTUUID) ", fmt.Sprintf(" fec_roots %d ", ht.FECNumRoots),
		fmt.Sprintf(" fec_start %d", ht.FECOffset/4096)} {
		if !strings.Contains(dm.args+" ", w) {
			t.Errorf("the verity arguments lack %q: %s", w, dm.args)
		}
	}
	return dm
}

// spoilAVBCopy writes to spoiled a copy of image with 16 bytes of data
// block 10 replaced by random ones, and returns how many differ.
func spoilAVBCopy(t *testing.T, image, spoiled string) int {
	t.Helper()
	whole, err := os.ReadFile(image)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	junk := make([]byte, 16)
	rand.NewChaCha8(sha256.Sum256([]byte("avb spoil"))).Read(junk)
	for i, b := range junk {
		if whole[10*4096+100+i] != b {
			n++
		}
	}
	copy(whole[10*4096+100:], junk)
	if err := os.WriteFile(spoiled, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// check checks what the guest reports of the case: the kernel's table,
// the mapped device's size and data (wantSHA), its status and the FEC's
// repairs. It returns the kernel's name (MAJ:MIN) of the partition.
func (c *avbCase) check(t *testing.T, rep *report, size uint64, wantSHA string) string {
	t.Helper()
	t.Logf("table: %s", rep.table)
	for _, l := range rep.dmesg {
		t.Logf("dmesg: %s", l)
	}
	for _, e := range rep.errors {
		t.Errorf("guest: %s", e)
	}
	if code, out := rc(rep.create); code != 0 {
		t.Fatalf("dmsetup create failed (rc=%d): %s", code, out)
	}
	dev := c.checkTable(t, rep)
	if rep.size != strconv.FormatUint(size, 10) {
		t.Errorf("mapped device size %s, want %d", rep.size, size)
	}
	code, out := rc(rep.read)
	if f := strings.Fields(out); code != 0 || len(f) == 0 || f[0] != wantSHA {
		t.Errorf("reading the mapped device: rc=%d %s; want the image's data, SHA-256 %s", code, out, wantSHA)
	}
	status := strings.Fields(rep.status)
	if len(status) == 0 || status[len(status)-1] != "V" {
		t.Errorf("dmsetup status %q, want verified (V)", rep.status)
	}
	if len(rep.verrs) > 0 {
		t.Errorf("verity reported corrupted blocks (type,block): %v", rep.verrs)
	}
	corrected := fecCorrected(t, rep, dev)
	if corrected != c.spoiled {
		t.Errorf("the kernel log reports %d bytes corrected by FEC, want %d", corrected, c.spoiled)
	} else if c.spoiled > 0 {
		t.Logf("FEC corrected the %d spoiled bytes, from the parity avbtool's line points at", corrected)
	}
	return dev
}

// checkTable checks the kernel's table against ours, the devices aside
// (one partition for data, tree and parity), and returns the device.
func (c *avbCase) checkTable(t *testing.T, rep *report) string {
	t.Helper()
	got, want := strings.Fields(rep.ktable), strings.Fields(rep.table)
	if len(got) < 13 || len(want) < 13 {
		t.Fatalf("dmsetup table: kernel has %q, we gave %q", rep.ktable, rep.table)
	}
	fecAt := slices.Index(got, "use_fec_from_device")
	if fecAt < 0 || fecAt+1 >= len(got) || got[4] != got[5] || got[fecAt+1] != got[4] {
		t.Errorf("kernel table %q: want the same device for data, hash and FEC", rep.ktable)
	}
	if rep.fecdev != "" && rep.fecdev != got[4] {
		t.Errorf("%s is %s, the kernel's table names %s", vda(c.part), rep.fecdev, got[4])
	}
	norm := func(w []string) []string {
		w = slices.Clone(w)
		w[4], w[5] = "DEV", "DEV"
		if i := slices.Index(w, "use_fec_from_device"); i >= 0 && i+1 < len(w) {
			w[i+1] = "DEV"
		}
		return w
	}
	gn, wn := norm(got), norm(want)
	if !slices.Equal(gn[:13], wn[:13]) || !c.loose && !sameWords(gn[13:], wn[13:]) {
		t.Errorf("dmsetup table: kernel has %q, we gave %q", rep.ktable, rep.table)
	}
	return got[4]
}

// fecCorrected sums the bytes the kernel log says FEC corrected on dev.
func fecCorrected(t *testing.T, rep *report, dev string) int {
	t.Helper()
	corrected := 0
	for _, l := range rep.dmesg {
		var rsb uint64
		var n int
		if i := strings.Index(l, "verity-fec: "+dev+": FEC "); i >= 0 {
			if _, err := fmt.Sscanf(l[i:], "verity-fec: "+dev+": FEC %d: corrected %d errors", &rsb, &n); err != nil {
				t.Errorf("dmesg: unexpected FEC message %q", l)
			}
			corrected += n
		}
	}
	return corrected
}
