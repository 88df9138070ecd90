package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/veritytree/veritytree/verity"
)

// Progress draws one line per stage of an operation (hashing, error
// correction, repairing, ...): while a stage runs, a bar with sizes, rate
// and time left ("hashing [====      ]  42% 1.2 GiB of 4.0 GiB, 850 MiB/s,
// 3s left"); when it ends, the line stays with what it took ("... 100%
// 4.0 GiB in 4.8s, 850 MiB/s") and the next stage starts a line below. A
// nil *Progress does nothing, so callers need not check whether there is
// one.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	width func() int // the terminal's columns, asked at each draw (it may be resized)

	label string
	total uint64
	start time.Time
	last  time.Time
	fit   fit
	drawn bool // the current stage's line is on screen
	ended bool // and ended with its summary: a new stage starts below
}

// NewProgress returns a progress display on w whose first stage is label,
// of total bytes, or nil (no display) unless show.
// Each line fits the width of the terminal w is (see fitLine).
func NewProgress(w io.Writer, show bool, label string, total uint64) *Progress {
	width := func() int { return defaultWidth }
	if f, ok := w.(*os.File); ok {
		width = func() int { return terminalWidth(f) }
	}
	return newProgress(w, show, label, total, time.Now, width)
}

// defaultWidth is the width assumed of a terminal that does not say.
const defaultWidth = 80

// newProgress is NewProgress with a clock and a width, which tests replace.
func newProgress(w io.Writer, show bool, label string, total uint64, now func() time.Time, width func() int) *Progress {
	if !show {
		return nil
	}
	p := &Progress{w: w, now: now, width: width}
	p.Stage(label, total)
	return p
}

// Stage starts a new stage of total bytes, on a line of its own: the
// previous stage's line stays, with its summary if it ended, else cleared
// (it may not have drawn anything yet).
func (p *Progress) Stage(label string, total uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn && !p.ended {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	now := p.now()
	p.label, p.total, p.start, p.last, p.drawn, p.ended = label, total, now, time.Time{}, false, false
	p.fit = fit{bar: barWidth}
}

// grow sets the running stage's total, which may grow as it goes (a
// repair finding more corrupted blocks).
func (p *Progress) grow(total uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		p.total = total
	}
}

// Update shows that done of the stage's total bytes are processed. Redraws
// are limited to ten a second; the end of the stage is always drawn.
func (p *Progress) Update(done uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.total == 0 {
		return
	}
	now := p.now()
	if done < p.total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	fmt.Fprint(p.w, p.line(min(done, p.total), now))
	p.drawn = true
	if done >= p.total {
		fmt.Fprint(p.w, "\n")
		p.ended = true
	}
}

// line is the stage's line at done bytes: "\r", the text fitted to the
// terminal's width, and an erase-to-end-of-line.
func (p *Progress) line(done uint64, now time.Time) string {
	frac := float64(done) / float64(p.total)
	elapsed := now.Sub(p.start)
	pct := fmt.Sprintf("%3.0f%%", 100*frac)
	// A rate over less than a tenth of a second says little.
	rate := 0.0
	if elapsed >= 100*time.Millisecond {
		rate = float64(done) / elapsed.Seconds()
	}
	var sizes, speed string
	if done == p.total {
		sizes = fmt.Sprintf("%s in %s", humanize.IBytes(p.total), Duration(elapsed))
		if rate > 0 {
			speed = fmt.Sprintf(", %s/s", humanize.IBytes(uint64(rate)))
		}
	} else {
		sizes = fmt.Sprintf("%s of %s", humanize.IBytes(done), humanize.IBytes(p.total))
		if rate > 0 {
			speed = fmt.Sprintf(", %s/s", humanize.IBytes(uint64(rate)))
			// A time left past what a Duration holds (a first byte
			// after a long pause) says nothing either.
			if left := float64(p.total-done) / rate; left < maxSeconds {
				speed += fmt.Sprintf(", %s left", Duration(time.Duration(left*float64(time.Second))))
			}
		}
	}
	return "\r" + fitLine(p.width(), &p.fit, p.label, frac, pct, sizes, speed) + "\x1b[K"
}

// maxSeconds is the longest time a time.Duration holds, in seconds.
const maxSeconds = float64(1<<63-1) / float64(time.Second)

// Bar widths: the full bar, and the narrowest worth drawing.
const (
	barWidth    = 30
	minBarWidth = 10
)

// fit is how a stage's line is laid out so far: a candidate layout
// (fitLine's) and the bar's width, which only shrink during a stage, so
// that the line does not jump between layouts as its figures change.
type fit struct{ layout, bar int }

// fitLine lays out a progress line in fewer than width columns, so that
// it never wraps (a wrapped line is redrawn below itself, a scrolling log
// of half-lines): "label [====    ]  42% sizes, rate, time left" as it
// fits, else with a narrower bar, else the label shortened, else without
// rate and time left, else without the bar, else cut. The last column is
// left free: a terminal that auto-wraps may move to the next line after
// writing it. f is the stage's layout so far, updated.
func fitLine(width int, f *fit, label string, frac float64, pct, sizes, speed string) string {
	room := width - 1
	short := shortLabel(label)
	withBar := []struct{ label, tail string }{{label, sizes + speed}, {short, sizes + speed}, {short, sizes}}
	for i := f.layout; i < len(withBar); i++ {
		c := withBar[i]
		// "label [bar] pct tail"
		fixed := len(c.label) + len(" [] ") + len(pct) + 1 + len(c.tail)
		if bar := min(f.bar, room-fixed); bar >= minBarWidth {
			f.layout, f.bar = i, bar
			fill := int(frac * float64(bar))
			return fmt.Sprintf("%s [%s%s] %s %s", c.label, strings.Repeat("=", fill), strings.Repeat(" ", bar-fill), pct, c.tail)
		}
	}
	f.layout = max(f.layout, len(withBar))
	if s := short + " " + pct + " " + sizes; f.layout == len(withBar) && len(s) <= room {
		return s
	}
	f.layout = len(withBar) + 1
	s := short + " " + pct
	return s[:max(0, min(len(s), room))]
}

// shortLabel is a stage's label in few columns, for a narrow terminal:
// its first word ("hashing 16 TiB expanded" is "hashing"), error
// correction's initials.
func shortLabel(label string) string {
	if label == verity.StageFEC.String() {
		return "FEC"
	}
	if i := strings.IndexByte(label, ' '); i > 0 {
		return label[:i]
	}
	return label
}

// Finish ends the display: a stage that did not end (an error, Ctrl-C) has
// its line cleared; the lines of the stages that ended stay.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn && !p.ended {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.drawn, p.ended = false, true
}

// Duration is d for people, as progress lines show it: "0.4s", "12s",
// "3m05s", "2h07m".
func Duration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// StageProgress returns a verity.Progress that draws on *bar (set once the
// first stage, first, has its label): each later stage on a line of its
// own, labelled with the stage's name, its total as the library says it
// as it goes.
func StageProgress(bar **Progress, first verity.Stage) verity.Progress {
	cur := first
	return func(stage verity.Stage, done, total uint64) {
		if stage != cur {
			cur = stage
			(*bar).Stage(stage.String(), total)
		} else {
			(*bar).grow(total)
		}
		(*bar).Update(done)
	}
}
