package avb_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/veritytree/veritytree/avb"
)

// Make a top-level vbmeta image as `avbtool make_vbmeta_image` does: it
// chains to vbmeta_system (signed with its own key), holds a property,
// is signed and padded to 4096 bytes. (avbtool makes the same file from
// the same options: 2560 bytes of vbmeta.)
func ExampleMakeVBMetaImage() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	key, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa4096.pem")
	if err != nil {
		log.Fatal(err)
	}
	chain, err := avb.ParseChainPartition(ctx, "vbmeta_system:1:testdata/vectors/keys/rsa2048.avbpubkey", false)
	if err != nil {
		log.Fatal(err)
	}
	out := filepath.Join(dir, "vbmeta.img")
	err = avb.MakeVBMetaImage(ctx, out, &avb.VBMetaImageOptions{
		Algorithm:       "SHA256_RSA4096",
		Key:             key,
		ChainPartitions: []avb.ChainPartition{chain},
		Properties:      []avb.Property{{Key: "com.example.build", Value: []byte("42")}},
		RollbackIndex:   9,
		PaddingSize:     4096,
	})
	if err != nil {
		log.Fatal(err)
	}
	img, err := avb.ReadImage(out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("file", img.Size, "bytes, vbmeta", len(img.VBMeta.Raw), "bytes,", img.VBMeta.Algorithm.Name)
	for d := range img.VBMeta.Descriptors() {
		switch d := d.(type) {
		case *avb.ChainPartitionDescriptor:
			fmt.Println("chain", d.PartitionName, "at location", d.RollbackIndexLocation)
		case *avb.PropertyDescriptor:
			fmt.Printf("property %s=%s\n", d.Key, d.Value)
		}
	}
	// Output:
	// file 4096 bytes, vbmeta 2560 bytes, SHA256_RSA4096
	// chain vbmeta_system at location 1
	// property com.example.build=42
}

// The digest a bootloader passes the kernel as androidboot.vbmeta.digest:
// the hash of the top-level vbmeta and of the vbmetas it chains to, found
// beside it (vbmeta_system.img here). avbtool calculate_vbmeta_digest
// prints the same for the same two files.
func ExampleCalculateVBMetaDigest() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	systemKey, err := avb.LoadPrivateKey(ctx, "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		log.Fatal(err)
	}
	err = avb.MakeVBMetaImage(ctx, filepath.Join(dir, "vbmeta_system.img"), &avb.VBMetaImageOptions{
		Algorithm: "SHA256_RSA2048", Key: systemKey, RollbackIndexLocation: 1, PaddingSize: 4096,
	})
	if err != nil {
		log.Fatal(err)
	}
	chain, err := avb.ParseChainPartition(ctx, "vbmeta_system:1:testdata/vectors/keys/rsa2048.avbpubkey", false)
	if err != nil {
		log.Fatal(err)
	}
	top := filepath.Join(dir, "vbmeta.img")
	if err := avb.MakeVBMetaImage(ctx, top, &avb.VBMetaImageOptions{ChainPartitions: []avb.ChainPartition{chain}}); err != nil {
		log.Fatal(err)
	}
	d, err := avb.CalculateVBMetaDigest(ctx, top, "sha256")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%x\n", d)
	// Output:
	// d2919191c7b0ed0ed19588821f54af3e2888247f57b522eaede3376d3fad6eba
}

// Sign with a program, as avbtool's --signing_helper does: the key stays
// where the program keeps it (an HSM, a KMS); the program is given the
// algorithm and the key's name, the block to sign on its stdin, and writes
// the signature on its stdout. Here the program is openssl's raw RSA on a
// key file (rsautl: OpenSSL 3's pkeyutl refuses a block this long), and
// the signature is checked against the public key.
func ExampleHelperSigner() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "avb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	helper := filepath.Join(dir, "sign.sh")
	// $1 is SHA256_RSA2048, $2 the key as given; the block on stdin is
	// padded already: raw RSA signs it.
	script := "#!/bin/sh\nexec openssl rsautl -sign -raw -inkey \"$2\" 2>/dev/null\n"
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		log.Fatal(err)
	}
	keyPath := "testdata/vectors/keys/rsa2048.pem"
	public, err := avb.LoadPublicKey(ctx, keyPath)
	if err != nil {
		log.Fatal(err)
	}
	out := filepath.Join(dir, "vbmeta.img")
	err = avb.MakeVBMetaImage(ctx, out, &avb.VBMetaImageOptions{
		Algorithm: "SHA256_RSA2048",
		Signer:    &avb.HelperSigner{Program: helper, KeyPath: keyPath, Public: public},
	})
	if err != nil {
		log.Fatal(err)
	}
	img, err := avb.ReadImage(out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(img.VBMeta.Algorithm.Name, "signature:", img.VBMeta.Verify())
	// Output:
	// SHA256_RSA2048 signature: <nil>
}
