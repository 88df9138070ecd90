package cli

import (
	"fmt"
	"io"
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
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time

	label string
	total uint64
	start time.Time
	last  time.Time
	drawn bool // the current stage's line is on screen
	ended bool // and ended with its summary: a new stage starts below
}

// NewProgress returns a progress display on w whose first stage is label,
// of total bytes, or nil (no display) unless show.
func NewProgress(w io.Writer, show bool, label string, total uint64) *Progress {
	return newProgress(w, show, label, total, time.Now)
}

// newProgress is NewProgress with a clock, which tests replace.
func newProgress(w io.Writer, show bool, label string, total uint64, now func() time.Time) *Progress {
	if !show {
		return nil
	}
	p := &Progress{w: w, now: now}
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

// line is the stage's line at done bytes: "\r", the text, and an
// erase-to-end-of-line.
func (p *Progress) line(done uint64, now time.Time) string {
	const width = 30
	frac := float64(done) / float64(p.total)
	fill := int(frac * width)
	elapsed := now.Sub(p.start)
	var b strings.Builder
	fmt.Fprintf(&b, "\r%s [%s%s] %3.0f%% ", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*frac)
	// A rate over less than a tenth of a second says little.
	rate := 0.0
	if elapsed >= 100*time.Millisecond {
		rate = float64(done) / elapsed.Seconds()
	}
	if done == p.total {
		fmt.Fprintf(&b, "%s in %s", humanize.IBytes(p.total), Duration(elapsed))
		if rate > 0 {
			fmt.Fprintf(&b, ", %s/s", humanize.IBytes(uint64(rate)))
		}
	} else {
		fmt.Fprintf(&b, "%s of %s", humanize.IBytes(done), humanize.IBytes(p.total))
		if rate > 0 {
			left := time.Duration(float64(p.total-done) / rate * float64(time.Second))
			fmt.Fprintf(&b, ", %s/s, %s left", humanize.IBytes(uint64(rate)), Duration(left))
		}
	}
	b.WriteString("\x1b[K")
	return b.String()
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
