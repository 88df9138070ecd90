package avb_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/avb"
)

// What avb_slot_verify gives the bootloader of a device without A/B
// slots: boot is requested and loaded; system, set up as the root file
// system (avbtool --setup_rootfs_from_kernel), is left to dm-verity,
// whose table the kernel command line carries with the partitions' GUIDs
// and the hashtree error mode's option. A locked device loads boot's
// image_size bytes, an unlocked one the whole partition; a damaged boot
// is still loaded on an unlocked device, and not booted on a locked one.
func ExampleSlotBoot() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	at := func(name string) string { return filepath.Join(dir, name) }
	key, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(at("boot.img"), []byte(strings.Repeat("a boot image\n", 1000)), 0o644); err != nil {
		log.Fatal(err)
	}
	if _, err := avb.AddHashFooter(ctx, at("boot.img"), &avb.HashFooterOptions{PartitionSize: 128 << 10, PartitionName: "boot", Salt: []byte{0xb0}}); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(at("system.img"), []byte(strings.Repeat("system files\n", 2000)), 0o644); err != nil {
		log.Fatal(err)
	}
	if _, err := avb.AddHashtreeFooter(ctx, at("system.img"), &avb.HashtreeFooterOptions{PartitionSize: 256 << 10, PartitionName: "system", Salt: []byte{0x51}}); err != nil {
		log.Fatal(err)
	}
	err = avb.MakeVBMetaImage(ctx, at("vbmeta.img"), &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA2048", Key: key,
		IncludeDescriptorsFrom: []string{at("boot.img"), at("system.img")}, SetupRootfsFromKernel: at("system.img"),
		KernelCmdlines: []string{"console=ttyS0"}})
	if err != nil {
		log.Fatal(err)
	}

	opts := &avb.SlotOptions{
		Requested:         []string{"boot"},
		PartUUIDs:         map[string]string{"system": "5a5a5a5a-0000-4000-8000-000000000001", "vbmeta": "0b0b0b0b-0000-4000-8000-000000000002"},
		HashtreeErrorMode: avb.HashtreeRestart,
	}
	show := func() {
		r, err := avb.VerifySlot(ctx, at("vbmeta.img"), &avb.SlotImages{Dir: dir}, opts)
		if err != nil {
			log.Fatal(err)
		}
		for _, b := range []*avb.SlotBoot{r.Locked, r.Unlocked} {
			fmt.Printf("locked %v: %s", b.Locked, b.Result)
			for _, l := range b.Loaded {
				fmt.Printf(", loads %s (%d bytes, %s)", l.Partition, l.Size, l.Result)
			}
			fmt.Println()
			if b.Data {
				// The table's fields are the descriptor's; show the ends.
				c := b.Cmdline
				fmt.Printf("  %s ...\n  %s ...\n  %s\n", c[:strings.Index(c, " 4096 ")], c[strings.Index(c, "\" root=")+2:strings.Index(c, " androidboot.vbmeta.hash_alg")],
					c[strings.Index(c, " 2 ")+1:strings.Index(c, "\" root=")+1]+c[strings.LastIndex(c, " androidboot.veritymode"):])
			}
		}
	}
	show()
	f, err := os.OpenFile(at("boot.img"), os.O_RDWR, 0)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("A"), 0); err != nil {
		log.Fatal(err)
	}
	f.Close()
	show()
	// Output:
	// locked true: OK, loads boot (13000 bytes, OK)
	//   dm="1 vroot none ro 1,0 56 verity 1 PARTUUID=5a5a5a5a-0000-4000-8000-000000000001 PARTUUID=5a5a5a5a-0000-4000-8000-000000000001 ...
	//   root=/dev/dm-0 console=ttyS0 androidboot.vbmeta.device=PARTUUID=0b0b0b0b-0000-4000-8000-000000000002 androidboot.vbmeta.avb_version=1.3 androidboot.vbmeta.device_state=locked ...
	//   2 restart_on_corruption ignore_zero_blocks" androidboot.veritymode=enforcing
	// locked false: OK, loads boot (131072 bytes, OK)
	//   dm="1 vroot none ro 1,0 56 verity 1 PARTUUID=5a5a5a5a-0000-4000-8000-000000000001 PARTUUID=5a5a5a5a-0000-4000-8000-000000000001 ...
	//   root=/dev/dm-0 console=ttyS0 androidboot.vbmeta.device=PARTUUID=0b0b0b0b-0000-4000-8000-000000000002 androidboot.vbmeta.avb_version=1.3 androidboot.vbmeta.device_state=unlocked ...
	//   2 restart_on_corruption ignore_zero_blocks" androidboot.veritymode=enforcing
	// locked true: ERROR_VERIFICATION
	// locked false: ERROR_VERIFICATION, loads boot (131072 bytes, ERROR_VERIFICATION)
	//   dm="1 vroot none ro 1,0 56 verity 1 PARTUUID=5a5a5a5a-0000-4000-8000-000000000001 PARTUUID=5a5a5a5a-0000-4000-8000-000000000001 ...
	//   root=/dev/dm-0 console=ttyS0 androidboot.vbmeta.device=PARTUUID=0b0b0b0b-0000-4000-8000-000000000002 androidboot.vbmeta.avb_version=1.3 androidboot.vbmeta.device_state=unlocked ...
	//   2 restart_on_corruption ignore_zero_blocks" androidboot.veritymode=enforcing
}
