package veritycheck

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONError: with --json an error (exit 2) is one JSON object on
// stdout, {"error": ..., "hint": ...}; corruption (exit 1) is the report
// alone, not followed by a second object.
func TestJSONError(t *testing.T) {
	dir := t.TempDir()
	r := vcRun("--json", "--root-hash=00", filepath.Join(dir, "none.img"))
	var got struct{ Error, Hint string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%v", err, r)
	}
	if r.code != 2 || !strings.Contains(got.Error, "does not exist") {
		t.Errorf("want exit 2 and the error in JSON:\n%v", r)
	}

	master := fecMake(t, &fecCases[3], 33)
	m := master.clone(t)
	bad := m.args("--json")
	bad[0] = "--root-hash=" + strings.Repeat("0", len(m.root))
	r = vcRun(bad...)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var report map[string]any
	if err := dec.Decode(&report); err != nil {
		t.Fatalf("no JSON report: %v\n%v", err, r)
	}
	if r.code != 1 || report["verified"] != false || dec.More() {
		t.Errorf("want exit 1 and the report alone:\n%v", r)
	}
}
