package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/verity"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func screen(b *bytes.Buffer) []string        { return strings.Split(b.String(), "\n") }
func lastDraw(line string) string            { return line[strings.LastIndex(line, "\r")+1:] }
func trimErase(s string) string              { return strings.TrimSuffix(s, "\x1b[K") }

// TestProgressStages: the bar shows sizes, rate and time left, humanized;
// an ended stage keeps its line with what it took and the next stage
// starts below; redraws are limited to ten a second; a stage that does not
// end is cleared; nothing is drawn unless shown.
func TestProgressStages(t *testing.T) {
	var out bytes.Buffer
	c := &fakeClock{t: time.Unix(1000, 0)}
	p := newProgress(&out, true, "hashing", 4<<30, c.now, wide)
	c.advance(1 * time.Second)
	p.Update(1 << 30)
	lines := screen(&out)
	if got, want := trimErase(lastDraw(lines[0])), "hashing [=======                       ]  25% 1.0 GiB of 4.0 GiB, 1.0 GiB/s, 3.0s left"; got != want {
		t.Errorf("bar\n%q, want\n%q", got, want)
	}
	n := out.Len()
	c.advance(50 * time.Millisecond)
	p.Update(1<<30 + 1<<20)
	if out.Len() != n {
		t.Error("redrawn within a tenth of a second")
	}
	c.advance(2950 * time.Millisecond)
	p.Update(4 << 30)
	p.Stage(verity.StageFEC.String(), 100<<20)
	c.advance(2 * time.Second)
	p.Update(50 << 20)
	lines = screen(&out)
	if len(lines) != 2 {
		t.Fatalf("want two lines, got %q", lines)
	}
	if got, want := trimErase(lastDraw(lines[0])), "hashing [==============================] 100% 4.0 GiB in 4.0s, 1.0 GiB/s"; got != want {
		t.Errorf("ended stage\n%q, want\n%q", got, want)
	}
	if got, want := trimErase(lastDraw(lines[1])), "error correction [===============               ]  50% 50 MiB of 100 MiB, 25 MiB/s, 2.0s left"; got != want {
		t.Errorf("second stage\n%q, want\n%q", got, want)
	}
	p.Finish()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Errorf("an unfinished stage is not cleared: %q", out.String())
	}

	// Not shown: nil, and every method a no-op.
	var none bytes.Buffer
	q := NewProgress(&none, false, "hashing", 1)
	q.Update(1)
	q.Stage("x", 1)
	q.Finish()
	if q != nil || none.Len() != 0 {
		t.Errorf("drawn when not shown: %q", none.String())
	}
}

// TestStageProgress: the library's stages become lines of their own, named
// as the library names them; the first stage keeps the command's label.
func TestStageProgress(t *testing.T) {
	var out bytes.Buffer
	c := &fakeClock{t: time.Unix(1000, 0)}
	var bar *Progress
	progress := StageProgress(&bar, verity.StageHashing)
	bar = newProgress(&out, true, "checking", 8192, c.now, wide)
	for _, s := range []verity.Stage{verity.StageHashing, verity.StageRepairing, verity.StageWriting, verity.StageVerifying} {
		progress(s, 0, 8192)
		c.advance(time.Second)
		progress(s, 8192, 8192)
	}
	bar.Finish()
	var labels []string
	for _, l := range screen(&out) {
		if l = lastDraw(l); l != "" {
			labels = append(labels, strings.Fields(l)[0])
		}
	}
	if got := strings.Join(labels, " "); got != "checking repairing writing verifying" {
		t.Errorf("lines %q", got)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{400 * time.Millisecond: "0.4s", 12 * time.Second: "12s",
		185 * time.Second: "3m05s", 2*time.Hour + 7*time.Minute + 20*time.Second: "2h07m"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestRepairStagesProgress: the repair's stages update their line as they
// go, not only at their start and end (issue 15), with a total that grows
// when the repair finds more corrupted blocks; each ends on its own line
// with its summary.
func TestRepairStagesProgress(t *testing.T) {
	var out bytes.Buffer
	c := &fakeClock{t: time.Unix(1000, 0)}
	var bar *Progress
	progress := StageProgress(&bar, verity.StageHashing)
	bar = newProgress(&out, true, "checking", 1<<20, c.now, wide)
	progress(verity.StageHashing, 1<<20, 1<<20)
	progress(verity.StageRepairing, 0, 8<<10)
	c.advance(time.Second)
	progress(verity.StageRepairing, 4<<10, 8<<10)
	if got, want := trimErase(lastDraw(out.String())), "repairing [===============               ]  50% 4.0 KiB of 8.0 KiB, 4.0 KiB/s, 1.0s left"; got != want {
		t.Errorf("repairing\n%q, want\n%q", got, want)
	}
	c.advance(time.Second)
	progress(verity.StageRepairing, 6<<10, 12<<10) // blocks found under a rebuilt hash block
	if got, want := trimErase(lastDraw(out.String())), "repairing [===============               ]  50% 6.0 KiB of 12 KiB, 3.0 KiB/s, 2.0s left"; got != want {
		t.Errorf("repairing, grown\n%q, want\n%q", got, want)
	}
	c.advance(time.Second)
	progress(verity.StageRepairing, 12<<10, 12<<10)
	for _, s := range []verity.Stage{verity.StageWriting, verity.StageVerifying} {
		progress(s, 0, 12<<10)
		c.advance(500 * time.Millisecond)
		progress(s, 3<<10, 12<<10)
		if got, want := trimErase(lastDraw(out.String())), fmt.Sprintf("%s [=======                       ]  25%% 3.0 KiB of 12 KiB, 6.0 KiB/s, 1.5s left", s); got != want {
			t.Errorf("%v\n%q, want\n%q", s, got, want)
		}
		c.advance(1500 * time.Millisecond)
		progress(s, 12<<10, 12<<10)
	}
	bar.Finish()
	lines := screen(&out)
	want := []string{
		"checking [==============================] 100% 1.0 MiB in 0.0s",
		"repairing [==============================] 100% 12 KiB in 3.0s, 4.0 KiB/s",
		"writing [==============================] 100% 12 KiB in 2.0s, 6.0 KiB/s",
		"verifying [==============================] 100% 12 KiB in 2.0s, 6.0 KiB/s",
		"",
	}
	if len(lines) != len(want) {
		t.Fatalf("lines %q", lines)
	}
	for i, l := range lines {
		if got := trimErase(lastDraw(l)); got != want[i] {
			t.Errorf("line %d\n%q, want\n%q", i, got, want[i])
		}
	}
}

// wide is a terminal on which every line fits unshortened.
func wide() int { return 120 }

// TestProgressFitsWidth: on terminals of 40, 80 and 120 columns, every
// line drawn, of every stage, running or ended, with the longest labels
// and figures, stays within the width (a line as long as the terminal
// wraps it into a scrolling log of half-lines); the label is shortened
// before the rate and time left are dropped, and on 120 columns nothing
// is left out.
func TestProgressFitsWidth(t *testing.T) {
	for _, width := range []int{40, 80, 120} {
		var out bytes.Buffer
		c := &fakeClock{t: time.Unix(1000, 0)}
		p := newProgress(&out, true, ProgressLabel("hashing", "android-sparse", 16<<40), 16<<40, c.now, func() int { return width })
		for _, stage := range []struct {
			label string
			total uint64
		}{{"", 16 << 40}, {verity.StageFEC.String(), 999 << 30}, {verity.StageRepairing.String(), 1000}} {
			if stage.label != "" {
				p.Stage(stage.label, stage.total)
			}
			for _, done := range []uint64{0, 1, stage.total / 3, stage.total - 1, stage.total} {
				c.advance(1500 * time.Millisecond)
				p.Update(done)
			}
		}
		p.Finish()
		draws := strings.FieldsFunc(out.String(), func(r rune) bool { return r == '\r' || r == '\n' })
		if testing.Verbose() {
			t.Logf("width %d:\n%s", width, strings.ReplaceAll(strings.ReplaceAll(out.String(), "\x1b[K", ""), "\r", "\n"))
		}
		if len(draws) < 12 {
			t.Fatalf("width %d: only %d lines drawn: %q", width, len(draws), draws)
		}
		for _, d := range draws {
			if n := len(trimErase(d)); n >= width {
				t.Errorf("width %d: line of %d columns: %q", width, n, d)
			}
		}
		text := out.String()
		if strings.Contains(text, "s left") && strings.Contains(text, "-") {
			t.Errorf("width %d: a negative time left:\n%q", width, text)
		}
		switch width {
		case 120:
			for _, want := range []string{"hashing 16 TiB expanded [", "error correction [", "9.0s left", "/s"} {
				if !strings.Contains(text, want) {
					t.Errorf("width 120: %q missing from\n%q", want, text)
				}
			}
		case 80:
			if !strings.Contains(text, "\rhashing [") || !strings.Contains(text, "9.0s left") {
				t.Errorf("width 80: want the label shortened, the time left kept:\n%q", text)
			}
		case 40:
			if !strings.Contains(text, "\rFEC ") || strings.Contains(text, " left") {
				t.Errorf("width 40: want the label shortened, the time left dropped:\n%q", text)
			}
		}
	}
}
