module github.com/veritytree/veritytree/hashes/_asm

go 1.26.0

require github.com/mmcloughlin/avo v0.5.0

require (
	golang.org/x/mod v0.6.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.2.0 // indirect
)

// The constant tables are shared with package hashes (hashes/internal/consts).
require github.com/veritytree/veritytree v0.0.0

replace github.com/veritytree/veritytree => ../..
