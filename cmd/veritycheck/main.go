// Command veritycheck checks an image and its dm-verity hash tree against a
// root hash, as `veritysetup verify` does, and reports every corrupted block.
package main

import (
	"os"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/veritycheck"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := cli.InterruptContext()
	code := veritycheck.Main(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
