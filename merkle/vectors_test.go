package merkle_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/testimages"
)

// peerVectorUUID is the UUID roots.tsv's superblock layouts were made with.
const peerVectorUUID = "a60c98d2-ae9b-4865-bfcb-b4e3ace11033"

// peerVector is one row of roots.tsv.
type peerVector struct {
	file                                 string
	line                                 int
	name, data, hash, salt, layout, root string
	dbs, hbs, format                     int
	hashfileSHA256                       string
}

// peerVectorFiles are the known-answer tables: roots.tsv, a copy of
// ../shared/vectors/roots.tsv (so that a clone passes anywhere), and
// roots-hashes.tsv, the other algorithms, in the same columns.
var peerVectorFiles = []string{"roots.tsv", "roots-hashes.tsv"}

func peerReadVectors(t *testing.T) []peerVector {
	t.Helper()
	var vs []peerVector
	for _, name := range peerVectorFiles {
		vs = append(vs, peerReadVectorFile(t, name)...)
	}
	return vs
}

func peerReadVectorFile(t *testing.T, file string) []peerVector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cols map[string]int
	var vs []peerVector
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if cols == nil { // the first other line is the header
			cols = map[string]int{}
			for i, c := range fields {
				cols[c] = i
			}
			for _, c := range []string{"name", "data", "dbs", "hbs", "format", "hash", "salt", "layout", "root", "hashfile_sha256"} {
				if _, ok := cols[c]; !ok {
					t.Fatalf("%s header lacks column %q", file, c)
				}
			}
			continue
		}
		if len(fields) != len(cols) {
			t.Fatalf("%s:%d: %d fields, header has %d", file, line, len(fields), len(cols))
		}
		get := func(c string) string { return fields[cols[c]] }
		atoi := func(c string) int {
			n, err := strconv.Atoi(get(c))
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", file, line, c, err)
			}
			return n
		}
		vs = append(vs, peerVector{
			file: file, line: line, name: get("name"), data: get("data"), hash: get("hash"), salt: get("salt"),
			layout: get("layout"), root: get("root"), hashfileSHA256: get("hashfile_sha256"),
			dbs: atoi("dbs"), hbs: atoi("hbs"), format: atoi("format"),
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatalf("%s has no vectors", file)
	}
	return vs
}

func peerParseUUID(t *testing.T, s string) (u [16]byte) {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		t.Fatalf("bad UUID %q", s)
	}
	copy(u[:], b)
	return u
}

func peerFileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestVectors(t *testing.T) {
	t.Parallel()
	for _, v := range peerReadVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			peerCheckVector(t, v)
		})
	}
}

func peerCheckVector(t *testing.T, v peerVector) {
	alg, err := hashes.Lookup(v.hash)
	if err != nil {
		t.Fatalf("%s:%d: %v", v.file, v.line, err)
	}
	p := merkle.Params{
		Hash: alg, LegacyFormat: v.format == 0, DataBlockSize: v.dbs, HashBlockSize: v.hbs, Salt: []byte{},
	}
	if v.salt != "-" {
		if p.Salt, err = hex.DecodeString(v.salt); err != nil {
			t.Fatalf("%s:%d: salt: %v", v.file, v.line, err)
		}
	}

	dir := t.TempDir()
	dataPath := filepath.Join(dir, "data.img")
	if err := testimages.WriteFile(dataPath, func(w io.Writer) error { return testimages.FromSpec(w, v.data) }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	size := uint64(st.Size())

	hashPath := filepath.Join(dir, "hash.img")
	separate := true
	switch {
	case v.layout == "sep-nosb":
		p.DataBlocks = size / uint64(v.dbs)
	case v.layout == "sep-sb":
		p.DataBlocks = size / uint64(v.dbs)
		p.Superblock = true
		p.UUID = peerParseUUID(t, peerVectorUUID)
	case strings.HasPrefix(v.layout, "offset:"):
		off, err := strconv.ParseUint(strings.TrimPrefix(v.layout, "offset:"), 10, 64)
		if err != nil {
			t.Fatalf("%s:%d: layout %q: %v", v.file, v.line, v.layout, err)
		}
		p.HashOffset = off
		p.DataBlocks = off / uint64(v.dbs)
		p.Superblock = true
		p.UUID = peerParseUUID(t, peerVectorUUID)
		hashPath, separate = dataPath, false
	default:
		t.Fatalf("%s:%d: unknown layout %q", v.file, v.line, v.layout)
	}
	g, err := merkle.NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}

	data, err := os.Open(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	hf, err := os.OpenFile(hashPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	root, err := merkle.Build(context.Background(), g, data, hf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(root); got != v.root {
		t.Errorf("root %s, want %s (%s:%d)", got, v.root, v.file, v.line)
	}

	hst, err := hf.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if separate && uint64(hst.Size()) != g.HashEnd() {
		// veritysetup's separate hash file ends at HashEnd.
		t.Errorf("hash file is %d bytes, want HashEnd %d", hst.Size(), g.HashEnd())
	}
	if !separate && uint64(hst.Size()) != max(size, g.HashEnd()) {
		t.Errorf("data file is %d bytes after the build, want %d", hst.Size(), max(size, g.HashEnd()))
	}
	if v.hashfileSHA256 != "-" {
		if got := peerFileSHA256(t, hashPath); got != v.hashfileSHA256 {
			t.Errorf("hash file SHA-256 %s, want %s (%s:%d)", got, v.hashfileSHA256, v.file, v.line)
		}
	}
}
