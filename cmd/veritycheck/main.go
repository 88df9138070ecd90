// Command veritycheck checks an image and its dm-verity hash tree against a
// root hash, as `veritysetup verify` does, and reports every corrupted block.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/veritytree/veritytree/internal/cli"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Stderr)
	stop()
	os.Exit(code)
}
