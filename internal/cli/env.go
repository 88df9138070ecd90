package cli

import (
	"os"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
)

// PreferImplementationsFromEnv passes VERITYTREE_HASH_IMPL and
// VERITYTREE_FEC_IMPL on to the libraries, which read no environment: the
// commands' way to force an implementation, for tests and comparisons.
func PreferImplementationsFromEnv() {
	hashes.PreferImplementation(os.Getenv(hashes.ImplEnv))
	fec.PreferImplementation(os.Getenv(fec.ImplEnv))
}
