package kernel

// One boot of the guest under qemu (TCG: no KVM here), with the images on
// a read-only virtio disk, and the guest's report read back from the serial
// console.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runVM boots kernel with the initramfs and the disk image (read-only, as
// vda), and returns what the guest wrote on its serial console. The
// context's deadline kills the VM (its whole process group).
func runVM(ctx context.Context, qemu, kernel, initrd, diskImage, workDir string) (console string, err error) {
	consolePath := filepath.Join(workDir, "console.log")
	args := []string{
		"-nodefaults", "-no-user-config", "-machine", "pc", "-accel", "tcg", "-cpu", "max",
		"-m", "512", "-smp", "1", "-display", "none", "-vga", "none", "-monitor", "none",
		"-serial", "file:" + consolePath, "-no-reboot",
		"-kernel", kernel, "-initrd", initrd,
		// no_timer_check: on a loaded host, TCG's timer can miss the
		// kernel's IO-APIC timer check at boot, which then panics ("IO-APIC
		// + timer doesn't work!").
		"-append", "console=ttyS0 panic=-1 quiet no_timer_check",
		"-drive", "file=" + diskImage + ",format=raw,if=virtio,readonly=on",
	}
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	b, readErr := os.ReadFile(consolePath)
	console = strings.ReplaceAll(string(b), "\r", "")
	if ctx.Err() != nil {
		return console, fmt.Errorf("the VM did not finish in time (killed): %w; qemu said: %s", ctx.Err(), out.String())
	}
	if runErr != nil {
		return console, fmt.Errorf("qemu: %w: %s", runErr, out.String())
	}
	return console, readErr
}

// report is what the guest said about one case.
type report struct {
	table  string   // the table given to dmsetup
	create string   // "rc=N output"
	size   string   // blockdev --getsize64 of the mapped device
	read   string   // "rc=N sha256sum output"
	fecdev string   // MAJOR:MINOR of the FEC device named in the table
	dmesg  []string // kernel messages about verity and I/O errors
	ktable string   // dmsetup table: the kernel's view
	status string   // dmsetup status
	dev    string   // dm-N
	verrs  []string // "TYPE,BLOCK" of each verity error uevent
	errors []string
	ended  bool
}

// guestReport is the parsed console.
type guestReport struct {
	cases  map[string]*report
	errors []string // outside any case
	boot   string   // uptime when /init started, when ready, when done
	ready  string
	done   string
}

func parseConsole(console string) *guestReport {
	g := &guestReport{cases: map[string]*report{}}
	byDev := map[string]*report{}
	var verrs [][2]string
	var cur *report
	named := func(rest string) (*report, string) {
		name, v, _ := strings.Cut(rest, ": ")
		if r := g.cases[name]; r != nil {
			return r, v
		}
		g.errors = append(g.errors, "report on an unknown device: "+rest)
		return nil, ""
	}
	for _, line := range strings.Split(console, "\n") {
		i := strings.Index(line, "@@VT ")
		if i < 0 {
			continue
		}
		kind, rest, _ := strings.Cut(line[i+len("@@VT "):], " ")
		switch kind {
		case "BOOT":
			g.boot = rest
		case "READY":
			g.ready = rest
		case "DONE":
			g.done = rest
		case "CASE":
			cur = &report{}
			g.cases[rest] = cur
		case "END":
			if cur != nil {
				cur.ended = true
			}
			cur = nil
		case "ERROR":
			if cur != nil {
				cur.errors = append(cur.errors, rest)
			} else {
				g.errors = append(g.errors, rest)
			}
		case "KTABLE":
			if r, v := named(rest); r != nil {
				r.ktable = v
			}
		case "STATUS":
			if r, v := named(rest); r != nil {
				r.status = v
			}
		case "DEV":
			dev, name, _ := strings.Cut(rest, " ")
			if r := g.cases[name]; r != nil {
				r.dev = dev
				byDev[dev] = r
			}
		case "VERR":
			dev, v, _ := strings.Cut(rest, " ")
			verrs = append(verrs, [2]string{dev, v})
		default:
			if cur == nil {
				g.errors = append(g.errors, "stray line: "+line)
				continue
			}
			switch kind {
			case "TABLE":
				cur.table = rest
			case "CREATE":
				cur.create = rest
			case "SIZE":
				cur.size = rest
			case "READ":
				cur.read = rest
			case "FECDEV":
				cur.fecdev = rest
			case "DMESG":
				cur.dmesg = append(cur.dmesg, rest)
			}
		}
	}
	for _, e := range verrs {
		if r := byDev[e[0]]; r != nil {
			r.verrs = append(r.verrs, e[1])
		} else {
			g.errors = append(g.errors, "verity error on an unknown device: "+e[0]+" "+e[1])
		}
	}
	return g
}

// rc returns the exit status in "rc=N ..." and the rest.
func rc(s string) (int, string) {
	var n int
	head, rest, _ := strings.Cut(s, " ")
	if _, err := fmt.Sscanf(head, "rc=%d", &n); err != nil {
		return -1, s
	}
	return n, rest
}
