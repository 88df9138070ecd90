package fec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// veritysetup's --debug output names each part of the FEC message.
var fecInputRE = regexp.MustCompile(`FEC input (\S+), offset (\d+) \[bytes\], length (\d+) \[bytes\]`)

// TestEncodeMatchesVeritysetup compares Encode with the FEC that
// `veritysetup format --fec-device` writes, byte for byte, and checks
// MessageBlocks (fec_blocks) against the message veritysetup reports
// encoding in its debug output.
func TestEncodeMatchesVeritysetup(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	for i, tc := range []struct {
		name       string
		bs         int
		dataBlocks uint64
		roots      int
		noSB       bool
		hashOffset uint64 // --hash-offset
		hashFile   uint64 // blocks of zeros in the hash file beforehand (0: none)
		oneFile    bool   // data, tree and FEC in one file; FEC at fecAt blocks
		fecAt      uint64
	}{
		{name: "4k-roots2", bs: 4096, dataBlocks: 300, roots: 2},
		{name: "4k-roots3-nosb", bs: 4096, dataBlocks: 400, roots: 3, noSB: true},
		{name: "4k-roots8", bs: 4096, dataBlocks: 257, roots: 8},
		{name: "4k-roots24", bs: 4096, dataBlocks: 480, roots: 24},
		{name: "4k-roots11-hashoffset", bs: 4096, dataBlocks: 200, roots: 11, hashOffset: 8192},
		// A hash file larger than the tree: all of it is in the message.
		{name: "4k-roots2-paddedhash", bs: 4096, dataBlocks: 300, roots: 2, hashFile: 12},
		{name: "512-roots5", bs: 512, dataBlocks: 700, roots: 5},
		{name: "512-roots24-nosb", bs: 512, dataBlocks: 1000, roots: 24, noSB: true},
		{name: "4k-roots4-onefile", bs: 4096, dataBlocks: 300, roots: 4, oneFile: true, fecAt: 310},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := newRand(t, uint64(200+i))
			dir := t.TempDir()
			bs := uint64(tc.bs)
			data := make([]byte, tc.dataBlocks*bs)
			fillRand(rng, data)
			dataName, hashName, fecName := "data", "hash", "fec"
			args := []string{"format", "--debug",
				"--data-block-size", fmt.Sprint(tc.bs), "--hash-block-size", fmt.Sprint(tc.bs),
				"--fec-roots", fmt.Sprint(tc.roots),
				"--salt=5a17", "--uuid=12345678-9abc-def0-1234-56789abcdef0"}
			if tc.noSB {
				args = append(args, "--no-superblock")
			}
			hashOffset := tc.hashOffset
			fecOffset := uint64(0)
			if tc.oneFile {
				dataName, hashName, fecName = "img", "img", "img"
				hashOffset = tc.dataBlocks * bs
				fecOffset = tc.fecAt * bs
				img := append(bytes.Clone(data), make([]byte, fecOffset-hashOffset)...)
				writeFile(t, filepath.Join(dir, "img"), img)
				args = append(args, "--data-blocks", fmt.Sprint(tc.dataBlocks), "--fec-offset", fmt.Sprint(fecOffset))
			} else {
				writeFile(t, filepath.Join(dir, "data"), data)
				if tc.hashFile > 0 {
					writeFile(t, filepath.Join(dir, "hash"), make([]byte, tc.hashFile*bs))
				}
			}
			if hashOffset > 0 {
				args = append(args, "--hash-offset", fmt.Sprint(hashOffset))
			}
			args = append(args, "--fec-device", fecName, dataName, hashName)
			cmd := exec.Command(vs, args...)
			cmd.Dir = dir
			outText, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("veritysetup %v: %v\n%s", args, err, outText)
			}

			hashStart := hashOffset / bs
			if !tc.noSB {
				hashStart = (hashOffset + 512 + bs - 1) / bs
			}
			hashEnd := fileSize(t, filepath.Join(dir, hashName))
			if tc.oneFile {
				hashEnd = fecOffset
			}
			fecBlocks := MessageBlocks(tc.dataBlocks, hashStart, hashEnd, tc.bs)

			// veritysetup's own account of the message: data, then the hash
			// device from hash_start_block for fec_blocks - data_blocks blocks.
			inputs := fecInputRE.FindAllStringSubmatch(string(outText), -1)
			if len(inputs) != 2 {
				t.Fatalf("want two FEC input lines in veritysetup's debug output:\n%s", outText)
			}
			want := [][3]string{
				{dataName, "0", fmt.Sprint(tc.dataBlocks * bs)},
				{hashName, fmt.Sprint(hashStart * bs), fmt.Sprint((fecBlocks - tc.dataBlocks) * bs)},
			}
			for i, in := range inputs {
				if got := [3]string{in[1], in[2], in[3]}; got != want[i] {
					t.Fatalf("veritysetup's FEC input %d is %v, we compute %v", i, got, want[i])
				}
			}

			p := Params{Roots: tc.roots, BlockSize: tc.bs, Blocks: fecBlocks}
			hashFile, err := os.Open(filepath.Join(dir, hashName))
			if err != nil {
				t.Fatal(err)
			}
			defer hashFile.Close()
			msg := Concat(
				Part{bytes.NewReader(data), 0, int64(tc.dataBlocks * bs)},
				Part{hashFile, int64(hashStart * bs), int64((fecBlocks - tc.dataBlocks) * bs)},
			)
			var got memFile
			if err := Encode(context.Background(), p, msg, &got, 0, 3); err != nil {
				t.Fatal(err)
			}
			fec, err := os.ReadFile(filepath.Join(dir, fecName))
			if err != nil {
				t.Fatal(err)
			}
			if uint64(len(fec)) < fecOffset+p.ParitySize() {
				t.Fatalf("FEC file is %d bytes, want at least %d", len(fec), fecOffset+p.ParitySize())
			}
			if !tc.oneFile && uint64(len(fec)) != p.ParitySize() {
				t.Fatalf("FEC file is %d bytes, our parity %d", len(fec), p.ParitySize())
			}
			theirs := fec[fecOffset : fecOffset+p.ParitySize()]
			if !bytes.Equal(got.b, theirs) {
				t.Fatalf("parity differs from veritysetup's at byte %d (fec_blocks %d, rounds %d)",
					firstDiff(got.b, theirs), fecBlocks, p.Rounds())
			}
			// "FEC blocks" in veritysetup's summary is the parity size.
			if m := regexp.MustCompile(`FEC blocks:\s+(\d+)`).FindStringSubmatch(string(outText)); m == nil || m[1] != strconv.FormatUint(p.ParityBlocks(), 10) {
				t.Fatalf("veritysetup reports FEC blocks %v, we have %d parity blocks", m, p.ParityBlocks())
			}
		})
	}
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, name string) uint64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(fi.Size())
}
