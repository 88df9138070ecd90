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
