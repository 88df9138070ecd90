package kernel

import (
	"slices"
	"testing"
)

// The console parser, without a VM: lines of the guest's report, kernel
// messages between them, and the end-of-run lists tied back to the cases.
func TestParseConsole(t *testing.T) {
	console := "SeaBIOS\n" +
		"@@VT BOOT uptime=2.50\n" +
		"[    3.1] random kernel line\n" +
		"@@VT READY uptime=3.00 partitions=3\n" +
		"@@VT CASE good\n" +
		"@@VT TABLE 0 8 verity 1 /dev/vda1 /dev/vda2 4096 4096 1 1 sha256 ab -\n" +
		"@@VT CREATE rc=0\n" +
		"@@VT SIZE 4096\n" +
		"@@VT READ rc=0 0123 /dev/mapper/good\n" +
		"@@VT END good\n" +
		"@@VT CASE bad\n" +
		"@@VT CREATE rc=0\n" +
		"@@VT READ rc=1 sha256sum: can't read '/dev/mapper/bad': Input/output error\n" +
		"@@VT DMESG [ 5.0] device-mapper: verity: 254:3: data block 5 is corrupted\n" +
		"@@VT END bad\n" +
		"@@VT KTABLE bad: 0 8 verity 1 254:3 254:3 4096 4096 1 2 sha256 cd -\n" +
		"@@VT KTABLE good: 0 8 verity 1 254:1 254:2 4096 4096 1 1 sha256 ab -\n" +
		"@@VT STATUS bad: 0 8 verity C\n" +
		"@@VT STATUS good: 0 8 verity V\n" +
		"@@VT DEV dm-0 good\n" +
		"@@VT DEV dm-1 bad\n" +
		"@@VT VERR dm-1 0,5\n" +
		"@@VT VERR dm-1 0,5\n" +
		"@@VT VERR dm-7 1,2\n" +
		"@@VT DONE uptime=9.00\n"
	g := parseConsole(console)
	if g.boot != "uptime=2.50" || g.done != "uptime=9.00" || len(g.cases) != 2 {
		t.Fatalf("parsed %+v", g)
	}
	good, bad := g.cases["good"], g.cases["bad"]
	if !good.ended || good.size != "4096" || good.status != "0 8 verity V" || good.dev != "dm-0" || len(good.verrs) != 0 {
		t.Errorf("good: %+v", good)
	}
	if code, out := rc(good.read); code != 0 || out != "0123 /dev/mapper/good" {
		t.Errorf("rc(%q) = %d, %q", good.read, code, out)
	}
	if code, _ := rc(bad.read); code != 1 {
		t.Errorf("bad read: %q", bad.read)
	}
	if !slices.Equal(bad.verrs, []string{"0,5", "0,5"}) || bad.ktable != "0 8 verity 1 254:3 254:3 4096 4096 1 2 sha256 cd -" || len(bad.dmesg) != 1 {
		t.Errorf("bad: %+v", bad)
	}
	if len(g.errors) != 1 {
		t.Errorf("want one error (the error on an unknown device), got %q", g.errors)
	}

	p := &prepared{kcase: kcase{corrupt: "data"}, flipped: 5}
	if n, badLines := p.loggedCorruption(bad); n != 1 || badLines != nil {
		t.Errorf("loggedCorruption = %d, %q", n, badLines)
	}
	p.flipped = 6
	if n, badLines := p.loggedCorruption(bad); n != 1 || len(badLines) != 1 {
		t.Errorf("loggedCorruption of another block = %d, %q", n, badLines)
	}
}

// The FEC lines: the FEC device's major:minor, and the kernel's messages
// about corrections tied to the spoiled block's round.
func TestParseFECConsole(t *testing.T) {
	console := "@@VT CASE fixed\n" +
		"@@VT TABLE 0 8 verity 1 /dev/vda1 /dev/vda2 4096 4096 512 1 sha256 ab - 8 use_fec_from_device /dev/vda3 fec_roots 2 fec_blocks 517 fec_start 0\n" +
		"@@VT FECDEV 254:3\n" +
		"@@VT CREATE rc=0\n" +
		"@@VT READ rc=0 0123 /dev/mapper/fixed\n" +
		"@@VT DMESG [    3.5] device-mapper: verity-fec: 254:1: FEC 4096: corrected 4000 errors\n" +
		"@@VT DMESG [    3.6] device-mapper: verity-fec: 254:1: FEC 4096: corrected 89 errors\n" +
		"@@VT DMESG [    3.7] device-mapper: verity-fec: 259:9: FEC 0: corrected 7 errors\n" +
		"@@VT DMESG [    3.8] device-mapper: verity-fec: 254:1: FEC 8192: failed to correct (2 erasures)\n" +
		"@@VT END fixed\n" +
		"@@VT KTABLE fixed: 0 8 verity 1 254:1 254:2 4096 4096 512 1 sha256 ab - 8 use_fec_from_device 254:3 fec_blocks 517 fec_start 0 fec_roots 2\n" +
		"@@VT DONE uptime=9.00\n"
	g := parseConsole(console)
	r := g.cases["fixed"]
	if r == nil || r.fecdev != "254:3" || len(g.errors) != 0 {
		t.Fatalf("parsed %+v, errors %q", r, g.errors)
	}
	// Data block 256 of 512, 517 message blocks in 3 rounds: round 1.
	p := &prepared{kcase: kcase{fec: "file", fecRoots: 2, corrupt: "data-block"}, flipped: 256, fixBlock: 256, rounds: 3}
	p.vg.DataBlockSize = 4096
	m := p.fecLog(r)
	if m.lines != 3 || m.corrected != 4089 || m.correctedLines != 2 || m.failed != 1 || len(m.bad) != 1 {
		t.Errorf("fecLog = %+v", m)
	}
}
