// Command veritygen builds a dm-verity hash tree for an image, byte for byte
// as `veritysetup format` does.
package main

import (
	"os"

	"github.com/veritytree/veritytree/internal/cli"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := cli.InterruptContext()
	var code int
	if isAvbtool(os.Args[0]) {
		code = runAvbtool(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	} else if isVeritysetup(os.Args[0]) {
		code = runVeritysetup(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	} else {
		code = run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Stderr)
	}
	stop()
	os.Exit(code)
}
