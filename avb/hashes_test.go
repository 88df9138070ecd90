package avb

import (
	"bufio"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestAddHashtreeFooterHashes: the algorithms beyond sha1, sha256, sha512
// and blake2b-256, under the names avbtool's --hash_algorithm takes for
// them (hashlib's, which takes OpenSSL's), give avbtool's partition file
// byte for byte (testdata/hashes.tsv, made with avbtool 1.3.0): the
// descriptor keeps the name as given, as avbtool does. The image then
// verifies, reading the descriptor's name back.
func TestAddHashtreeFooterHashes(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "hashes.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	image := makeImage(t, "blockbyte:4096:100")
	salt, _ := hex.DecodeString("5eedf00d0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4")
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "hash_algorithm\t") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("hashes.tsv: %q: want 3 fields", line)
		}
		name, size, want := fields[0], fields[1], fields[2]
		n++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "image.img")
			if err := os.WriteFile(path, image, 0o644); err != nil {
				t.Fatal(err)
			}
			o := &HashtreeFooterOptions{PartitionSize: 1 << 20, PartitionName: "system", HashAlgorithm: name,
				Salt: salt}
			if _, err := AddHashtreeFooter(context.Background(), path, o); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strconv.Itoa(len(got)) != size || sha256Hex(got) != want {
				t.Fatalf("file of %d bytes, sha256 %s; avbtool: %s, %s", len(got), sha256Hex(got), size, want)
			}
			img, err := ReadImage(path)
			if err != nil {
				t.Fatal(err)
			}
			if hts := slices.Collect(img.VBMeta.HashtreeDescriptors()); len(hts) != 1 || hts[0].HashAlgorithm != name {
				t.Fatalf("descriptors %+v, want one naming %q", hts, name)
			}
			res, err := VerifyHashtree(context.Background(), path, img, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			if !res.Verified {
				t.Fatal("the image does not verify")
			}
		})
	}
	if err := sc.Err(); err != nil || n < 10 {
		t.Fatalf("hashes.tsv: %d rows, %v", n, err)
	}
}
