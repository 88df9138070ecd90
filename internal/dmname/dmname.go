// Package dmname checks a device name for a verity table or a boot
// argument, as the verity package's Table and veritygen's boot flags
// both need.
package dmname

import (
	"fmt"
	"strings"
)

// BadChars are the characters a device name or dm name cannot hold:
// white space and the quote end a table field or the boot argument, a
// comma or semicolon splits the dm-mod.create= and dm= forms (the kernel's
// parsers have no escapes).
const BadChars = " \t\n\r\v\f\",;"

// Check returns an error saying why the kernel could not read
// name as one device name in a table or boot argument, or nil. The error
// is a phrase to follow the name ("is empty", "contains ...").
func Check(name string) error {
	if name == "" {
		return fmt.Errorf("is empty")
	}
	if i := strings.IndexAny(name, BadChars); i >= 0 {
		return fmt.Errorf("contains %q, which the kernel's table and boot argument parsers would split at", name[i])
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains the control character %q", r)
		}
	}
	// The kernel's isspace() is Latin-1's: byte 0xa0 (no-break space) is
	// whitespace to it, also inside a UTF-8 character such as U+0920.
	if i := strings.IndexByte(name, 0xa0); i >= 0 {
		return fmt.Errorf("contains the byte 0xa0 (at %d), which the kernel counts as a space and would split at", i)
	}
	return nil
}
