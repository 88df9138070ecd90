package verity

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The errors about the FEC options speak Go: they name the option by its
// field (Field, and FormatOptions.X in the text), say in Requires what it
// needs, and name no flag (--x) and no command: the command lines spell
// them (internal/cli.Flags).
func TestFECErrorsSpeakGo(t *testing.T) {
	f := newFixture(t, 64, 4096, 2, 9)
	f.writeFiles(t)
	out := filepath.Join(f.dir, "out.verity")
	ctx := context.Background()
	for _, c := range []struct {
		name            string
		format          *FormatOptions
		verify          *VerifyOptions
		field, requires string
	}{
		{"format roots 30", &FormatOptions{FECDevice: out + ".fec", FECRoots: 30}, nil, "FECRoots", ""},
		{"format offset not a block", &FormatOptions{FECDevice: out + ".fec", FECOffset: 100}, nil, "FECOffset", ""},
		{"format offset without device", &FormatOptions{FECOffset: 4096}, nil, "FECOffset", "FECDevice"},
		{"format offset in the tree", &FormatOptions{FECDevice: out, FECOffset: 4096}, nil, "FECOffset", ""},
		{"format offset in the data", &FormatOptions{FECDevice: f.dataPath, FECOffset: 4096}, nil, "FECOffset", ""},
		{"format offset too large", &FormatOptions{FECDevice: out + ".fec", FECOffset: 1 << 63}, nil, "FECOffset", ""},
		{"format unequal blocks", &FormatOptions{FECDevice: out + ".fec", TreeOptions: TreeOptions{HashBlockSize: 1024}}, nil, "FECRoots", ""},
		{"format fec without append", &FormatOptions{AppendFEC: true}, nil, "AppendFEC", "Append"},
		{"verify roots 30", nil, &VerifyOptions{FECDevice: f.fecPath, FECRoots: 30}, "FECRoots", ""},
		{"verify offset not a block", nil, &VerifyOptions{FECDevice: f.fecPath, FECOffset: 100}, "FECOffset", ""},
		{"verify roots without device", nil, &VerifyOptions{FECRoots: 3}, "FECRoots", "FECDevice"},
		{"verify offset without device", nil, &VerifyOptions{FECOffset: 4096}, "FECOffset", "FECDevice"},
		{"verify repair without device", nil, &VerifyOptions{Repair: true}, "Repair", "FECDevice"},
		{"verify offset in the tree", nil, &VerifyOptions{FECDevice: f.hashPath}, "FECOffset", ""},
		{"verify offset too large", nil, &VerifyOptions{FECDevice: f.fecPath, FECOffset: 1<<64 - 4096}, "FECOffset", ""},
	} {
		var err error
		if c.format != nil {
			_, err = Format(ctx, f.dataPath, out, c.format)
		} else {
			_, err = Verify(ctx, f.dataPath, f.hashPath, f.root, c.verify)
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindParam || e.Field != c.field || e.Requires != c.requires {
			t.Errorf("%s: %v (%#v), want KindParam on %s requiring %q", c.name, err, e, c.field, c.requires)
			continue
		}
		// Unequal block sizes are about two options; FECRoots is what needs them equal.
		if !strings.Contains(e.Error(), "Options."+c.field) && c.name != "format unequal blocks" {
			t.Errorf("%s: %q does not name the option's field", c.name, e)
		}
		for _, s := range []string{e.Error(), HintOf(err)} {
			for _, bad := range []string{"--", "veritygen", "veritycheck", "veritysetup format"} {
				if strings.Contains(s, bad) {
					t.Errorf("%s: %q says %q", c.name, s, bad)
				}
			}
		}
	}
}
