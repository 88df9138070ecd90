package veritygen

// The hash algorithms beyond the usual four, and veritysetup's other names
// for every algorithm, against veritysetup format (byte for byte, report,
// root hash file) and veritysetup verify of our tree: peerCheck.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/testimages"
)

// peerNewHashes are the algorithms veritysetup (OpenSSL) shares with the
// kernel beyond sha1, sha256 and sha512, by their kernel names; veritysetup
// has no blake2b-160/256/384 (merkle's model test covers them).
var peerNewHashes = []string{"sha224", "sha384", "sha3-224", "sha3-256", "sha3-384", "sha3-512",
	"blake2b-512", "blake2s-256", "md5", "md4", "rmd160"}

// peerHashCases are the geometries each new algorithm is built with: every
// block size from 512 B to 64 KiB, both formats, no salt and the longest,
// the sizes where a level fills up or spills over, the layouts.
func peerHashCases(hash string) []peerCase {
	hpb := func(hbs int) int64 { return int64(peerHPB(hash, hbs)) }
	return []peerCase{
		// Three levels: the top one has two digests.
		{hash: hash, format: 1, saltLen: 256, dbs: 512, hbs: 512, superblock: true, size: (hpb(512)*hpb(512) + 1) * 512},
		{hash: hash, format: 0, saltLen: 0, dbs: 512, hbs: 512, superblock: false, size: hpb(512) * hpb(512) * 512},
		{hash: hash, format: 0, saltLen: 1, dbs: 1024, hbs: 1024, superblock: true, inPlace: true, size: (hpb(1024)+1)*1024 + 700},
		{hash: hash, format: 1, saltLen: 32, dbs: 4096, hbs: 4096, superblock: false, size: (hpb(4096) - 1) * 4096},
		{hash: hash, format: 1, saltLen: 32, dbs: 4096, hbs: 4096, superblock: true, size: (hpb(4096) + 1) * 4096},
		{hash: hash, format: 0, saltLen: 256, dbs: 4096, hbs: 512, superblock: true, size: (hpb(512) + 1) * 4096},
		{hash: hash, format: 1, saltLen: 0, dbs: 65536, hbs: 65536, superblock: true, size: 3 * 65536},
		{hash: hash, format: 0, saltLen: 32, dbs: 65536, hbs: 65536, superblock: false, size: 65536},
	}
}

func TestPeerHashAlgorithms(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	images := &testimages.Cache{Dir: t.TempDir()}
	for _, hash := range peerNewHashes {
		for _, c := range peerHashCases(hash) {
			t.Run(c.String(), func(t *testing.T) {
				t.Parallel()
				peerCheck(t, vs, c, images.Random(t, c.size))
			})
		}
	}
}

// TestPeerHashSpellings: every name hashes.Lookup takes for an algorithm
// veritysetup has is one veritysetup takes for it: the same tree, the
// superblock naming it as veritysetup does (the name given, in lower
// case), the same report (which prints it as given).
func TestPeerHashSpellings(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	images := &testimages.Cache{Dir: t.TempDir()}
	var names []string
	for _, a := range hashes.All() {
		if strings.HasPrefix(a.Name(), "blake2b-") && a != hashes.BLAKE2b512 {
			continue // OpenSSL has BLAKE2b-512 only
		}
		names = append(names, a.Name())
		names = append(names, a.Aliases()...)
	}
	names = append(names, "SHA256", "RIPEMD-160", "Blake2b512", "SHA3-512")
	if len(names) < 40 {
		t.Fatalf("only %d names", len(names))
	}
	for i, name := range names {
		c := peerCase{hash: name, format: i % 2, saltLen: 32, dbs: 4096, hbs: 4096, superblock: true, size: 5 * 4096}
		if i%3 == 0 {
			c.superblock = false // the name is on the command line only
		}
		t.Run(fmt.Sprintf("%s/v%d/sb=%v", strings.ReplaceAll(name, "/", "_"), c.format, c.superblock), func(t *testing.T) {
			t.Parallel()
			peerCheck(t, vs, c, images.Random(t, c.size))
		})
	}
}
