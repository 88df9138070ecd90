package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagHelp: one line a flag, no "[=true|false]", a default said once
// (not again when the usage says it), value names from the usage, hidden
// flags left out and ungrouped ones under "Other options", none lost.
func TestFlagHelp(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.BoolP("verbose", "v", false, "say more")
	fs.String("alg", "sha1", "hash algorithm (default: sha1)")
	fs.Int("roots", 2, "`N` parity bytes")
	fs.String("out", "", "write to `FILE`")
	fs.String("secret", "", "hidden")
	fs.MarkHidden("secret")
	fs.Bool("stray", false, "in no group")
	got := FlagHelp(fs, []HelpGroup{{"Common", []string{"verbose", "out"}}, {"More", []string{"alg", "roots"}}})
	want := `Common:
  -v, --verbose   say more
      --out FILE  write to FILE

More:
      --alg STRING  hash algorithm (default: sha1)
      --roots N     parity bytes (default 2)

Other options:
      --stray  in no group
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if lines := FlagLines(fs); strings.Contains(lines, "secret") || strings.Count(lines, "\n") != 5 {
		t.Errorf("FlagLines:\n%s", lines)
	}
}

// TestWrap: lines of at most HelpWidth columns, words kept whole.
func TestWrap(t *testing.T) {
	text := strings.Repeat("word ", 50) + strings.Repeat("x", 20)
	got := Wrap(text, "  ")
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if len(l) > HelpWidth || !strings.HasPrefix(l, "  ") {
			t.Errorf("line %q", l)
		}
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(text), " ") {
		t.Errorf("words changed: %q", got)
	}
	for _, l := range strings.Split(HashHelp(), "\n") {
		if len(l) > HelpWidth {
			t.Errorf("HashHelp line %q", l)
		}
	}
}
