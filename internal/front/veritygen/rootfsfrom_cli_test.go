package veritygen

// --setup_rootfs_from_kernel IMAGE through the avbtool front (and its old
// name) and veritygen's --setup-rootfs-from-kernel: the same file, whose
// kernel line has IMAGE's dm= line before the image's own snippets (the
// order avbtool.py's _generate_vbmeta_blob writes; see
// avb/rootfsfrom_test.go).

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/fronttest"
)

func TestSetupRootfsFromKernelFrontAndNative(t *testing.T) {
	var kernelCmdline fronttest.AVBCase
	for _, c := range fronttest.AVBCases(t) {
		if c.Name == "kernel-cmdline" {
			kernelCmdline = c
		}
	}
	dir := fronttest.AVBWorkDir(t, kernelCmdline)
	orig, err := os.ReadFile("image.img")
	if err != nil {
		t.Fatal(err)
	}
	from := filepath.Join("vbmeta", "rootfs-camo-sha1.bin")
	var files [][]byte
	for _, how := range []string{"setup_rootfs_from_kernel", "generate_dm_verity_cmdline_from_hashtree", "native"} {
		if err := os.WriteFile("image.img", orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if how == "native" {
			args := fronttest.NativeArgs(t, kernelCmdline.Args) // DATA last
			cliOK(t, append(args[:len(args)-1], "--setup-rootfs-from-kernel="+from, "image.img")...)
		} else if r := fronttest.Run(t, avbtool.Main, "avbtool.py", append(kernelCmdline.Args, "--"+how, from)...); r.Code != 0 || r.Stderr != "" {
			t.Fatalf("--%s: exit %d, %q", how, r.Code, r.Stderr)
		}
		b, _ := os.ReadFile("image.img")
		files = append(files, b)
	}
	for i, b := range files[1:] {
		if !bytes.Equal(b, files[0]) {
			t.Errorf("file %d differs from the front's --setup_rootfs_from_kernel", i+1)
		}
	}
	first, _ := os.ReadFile(filepath.Join(fronttest.AVBVectors, "cmdline", "rootfs-camo-sha1.txt"))
	second, _ := os.ReadFile(filepath.Join(fronttest.AVBVectors, "cmdline", "kernel-cmdline.txt"))
	r := fronttest.Run(t, avbtool.Main, "avbtool.py", "calculate_kernel_cmdline", "--image", "image.img")
	if want := string(first) + " " + string(second); r.Code != 0 || r.Stdout != want {
		t.Errorf("calculate_kernel_cmdline: exit %d, %q; want %q", r.Code, r.Stdout, want)
	}
	r = fronttest.Run(t, avbtool.Main, "avbtool.py", "info_image", "--image", "image.img")
	rootfs := strings.Index(r.Stdout, "Kernel Cmdline:        'dm=\"1 vroot none ro 1,0 800 ")
	own := strings.Index(r.Stdout, "Kernel Cmdline:        'console=ttyS0 foo=bar'")
	if r.Code != 0 || rootfs < 0 || own < rootfs {
		t.Errorf("info_image: exit %d, IMAGE's line at %d, the image's own at %d\n%s", r.Code, rootfs, own, r.Stdout)
	}

	// IMAGE being the image itself: avbtool fails half-way (it finds no
	// vbmeta in its own half-written file); here nothing is touched.
	before, _ := os.ReadFile("image.img")
	r = fronttest.Run(t, avbtool.Main, "avbtool.py", append(kernelCmdline.Args, "--setup_rootfs_from_kernel", filepath.Join(dir, "image.img"))...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "is the image the footer is added to") {
		t.Errorf("the image itself: exit %d, %q", r.Code, r.Stderr)
	}
	if after, _ := os.ReadFile("image.img"); !bytes.Equal(after, before) {
		t.Error("the image changed")
	}
	// veritygen's flag needs --avb, as the other AVB flags.
	if r := cliRun(t, t.Context(), "--append", "--setup-rootfs-from-kernel="+from, "image.img"); r.code != 2 || !strings.Contains(r.stderr, "needs --avb") {
		t.Errorf("without --avb: exit %d, %q", r.code, r.stderr)
	}
}
