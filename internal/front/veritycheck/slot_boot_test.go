package veritycheck

// What avb_slot_verify gives the bootloader, in --avb-slot's report:
// --request, --partuuid, --hashtree-error-mode reach avb.VerifySlot, whose
// loaded partitions and kernel command line are held to libavb's by
// avb's TestSlotBootIsLibavbs.

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// slotCmdlineSet is slotABSet with kernel command-line descriptors in
// vbmeta_a: system_a set up as the root file system, and a snippet with
// the GUID variables.
func slotCmdlineSet(t *testing.T) string {
	t.Helper()
	dir, _ := slotABSet(t)
	avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_a.img", "--include_descriptors_from_image", "boot_a.img",
		"--include_descriptors_from_image", "vendor_boot.img", "--include_descriptors_from_image", "factory.img",
		"--chain_partition", "vbmeta_system:1:keys/rsa2048.avbpubkey", "--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem",
		"--setup_rootfs_from_kernel", "system_a.img", "--kernel_cmdline", "sys=$(ANDROID_SYSTEM_PARTUUID) vbm=$(ANDROID_VBMETA_PARTUUID)")
	return dir
}

type slotBootReport struct {
	Slot struct {
		Result     string `json:"result"`
		Requested  []string
		Partitions []struct {
			Partition    string `json:"partition"`
			NotRequested bool   `json:"not_requested"`
		} `json:"partitions"`
		Locked, Unlocked struct {
			Result string `json:"result"`
			Data   bool   `json:"data"`
			Loaded []struct {
				Partition string `json:"partition"`
				Size      uint64 `json:"size"`
			} `json:"loaded_partitions"`
			Cmdline       string   `json:"cmdline"`
			Unsubstituted []string `json:"unsubstituted"`
		}
	} `json:"avb_slot"`
}

func TestSlotBootCmdline(t *testing.T) {
	dir := slotCmdlineSet(t)
	top := filepath.Join(dir, "vbmeta_a.img")
	guids := []string{"--partuuid", "system_a=11111111-2222-4333-8444-555555555555", "--partuuid", "vbmeta_a=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"}
	base := []string{"--avb-slot", "--ab-suffix", "_a", "--allow-missing"}

	// Text: both device states, the GUIDs substituted, eio's options.
	r := vcRun(append(append(append([]string{}, base...), guids...), "--request", "boot", "--hashtree-error-mode", "eio", top)...)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%v", r.code, r)
	}
	for _, want := range []string{
		"avb-slot: avb_slot_verify on a locked device returns OK, loads boot (",
		"avb-slot: avb_slot_verify on an unlocked device returns OK, loads boot (131072 bytes), hashtree error mode eio",
		"avb-slot: kernel command line, locked: dm=\"1 vroot none ro 1,0 ",
		" sys=11111111-2222-4333-8444-555555555555 vbm=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee androidboot.vbmeta.device=PARTUUID=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee androidboot.vbmeta.avb_version=1.3 androidboot.vbmeta.device_state=locked ",
		" androidboot.veritymode=eio\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "$(") || strings.Contains(r.stdout, "vendor_boot (") {
		t.Errorf("a variable left, or vendor_boot (not requested) loaded:\n%s", r.stdout)
	}
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); !strings.HasPrefix(lines[len(lines)-1], "verified: ") {
		t.Errorf("the report does not end with the verdict:\n%s", r.stdout)
	}

	// JSON: the not-requested partition, the variables left without
	// --partuuid, restart_and_invalidate by default.
	r = vcRun(append(append([]string{}, base...), "--json", "--request", "boot,factory", top)...)
	var rep slotBootReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v:\n%v", r.code, err, r)
	}
	s := rep.Slot
	for _, p := range s.Partitions {
		if want := p.Partition == "vendor_boot"; p.NotRequested != want {
			t.Errorf("partition %s: not_requested %v", p.Partition, p.NotRequested)
		}
	}
	if len(s.Unlocked.Loaded) != 2 || s.Unlocked.Loaded[0].Partition != "boot" || s.Unlocked.Loaded[1].Partition != "factory" || s.Unlocked.Loaded[1].Size != 131072 {
		t.Errorf("unlocked loads %+v", s.Unlocked.Loaded)
	}
	for _, b := range []struct {
		state, cmdline string
		unsub          []string
	}{{"locked", s.Locked.Cmdline, s.Locked.Unsubstituted}, {"unlocked", s.Unlocked.Cmdline, s.Unlocked.Unsubstituted}} {
		if !strings.Contains(b.cmdline, "sys=$(ANDROID_SYSTEM_PARTUUID) vbm=$(ANDROID_VBMETA_PARTUUID) ") ||
			!strings.Contains(b.cmdline, "restart_on_corruption") || !strings.Contains(b.cmdline, "androidboot.vbmeta.invalidate_on_error=yes") ||
			!strings.Contains(b.cmdline, "androidboot.vbmeta.device_state="+b.state) || len(b.unsub) != 2 {
			t.Errorf("%s: cmdline %q, unsubstituted %v", b.state, b.cmdline, b.unsub)
		}
	}

	// A GUID libavb asks for and the device does not have: no slot data.
	r = vcRun(append(append([]string{}, base...), "--partuuid", "vbmeta_a=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", top)...)
	if r.code != 2 || !strings.Contains(r.stdout, "returns ERROR_OOM") || !strings.Contains(r.stdout, `no partition "system_a"`) {
		t.Errorf("want exit 2, ERROR_OOM for system_a's GUID:\n%v", r)
	}
	// logging: a locked device refuses it.
	r = vcRun(append(append([]string{}, base...), "--hashtree-error-mode", "logging", top)...)
	if r.code != 0 || !strings.Contains(r.stdout, "on a locked device returns ERROR_INVALID_ARGUMENT") || !strings.Contains(r.stdout, "androidboot.veritymode=logging") {
		t.Errorf("logging:\n%v", r)
	}
	for _, bad := range [][]string{{"--hashtree-error-mode", "sometimes"}, {"--hashtree-error-mode="}, {"--partuuid", "system_a"}, {"--request", "boot,"},
		{"--partuuid", "a=1", "--partuuid", "a=2"}, {"--partuuid", "a=" + strings.Repeat("1", 37)}} {
		if r := vcRun(append(append(append([]string{}, base...), bad...), top)...); r.code != 2 || !strings.Contains(r.stderr, bad[0]) {
			t.Errorf("%v: want exit 2 naming the flag:\n%v", bad, r)
		}
	}
}

// TestSlotBootLockedBootsRefusedChain: where libavb on a locked device
// boots a slot this check refuses (a chained vbmeta whose signature fails,
// then a persistent root digest in the top-level vbmeta: avb's
// boot/cl-chain-sig), the exit code stays 1 and the report says so.
func TestSlotBootLockedBootsRefusedChain(t *testing.T) {
	dir, factory := slotABSet(t)
	// cust's root digest, which the device holds: that of the same image
	// and salt with the digest in the descriptor.
	for _, n := range []string{"cust.img", "cust-root.img"} {
		fronttest.Image(t, filepath.Join(dir, n), 8*4096, 5)
	}
	avbtoolRun(t, dir, "add_hashtree_footer", "--image", "cust-root.img", "--partition_size", "262144", "--partition_name", "cust",
		"--do_not_generate_fec", "--salt", "c0c0")
	img, err := avb.ReadImage(filepath.Join(dir, "cust-root.img"))
	if err != nil {
		t.Fatal(err)
	}
	var root string
	for d := range img.VBMeta.Descriptors() {
		if h, ok := d.(*avb.HashtreeDescriptor); ok {
			root = hex.EncodeToString(h.RootDigest)
		}
	}
	avbtoolRun(t, dir, "add_hashtree_footer", "--image", "cust.img", "--partition_size", "262144", "--partition_name", "cust",
		"--do_not_generate_fec", "--salt", "c0c0", "--use_persistent_digest", "--do_not_use_ab")
	avbtoolRun(t, dir, "make_vbmeta_image", "--output", "vbmeta_a.img", "--include_descriptors_from_image", "boot_a.img",
		"--include_descriptors_from_image", "vendor_boot.img", "--include_descriptors_from_image", "factory.img",
		"--chain_partition", "vbmeta_system:1:keys/rsa2048.avbpubkey", "--include_descriptors_from_image", "cust.img",
		"--algorithm", "SHA256_RSA4096", "--key", "keys/rsa4096.pem")
	f := filepath.Join(dir, "vbmeta_system_a.img")
	b := fronttest.Read(t, f)
	for _, damage := range []bool{false, true} {
		if damage {
			b[256+32+10] ^= 1 // in the signature
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := vcRun("--avb-slot", "--ab-suffix", "_a", "--persistent-digest", "factory="+factory, "--persistent-digest", "cust="+root, filepath.Join(dir, "vbmeta_a.img"))
		note := strings.Contains(r.stdout, "avb-slot: note: libavb boots this slot on a locked device, though this check finds it ERROR_VERIFICATION")
		locked := strings.Contains(r.stdout, "avb_slot_verify on a locked device returns OK")
		if want := map[bool]int{false: 0, true: 1}[damage]; r.code != want || note != damage || !locked {
			t.Errorf("damaged %v: exit %d (want %d), note %v, locked OK %v:\n%v", damage, r.code, want, note, locked, r)
		}
	}
}
