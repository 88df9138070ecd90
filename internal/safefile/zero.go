package safefile

import (
	"errors"
	"os"
)

// ZeroRange makes bytes [from, to) of the regular file f read as zeros,
// punching a hole where the file system can and writing zeros over what
// it holds where it cannot. It is for the bytes an appending run will
// own, before it writes them.
func ZeroRange(f *os.File, from, to uint64) error {
	if to <= from {
		return nil
	}
	err := punchHole(f, from, to)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errNoHole) {
		return errorf(KindIO, "", "writing %s: %w", f.Name(), err)
	}
	buf := make([]byte, min(to-from, 1<<20))
	for off := from; off < to; {
		// Holes already read as zeros: only the data between them is
		// written over.
		start, end := off, to
		d, err := SeekData(f, int64(off))
		switch {
		case errors.Is(err, ErrNoData):
			return nil // no data from off to the end of the file
		case err == nil:
			if start = max(off, uint64(d)); start >= to {
				return nil
			}
			if h, err := SeekHole(f, int64(start)); err == nil {
				end = min(to, uint64(h))
			}
		}
		for p := start; p < end; {
			n := min(end-p, uint64(len(buf)))
			if _, err := f.WriteAt(buf[:n], int64(p)); err != nil {
				return errorf(KindIO, "", "writing %s: %w", f.Name(), unwrapPath(err))
			}
			p += n
		}
		off = end
	}
	return nil
}

// errNoHole: the file system (or the system) cannot punch holes.
var errNoHole = errors.New("no hole punching")

// ErrNoData: no data from the offset on, only holes to the end.
var ErrNoData = errors.New("no data past the offset")
