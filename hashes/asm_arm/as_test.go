package asmarm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/testtool"
)

// encoderCases exercises every encoder function with low and high
// registers, so that each field (Vd:D, Vn:N, Vm:M, Q, immediates, Rn, Rm)
// is checked against GNU as, not only the combinations the generated code
// happens to use.
func encoderCases() []Inst {
	var c []Inst
	regs := [][3]Reg{
		{Q(0), Q(1), Q(2)}, {Q(15), Q(8), Q(7)}, {Q(7), Q(15), Q(9)},
		{D(0), D(1), D(2)}, {D(31), D(16), D(15)}, {D(15), D(31), D(17)},
	}
	for _, r := range regs {
		d, n, m := r[0], r[1], r[2]
		c = append(c, VADDI64(d, n, m), VEOR(d, n, m), VORR(d, n, m), VREV6432(d, m))
		c = append(c, VADDI32(d, n, m), VAND(d, n, m), VBSL(d, n, m), VTRN32(d, m), VSWP(d, m), VREV328(d, m), VREV648(d, m))
		for _, s := range []int{1, 2, 27, 31, 32} {
			c = append(c, VSHRU32(d, m, s), VSRI32(d, m, s))
		}
		for _, s := range []int{0, 1, 5, 30, 31} {
			c = append(c, VSLI32(d, m, s), VSHLI32(d, m, s))
		}
		c = append(c, VEXT8(d, n, m, 3), VEXT8(d, n, m, 2), VEXT8(d, n, m, 7))
		if d.Q {
			c = append(c, VEXT8(d, n, m, 8), VEXT8(d, n, m, 15))
		}
		for _, s := range []int{1, 24, 63, 64} {
			c = append(c, VSHRU64(d, m, s), VSRI64(d, m, s))
		}
		for _, s := range []int{0, 1, 40, 63} {
			c = append(c, VSLI64(d, m, s), VSHLI64(d, m, s))
		}
	}
	for _, size := range []int{8, 16, 32, 64} {
		for n := 1; n <= 4; n++ {
			for _, first := range []Reg{D(0), D(16), D(28)} {
				for _, wb := range []bool{false, true} {
					c = append(c, VLD1(size, first, n, 1, wb), VST1(size, first, n, 9, wb))
				}
			}
		}
	}
	for _, first := range []Reg{D(0), D(8), D(16), D(24)} {
		c = append(c, VLDMIA(0, first, 8), VSTMIA(7, first, 8), VLDMIA(14, first, 1), VSTMIA(3, first, 4))
	}
	for _, q := range []Reg{Q(0), Q(8), Q(15)} {
		c = append(c, VLD1Dup32(q, 3), VLD1Dup32(q, 12))
	}
	for _, first := range []Reg{D(0), D(16), D(28)} {
		c = append(c, VLD1Post(32, first, 4, 4, 8), VLD1Post(8, first, 2, 1, 12), VSTMIAW(7, first, 4), VSTMIAW(0, D(0), 16))
	}
	for _, d := range []Reg{D(0), D(16), D(31)} {
		c = append(c, VMOVDRR(d, 3, 4), VMOVDRR(d, 8, 9), VMOVDRR(d, 0, 14))
	}
	for _, r := range regs[:3] {
		d, n, m := r[0], r[1], r[2]
		c = append(c, SHA1C(d, n, m), SHA1P(d, n, m), SHA1M(d, n, m), SHA1SU0(d, n, m), SHA1H(d, m), SHA1SU1(d, m))
		c = append(c, SHA256H(d, n, m), SHA256H2(d, n, m), SHA256SU0(d, m), SHA256SU1(d, n, m))
	}
	return c
}

var wordLine = regexp.MustCompile(`^\s*WORD\s+\$0x([0-9a-f]{8})\s*// (.*)$`)

// generatedInsts returns every WORD-encoded instruction of the generated
// 32-bit files, as written there.
func generatedInsts(t *testing.T) []Inst {
	var insts []Inst
	for _, f := range files {
		if !strings.HasSuffix(f.name, "_arm.s") {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(f.gen()))
		for sc.Scan() {
			if strings.HasPrefix(strings.TrimSpace(sc.Text()), "WORD") {
				m := wordLine.FindStringSubmatch(sc.Text())
				if m == nil {
					t.Fatalf("%s: WORD line without its mnemonic: %q", f.name, sc.Text())
				}
				w, _ := strconv.ParseUint(m[1], 16, 32)
				insts = append(insts, Inst{uint32(w), m[2]})
			}
		}
	}
	if len(insts) == 0 {
		t.Fatal("no WORD lines in the generated files")
	}
	return insts
}

// TestEncoderMatchesGNUAs assembles the mnemonics with GNU as and compares
// its words with ours: the encoder's cases and every WORD in the generated
// 32-bit assembly.
func TestEncoderMatchesGNUAs(t *testing.T) {
	as := testtool.Require(t, "arm-linux-gnueabihf-as")
	objcopy := testtool.Require(t, "arm-linux-gnueabihf-objcopy")
	insts := append(encoderCases(), generatedInsts(t)...)

	dir := t.TempDir()
	var src strings.Builder
	src.WriteString(".syntax unified\n.arm\n.text\n")
	for _, in := range insts {
		fmt.Fprintf(&src, "\t%s\n", in.Asm)
	}
	s, o, bin := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o"), filepath.Join(dir, "x.bin")
	if err := os.WriteFile(s, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-march=armv8-a+crypto", "-mfpu=crypto-neon-fp-armv8", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", as, err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", o, bin).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", objcopy, err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(code) != 4*len(insts) {
		t.Fatalf("GNU as produced %d bytes for %d instructions", len(code), len(insts))
	}
	bad := 0
	for i, in := range insts {
		if want := binary.LittleEndian.Uint32(code[4*i:]); in.Word != want {
			t.Errorf("%s: encoded %#08x, GNU as %#08x", in.Asm, in.Word, want)
			if bad++; bad > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
	t.Logf("%d instructions match GNU as", len(insts))
}
