// Command veritygen builds a dm-verity hash tree for an image, byte for byte
// as `veritysetup format` does. Run under the name veritysetup or avbtool
// (a link to it), it is the veritysetup or avbtool front.
package main

import (
	"os"

	"github.com/veritytree/veritytree/internal/cli"
	"github.com/veritytree/veritytree/internal/front/avbtool"
	"github.com/veritytree/veritytree/internal/front/veritygen"
	"github.com/veritytree/veritytree/internal/front/veritysetup"
)

func main() {
	cli.LimitMemory()
	cli.PreferImplementationsFromEnv()
	ctx, stop := cli.InterruptContext()
	var code int
	if avbtool.CalledAs(os.Args[0]) {
		code = avbtool.Main(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	} else if veritysetup.CalledAs(os.Args[0]) {
		code = veritysetup.Main(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	} else {
		code = veritygen.Main(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}
