package avb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/blake2b"

	"github.com/veritytree/veritytree/avb"
)

// TestCheckHashDataHashlibNames: a hash descriptor naming hashlib's
// blake2b (BLAKE2b-512, which avbtool's add_hash_footer writes for
// --hash_algorithm blake2b) is checked with that hash, against
// x/crypto's; a changed byte fails it.
func TestCheckHashDataHashlibNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boot.img")
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	salt := []byte{1, 2, 3}
	sum := blake2b.Sum512(append(append([]byte{}, salt...), data...))
	d := &avb.HashDescriptor{ImageSize: uint64(len(data)), HashAlgorithm: "blake2b", PartitionName: "boot", Salt: salt, Digest: sum[:]}
	ok, err := avb.CheckHashData(context.Background(), path, d)
	if err != nil || !ok {
		t.Fatalf("blake2b descriptor of the image: %v, %v", ok, err)
	}
	data[5000] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := avb.CheckHashData(context.Background(), path, d); err != nil || ok {
		t.Fatalf("after a changed byte: %v, %v", ok, err)
	}
	if _, err := avb.LookupHash("whirlpool"); err == nil {
		t.Fatal("LookupHash took whirlpool")
	}
}
