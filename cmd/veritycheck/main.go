// Command veritycheck checks an image and its dm-verity hash tree against a
// root hash, as `veritysetup verify` does, and reports every corrupted block.
package main

import (
	"os"

	"github.com/veritytree/veritytree/internal/cli"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := cli.InterruptContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Stderr)
	stop()
	os.Exit(code)
}
