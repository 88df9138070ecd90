package veritycheck

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/fec"
)

// TestFECRootsFromSize: given --fec-roots other than the parity's, in
// each layout (a file of its own, at an offset, in HASH, in DATA),
// veritycheck names the roots the FEC device's size fits: as a warning
// when the check goes on, in the hint when the parity is too long for the
// file or the repair fails; given the right roots, it says nothing of the
// kind, corrupted data or not.
func TestFECRootsFromSize(t *testing.T) {
	vsPath(t)
	const note = "ends exactly where the parity of --fec-roots="
	for i := range fecCases {
		c := fecCases[i]
		t.Run(c.name, func(t *testing.T) {
			m := fecMake(t, &c, uint64(50+i))
			withRoots := func(r int, extra ...string) []string {
				args := m.args(extra...)
				for j, a := range args {
					if strings.HasPrefix(a, "--fec-roots=") {
						args[j] = fmt.Sprintf("--fec-roots=%d", r)
					}
				}
				return args
			}
			want := fmt.Sprintf("--fec-roots=%d", c.roots)
			r := vcRun(withRoots(c.roots)...)
			if r.code != 0 || strings.Contains(r.stderr, note) {
				t.Errorf("the right roots: want exit 0 and no word of the roots:\n%v", r)
			}
			if w := jsonWarnings(t, withRoots(c.roots)); w != nil {
				t.Errorf("the right roots: want no warnings in --json, got %q", w)
			}
			// Fewer roots: a shorter parity, the check goes on; more: a
			// longer one than the file holds (where the parity ends the
			// file), or a shorter file than asked.
			for _, wrong := range []int{c.roots - 1, c.roots + 1} {
				if wrong < fec.MinRoots || wrong > fec.MaxRoots {
					continue
				}
				r := vcRun(withRoots(wrong)...)
				switch {
				case r.code == 0:
					if !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, note+fmt.Sprint(c.roots)+" would") {
						t.Errorf("--fec-roots=%d: want a warning naming %s:\n%v", wrong, want, r)
					}
					// --json says it too, as the warning's text.
					if w := jsonWarnings(t, withRoots(wrong)); len(w) != 1 || !strings.Contains(r.stderr, "veritycheck: warning: "+w[0]+"\n") {
						t.Errorf("--fec-roots=%d --json: want the warning in \"warnings\", got %q; stderr:\n%s", wrong, w, r.stderr)
					}
				case r.code == 2:
					if !strings.Contains(r.stderr, "hint: the parity of "+want+" ends exactly where FEC device") {
						t.Errorf("--fec-roots=%d: want a hint naming %s:\n%v", wrong, want, r)
					}
				default:
					t.Errorf("--fec-roots=%d: want exit 0 or 2:\n%v", wrong, r)
				}
			}
			m.corrupt(t, rand.New(rand.NewPCG(3, uint64(i))), map[fecBlk]bool{{-1, 1}: true}, true)
			if r := vcRun(withRoots(c.roots)...); r.code != 1 || !strings.Contains(r.stderr, "--repair can fix") || strings.Contains(r.stderr, note) {
				t.Errorf("the right roots, a corrupted block: want repairable and no word of the roots:\n%v", r)
			}
			if c.roots > 2 {
				r := vcRun(withRoots(c.roots - 1)...)
				if r.code != 1 || !strings.Contains(r.stderr, "cannot recover") || !strings.Contains(r.stderr, "hint: FEC device") ||
					!strings.Contains(r.stderr, note+fmt.Sprint(c.roots)+" would") || strings.Contains(r.stderr, "warning:") {
					t.Errorf("--fec-roots=%d, a corrupted block: want cannot recover and a hint naming %s:\n%v", c.roots-1, want, r)
				}
			}
		})
	}
}

// jsonWarnings runs veritycheck --json with args, which must exit 0, and
// returns the report's "warnings" (nil when it has none).
func jsonWarnings(t *testing.T, args []string) []string {
	t.Helper()
	r := vcRun(append([]string{"--json"}, args...)...)
	var out struct {
		Verified bool     `json:"verified"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || !out.Verified {
		t.Fatalf("want exit 0 and a verified JSON report (%v):\n%v", err, r)
	}
	return out.Warnings
}
