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
	p := newProgress(&out, true, "hashing", 4<<30, c.now)
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
	bar = newProgress(&out, true, "checking", 8192, c.now)
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
	bar = newProgress(&out, true, "checking", 1<<20, c.now)
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
