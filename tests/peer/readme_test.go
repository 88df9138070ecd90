package peer_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEListsAcceptedRules checks that the README's list of deliberate
// differences is the acceptedRules table: every rule, by its name, in its
// order, and nothing else.
func TestREADMEListsAcceptedRules(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "Accepted (deliberate)")
	end := strings.Index(text, "Known divergences (bugs to fix)")
	if start < 0 || end < start {
		t.Fatal("README.md: no list of accepted rules between 'Accepted (deliberate)' and 'Known divergences (bugs to fix)'")
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^- \*\*(.+?)\*\*`).FindAllStringSubmatch(text[start:end], -1) {
		listed = append(listed, m[1])
	}
	var names []string
	for _, r := range acceptedRules {
		names = append(names, r.name)
	}
	if strings.Join(listed, "\n") != strings.Join(names, "\n") {
		t.Errorf("README.md lists the accepted rules\n  %s\nbut acceptedRules are\n  %s",
			strings.Join(listed, "\n  "), strings.Join(names, "\n  "))
	}
}

// TestREADMEListsAVBRules checks the README's lists of the avbtool
// front's rules against avbAcceptedRules and avbKnownDivergences.
func TestREADMEListsAVBRules(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	section := func(from, to string) []string {
		start := strings.Index(text, from)
		end := strings.Index(text, to)
		if start < 0 || end < start {
			t.Fatalf("README.md: no list between %q and %q", from, to)
		}
		var listed []string
		for _, m := range regexp.MustCompile(`(?m)^- \*\*(.+?)\*\*`).FindAllStringSubmatch(text[start:end], -1) {
			listed = append(listed, m[1])
		}
		return listed
	}
	for _, l := range []struct {
		from, to string
		rules    []avbRule
	}{
		{"avbtool front, accepted (deliberate)", "avbtool front, known divergences", avbAcceptedRules},
		{"avbtool front, known divergences", "End of the avbtool rules.", avbKnownDivergences},
	} {
		var names []string
		for _, r := range l.rules {
			names = append(names, r.name)
		}
		if listed := section(l.from, l.to); strings.Join(listed, "\n") != strings.Join(names, "\n") {
			t.Errorf("README.md lists after %q\n  %s\nbut the rules are\n  %s", l.from, strings.Join(listed, "\n  "), strings.Join(names, "\n  "))
		}
	}
}
