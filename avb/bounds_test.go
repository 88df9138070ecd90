package avb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

// writeVBMetaImage writes a vbmeta image (a blob at offset 0, no footer)
// holding the descriptors ds.
func writeVBMetaImage(t *testing.T, path string, ds ...Descriptor) {
	t.Helper()
	if err := os.WriteFile(path, testBlob(EncodeDescriptors(ds)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// verify_image's hash descriptors may name a 64 GiB image: hashing it ends
// with the context (it ran to its end before).
func TestCheckHashDataEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boot.img")
	// An Android sparse image of one DONT_CARE chunk of 64 GiB.
	sparse := []byte{0x3a, 0xff, 0x26, 0xed, 1, 0, 0, 0, 28, 0, 12, 0, 0, 0x10, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0,
		0xc3, 0xca, 0, 0, 0, 0, 0, 1, 12, 0, 0, 0}
	if err := os.WriteFile(path, sparse, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := &HashDescriptor{ImageSize: 64 << 30, HashAlgorithm: "sha256", PartitionName: "boot"}
	if _, err := CheckHashData(ctx, path, d); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// --include_descriptors_from_image: the descriptors without a name in
// order, then the last of each name, by avbtool's key; more than a vbmeta
// holds is refused before anything is written.
func TestIncludeDescriptors(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")
	prop := func(k string) *PropertyDescriptor { return &PropertyDescriptor{Key: k, Value: []byte("v")} }
	ht := func(name string, salt byte) *HashtreeDescriptor {
		return &HashtreeDescriptor{DMVerityVersion: 1, HashAlgorithm: "sha256", PartitionName: name, Salt: []byte{salt}}
	}
	writeVBMetaImage(t, a, prop("a1"), ht("x", 1), prop("a2"), ht("y", 1), &ChainPartitionDescriptor{PartitionName: "x", PublicKey: []byte{1}})
	writeVBMetaImage(t, b, prop("b1"), ht("x", 2))
	p := &prepared{}
	if err := p.include([]string{a, b}); err != nil {
		t.Fatal(err)
	}
	want := EncodeDescriptors([]Descriptor{prop("a1"), prop("a2"), prop("b1"),
		&ChainPartitionDescriptor{PartitionName: "x", PublicKey: []byte{1}}, ht("x", 2), ht("y", 1)})
	if got := bytes.Join(p.included, nil); !bytes.Equal(got, want) {
		t.Fatalf("included\n%x\nwant\n%x", got, want)
	}

	big := &PropertyDescriptor{Key: "big", Value: make([]byte, 9<<20)}
	writeVBMetaImage(t, a, big)
	err := (&prepared{}).include([]string{a, a})
	if !errors.Is(err, verity.ErrInput) || !strings.Contains(err.Error(), "take more than") {
		t.Fatalf("18 MiB of descriptors included: %v", err)
	}
}

// Compacting the parts of the older sources into a copy keeps what they
// encode to; the last source stays as it is.
func TestInclusionCompact(t *testing.T) {
	in := &inclusion{named: map[string]includedPart{}}
	older := EncodeDescriptors([]Descriptor{&PropertyDescriptor{Key: "p"}, &HashDescriptor{PartitionName: "h"}, &KernelCmdlineDescriptor{Cmdline: "c"},
		&KernelCmdlineDescriptor{Cmdline: "d"}, &HashDescriptor{PartitionName: "h", Salt: []byte{3}}, &PropertyDescriptor{Key: "q"}})
	last := EncodeDescriptors([]Descriptor{&PropertyDescriptor{Key: "r"}, &HashDescriptor{PartitionName: "g"}})
	for _, src := range [][]byte{older, last} {
		in.srcs = append(in.srcs, src)
		walkDescriptors(src, func(off, tag uint64, raw []byte) error {
			in.add(uint32(off), tag, raw)
			return nil
		})
	}
	if len(in.unnamed) != 4 { // p; c and d, adjacent; q; r
		t.Errorf("%d unnamed parts, want 4", len(in.unnamed))
	}
	before := bytes.Join(in.encoded(), nil)
	in.compact()
	clear(older)
	kept := in.size - len(last)
	if after := bytes.Join(in.encoded(), nil); !bytes.Equal(after, before) || len(in.srcs[0]) != kept || in.held != kept+len(last) {
		t.Fatalf("compacted to %d bytes (%d kept, %d held): %x, was %x", len(in.srcs[0]), kept, in.held, after, before)
	}
}

// calculate_kernel_cmdline refuses a line past 16 MiB (an image chaining
// to itself repeats its own).
func TestKernelCmdlineBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.img")
	writeVBMetaImage(t, path, &KernelCmdlineDescriptor{Cmdline: strings.Repeat("x", 9<<20)},
		&ChainPartitionDescriptor{RollbackIndexLocation: 1, PartitionName: "a", PublicKey: []byte{1}})
	_, err := CalculateKernelCmdline(context.Background(), path, false)
	if !errors.Is(err, verity.ErrInput) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("got %v", err)
	}
}

// A vbmeta past 16 MiB (a property of 16 MiB) is refused before the image
// is touched, not after it is hashed.
func TestVBMetaTooLargeRefusedFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.img")
	data := bytes.Repeat([]byte{7}, 8192)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	o := &HashtreeFooterOptions{HashAlgorithm: "sha256", Properties: []Property{{Key: "big", Value: make([]byte, MaxVBMetaSize)}}}
	_, err := AddHashtreeFooter(context.Background(), path, o)
	if !errors.Is(err, verity.ErrParam) || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, data) {
		t.Error("the image changed")
	}
}
