package kernel

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/testtool"
)

// guestTools are the host programs a boot needs.
type guestTools struct{ qemu, busybox, dmsetup string }

func requireGuestTools(t *testing.T) guestTools {
	t.Helper()
	return guestTools{
		qemu:    testtool.Require(t, "qemu-system-x86_64"),
		busybox: testtool.Require(t, "busybox"),
		dmsetup: testtool.Require(t, "dmsetup"),
	}
}

// bootGuest puts the images on one GPT disk, boots the kernel on it with
// init.sh and the cases (lines "NAME SECTORS TABLE"), and returns what the
// guest reported. It fails the test if the guest does not finish.
func bootGuest(t *testing.T, tools guestTools, k *kernelImage, work string, parts []partition, cases []byte) (*guestReport, string, time.Duration) {
	t.Helper()
	r := &initramfs{
		init: initScript,
		files: map[string][]byte{
			"etc/vt/cases":      cases,
			"etc/vt/partitions": []byte(strconv.Itoa(len(parts)) + "\n"),
		},
		programs: map[string]string{"bin/busybox": tools.busybox, "sbin/dmsetup": tools.dmsetup},
	}
	console, vmTime, err := runGuest(t, tools.qemu, k, work, parts, r)
	g := parseConsole(console)
	if err != nil || g.done == "" {
		t.Fatalf("the guest did not finish (%v); console:\n%s", err, tail(console, 60))
	}
	return g, console, vmTime
}

// runGuest puts the images on one GPT disk and boots the kernel on it
// with the initramfs r, to which it adds the kernel's modules (their list
// in /etc/vt/modules). It returns the guest's console.
func runGuest(t *testing.T, qemu string, k *kernelImage, work string, parts []partition, r *initramfs) (string, time.Duration, error) {
	t.Helper()
	if len(parts) > maxPartitions {
		t.Fatalf("%d partitions, the kernel reads at most %d", len(parts), maxPartitions)
	}
	diskImage := filepath.Join(work, "disk.img")
	if err := writeGPTDisk(diskImage, parts); err != nil {
		t.Fatalf("disk image: %v", err)
	}
	r.files["etc/vt/modules"] = []byte(strings.Join(k.Modules, "\n") + "\n")
	for _, m := range k.Modules {
		b, err := os.ReadFile(k.modulePath(m))
		if err != nil {
			t.Fatal(err)
		}
		r.files["lib/vt-modules/"+m] = b
	}
	cpio, err := buildInitramfs(r)
	if err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	initrd := filepath.Join(work, "initramfs.cpio")
	if err := os.WriteFile(initrd, cpio, 0o644); err != nil {
		t.Fatal(err)
	}

	// The VM's own limit: a hung guest is killed, not waited for. TestActivate's
	// guest ran 230 s on the shared 2-core machine at load 22.
	timeout := 360 * time.Second
	if v := os.Getenv("VERITYTREE_KERNEL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("VERITYTREE_KERNEL_TIMEOUT: %v", err)
		}
		timeout = d
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl)-15*time.Second < timeout {
		timeout = time.Until(dl) - 15*time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	vmStart := time.Now()
	console, err := runVM(ctx, qemu, k.bootPath(), initrd, diskImage, work)
	vmTime := time.Since(vmStart)
	if dump := os.Getenv("VERITYTREE_KERNEL_CONSOLE"); dump != "" {
		os.WriteFile(dump, []byte(console), 0o644)
	}
	return console, vmTime, err
}
