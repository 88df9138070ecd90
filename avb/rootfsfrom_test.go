package avb

// --setup_rootfs_from_kernel IMAGE. avbtool 1.3.0 made no vector with it,
// so the expectations are put together from what its code does
// (avbtool.py, LineageOS/android_external_avb at 0510e178, the same in
// 1.3.0):
//   - _generate_vbmeta_blob encodes, in this order: the descriptors it is
//     given (add_hashtree_footer passes [ht_desc]) and the chained
//     partitions; --prop; --prop_from_file; "Add AvbKernelCmdline
//     descriptor for dm-verity from an image" (setup_rootfs_from_kernel:
//     cmdline_desc[0] then [1]); "from desc" (ht_desc_to_setup, i.e.
//     --setup_as_rootfs_from_kernel); --kernel_cmdline; then the
//     descriptors of --include_descriptors_from_image.
//   - _get_cmdline_descriptors_for_dm_verity(image) parses IMAGE's vbmeta
//     (_parse_image: the footer's, or the blob at offset 0), takes its
//     first AvbHashtreeDescriptor ("No hashtree descriptor in given image"
//     if none) and returns _get_cmdline_descriptors_for_hashtree_descriptor
//     of it: the same two descriptors --setup_as_rootfs_from_kernel makes,
//     which avbtool's vectors rootfs* hold.
// So the two descriptors taken from vbmeta/rootfs-camo-sha1.bin are, byte
// for byte, the two avbtool wrote into it, and an image made like the
// kernel-cmdline vector plus --setup_rootfs_from_kernel has that vector's
// descriptors with those two spliced in after the hashtree descriptor.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

func readVectorImage(t *testing.T, rel string) *Image {
	t.Helper()
	img, err := ReadImage(filepath.Join(vectorDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestSetupRootfsFromKernelDescriptorsAreAvbtools: the descriptors made
// from an image are those avbtool wrote into the rootfs vectors for the
// same hashtree descriptor.
func TestSetupRootfsFromKernelDescriptorsAreAvbtools(t *testing.T) {
	for _, name := range []string{"rootfs", "rootfs-camo-sha1", "rootfs-psize"} {
		rel := filepath.Join("vbmeta", name+".bin")
		got, err := SetupRootfsFromKernelDescriptors(filepath.Join(vectorDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Collect(readVectorImage(t, rel).VBMeta.Descriptors())[1:3]
		if !bytes.Equal(EncodeDescriptors(got), EncodeDescriptors(want)) {
			t.Errorf("%s: %+v, avbtool wrote %+v", name, got, want)
		}
	}
}

// TestSetupRootfsFromKernelFEC: from an image with FEC (and a footer),
// the dm= line is _get_cmdline_descriptors_for_hashtree_descriptor's FEC
// branch for the image's hashtree descriptor, written out here.
func TestSetupRootfsFromKernelFEC(t *testing.T) {
	dir := t.TempDir()
	sys := filepath.Join(dir, "system.img")
	os.WriteFile(sys, makeImage(t, "blockbyte:4096:300"), 0o644)
	r, err := AddHashtreeFooter(context.Background(), sys, &HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256",
		Salt: []byte{0xab, 0xcd}, FEC: true, CheckAtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	ht := r.Descriptor
	got, err := SetupRootfsFromKernelDescriptors(sys)
	if err != nil {
		t.Fatal(err)
	}
	fecBlocks := ht.FECOffset / 4096
	dm := fmt.Sprintf(`dm="1 vroot none ro 1,0 2400 verity 1 PARTUUID=$(ANDROID_SYSTEM_PARTUUID) PARTUUID=$(ANDROID_SYSTEM_PARTUUID)`+
		` 4096 4096 300 300 sha256 %x abcd 11 check_at_most_once $(ANDROID_VERITY_MODE) ignore_zero_blocks`+
		` use_fec_from_device PARTUUID=$(ANDROID_SYSTEM_PARTUUID) fec_roots 2 fec_blocks %d fec_start %d" root=/dev/dm-0`,
		r.RootDigest, fecBlocks, fecBlocks)
	want := []Descriptor{
		&KernelCmdlineDescriptor{Flags: CmdlineFlagUseOnlyIfHashtreeNotDisabled, Cmdline: dm},
		&KernelCmdlineDescriptor{Flags: CmdlineFlagUseOnlyIfHashtreeDisabled, Cmdline: "root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)"},
	}
	if !bytes.Equal(EncodeDescriptors(got), EncodeDescriptors(want)) {
		t.Fatalf("got %q\nwant %q", got[0].(*KernelCmdlineDescriptor).Cmdline, dm)
	}
}

// TestAddHashtreeFooterSetupRootfsFromKernel: the kernel-cmdline vector's
// command line plus --setup_rootfs_from_kernel vbmeta/rootfs-camo-sha1.bin
// gives that vector's vbmeta with rootfs-camo-sha1's two kernel command-line
// descriptors after the hashtree descriptor: the descriptors, the
// info_image text and calculate_kernel_cmdline's line are avbtool's
// outputs for the two vectors, put together.
func TestAddHashtreeFooterSetupRootfsFromKernel(t *testing.T) {
	_, image, o := runCase(t, "kernel-cmdline")
	from := filepath.Join(vectorDir, "vbmeta", "rootfs-camo-sha1.bin")
	o.SetupRootfsFromKernel = from
	if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
		t.Fatal(err)
	}
	got, err := ReadImage(image)
	if err != nil {
		t.Fatal(err)
	}
	base := readVectorImage(t, "vbmeta/kernel-cmdline.bin").VBMeta
	rootfs := slices.Collect(readVectorImage(t, "vbmeta/rootfs-camo-sha1.bin").VBMeta.Descriptors())[1:3]
	baseDescs := slices.Collect(base.Descriptors())
	want := append([]Descriptor{baseDescs[0]}, rootfs...)
	want = append(want, baseDescs[1:]...)
	gotDescs := slices.Collect(got.VBMeta.Descriptors())
	if !bytes.Equal(EncodeDescriptors(gotDescs), EncodeDescriptors(want)) {
		t.Fatalf("descriptors %+v\nwant %+v", gotDescs, want)
	}

	// info_image: kernel-cmdline's text with rootfs-camo-sha1's two
	// descriptors inserted, and the blocks grown by their size.
	baseInfo, _ := os.ReadFile(filepath.Join(vectorDir, "info", "kernel-cmdline.txt"))
	rootfsInfo, _ := os.ReadFile(filepath.Join(vectorDir, "info", "rootfs-camo-sha1.txt"))
	inserted := string(rootfsInfo[strings.Index(string(rootfsInfo), "    Kernel Cmdline descriptor:\n"):])
	wantInfo := strings.Replace(string(baseInfo), "    Kernel Cmdline descriptor:\n", inserted+"    Kernel Cmdline descriptor:\n", 1)
	aux := roundUp(base.Header.DescriptorsSize+uint64(len(EncodeDescriptors(rootfs))), 64)
	wantInfo = strings.Replace(wantInfo, "Auxiliary Block:          384 bytes", fmt.Sprintf("Auxiliary Block:          %d bytes", aux), 1)
	wantInfo = strings.Replace(wantInfo, "VBMeta size:              640 bytes", fmt.Sprintf("VBMeta size:              %d bytes", HeaderSize+aux), 1)
	var info bytes.Buffer
	if err := got.WriteInfo(&info); err != nil {
		t.Fatal(err)
	}
	if info.String() != wantInfo {
		t.Fatalf("info_image:\n%s\nwant:\n%s", info.String(), wantInfo)
	}

	// calculate_kernel_cmdline joins the snippets in descriptor order.
	for _, disabled := range []bool{false, true} {
		suffix := ".txt"
		if disabled {
			suffix = ".hashtree_disabled.txt"
		}
		first, _ := os.ReadFile(filepath.Join(vectorDir, "cmdline", "rootfs-camo-sha1"+suffix))
		second, _ := os.ReadFile(filepath.Join(vectorDir, "cmdline", "kernel-cmdline"+suffix))
		line, err := CalculateKernelCmdline(context.Background(), image, disabled)
		if err != nil {
			t.Fatal(err)
		}
		if want := string(first) + " " + string(second); line != want {
			t.Errorf("hashtree disabled %v: %q, want %q", disabled, line, want)
		}
	}
}

// TestSetupRootfsFromKernelOrder: among every other kind of descriptor,
// IMAGE's lines come after the properties and before
// --setup_as_rootfs_from_kernel's, the kernel command lines and the
// included descriptors.
func TestSetupRootfsFromKernelOrder(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "vendor.img")
	os.WriteFile(image, makeImage(t, "blockbyte:4096:16"), 0o644)
	o := &HashtreeFooterOptions{PartitionName: "vendor", HashAlgorithm: "sha256", Salt: []byte{1},
		ChainPartitions:         []ChainPartition{{Name: "boot", RollbackIndexLocation: 1, PublicKey: make([]byte, 8+2*256)}},
		Properties:              []Property{{Key: "p", Value: []byte("v")}},
		SetupRootfsFromKernel:   filepath.Join(vectorDir, "vbmeta", "rootfs-camo-sha1.bin"),
		SetupAsRootfsFromKernel: true,
		KernelCmdlines:          []string{"quiet"},
		IncludeDescriptorsFrom:  []string{filepath.Join(vectorDir, "vbmeta", "kernel-cmdline.bin")},
	}
	r, err := AddHashtreeFooter(context.Background(), image, o)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := ParseVBMeta(r.VBMeta)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for d := range vb.Descriptors() {
		switch d := d.(type) {
		case *HashtreeDescriptor:
			kinds = append(kinds, "hashtree "+d.PartitionName)
		case *ChainPartitionDescriptor:
			kinds = append(kinds, "chain "+d.PartitionName)
		case *PropertyDescriptor:
			kinds = append(kinds, "prop "+d.Key)
		case *KernelCmdlineDescriptor:
			c := d.Cmdline
			switch {
			case strings.HasPrefix(c, `dm="1 vroot none ro 1,0 800 `):
				c = "dm system"
			case strings.HasPrefix(c, `dm="1 vroot none ro 1,0 128 `):
				c = "dm vendor"
			}
			kinds = append(kinds, fmt.Sprintf("cmdline %d %s", d.Flags, c))
		default:
			kinds = append(kinds, fmt.Sprintf("%T", d))
		}
	}
	want := []string{
		"hashtree vendor", "chain boot", "prop p",
		"cmdline 1 dm system", "cmdline 2 root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)",
		"cmdline 1 dm vendor", "cmdline 2 root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)",
		"cmdline 0 quiet",
		"cmdline 0 console=ttyS0 foo=bar", "cmdline 0 second", "hashtree system",
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("descriptors:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	// IMAGE's vbmeta needs libavb 1.1 (check_at_most_once); unlike an
	// included image's, that does not raise this one's.
	if vb.Header.RequiredLibavbMinor != 0 {
		t.Errorf("required libavb 1.%d", vb.Header.RequiredLibavbMinor)
	}
}

// TestSetupRootfsFromKernelErrors: an IMAGE that cannot be read, that has
// no hashtree descriptor, or that is the image itself is refused before
// the image is touched.
func TestSetupRootfsFromKernelErrors(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "system.img")
	os.WriteFile(image, makeImage(t, "blockbyte:4096:8"), 0o644)
	if _, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(image)
	propsOnly := filepath.Join(dir, "props.vbmeta")
	blob, err := MakeVBMeta(&VBMetaOptions{Descriptors: []Descriptor{&PropertyDescriptor{Key: "k", Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(propsOnly, blob, 0o644)
	raw := filepath.Join(dir, "raw.img")
	os.WriteFile(raw, make([]byte, 8192), 0o644)
	for _, c := range []struct {
		from, want string
		kind       error
	}{
		{filepath.Join(dir, "missing.img"), "missing.img", verity.ErrInput},
		{propsOnly, "no hashtree descriptor in given image", verity.ErrInput},
		{raw, "raw.img", verity.ErrInput},
		{image, "is the image the footer is added to", verity.ErrParam},
		{filepath.Join(dir, ".", "system.img"), "is the image the footer is added to", verity.ErrParam},
	} {
		_, err := AddHashtreeFooter(context.Background(), image, &HashtreeFooterOptions{HashAlgorithm: "sha256", SetupRootfsFromKernel: c.from})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.kind) {
			t.Errorf("%s: %v; want %q (%v)", c.from, err, c.want, c.kind)
		}
		if after, _ := os.ReadFile(image); !bytes.Equal(after, before) {
			t.Fatalf("%s: the image changed", c.from)
		}
	}
}
