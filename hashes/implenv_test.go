package hashes

import "os"

// The package reads no environment; its test binaries, which the qemu
// tests run with ImplEnv set, apply it as the commands do.
func init() { PreferImplementation(os.Getenv(ImplEnv)) }
