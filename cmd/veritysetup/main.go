// Command veritysetup is veritysetup 2.6.1's command line (format, verify,
// dump, open, close, status), answered by veritygen's library: the same
// front as veritygen run under the name veritysetup, installable without a
// link.
package main

import (
	"os"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/veritysetup"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := cli.InterruptContext()
	code := veritysetup.Main(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
