package verity

// The repair's spill store: rebuilt blocks in bounded memory.

import (
	"fmt"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
)

// blockStore keeps rebuilt blocks: in memory up to a budget, the rest in
// an unlinked temporary file, each at its message block's place (a sparse
// file: no index to grow with the blocks). The repairer's marks say which
// blocks it holds.
type blockStore struct {
	bs     int
	budget int
	mem    map[uint64][]byte
	spill  *os.File
}

func newBlockStore(bs, budget int) *blockStore {
	return &blockStore{bs: bs, budget: budget, mem: map[uint64][]byte{}}
}

func (st *blockStore) inMemory(m uint64) bool { _, ok := st.mem[m]; return ok }

func (st *blockStore) put(m uint64, b []byte) error {
	if (len(st.mem)+1)*st.bs <= st.budget {
		st.mem[m] = b
		return nil
	}
	if st.spill == nil {
		f, err := os.CreateTemp("", "veritycheck-repair-*")
		if err != nil {
			return errorf(KindIO, "set TMPDIR to a directory with room", "more rebuilt blocks than fit in memory, and no temporary file for them: %v", err)
		}
		os.Remove(f.Name()) // the open file stays usable, and goes away with it
		st.spill = f
	}
	if _, err := st.spill.WriteAt(b, int64(m)*int64(st.bs)); err != nil {
		return errorf(KindIO, "set TMPDIR to a directory with room", "keeping rebuilt blocks in a temporary file: %w", err)
	}
	return nil
}

// get returns rebuilt block m (which must have been put).
func (st *blockStore) get(m uint64) ([]byte, error) {
	if b, ok := st.mem[m]; ok {
		return b, nil
	}
	b := make([]byte, st.bs)
	return b, st.read(m, b)
}

// read reads spilled block m into b.
func (st *blockStore) read(m uint64, b []byte) error {
	if st.spill == nil {
		return fmt.Errorf("internal error: block %d was not rebuilt", m)
	}
	if err := safefile.ReadFullAt(st.spill, b, int64(m)*int64(st.bs)); err != nil {
		return errorf(KindIO, "", "reading rebuilt blocks back from a temporary file: %w", err)
	}
	return nil
}

func (st *blockStore) close() {
	if st != nil && st.spill != nil {
		st.spill.Close()
	}
}
