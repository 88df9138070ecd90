package verity

// Stage is a step of an operation, for progress reports.
type Stage uint8

const (
	// StageHashing: building the tree, or checking the data against it.
	StageHashing Stage = iota + 1
	// StageFEC: computing error-correction parity.
	StageFEC
	// StageRepairing: rebuilding corrupted blocks from the parity.
	StageRepairing
	// StageWriting: writing rebuilt blocks back.
	StageWriting
	// StageVerifying: reading back what was written.
	StageVerifying
)

func (s Stage) String() string {
	switch s {
	case StageHashing:
		return "hashing"
	case StageFEC:
		return "error correction"
	case StageRepairing:
		return "repairing"
	case StageWriting:
		return "writing"
	case StageVerifying:
		return "verifying"
	}
	return "unknown stage"
}

// Progress is called from one goroutine at a time as an operation goes:
// done of total units (bytes) of stage. A new stage starts at done 0;
// each stage ends with done == total, and only then is done == total.
// The total may grow during a stage: a repair finds corrupted blocks
// under the hash blocks it rebuilds (StageRepairing).
type Progress func(stage Stage, done, total uint64)
