// Command avbtool is avbtool 1.3.0's command line for every subcommand
// but generate_test_image, set_ab_metadata and make_atx_* (refused, exit
// 2): the same front as veritygen run under the name avbtool, installable
// without a link.
package main

import (
	"os"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/avbtool"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := cli.InterruptContext()
	code := avbtool.Main(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
