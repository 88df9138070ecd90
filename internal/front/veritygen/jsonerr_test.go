package veritygen

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestJSONError: with --json a failure is also one JSON object on stdout,
// {"error": ..., "hint": ...}, so that R=$(veritygen --json x | jq -r
// .root_hash) sees it instead of an empty string.
func TestJSONError(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.img")
	fronttest.Image(t, data, 8*4096, 1)
	for _, c := range []struct {
		name      string
		args      []string
		err, hint string
	}{
		{"missing DATA", []string{"--json", filepath.Join(dir, "none.img")}, "DATA " + filepath.Join(dir, "none.img") + " does not exist", ""},
		{"bad flag value", []string{"--json", "--jobs=0", data}, "--jobs must be at least 1", "e.g. --jobs=1"},
		{"unknown flag", []string{"--json", "--no-such-flag", data}, "unknown flag: --no-such-flag", "see veritygen --help"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := cliRun(t, context.Background(), c.args...)
			var got struct{ Error, Hint string }
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%q", err, r.stdout)
			}
			if r.code != 2 || got.Error != c.err || got.Hint != c.hint {
				t.Errorf("exit %d, %+v; want exit 2, error %q, hint %q", r.code, got, c.err, c.hint)
			}
		})
	}
	// Without --json, stdout stays empty on failure.
	if r := cliRun(t, context.Background(), "--jobs=0", data); r.code != 2 || r.stdout != "" {
		t.Errorf("without --json: exit %d, stdout %q", r.code, r.stdout)
	}
}
