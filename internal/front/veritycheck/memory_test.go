package veritycheck

// Issue 12, item 6: veritycheck in bounded memory on an image corrupted
// whole, with --max-problems=-1, --json and error correction. The problems
// spill to a temporary file, the repair keeps a byte per block and names at
// most lostKept unrecoverable blocks.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/testtool"
)

// TestWriteResultLikeEncoder: the JSON report streamed by writeResult is
// byte for byte what encoding it whole gives.
func TestWriteResultLikeEncoder(t *testing.T) {
	level := 1
	for _, probs := range [][]problem{nil, {{Where: "data", Index: 3, Offset: 1536, Reason: "digest mismatch"}},
		{{Where: "superblock", Offset: 7, Reason: "x \"y\""}, {Where: "hash", Level: &level, Index: 2, Reason: "r",
			Unchecked: []blockRange{{Level: 0, First: 1, Last: 2}, {Level: -1, First: 5, Last: 9}}}}} {
		res := &result{RootHash: "ab", DataFormat: "raw", ProblemsTruncated: true, repairJSON: &repairJSON{FECDevice: "f", RepairableBlocks: []fecBlock{}, UnrecoverableBlocks: []fecBlock{}}}
		var want, got bytes.Buffer
		whole := *res
		b, err := json.Marshal(append([]problem{}, probs...))
		if err != nil {
			t.Fatal(err)
		}
		whole.Problems = b
		if err := cli.WriteJSON(&want, &whole); err != nil {
			t.Fatal(err)
		}
		err = writeResult(&got, res, func(emit func(problem) error) error {
			for _, p := range probs {
				if err := emit(p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || got.String() != want.String() {
			t.Errorf("%d problems: %v\n%s\nwant\n%s", len(probs), err, got.String(), want.String())
		}
	}
}

// TestMemoryCorruptedWhole: on a 256 MiB image of 512-byte blocks
// overwritten whole, every problem listed (text and JSON), with and
// without the parity, veritycheck stays under 64 MiB of RSS (it took 57,
// 322 and 380 MiB); and so it does repairing a 64 MiB image with all the
// damage 24 roots rebuild (it took 95 MiB). The size is what makes the
// old code exceed the bound, so -short leaves the test out instead.
func TestMemoryCorruptedWhole(t *testing.T) {
	testtool.Long(t, "the 256 MiB image checked four times")
	const maxRSS = 64 << 20
	dir := t.TempDir()
	gen, check := testtool.BuildCommand(t, dir, "./cmd/veritygen"), testtool.BuildCommand(t, dir, "./cmd/veritycheck")
	launcher := testtool.BuildLauncher(t, dir)
	data, hash, fecPath, rootFile := filepath.Join(dir, "data"), filepath.Join(dir, "data.verity"), filepath.Join(dir, "data.fec"), filepath.Join(dir, "root")
	writeRandom := func(data string, size int, seed uint64) {
		f, err := os.Create(data)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.NewChaCha8([32]byte{byte(seed)})
		buf := make([]byte, 1<<20)
		for range size >> 20 {
			rng.Read(buf)
			if _, err := f.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	measure := func(t *testing.T, args ...string) (code int, report string) {
		t.Helper()
		var output bytes.Buffer // stdout and stderr, as a terminal shows them
		code, rss := testtool.RunMeasured(t, launcher, &output, &output, args[0], args[1:]...)
		if rss > maxRSS {
			t.Errorf("peak RSS %d MiB, want < %d MiB", rss>>20, maxRSS>>20)
		} else {
			t.Logf("peak RSS %.1f MiB", float64(rss)/(1<<20))
		}
		return code, output.String()
	}
	const size = 256 << 20
	writeRandom(data, size, 1)
	if out, err := exec.Command(gen, "--no-progress", "--data-block-size=512", "--hash-block-size=512", "--fec-device="+fecPath, "--fec-roots=2", "--root-hash-file="+rootFile, data, hash).CombinedOutput(); err != nil {
		t.Fatalf("veritygen: %v\n%s", err, out)
	}
	writeRandom(data, size, 2) // every data block corrupted
	blocks := size / 512
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text", nil},
		{"json", []string{"--json"}},
		{"parity", []string{"--fec-device=" + fecPath, "--fec-roots=2"}},
		{"parity json repair", []string{"--fec-device=" + fecPath, "--fec-roots=2", "--json", "--repair"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{check, "--no-progress", "--max-problems=-1", "--root-hash-file=" + rootFile}, tc.args...)
			code, report := measure(t, append(args, data, hash)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, tail(report))
			}
			// Every block listed: the report is complete.
			want := fmt.Sprintf("corrupted: data block %d ", blocks-1)
			if len(tc.args) > 0 && tc.args[len(tc.args)-1] == "--repair" || tc.name == "json" {
				want = `"index": ` + strconv.Itoa(blocks-1) + ","
			}
			if !strings.Contains(report, want) || !strings.Contains(report, fmt.Sprintf("%d corrupted data blocks", blocks)) &&
				!strings.Contains(report, fmt.Sprintf(`"corrupt_data_blocks": %d`, blocks)) {
				t.Errorf("report incomplete, want %q:\n%s", want, tail(report))
			}
		})
	}

	t.Run("repair", func(t *testing.T) {
		const size = 64 << 20
		data, hash, fecPath := filepath.Join(dir, "small"), filepath.Join(dir, "small.verity"), filepath.Join(dir, "small.fec")
		writeRandom(data, size, 3)
		if out, err := exec.Command(gen, "--no-progress", "--data-block-size=512", "--hash-block-size=512", "--fec-device="+fecPath, "--fec-roots=24", "--root-hash-file="+rootFile, data, hash).CombinedOutput(); err != nil {
			t.Fatalf("veritygen: %v\n%s", err, out)
		}
		orig, err := os.ReadFile(data)
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(hash)
		if err != nil {
			t.Fatal(err)
		}
		// The first 24 blocks of each round: as many as 24 roots rebuild.
		rounds := (size/512 + int(info.Size())/512 + 230) / 231
		bad := bytes.Clone(orig)
		rand.NewChaCha8([32]byte{4}).Read(bad[:24*rounds*512])
		if err := os.WriteFile(data, bad, 0o666); err != nil {
			t.Fatal(err)
		}
		code, report := measure(t, check, "--no-progress", "--max-problems=-1", "--root-hash-file="+rootFile, "--fec-device="+fecPath, "--fec-roots=24", "--repair", data, hash)
		if code != 0 || !strings.Contains(report, fmt.Sprintf("repaired: wrote %d blocks back", 24*rounds)) {
			t.Fatalf("exit %d, want 0 and %d blocks repaired:\n%s", code, 24*rounds, tail(report))
		}
		if after, err := os.ReadFile(data); err != nil || !bytes.Equal(after, orig) {
			t.Fatalf("the repaired image differs from the original (%v)", err)
		}
	})
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}
