package verity

import "os"

// LockImage takes, without waiting, the exclusive lock this package's verbs
// take on a file they write, on f (opened from path): a file another
// process holds is a KindRefused error matching ErrLocked. While f stays
// open, this package's verbs called on the same file in this process use
// that lock instead of failing on it, so that a caller writing around a
// verb (avb.AddHashtreeFooter writes the vbmeta and the footer after
// Format's tree) keeps the file locked from its first write to its last.
func LockImage(f *os.File, path string) error { return lockExclusive(f, "image", path) }
