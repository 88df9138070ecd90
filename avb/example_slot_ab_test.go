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

// Check slot _a of an A/B device, whose factory partition keeps its
// digest on the device (avbtool --use_persistent_digest --do_not_use_ab):
// libavb reads boot_a and vbmeta_a, but factory without the suffix, and
// holds factory to the device's persistent value. A device holding none
// refuses it when unlocked, and writes the image's digest there when
// locked.
func ExampleSlotOptions() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	at := func(name string) string { return filepath.Join(dir, name) }
	key, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa4096.pem")
	if err != nil {
		log.Fatal(err)
	}
	for name, o := range map[string]*avb.HashFooterOptions{
		"boot_a.img":  {PartitionName: "boot", Salt: []byte("salt")},
		"factory.img": {PartitionName: "factory", UsePersistentDigest: true, DoNotUseAB: true},
	} {
		if err := os.WriteFile(at(name), []byte(strings.Repeat(name+"\n", 1000)), 0o644); err != nil {
			log.Fatal(err)
		}
		o.PartitionSize = 128 << 10
		if _, err := avb.AddHashFooter(ctx, at(name), o); err != nil {
			log.Fatal(err)
		}
	}
	err = avb.MakeVBMetaImage(ctx, at("vbmeta_a.img"), &avb.VBMetaImageOptions{Algorithm: "SHA256_RSA4096", Key: key,
		IncludeDescriptorsFrom: []string{at("boot_a.img"), at("factory.img")}})
	if err != nil {
		log.Fatal(err)
	}

	values := map[string][]byte{} // the device holds none yet
	check := func() {
		r, err := avb.VerifySlot(ctx, at("vbmeta_a.img"), &avb.SlotImages{Dir: dir},
			&avb.SlotOptions{ABSuffix: "_a", PersistentValues: values})
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range r.Partitions {
			fmt.Printf("%s (%s): %s\n", p.Partition, filepath.Base(p.Path), p.Result)
			if p.PersistentInit != nil {
				fmt.Printf("  a locked device writes %s = %x\n", p.PersistentName, p.PersistentInit[:8])
				values[p.PersistentName] = p.PersistentInit
			}
		}
		fmt.Println("slot:", r.Result)
	}
	check()
	check() // the value written: sha256 of factory.img's data (no salt)
	// Output:
	// boot_a (boot_a.img): OK
	// factory (factory.img): ERROR_VERIFICATION
	//   a locked device writes avb.persistent_digest.factory = 2351cbbbf860b9ad
	// slot: ERROR_VERIFICATION
	// boot_a (boot_a.img): OK
	// factory (factory.img): OK
	// slot: OK
}
