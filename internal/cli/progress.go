package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
)

// Progress draws a one-line progress bar with sizes and rate. A nil
// *Progress does nothing, so callers need not check whether there is one.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	total uint64
	start time.Time
	last  time.Time
	drawn bool
}

// NewProgress returns a progress bar on w, or nil (no bar) unless show.
func NewProgress(w io.Writer, show bool, label string, total uint64) *Progress {
	if !show || total == 0 {
		return nil
	}
	now := time.Now()
	return &Progress{w: w, label: label, total: total, start: now}
}

// Update shows that done of the total bytes are processed. Redraws are
// limited to ten a second.
func (p *Progress) Update(done uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < p.total {
		return
	}
	p.last = now
	p.draw(done, now)
}

func (p *Progress) draw(done uint64, now time.Time) {
	const width = 30
	frac := float64(done) / float64(p.total)
	fill := int(frac * width)
	rate := ""
	if secs := now.Sub(p.start).Seconds(); secs > 0.05 {
		rate = humanize.IBytes(uint64(float64(done)/secs)) + "/s"
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %s / %s %s\x1b[K", p.label,
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*frac,
		humanize.IBytes(done), humanize.IBytes(p.total), rate)
	p.drawn = true
}

// Finish clears the bar's line.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
