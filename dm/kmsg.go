package dm

import "strings"

// dmMessage takes a /dev/kmsg record ("PRIORITY,SEQ,TIME,FLAGS;TEXT" and
// continuation lines) and returns its text when it is device-mapper's
// about the device dev ("MAJOR:MINOR"), without the "device-mapper:
// table: MAJ:MIN: " prefix: e.g. "verity: Invalid root digest (-EINVAL)".
func dmMessage(record, dev string) (string, bool) {
	_, text, ok := strings.Cut(record, ";")
	if !ok {
		return "", false
	}
	text, _, _ = strings.Cut(text, "\n")
	text = strings.TrimSpace(text)
	rest, ok := strings.CutPrefix(text, "device-mapper: ")
	if !ok {
		return "", false
	}
	if r, ok := strings.CutPrefix(rest, "table: "+dev+": "); ok {
		return r, true
	}
	if strings.Contains(rest, dev+":") || strings.Contains(rest, dev+" ") {
		return rest, true
	}
	return "", false
}
