package avb

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
)

// interruptedState makes, from the image a case starts from (raw) and the
// finished file, what a run killed in its middle leaves: the provisional
// footer block at the finished size (or, for state "record", the record of
// an interrupted veritygen --append), over the start image followed by
// garbage where the tree was being written (or, for "rerun", over the
// finished file, its tail garbled).
func interruptedState(t *testing.T, state string, start, finished []byte, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	garble := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	orig := uint64(len(start))
	if f, err := ReadFooter(bytes.NewReader(start), int64(len(start))); err == nil {
		orig = f.OriginalImageSize // a rerun's start
	}
	end := uint64(len(finished))
	b := append([]byte{}, start[:orig]...)
	switch state {
	case "first", "record":
		b = append(b, make([]byte, end-orig)...)
		garble(b[orig : orig+(end-orig)/2])
	case "rerun":
		b = append([]byte{}, finished...)
		garble(b[orig+(end-orig)/3 : orig+(end-orig)*2/3])
	}
	if state == "record" {
		rec := &safefile.ResumeRecord{OriginalSize: orig, End: roundUp(end, safefile.ResumeRecordSize) + safefile.ResumeRecordSize}
		b = append(b, make([]byte, rec.End-uint64(len(b)))...)
		return append(b[:rec.End-safefile.ResumeRecordSize], rec.Encode()...)
	}
	prov, err := provisionalBlock(orig, end, imageBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, prov...)
}

// TestAddHashtreeFooterFinishesInterrupted: the states a run killed in its
// middle leaves (the provisional footer past a half-written tree, on an
// image or on a rerun of a finished image, and the record of an
// interrupted veritygen --append) are finished by the same run into
// avbtool 1.3.0's file for the case, byte for byte. avbtool 1.3.0 itself
// finishes the provisional states into the same files: it finds the
// provisional footer and starts from the original size it gives (checked
// with avbtool.py on the "first" and "rerun" states this test makes: all 94
// give the case's file). Before, a killed run left no footer, and the rerun
// took the half-written tree for part of the image.
func TestAddHashtreeFooterFinishesInterrupted(t *testing.T) {
	for i, c := range loadCases(t) {
		if c.result != "ok" || strings.HasPrefix(c.image, "sparse:") || testing.Short() && i%4 != 0 && c.footer != "-" {
			continue
		}
		states := []string{"first", "rerun", "record"}
		if c.footer == "-" {
			states = []string{"first", "record"} // no footer: a rerun on the output starts from all of it, as avbtool's
		}
		for _, state := range states {
			t.Run(c.name+"/"+state, func(t *testing.T) {
				dir := setupCase(t, c)
				image, o, _, _, err := avbtoolArgs(t, dir, c.args)
				if err != nil {
					t.Fatal(err)
				}
				start, err := os.ReadFile(image)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
					t.Fatal(err)
				}
				finished, _ := os.ReadFile(image)
				if sha256Hex(finished) != c.sha256 {
					t.Fatal("the uninterrupted run is not avbtool's")
				}
				if state == "rerun" {
					start = finished
				}
				b := interruptedState(t, state, start, finished, uint64(i))
				if err := os.WriteFile(image, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if o.OutputVBMeta != "" {
					os.Remove(o.OutputVBMeta)
				}
				if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(image); sha256Hex(got) != c.sha256 {
					t.Errorf("the run on the interrupted state gives %d bytes, not avbtool's file for the case (%d bytes)", len(got), c.size)
				}
			})
		}
	}
}

// TestAddHashtreeFooterFinishesInterruptedSparse: what a run on an Android
// sparse image leaves when killed (the new chunks past the image's, not yet
// counted by the header, or counted with the record still past them) is
// finished by the same run into avbtool 1.3.0's file for the case; the
// image itself, as its header says, was the original one or the finished
// one at every moment.
func TestAddHashtreeFooterFinishesInterruptedSparse(t *testing.T) {
	for _, c := range loadCases(t) {
		if !strings.HasPrefix(c.image, "sparse:") || c.result != "ok" {
			continue
		}
		for _, state := range []string{"uncounted", "counted"} {
			t.Run(c.name+"/"+state, func(t *testing.T) {
				dir := setupCase(t, c)
				image, o, _, _, err := avbtoolArgs(t, dir, c.args)
				if err != nil {
					t.Fatal(err)
				}
				start, _ := os.ReadFile(image)
				if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
					t.Fatal(err)
				}
				finished, _ := os.ReadFile(image)
				var b []byte
				if state == "uncounted" {
					b = append(append([]byte{}, start...), finished[len(start):len(start)+(len(finished)-len(start))/2]...)
				} else {
					b = append(append([]byte{}, finished...), 1, 2, 3)
				}
				at := roundUp(uint64(len(b)), safefile.ResumeRecordSize)
				rec := &safefile.ResumeRecord{OriginalSize: uint64(len(expand(t, start))), Sparse: true, End: at + safefile.ResumeRecordSize}
				b = append(append(b, make([]byte, at-uint64(len(b)))...), rec.Encode()...)
				if err := os.WriteFile(image, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if got := expand(t, b); !bytes.Equal(got, expand(t, map[string][]byte{"uncounted": start, "counted": finished}[state])) {
					t.Fatal("the interrupted state does not expand to the original or the finished image")
				}
				if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(image); sha256Hex(got) != c.sha256 {
					t.Errorf("the run on the interrupted state gives %d bytes, not avbtool's file for the case (%d bytes)", len(got), c.size)
				}
			})
		}
	}
}

// TestEraseFooterInterrupted: erase_footer cuts what an interrupted run
// left back to the image: the provisional footer's original size, or a
// record's (a killed veritygen --append's).
func TestEraseFooterInterrupted(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.img")
	start := makeImage(t, "blockbyte:4096:100+fill:7:10")
	finished := append(append([]byte{}, start...), make([]byte, 1<<20)...)
	for _, state := range []string{"first", "record"} {
		if err := os.WriteFile(image, interruptedState(t, state, start, finished, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := EraseFooter(image, false); err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		if got, _ := os.ReadFile(image); !bytes.Equal(got, start) {
			t.Errorf("%s: erase_footer left %d bytes, not the image's %d", state, len(got), len(start))
		}
	}
	img := interruptedState(t, "first", start, finished, 2)
	parsed, err := ParseImage(bytes.NewReader(img), int64(len(img)))
	if err != nil || !parsed.Interrupted() {
		t.Fatalf("the provisional state is not reported as interrupted: %v", err)
	}
}
