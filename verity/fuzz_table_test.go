package verity

import (
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/internal/dmname"
	"github.com/veritytree/veritytree/merkle"
)

// kernelFields splits s as the kernel's dm table parser does: at the bytes
// its isspace() takes for spaces, which include 0xA0 (Latin-1's no-break
// space, in lib/ctype.c) and so split some UTF-8 characters.
func kernelFields(s string) []string {
	var fields []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || strings.IndexByte(" \t\n\v\f\r\xa0", s[i]) >= 0 {
			if start >= 0 {
				fields = append(fields, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return fields
}

// FuzzBootNames: a device or dm name the checks accept cannot split or end
// the kernel table and the boot arguments it is written into: the table
// has as many fields with it as with a plain name, and the dm-mod.create
// and dm= arguments stay one quoted word each.
func FuzzBootNames(f *testing.F) {
	for _, s := range []string{"/dev/sda5", "PARTUUID=1234-01", "/dev/disk/by-partlabel/system_a", "a b", "x,y", "a;b", "q\"", "\x7f", "é", "", "/dev/\u2028x"} {
		f.Add(s)
	}
	a, err := hashes.Lookup("sha256")
	if err != nil {
		f.Fatal(err)
	}
	g, err := merkle.NewGeometry(merkle.Params{Hash: a, Salt: []byte{1}, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 100})
	if err != nil {
		f.Fatal(err)
	}
	root := make([]byte, 32)
	plain := len(kernelFields(verityTable(g, root, &TableOptions{DataDevice: "/dev/a", HashDevice: "/dev/b"}, nil)))
	f.Fuzz(func(t *testing.T, s string) {
		if dmname.Check(s) != nil {
			return
		}
		if strings.ContainsAny(s, dmname.BadChars) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("accepted %q", s)
		}
		table := verityTable(g, root, &TableOptions{DataDevice: s, HashDevice: s}, nil)
		if n := len(kernelFields(table)); n != plain {
			t.Fatalf("name %q: the table has %d fields, not %d: %q", s, n, plain, table)
		}
		if checkDMName(s) != nil {
			return
		}
		p, err := Table(g, root, nil, &TableOptions{DataDevice: s, HashDevice: s, DMName: s})
		if err != nil {
			t.Fatalf("name %q: %v", s, err)
		}
		for _, arg := range []string{p.DMModCreate, p.AndroidDM} {
			if strings.Count(arg, `"`) != 2 || !strings.HasSuffix(arg, `"`) || len(kernelFields(arg)) != len(kernelFields(strings.ReplaceAll(arg, s, "x"))) {
				t.Fatalf("name %q: boot argument %q", s, arg)
			}
		}
	})
}
