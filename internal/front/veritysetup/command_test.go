package veritysetup

import (
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
)

// TestVeritysetupCommand: cmd/veritysetup, installed without a link, is the
// front.
func TestVeritysetupCommand(t *testing.T) {
	fronttest.SameAsCommand(t, "./cmd/veritysetup", Main, []string{"--version"}, nil, []string{"--help"},
		[]string{"open", "a", "b"}, []string{"verify", "/nonexistent", "/nonexistent", "00"})
}
