package veritygen

// --append: avbtool's layout (image, zero padding, tree without superblock,
// FEC), against veritysetup, with interruption and re-runs.

import (
	"bytes"
	"context"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// apndParity is the size of the parity (roots 2) at the end of an
// appended file of n bytes: its tree and parity end together.
func apndParity(n int) int {
	// (n - parity) bytes of message in rounds of 253 blocks, 2 parity
	// blocks per round: parity = ceil(msg/4096/253)*2*4096.
	for parity := 0; ; parity += 2 * 4096 {
		if (n-parity+253*4096-1)/(253*4096)*2*4096 == parity {
			return parity
		}
	}
}

// apndCopy writes b to a new file in dir and returns its path.
func apndCopy(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAppendVsVeritysetup: the appended file is byte for byte what
// veritysetup writes into the zero-padded image with the tree (no
// superblock) at the padded size and the parity right after the tree, and
// the tree is veritysetup's --no-superblock tree of the padded image.
func TestAppendVsVeritysetup(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	for i, c := range []struct {
		size     int64
		dbs, hbs int
		fecRoots int // 0: no --fec
		extra    []string
	}{
		{5000000, 4096, 4096, 2, nil},
		{1 << 20, 4096, 4096, 0, nil},
		{3000001, 512, 4096, 0, []string{"--hash=sha1"}},
		{777777, 4096, 1024, 0, []string{"--format=0"}},
		{2<<20 + 100, 1024, 1024, 24, []string{"--hash=sha512", "--salt=-"}},
		{4096, 4096, 4096, 2, nil}, // one block: an empty tree, parity of the data alone
	} {
		t.Run(fmt.Sprintf("%d/%d-%d/fec%d%s", c.size, c.dbs, c.hbs, c.fecRoots, strings.Join(c.extra, "")), func(t *testing.T) {
			dir := t.TempDir()
			img := fronttest.Image(t, filepath.Join(dir, "orig.img"), c.size, uint64(20+i))
			ours := apndCopy(t, dir, "ours.img", img)
			flags := []string{fmt.Sprintf("--data-block-size=%d", c.dbs), fmt.Sprintf("--hash-block-size=%d", c.hbs)}
			if !strings.Contains(strings.Join(c.extra, " "), "--salt") {
				flags = append(flags, "--salt="+cliSalt)
			}
			flags = append(flags, c.extra...)
			args := append([]string{"--json", "--append"}, flags...)
			if c.fecRoots != 0 {
				args = append(args, "--fec", fmt.Sprintf("--fec-roots=%d", c.fecRoots))
			}
			m := cliJSON(t, cliOK(t, append(args, ours)...).stdout)

			align := int64(max(c.dbs, c.hbs))
			padded := (c.size + align - 1) / align * align
			hashEnd := int64(cliUint(t, m, "hash_end"))
			got := fronttest.Read(t, ours)
			want := map[string]uint64{"original_size": uint64(c.size), "data_size": uint64(padded), "hash_offset": uint64(padded),
				"data_blocks": uint64(padded / int64(c.dbs)), "image_size": uint64(len(got)), "uncovered_bytes": 0,
				"hash_start_block": uint64(padded / int64(c.hbs))}
			if c.fecRoots != 0 {
				want["fec_offset"] = uint64(hashEnd)
				want["fec_roots"] = uint64(c.fecRoots)
				if e := uint64(hashEnd) + cliUint(t, m, "fec_size"); e != uint64(len(got)) {
					t.Errorf("parity ends at %d, the file at %d", e, len(got))
				}
			} else if hashEnd != int64(len(got)) {
				t.Errorf("tree ends at %d, the file at %d", hashEnd, len(got))
			}
			for k, v := range want {
				if g := cliUint(t, m, k); g != v {
					t.Errorf("%s = %d, want %d", k, g, v)
				}
			}
			if cliBool(t, m, "superblock") {
				t.Error("superblock = true")
			}
			if !bytes.Equal(got[:c.size], img) {
				t.Fatal("the image's own bytes changed")
			}

			// veritysetup, writing into the padded image.
			theirs := apndCopy(t, dir, "theirs.img", append(img, make([]byte, padded-c.size)...))
			vsArgs := append([]string{"format", "--no-superblock", fmt.Sprintf("--hash-offset=%d", padded),
				fmt.Sprintf("--data-blocks=%d", padded/int64(c.dbs))}, flags...)
			if c.fecRoots != 0 {
				vsArgs = append(vsArgs, "--fec-device="+theirs, fmt.Sprintf("--fec-offset=%d", hashEnd), fmt.Sprintf("--fec-roots=%d", c.fecRoots))
			}
			out := andrExec(t, vs, append(vsArgs, theirs, theirs)...)
			andrSameFiles(t, ours, theirs)
			if !strings.Contains(out, "Root hash:      \t"+cliString(t, m, "root_hash")+"\n") {
				t.Errorf("root %s; veritysetup said:\n%s", cliString(t, m, "root_hash"), out)
			}

			// The tree alone: veritysetup's --no-superblock tree of the
			// padded image, in a file of its own.
			padFile := apndCopy(t, dir, "padded.img", append(img, make([]byte, padded-c.size)...))
			tree := filepath.Join(dir, "tree.bin")
			andrExec(t, vs, append(append([]string{"format", "--no-superblock"}, flags...), padFile, tree)...)
			if !bytes.Equal(got[padded:hashEnd], fronttest.Read(t, tree)) {
				t.Error("the appended tree differs from veritysetup's --no-superblock tree")
			}
		})
	}
}

// TestAppendReport: the text report gives the offsets, under a heading
// for a tree without superblock and without a UUID line; --boot-params
// the table on the one device; the check command its parameters.
func TestAppendReport(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sys.img")
	fronttest.Image(t, data, 1000000, 31)
	res := cliOK(t, "--append", "--fec", "--salt=-", "--boot-params", "--data-device=/dev/sda5", data)
	for _, want := range []string{
		"VERITY hash tree (no superblock) in " + data + "\n",
		"Data blocks:     \t245\n",
		"FEC RS roots:   \t2\n",
		"Original size:   \t1000000 [bytes]\n",
		"Hash offset:     \t1003520 [bytes]\n",
		"FEC offset:      \t1015808 [bytes]\n",
		"Kernel table:    \t1 /dev/sda5 /dev/sda5 4096 4096 245 245 sha256 ",
		" - 8 use_fec_from_device /dev/sda5 fec_start 248 fec_blocks 248 fec_roots 2\n",
		"dm-mod.create:   \tdm-mod.create=\"vroot,,,ro,0 1960 verity 1 /dev/sda5 /dev/sda5 ",
		"Android dm=:     \tdm=\"1 vroot none ro 1,0 1960 verity 1 /dev/sda5 ",
		" --no-superblock --hash=sha256 --salt=- --data-blocks=245 --hash-offset=1003520 --fec-device=" + data + " --fec-offset=1015808 " + data + " " + data + "\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, res.stdout)
		}
	}
	if info, _ := os.Stat(data); !strings.Contains(res.stdout, fmt.Sprintf("Image size:      \t%d [bytes]\n", info.Size())) {
		t.Errorf("report lacks the image size %d:\n%s", info.Size(), res.stdout)
	}
	if strings.Contains(res.stdout, "UUID") {
		t.Errorf("report of a tree without superblock has a UUID line:\n%s", res.stdout)
	}
}

// TestAppendRerun: a run interrupted at any point, then run again with
// --data-size, leaves the file an uninterrupted run leaves; so does a
// second run on a finished file.
func TestAppendRerun(t *testing.T) {
	testtool.Long(t, "the reruns of --append on a 24 MiB image")
	dir := t.TempDir()
	const size = 24<<20 + 1234
	img := fronttest.Image(t, filepath.Join(dir, "orig.img"), size, 40)
	flags := []string{"--append", "--fec", "--salt=" + cliSalt, "--no-progress"}
	ref := apndCopy(t, dir, "ref.img", img)
	cliOK(t, append(flags, ref)...)
	want := fronttest.Read(t, ref)
	rerun := append(append([]string{}, flags...), fmt.Sprintf("--data-size=%d", size))

	// What an interrupted run may leave: the image, the zero padding (the
	// first thing written), then the tree as far as it got (level 0 is
	// written first, from its first block on, the upper levels, which lie
	// before it, last; until then a hole), then the parity as far as it
	// got. Anything else, and more than that, is not an earlier --append:
	// refused, unless --force.
	padded := (size + 4095) / 4096 * 4096
	level0 := padded + 4096 // one upper level of one block: 6145 data blocks
	killedAt := func(n int) []byte {
		left := append([]byte{}, want[:n]...)
		if n < len(want)-apndParity(len(want)) { // in the tree: no upper level yet
			clear(left[min(padded, n):min(level0, n)])
		}
		return left
	}
	junkAt := func(n int) []byte { // bytes no --append writes, where the tree goes
		left := killedAt(n)
		for i := level0; i < n; i++ {
			left[i] = byte(i*13 + 7)
		}
		return left
	}
	for _, c := range []struct {
		name  string
		left  []byte
		taken bool // without --force
	}{
		{"nothing", killedAt(size), true},
		{"part of the padding", killedAt(size + 1), true},
		{"the padding", killedAt(padded), true},
		{"the padding and zeros", append(killedAt(padded), make([]byte, 10000)...), true},
		{"part of level 0", killedAt(level0 + 100000), true},
		{"the tree and part of the parity", want[:len(want)-100000], true},
		{"all", want, true},
		{"more than all", append(append([]byte{}, want...), make([]byte, 9999)...), false},
		{"no tree past the padding", junkAt(level0 + 100000), false},
		{"another tree", append(killedAt(level0), bytes.Repeat([]byte{7}, 8192)...), false},
	} {
		t.Run("left "+c.name, func(t *testing.T) {
			p := apndCopy(t, dir, "left.img", c.left)
			args := append(rerun, p)
			if !c.taken {
				res := cliRun(t, context.Background(), args...)
				if res.code != 2 || !strings.Contains(res.stderr, "cutting them off would lose them") {
					t.Errorf("exit %d, want 2 and a refusal", res.code)
				}
				if !bytes.Equal(fronttest.Read(t, p), c.left) {
					t.Error("the refused run changed DATA")
				}
				args = append([]string{"--force"}, args...)
			}
			cliOK(t, args...)
			if !bytes.Equal(fronttest.Read(t, p), want) {
				t.Error("the re-run's file differs from the uninterrupted run's")
			}
		})
	}

	t.Run("finished file", func(t *testing.T) {
		p := apndCopy(t, dir, "done.img", want)
		cliOK(t, append(rerun, p)...)
		if !bytes.Equal(fronttest.Read(t, p), want) {
			t.Error("re-running on a finished file changed it")
		}
	})

	// A real interruption: cancel once the run has started writing (the
	// file then ends in its resume record): DATA is cut back to the image,
	// and the same command, --data-size or not, finishes it.
	for _, again := range []struct {
		name string
		args []string
	}{{"the same command", flags}, {"--data-size", rerun}} {
		t.Run("interrupted, then "+again.name, func(t *testing.T) {
			p := apndCopy(t, dir, "cut.img", img)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for ctx.Err() == nil {
					if f, err := os.Open(p); err == nil {
						info, _ := f.Stat()
						rec := safefile.ReadResumeRecord(f, info.Size())
						f.Close()
						if rec != nil {
							cancel()
							return
						}
					}
					time.Sleep(100 * time.Microsecond)
				}
			}()
			res := cliRun(t, ctx, append(append([]string{}, flags...), "--jobs=2", p)...)
			cancel()
			switch res.code {
			case 2:
				wantErr := fmt.Sprintf("veritygen: error: interrupted; DATA %s is as it was: cut back to its original %d bytes\n", p, size)
				if res.stderr != wantErr {
					t.Errorf("stderr:\n%s\nwant\n%s", res.stderr, wantErr)
				}
				if !bytes.Equal(fronttest.Read(t, p), img) {
					t.Fatal("the interrupted run did not leave DATA as it was")
				}
			case 0:
				t.Log("the run finished before the cancellation took effect")
			default:
				t.Fatalf("exit %d", res.code)
			}
			cliOK(t, append(append([]string{}, again.args...), p)...)
			if !bytes.Equal(fronttest.Read(t, p), want) {
				t.Error("the re-run's file differs from the uninterrupted run's")
			}
		})
	}
}

// TestAppendHelp: --help says that --append writes into DATA.
func TestAppendHelp(t *testing.T) {
	out := cliOK(t, "--help").stdout
	for _, want := range []string{"with --append: DATA is padded with zeros", "WRITES INTO DATA", "--data-size=<original size>"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
