package cli

import (
	"os"
	"runtime/debug"
)

// softMemoryLimit is below the 64 MiB the commands promise for any input.
const softMemoryLimit = 48 << 20

// LimitMemory sets the Go runtime's soft memory limit, unless GOMEMLIMIT
// sets one. What the commands keep live is bounded by design (about 35 MiB
// at most); the collector, left to GOGC alone, lets the heap grow to twice
// the live bytes before collecting, and the soft limit makes it collect
// earlier instead. It never fails an allocation.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
}
