package cli

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// Expansion is what to say before reading a sparse DATA, which may stand
// for far more than it holds (a 40-byte file can declare 16 TiB of
// DONT_CARE), so that a mistaken input is noticed at once: how large the
// file is, how large its expansion, and with treeBytes > 0 its tree. ""
// unless format is "android-sparse".
func Expansion(path, format string, fileSize, size int64, treeBytes uint64) string {
	if format != "android-sparse" {
		return ""
	}
	msg := fmt.Sprintf("DATA %s is an Android sparse image of %s that expands to %s (%d bytes)",
		path, humanize.IBytes(uint64(fileSize)), humanize.IBytes(uint64(size)), size)
	if treeBytes > 0 {
		msg += "; its tree will be " + humanize.IBytes(treeBytes)
	}
	return msg
}

// ProgressLabel is the progress bar's label: verb, and for a sparse DATA
// how much of its expansion the run covers ("hashing 16 TiB expanded").
func ProgressLabel(verb, format string, covered uint64) string {
	if format != "android-sparse" {
		return verb
	}
	return verb + " " + humanize.IBytes(covered) + " expanded"
}
