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

// Check a device's set of images as its bootloader would (libavb's
// avb_slot_verify): a top-level vbmeta holding boot's hash descriptor and
// chaining to vbmeta_system, which holds system's hashtree descriptor.
// A byte of system's data is then damaged, found, and repaired from the
// FEC parity the descriptor points at.
func ExampleVerifySlot() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	at := func(name string) string { return filepath.Join(dir, name) }
	topKey, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa4096.pem")
	if err != nil {
		log.Fatal(err)
	}
	systemKey, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		log.Fatal(err)
	}
	// The partitions' images, as a build makes them.
	if err := os.WriteFile(at("boot.img"), []byte(strings.Repeat("a boot image\n", 1000)), 0o644); err != nil {
		log.Fatal(err)
	}
	if _, err := avb.AddHashFooter(ctx, at("boot.img"), &avb.HashFooterOptions{PartitionSize: 128 << 10, PartitionName: "boot"}); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(at("system.img"), []byte(strings.Repeat("system files\n", 20000)), 0o644); err != nil {
		log.Fatal(err)
	}
	if _, err := avb.AddHashtreeFooter(ctx, at("system.img"), &avb.HashtreeFooterOptions{PartitionSize: 1 << 20, PartitionName: "system", FEC: true}); err != nil {
		log.Fatal(err)
	}
	// The vbmetas that sign them.
	err = avb.MakeVBMetaImage(ctx, at("vbmeta_system.img"), &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA2048", Key: systemKey,
		IncludeDescriptorsFrom: []string{at("system.img")}, RollbackIndexLocation: 1, PaddingSize: 4096})
	if err != nil {
		log.Fatal(err)
	}
	chain, err := avb.ParseChainPartition(ctx, "vbmeta_system:1:testdata/vectors/keys/rsa2048.avbpubkey", false)
	if err != nil {
		log.Fatal(err)
	}
	err = avb.MakeVBMetaImage(ctx, at("vbmeta.img"), &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA4096", Key: topKey,
		IncludeDescriptorsFrom: []string{at("boot.img")}, ChainPartitions: []avb.ChainPartition{chain}, PaddingSize: 4096})
	if err != nil {
		log.Fatal(err)
	}

	check := func(repair bool) {
		r, err := avb.VerifySlot(ctx, at("vbmeta.img"), &avb.SlotImages{Dir: dir}, &avb.SlotOptions{Repair: repair})
		if err != nil {
			log.Fatal(err)
		}
		for _, v := range r.VBMetas {
			fmt.Printf("vbmeta %s: %s\n", v.Partition, v.Result)
		}
		for _, p := range r.Partitions {
			fmt.Printf("%s (%s of %s): %s", p.Partition, filepath.Base(p.Path), p.VBMeta, p.Result)
			if p.Tree != nil && p.Tree.CorruptDataBlocks > 0 {
				fmt.Printf(", %d corrupted data block, repairable %v, repaired %v", p.Tree.CorruptDataBlocks, p.Repairable, p.Repaired)
			}
			fmt.Println()
		}
		fmt.Println("slot:", r.Result)
	}
	check(false)
	b, err := os.ReadFile(at("system.img"))
	if err != nil {
		log.Fatal(err)
	}
	b[5000] ^= 1
	if err := os.WriteFile(at("system.img"), b, 0o644); err != nil {
		log.Fatal(err)
	}
	check(false)
	check(true)
	// Output:
	// vbmeta vbmeta: OK
	// vbmeta vbmeta_system: OK
	// system (system.img of vbmeta_system): OK
	// boot (boot.img of vbmeta): OK
	// slot: OK
	// vbmeta vbmeta: OK
	// vbmeta vbmeta_system: OK
	// system (system.img of vbmeta_system): ERROR_VERIFICATION, 1 corrupted data block, repairable true, repaired false
	// boot (boot.img of vbmeta): OK
	// slot: ERROR_VERIFICATION
	// vbmeta vbmeta: OK
	// vbmeta vbmeta_system: OK
	// system (system.img of vbmeta_system): OK, 1 corrupted data block, repairable true, repaired true
	// boot (boot.img of vbmeta): OK
	// slot: OK
}
