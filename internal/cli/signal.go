package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Interrupted is the cause of the context of InterruptContext once a
// signal has ended it.
type Interrupted struct{ Signal os.Signal }

func (e *Interrupted) Error() string { return "interrupted by " + SignalName(e.Signal) }

// ExitCode is the status a shell reports for a process the signal killed
// (128 + its number): 130 for SIGINT, 143 for SIGTERM.
func (e *Interrupted) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + 2
}

// SignalName is SIGINT, SIGTERM, as a shell names them.
func SignalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// InterruptContext returns a context that ends on SIGINT (Ctrl-C) or
// SIGTERM, with an *Interrupted cause naming the signal (see
// InterruptedBy), and the function that stops listening. The command then
// cleans up and exits; a second signal kills it at once (the default
// action), should a write to a stalled pipe hold it where no context
// reaches.
func InterruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			cancel(&Interrupted{Signal: s})
			signal.Reset(os.Interrupt, syscall.SIGTERM)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// InterruptedBy returns the signal that ended ctx (from InterruptContext),
// or nil if none did.
func InterruptedBy(ctx context.Context) *Interrupted {
	var in *Interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in
	}
	return nil
}
