package veritycheck

// Issue 12, item 10: the blocks under a corrupted hash block. With the
// parity, the hash block is rebuilt first and the blocks under it are
// checked against it: the report names the corrupted ones instead of
// counting them as unchecked. Without it, the report says which range could
// not be checked, and why.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

type underJSON struct {
	CorruptData uint64 `json:"corrupt_data_blocks"`
	CorruptHash uint64 `json:"corrupt_hash_blocks"`
	Unchecked   uint64 `json:"unchecked_data_blocks"`
	Problems    []struct {
		Where     string       `json:"where"`
		Index     uint64       `json:"index"`
		Unchecked []blockRange `json:"unchecked"`
	} `json:"problems"`
}

func TestFECLocatesUnderRebuiltHashBlock(t *testing.T) {
	vsPath(t)
	master := fecMake(t, &fecTargeted, 71)
	// Level-0 block 0 (round 2) and data blocks 3 and 9 under it (rounds 0
	// and 0), all whole.
	m := master.clone(t)
	set := map[fecBlk]bool{{0, 0}: true, {-1, 3}: true, {-1, 9}: true}
	m.corrupt(t, rand.New(rand.NewPCG(3, 3)), set, true)

	r := vcRun(m.args()...)
	for _, want := range []string{
		fmt.Sprintf("corrupted: data block 3 (byte 1536 of %s): digest mismatch\n", m.data),
		fmt.Sprintf("corrupted: data block 9 (byte 4608 of %s): digest mismatch\n", m.data),
		"veritycheck: error: verification failed: 2 corrupted data blocks, 1 corrupted hash block; --repair can fix all of it: 3 blocks rebuilt",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("with the parity: want %q:\n%v", want, r)
		}
	}
	if r.code != 1 || strings.Contains(r.stdout+r.stderr, "could not be checked") {
		t.Errorf("with the parity: want exit 1 and nothing unchecked:\n%v", r)
	}
	var j underJSON
	r = vcRun(m.args("--json")...)
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	if j.CorruptData != 2 || j.CorruptHash != 1 || j.Unchecked != 0 || len(j.Problems) != 3 || j.Problems[0].Unchecked != nil {
		t.Errorf("with the parity, --json: %+v", j)
	}
	fecExpectRepair(t, m, set, 0, "under a rebuilt hash block")

	// Without the parity: what is under the hash block is not checked,
	// and the report says which blocks and why.
	m = master.clone(t)
	m.corrupt(t, rand.New(rand.NewPCG(3, 3)), set, true)
	args := []string{"--root-hash=" + m.root, m.data, m.hash}
	r = vcRun(args...)
	want := fmt.Sprintf("unchecked: data blocks 0-15 (bytes 0-8191 of %s) could not be checked: hash block 0 of level 0 above them is corrupted\n", m.data)
	if r.code != 1 || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "corrupted: data block") {
		t.Errorf("without the parity: want exit 1 and %q:\n%v", want, r)
	}
	r = vcRun(append([]string{"--json"}, args...)...)
	j = underJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	if len(j.Problems) != 1 || fmt.Sprint(j.Problems[0].Unchecked) != "[{-1 0 15}]" || j.Unchecked != 16 {
		t.Errorf("without the parity, --json: %+v", j)
	}

	// Two levels under a level-1 block: its level-0 blocks and their data.
	m = master.clone(t)
	m.corrupt(t, rand.New(rand.NewPCG(4, 4)), map[fecBlk]bool{{1, 1}: true}, true)
	r = vcRun("--root-hash="+m.root, m.data, m.hash)
	want = fmt.Sprintf("unchecked: data blocks 256-511 (bytes 131072-262143 of %s) and hash blocks 16-31 of level 0 could not be checked: "+
		"hash block 1 of level 1 above them is corrupted\n", m.data)
	if !strings.Contains(r.stdout, want) {
		t.Errorf("level 1: want %q:\n%v", want, r)
	}
}
