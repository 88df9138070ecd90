package cli

import "testing"

// TestProgressLabel: the progress bar of a sparse DATA says how much of
// the expansion the run covers; that of a raw DATA is the bare verb.
func TestProgressLabel(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"android-sparse", "hashing 16 KiB expanded"},
		{"raw", "hashing"},
	} {
		if got := ProgressLabel("hashing", tc.format, 16<<10); got != tc.want {
			t.Errorf("%s: label %q, want %q", tc.format, got, tc.want)
		}
	}
}

// TestExpansion: a sparse DATA is announced with its sizes and its tree's;
// a raw one is not.
func TestExpansion(t *testing.T) {
	want := "DATA x.simg is an Android sparse image of 40 B that expands to 16 TiB (17592186044416 bytes); its tree will be 128 GiB"
	if got := Expansion("x.simg", "android-sparse", 40, 16<<40, 128<<30); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Expansion("x.img", "raw", 40, 40, 4096); got != "" {
		t.Errorf("raw DATA: got %q, want nothing", got)
	}
}
