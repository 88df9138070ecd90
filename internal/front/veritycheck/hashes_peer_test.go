package veritycheck

// veritycheck on trees veritysetup makes with the algorithms beyond the
// usual four, and with veritysetup's other names for them, which its
// superblock keeps: they verify (TestPeerVeritysetupTreesVerify runs the
// cases added here), and --dump prints them as veritysetup dump does.

import (
	"fmt"
	"strings"
	"testing"
)

func init() {
	for i, alg := range []string{"sha224", "sha384", "sha3-224", "sha3-256", "sha3-384", "sha3-512",
		"blake2b-512", "blake2s-256", "md5", "md4", "rmd160"} {
		peerCases = append(peerCases,
			peerCase{name: alg + "-f1", alg: alg, format: 1, dbs: 512, hbs: 512, blocks: 300, salt: strings.Repeat("a1", 256)},
			peerCase{name: alg + "-nosb-f0", alg: alg, format: 0, dbs: 1024, hbs: 4096, blocks: 200 + i, tail: 10, salt: "-", noSB: true})
	}
	// Spellings the superblock keeps as given (in lower case).
	peerCases = append(peerCases,
		peerCase{name: "ripemd160-spelling", alg: "RIPEMD160", format: 1, blocks: 40, salt: "01"},
		peerCase{name: "sha2-384-spelling", alg: "sha2-384", format: 0, blocks: 40, salt: "01"},
		peerCase{name: "blake2b512-spelling-nosb", alg: "blake2b512", format: 1, blocks: 40, salt: "01", noSB: true},
		peerCase{name: "oid-spelling", alg: "2.16.840.1.101.3.4.2.8", format: 1, blocks: 3, salt: "01"},
	)
}

// TestPeerHashDump: --dump of superblocks naming the new algorithms, in
// veritysetup's spellings, is veritysetup dump's.
func TestPeerHashDump(t *testing.T) {
	vsPath(t)
	for _, name := range []string{"sha3-512-f1", "rmd160-f1", "ripemd160-spelling", "sha2-384-spelling", "oid-spelling"} {
		var c *peerCase
		for i := range peerCases {
			if peerCases[i].name == name {
				c = &peerCases[i]
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, hash, _, _ := peerMake(t, c, 5)
			code, want, errOut := vsRun(t, "dump", hash)
			if code != 0 {
				t.Fatalf("veritysetup dump: exit %d\n%s", code, errOut)
			}
			r := vcRun("--dump", hash)
			if r.code != 0 || r.stdout != want {
				t.Errorf("veritycheck --dump differs from veritysetup dump:\n%v\n--- veritysetup\n%s", r, want)
			}
			if !strings.Contains(want, fmt.Sprintf("Hash algorithm:  \t%s\n", strings.ToLower(c.alg))) {
				t.Errorf("veritysetup dump does not name %s as given, in lower case:\n%s", c.alg, want)
			}
		})
	}
}
