package main

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
)

func TestSetupRootfsFromKernelFrontAndNative(t *testing.T) {
	var kernelCmdline avbCase
	for _, c := range avbCases(t) {
		if c.name == "kernel-cmdline" {
			kernelCmdline = c
		}
	}
	dir := avbWorkDir(t, kernelCmdline)
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
			args := avbNativeArgs(t, kernelCmdline.args) // DATA last
			cliOK(t, append(args[:len(args)-1], "--setup-rootfs-from-kernel="+from, "image.img")...)
		} else if r := avbtoolRun(t, append(kernelCmdline.args, "--"+how, from)...); r.code != 0 || r.stderr != "" {
			t.Fatalf("--%s: exit %d, %q", how, r.code, r.stderr)
		}
		b, _ := os.ReadFile("image.img")
		files = append(files, b)
	}
	for i, b := range files[1:] {
		if !bytes.Equal(b, files[0]) {
			t.Errorf("file %d differs from the front's --setup_rootfs_from_kernel", i+1)
		}
	}
	first, _ := os.ReadFile(filepath.Join(avbVectorDir, "cmdline", "rootfs-camo-sha1.txt"))
	second, _ := os.ReadFile(filepath.Join(avbVectorDir, "cmdline", "kernel-cmdline.txt"))
	r := avbtoolRun(t, "calculate_kernel_cmdline", "--image", "image.img")
	if want := string(first) + " " + string(second); r.code != 0 || r.stdout != want {
		t.Errorf("calculate_kernel_cmdline: exit %d, %q; want %q", r.code, r.stdout, want)
	}
	r = avbtoolRun(t, "info_image", "--image", "image.img")
	rootfs := strings.Index(r.stdout, "Kernel Cmdline:        'dm=\"1 vroot none ro 1,0 800 ")
	own := strings.Index(r.stdout, "Kernel Cmdline:        'console=ttyS0 foo=bar'")
	if r.code != 0 || rootfs < 0 || own < rootfs {
		t.Errorf("info_image: exit %d, IMAGE's line at %d, the image's own at %d\n%s", r.code, rootfs, own, r.stdout)
	}

	// IMAGE being the image itself: avbtool fails half-way (it finds no
	// vbmeta in its own half-written file); here nothing is touched.
	before, _ := os.ReadFile("image.img")
	r = avbtoolRun(t, append(kernelCmdline.args, "--setup_rootfs_from_kernel", filepath.Join(dir, "image.img"))...)
	if r.code != 1 || !strings.Contains(r.stderr, "is the image the footer is added to") {
		t.Errorf("the image itself: exit %d, %q", r.code, r.stderr)
	}
	if after, _ := os.ReadFile("image.img"); !bytes.Equal(after, before) {
		t.Error("the image changed")
	}
	// veritygen's flag needs --avb, as the other AVB flags.
	if r := cliRun(t, t.Context(), "--append", "--setup-rootfs-from-kernel="+from, "image.img"); r.code != 2 || !strings.Contains(r.stderr, "needs --avb") {
		t.Errorf("without --avb: exit %d, %q", r.code, r.stderr)
	}
}
