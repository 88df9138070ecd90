package verity

// Applying a repair: the rebuilt blocks written back.

import (
	"fmt"
	"io"
	"os"
)

// writeRepair opens DATA and HASH for writing, locked exclusively, and
// writes the repair into them (see apply); progress, if not nil, is told
// the blocks written so far.
func writeRepair(rp *RepairPlan, dataPath, hashPath string, inPlace bool, progress func(done uint64)) error {
	dataOut, err := os.OpenFile(dataPath, os.O_WRONLY, 0)
	if err != nil {
		return errorf(KindIO, "", "cannot open DATA %s for writing the repair: %v; nothing was written", dataPath, unwrapPath(err))
	}
	defer dataOut.Close()
	// Exclusive: no other veritygen or veritycheck reads or writes while
	// blocks are written back (a lock this run holds for reading is
	// converted).
	if err := lockExclusive(dataOut, "DATA", dataPath); err != nil {
		return withHint(KindRefused, fmt.Errorf("%w; nothing was written", err), hintOf(err))
	}
	hashOut := dataOut
	if !inPlace {
		if hashOut, err = os.OpenFile(hashPath, os.O_WRONLY, 0); err != nil {
			return errorf(KindIO, "", "cannot open HASH %s for writing the repair: %v; nothing was written", hashPath, unwrapPath(err))
		}
		defer hashOut.Close()
		if err := lockExclusive(hashOut, "HASH", hashPath); err != nil {
			return withHint(KindRefused, fmt.Errorf("%w; nothing was written", err), hintOf(err))
		}
	}
	return rp.apply(dataOut, hashOut, "DATA "+dataPath, "HASH "+hashPath, true, progress)
}

// syncer is what apply syncs when asked to: an *os.File.
type syncer interface{ Sync() error }

// apply writes the fixes and the superblock area back, DATA's blocks first,
// then the tree's, then the superblock area; dataName and hashName name
// the writers in errors. With sync, writers that can Sync are synced.
// progress, if not nil, is told the blocks written so far.
func (rp *RepairPlan) apply(dataOut, hashOut io.WriterAt, dataName, hashName string, sync bool, progress func(done uint64)) error {
	if !rp.Whole() {
		return errorf(KindCorrupt, "", "the FEC parity cannot recover %s: nothing was written", plural(rp.lostCount, "corrupted block"))
	}
	g := rp.g
	written := 0
	fail := func(what string, err error) error {
		return &Error{Kind: KindIO, Err: fmt.Errorf("writing the repair into %s: %v (%d of %d blocks written)", what, unwrapPath(err), written, rp.fixCount),
			Hint:   "the blocks written so far are correct (each was checked against the tree); call Verify again to see what is left",
			Advice: AdviceVerifyPartial}
	}
	// In message order: DATA's blocks by offset, then the tree's.
	buf := make([]byte, g.DataBlockSize)
	var werr error
	rp.eachFix(func(fx fix) bool {
		var b []byte
		if b, werr = rp.content(fx, buf); werr != nil {
			return false
		}
		f, what := dataOut, dataName
		if fx.ref.inHash {
			f, what = hashOut, hashName
		}
		if _, werr = f.WriteAt(b, int64(fx.ref.off)); werr != nil {
			werr = fail(what, werr)
			return false
		}
		written++
		if progress != nil {
			progress(uint64(written))
		}
		return true
	})
	if werr != nil {
		return werr
	}
	if rp.header != nil {
		if _, err := hashOut.WriteAt(rp.header, int64(g.HashOffset)); err != nil {
			return fail(hashName, err)
		}
	}
	if !sync {
		return nil
	}
	if f, ok := dataOut.(syncer); ok {
		if err := f.Sync(); err != nil {
			return fail(dataName, err)
		}
	}
	if f, ok := hashOut.(syncer); ok && hashOut != dataOut {
		if err := f.Sync(); err != nil {
			return fail(hashName, err)
		}
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
