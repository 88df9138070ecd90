package veritygen

// The kernel table and boot arguments: their format, the flags that choose
// them, and (through a libdevmapper shim) equality with the table
// `veritysetup open` loads.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/testtool"
)

// TestTableFlags: the boot flags' checks, defaults and where they show.
func TestTableFlags(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 64*4096, 60)
	hash := data + ".verity"

	t.Run("bad flags", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--restart-on-corruption", "--panic-on-corruption"}, "exclude one another"},
			{[]string{"--ignore-corruption", "--restart-on-corruption"}, "exclude one another"},
			{[]string{"--data-device=/dev/my disk"}, `--data-device "/dev/my disk" contains ' '`},
			{[]string{"--hash-device=a,b"}, `--hash-device "a,b" contains ','`},
			{[]string{"--fec-device-name=x;y"}, `--fec-device-name "x;y" contains ';'`},
			{[]string{"--data-device="}, `--data-device "" is empty`},
			{[]string{"--dm-name=" + strings.Repeat("n", 32)}, "is 32 characters; the kernel's dm= parser keeps 31"},
			{[]string{`--dm-name=a"b`}, `contains '"'`},
		} {
			before := fronttest.Listing(t, dir)
			res := cliRun(t, t.Context(), append(tc.args, data)...)
			if res.code != 2 || !strings.HasPrefix(res.stderr, "veritygen: error: ") || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("%v: exit %d, stderr:\n%s\nwant %q", tc.args, res.code, res.stderr, tc.want)
			}
			fronttest.SameListing(t, before, fronttest.Listing(t, dir))
		}
	})

	t.Run("text report only when asked", func(t *testing.T) {
		plain := cliOK(t, "--salt=-", data).stdout
		if strings.Contains(plain, "Kernel table") {
			t.Errorf("plain report shows the table:\n%s", plain)
		}
		for _, flag := range []string{"--boot-params", "--ignore-zero-blocks", "--data-device=/dev/vda", "--dm-name=root"} {
			out := cliOK(t, "--salt=-", flag, data).stdout
			for _, label := range []string{"Kernel table:    \t", "dm-mod.create:   \tdm-mod.create=\"", "Android dm=:     \tdm=\"1 "} {
				if !strings.Contains(out, label) {
					t.Errorf("%s: report lacks %q:\n%s", flag, label, out)
				}
			}
		}
	})

	t.Run("defaults are the paths", func(t *testing.T) {
		m := cliJSON(t, cliOK(t, "--json", "--salt=-", "--no-superblock", data).stdout)
		want := fmt.Sprintf("1 %s %s 4096 4096 64 0 sha256 %s -", data, hash, cliString(t, m, "root_hash"))
		if got := cliString(t, m, "table"); got != want {
			t.Errorf("table\n got %s\nwant %s", got, want)
		}
		if got := cliString(t, m, "dm_mod_create"); got != `dm-mod.create="vroot,,,ro,0 512 verity `+want+`"` {
			t.Errorf("dm_mod_create %s", got)
		}
		if got := cliUint(t, m, "table_sectors"); got != 512 {
			t.Errorf("table_sectors %d", got)
		}
	})

	t.Run("tree in DATA names DATA twice", func(t *testing.T) {
		img := filepath.Join(dir, "inplace.img")
		fronttest.Image(t, img, 64*4096, 61)
		m := cliJSON(t, cliOK(t, "--json", "--salt=-", "--hash-offset=262144", "--data-device=/dev/sdb1", img, img).stdout)
		if got := cliString(t, m, "table"); !strings.HasPrefix(got, "1 /dev/sdb1 /dev/sdb1 4096 4096 64 65 sha256 ") {
			t.Errorf("table %s", got)
		}
	})

	t.Run("fec device names", func(t *testing.T) {
		// The --no-superblock tree above is not replaced by one with a
		// superblock without --force.
		os.Remove(hash)
		fecFile := filepath.Join(dir, "data.fec")
		m := cliJSON(t, cliOK(t, "--json", "--salt=-", "--fec-device="+fecFile, data).stdout)
		if got := cliString(t, m, "table"); !strings.Contains(got, " 8 use_fec_from_device "+fecFile+" fec_start 0 fec_blocks 65 fec_roots 2") {
			t.Errorf("table %s", got)
		}
		m = cliJSON(t, cliOK(t, "--json", "--salt=-", "--fec-device="+fecFile, "--fec-device-name=/dev/sdc", "--hash-device=/dev/sdb", data).stdout)
		if got := cliString(t, m, "table"); !strings.Contains(got, " /dev/sdb 4096 4096 64 1 sha256 ") || !strings.Contains(got, "use_fec_from_device /dev/sdc fec_start 0 ") {
			t.Errorf("table %s", got)
		}
		m = cliJSON(t, cliOK(t, "--json", "--salt=-", "--fec-device="+hash, "--fec-offset=1048576", "--hash-device=/dev/sdb", data, hash).stdout)
		if got := cliString(t, m, "table"); !strings.Contains(got, "use_fec_from_device /dev/sdb fec_start 256 fec_blocks 319 fec_roots 2") {
			t.Errorf("table %s", got)
		}
	})

	t.Run("path unfit for a table", func(t *testing.T) {
		odd := filepath.Join(dir, "my image.img")
		fronttest.Image(t, odd, 8*4096, 62)
		m := cliJSON(t, cliOK(t, "--json", "--salt=-", odd).stdout)
		if _, ok := m["table"]; ok {
			t.Errorf("a table naming %q", odd)
		}
		res := cliRun(t, t.Context(), "--salt=-", "--boot-params", odd)
		if res.code != 2 || !strings.Contains(res.stderr, "the kernel table names DATA by its path") || !strings.Contains(res.stderr, "--data-device=") {
			t.Errorf("exit %d:\n%s", res.code, res.stderr)
		}
		cliOK(t, "--salt=-", "--boot-params", "--data-device=/dev/sda1", "--hash-device=/dev/sda2", odd)
	})
}

// tblShim is an LD_PRELOAD library over libdevmapper for `veritysetup
// open`: it pretends that the kernel's device-mapper is there (dm-ioctl
// 4.48, dm-verity 1.9: every option supported), that no device of the name
// exists yet, and when veritysetup adds the verity target writes the target
// line (start, sectors, type, parameters) to $TBL_SHIM_OUT and exits. The
// line is built by cryptsetup itself (get_dm_verity_params in
// lib/libdevmapper.c), from the tree's superblock and the open flags.
const tblShim = `#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
struct dm_task;
struct dm_versions { uint32_t next; uint32_t version[3]; char name[]; };
int dm_task_run(struct dm_task *t) { return 1; }
int dm_task_get_driver_version(struct dm_task *t, char *v, size_t n) { snprintf(v, n, "4.48.0"); return 1; }
static union { struct dm_versions v; char b[64]; } vers;
struct dm_versions *dm_task_get_versions(struct dm_task *t) {
	memset(&vers, 0, sizeof vers);
	vers.v.version[0] = 1; vers.v.version[1] = 9;
	strcpy(vers.v.name, "verity");
	return &vers.v;
}
int dm_task_get_info(struct dm_task *t, void *info) { memset(info, 0, 12 * sizeof(int)); return 1; }
int dm_task_add_target(struct dm_task *t, uint64_t start, uint64_t size, const char *type, const char *params) {
	FILE *f = fopen(getenv("TBL_SHIM_OUT"), "w");
	if (f) { fprintf(f, "%llu %llu %s %s", (unsigned long long)start, (unsigned long long)size, type, params); fclose(f); }
	_exit(f ? 0 : 3);
}
`

// tblBuildShim compiles tblShim, or skips the test.
func tblBuildShim(t *testing.T) string {
	t.Helper()
	cc := testtool.Require(t, "cc")
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "shim.c"), filepath.Join(dir, "shim.so")
	if err := os.WriteFile(src, []byte(tblShim), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Skipf("cannot build the libdevmapper shim: %v\n%s", err, out)
	}
	return lib
}

// TestTableVsVeritysetupOpen: for trees of every layout, our table is the
// one `veritysetup open` loads for them with the same options, word for
// word, once its loop devices are replaced by our device names.
func TestTableVsVeritysetupOpen(t *testing.T) {
	vs := testtool.Require(t, "veritysetup")
	shim := tblBuildShim(t)
	for i, tc := range []struct {
		name string
		// layout: "sep" (DATA, HASH), "fec" (and a FEC file), "fecinhash"
		// (the parity inside HASH), "inplace" (HASH is DATA), "append".
		layout  string
		ours    []string // our flags (tree and options)
		theirs  []string // veritysetup open's flags
		options []string // open options, given to both
	}{
		{"superblock", "sep", nil, nil, nil},
		{"no superblock", "sep", []string{"--no-superblock", "--hash=sha1", "--format=0", "--salt=-", "--data-block-size=512", "--hash-block-size=1024", "--hash-offset=8192"},
			[]string{"--no-superblock", "--hash=sha1", "--format=0", "--salt=-", "--data-block-size=512", "--hash-block-size=1024", "--hash-offset=8192"}, nil},
		{"superblock at an offset", "sep", []string{"--hash-offset=12800"}, []string{"--hash-offset=12800"}, nil},
		{"restart", "sep", nil, nil, []string{"--restart-on-corruption", "--ignore-zero-blocks", "--check-at-most-once"}},
		{"panic", "sep", []string{"--hash=sha512"}, nil, []string{"--panic-on-corruption"}},
		{"ignore", "sep", nil, nil, []string{"--ignore-corruption", "--ignore-zero-blocks"}},
		{"fec", "fec", []string{"--fec-roots=5"}, []string{"--fec-roots=5"}, []string{"--ignore-zero-blocks"}},
		{"fec in HASH", "fecinhash", nil, []string{"--fec-offset=65536", "--fec-roots=2"}, nil},
		{"tree in DATA", "inplace", []string{"--hash-offset=524288"}, []string{"--hash-offset=524288"}, []string{"--check-at-most-once"}},
		{"append", "append", []string{"--append", "--fec"}, nil, []string{"--restart-on-corruption", "--ignore-zero-blocks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data.img")
			fronttest.Image(t, data, 512*1024-3000, uint64(70+i))
			hash, fecFile := filepath.Join(dir, "hash.img"), filepath.Join(dir, "fec.img")
			args := append([]string{"--json", "--salt=" + cliSalt, "--uuid=" + cliUUID,
				"--data-device=DATADEV", "--fec-device-name=FECDEV"}, tc.ours...)
			args = append(args, tc.options...)
			if tc.layout != "inplace" && tc.layout != "append" {
				args = append(args, "--hash-device=HASHDEV") // else one device, DATADEV
			}
			switch tc.layout {
			case "fec":
				args = append(args, "--fec-device="+fecFile)
			case "fecinhash":
				args = append(args, "--fec-device="+hash, "--fec-offset=65536")
			}
			switch tc.layout {
			case "inplace":
				args = append(args, data, data)
			case "append":
				args = append(args, data)
			default:
				args = append(args, data, hash)
			}
			m := cliJSON(t, cliOK(t, args...).stdout)
			ours := fmt.Sprintf("0 %d verity %s", cliUint(t, m, "table_sectors"), cliString(t, m, "table"))

			// veritysetup open on loop devices of the same files.
			dataDev := testtool.LoopDevice(t, data, true)
			names := map[string]string{dataDev: "DATADEV"}
			theirs := append([]string{"open"}, tc.theirs...)
			theirs = append(theirs, tc.options...)
			if strings.Contains(strings.Join(tc.ours, " "), "--no-superblock") {
				theirs = append(theirs, fmt.Sprintf("--data-blocks=%d", cliUint(t, m, "data_blocks")))
			}
			hashDev := dataDev
			switch tc.layout {
			case "inplace":
			case "append":
				theirs = append(theirs, "--no-superblock", "--salt="+cliSalt,
					fmt.Sprintf("--hash-offset=%d", cliUint(t, m, "hash_offset")), fmt.Sprintf("--data-blocks=%d", cliUint(t, m, "data_blocks")),
					"--fec-device="+dataDev, fmt.Sprintf("--fec-offset=%d", cliUint(t, m, "fec_offset")), "--fec-roots=2")
			default:
				hashDev = testtool.LoopDevice(t, hash, true)
				names[hashDev] = "HASHDEV"
			}
			if tc.layout == "fec" {
				fecDev := testtool.LoopDevice(t, fecFile, true)
				names[fecDev] = "FECDEV"
				theirs = append(theirs, "--fec-device="+fecDev)
			}
			if tc.layout == "fecinhash" {
				theirs = append(theirs, "--fec-device="+hashDev)
			}
			theirs = append(theirs, dataDev, fmt.Sprintf("vtbl%d", i), hashDev, cliString(t, m, "root_hash"))
			out := filepath.Join(dir, "table.txt")
			cmd := exec.Command(vs, theirs...)
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+shim, "TBL_SHIM_OUT="+out)
			msg, err := cmd.CombinedOutput()
			got, rerr := os.ReadFile(out)
			if rerr != nil {
				t.Skipf("the shim caught no table (veritysetup %s: %v):\n%s", strings.Join(theirs, " "), err, msg)
			}
			table := regexp.MustCompile(`/dev/loop[0-9]+`).ReplaceAllStringFunc(string(got), func(dev string) string {
				if n, ok := names[dev]; ok {
					return n
				}
				return dev
			})
			t.Logf("veritysetup open loads: %s", table)
			if table != ours {
				t.Errorf("veritysetup %s loads\n%s\nours is\n%s", strings.Join(theirs, " "), table, ours)
			}
		})
	}
}
