package avb

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// WriteInfo writes what `avbtool info_image` prints for the image, byte
// for byte, as it walks the descriptors: the text of a million descriptors
// is never held in memory. A failed write ends it (the error is returned).
func (img *Image) WriteInfo(w io.Writer) error {
	b := bufio.NewWriterSize(w, 64<<10)
	if f := img.Footer; f != nil {
		fmt.Fprintf(b, "Footer version:           %d.%d\n", f.VersionMajor, f.VersionMinor)
		fmt.Fprintf(b, "Image size:               %d bytes\n", img.Size)
		fmt.Fprintf(b, "Original image size:      %d bytes\n", f.OriginalImageSize)
		fmt.Fprintf(b, "VBMeta offset:            %d\n", f.VBMetaOffset)
		fmt.Fprintf(b, "VBMeta size:              %d bytes\n", f.VBMetaSize)
		b.WriteString("--\n")
	}
	v := img.VBMeta
	h := v.Header
	sparse := ""
	if img.Sparse {
		sparse = " (Sparse)"
	}
	fmt.Fprintf(b, "Minimum libavb version:   %d.%d%s\n", h.RequiredLibavbMajor, h.RequiredLibavbMinor, sparse)
	fmt.Fprintf(b, "Header Block:             %d bytes\n", HeaderSize)
	fmt.Fprintf(b, "Authentication Block:     %d bytes\n", h.AuthenticationBlockSize)
	fmt.Fprintf(b, "Auxiliary Block:          %d bytes\n", h.AuxiliaryBlockSize)
	if len(v.PublicKey) > 0 {
		fmt.Fprintf(b, "Public key (sha1):        %s\n", sha1Hex(v.PublicKey))
	}
	fmt.Fprintf(b, "Algorithm:                %s\n", v.Algorithm.Name)
	fmt.Fprintf(b, "Rollback Index:           %d\n", h.RollbackIndex)
	fmt.Fprintf(b, "Flags:                    %d\n", h.Flags)
	fmt.Fprintf(b, "Rollback Index Location:  %d\n", h.RollbackIndexLocation)
	// avbtool prints the whole field but its trailing NULs: bytes after a
	// NUL inside it too, which Header.ReleaseString (a C string) drops.
	rs := []byte(h.ReleaseString)
	if len(v.Raw) >= HeaderSize {
		rs = bytes.TrimRight(v.Raw[128:128+releaseStringSize-1], "\x00")
	}
	line(b, "Release String:           '", string(rs), "'")
	b.WriteString("Descriptors:\n")
	for d := range v.Descriptors() {
		writeDescriptorInfo(b, d)
	}
	if v.NumDescriptors() == 0 {
		b.WriteString("    (none)\n")
	}
	return b.Flush()
}

func sha1Hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

func writeDescriptorInfo(b *bufio.Writer, d Descriptor) {
	switch d := d.(type) {
	case *PropertyDescriptor:
		if len(d.Value) < 256 {
			line(b, "    Prop: ", d.Key, " -> ", pyRepr(d.Value))
		} else {
			line(b, "    Prop: ", d.Key, fmt.Sprintf(" -> (%d bytes)", len(d.Value)))
		}
	case *HashtreeDescriptor:
		b.WriteString("    Hashtree descriptor:\n")
		fmt.Fprintf(b, "      Version of dm-verity:  %d\n", d.DMVerityVersion)
		fmt.Fprintf(b, "      Image Size:            %d bytes\n", d.ImageSize)
		fmt.Fprintf(b, "      Tree Offset:           %d\n", d.TreeOffset)
		fmt.Fprintf(b, "      Tree Size:             %d bytes\n", d.TreeSize)
		fmt.Fprintf(b, "      Data Block Size:       %d bytes\n", d.DataBlockSize)
		fmt.Fprintf(b, "      Hash Block Size:       %d bytes\n", d.HashBlockSize)
		fmt.Fprintf(b, "      FEC num roots:         %d\n", d.FECNumRoots)
		fmt.Fprintf(b, "      FEC offset:            %d\n", d.FECOffset)
		fmt.Fprintf(b, "      FEC size:              %d bytes\n", d.FECSize)
		line(b, "      Hash Algorithm:        ", d.HashAlgorithm)
		line(b, "      Partition Name:        ", d.PartitionName)
		hexLine(b, "      Salt:                  ", d.Salt)
		hexLine(b, "      Root Digest:           ", d.RootDigest)
		fmt.Fprintf(b, "      Flags:                 %d\n", d.Flags)
	case *HashDescriptor:
		b.WriteString("    Hash descriptor:\n")
		fmt.Fprintf(b, "      Image Size:            %d bytes\n", d.ImageSize)
		line(b, "      Hash Algorithm:        ", d.HashAlgorithm)
		line(b, "      Partition Name:        ", d.PartitionName)
		hexLine(b, "      Salt:                  ", d.Salt)
		hexLine(b, "      Digest:                ", d.Digest)
		fmt.Fprintf(b, "      Flags:                 %d\n", d.Flags)
	case *KernelCmdlineDescriptor:
		b.WriteString("    Kernel Cmdline descriptor:\n")
		fmt.Fprintf(b, "      Flags:                 %d\n", d.Flags)
		line(b, "      Kernel Cmdline:        '", d.Cmdline, "'")
	case *ChainPartitionDescriptor:
		b.WriteString("    Chain Partition descriptor:\n")
		line(b, "      Partition Name:          ", d.PartitionName)
		fmt.Fprintf(b, "      Rollback Index Location: %d\n", d.RollbackIndexLocation)
		fmt.Fprintf(b, "      Public key (sha1):       %s\n", sha1Hex(d.PublicKey))
		fmt.Fprintf(b, "      Flags:                   %d\n", d.Flags)
	case *UnknownDescriptor:
		b.WriteString("    Unknown descriptor:\n")
		fmt.Fprintf(b, "      Tag:  %d\n", d.TagValue)
		if len(d.Data) < 256 {
			// avbtool prints repr(str(data)): the bytes' repr, quoted
			// again as a string.
			fmt.Fprintf(b, "      Data: %s (%d bytes)\n", pyStrRepr("b"+pyRepr(d.Data)), len(d.Data))
		} else {
			fmt.Fprintf(b, "      Data: %d bytes\n", len(d.Data))
		}
	}
}

// line writes the strings and a newline, without the copies of fmt (a
// partition name or a command line may take megabytes).
func line(b *bufio.Writer, parts ...string) {
	for _, p := range parts {
		b.WriteString(p)
	}
	b.WriteByte('\n')
}

// hexLine writes label, data in lower-case hex and a newline, a piece at a
// time (a salt may take megabytes).
func hexLine(b *bufio.Writer, label string, data []byte) {
	b.WriteString(label)
	var buf [2 * 512]byte
	for len(data) > 0 {
		n := min(len(data), 512)
		b.Write(hex.AppendEncode(buf[:0], data[:n]))
		data = data[n:]
	}
	b.WriteByte('\n')
}

// pyRepr is Python's repr of bytes without the leading b.
func pyRepr(v []byte) string {
	return pyQuote(v)
}

// pyStrRepr is Python's repr of an ASCII string.
func pyStrRepr(s string) string { return pyQuote([]byte(s)) }

func pyQuote(v []byte) string {
	q := byte('\'')
	if strings.IndexByte(string(v), '\'') >= 0 && strings.IndexByte(string(v), '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, c := range v {
		switch {
		case c == q || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// KernelCmdline joins the kernel command-line snippets of the descriptors
// that apply (hashtree disabled or not), as avbtool's
// calculate_kernel_cmdline does.
func KernelCmdline(ds []Descriptor, hashtreeDisabled bool) string {
	line := &cmdlineBuilder{disabled: hashtreeDisabled}
	for _, d := range ds {
		line.add(d)
	}
	return line.b.String()
}

// applies says whether the snippet goes into the command line, the
// hashtree disabled or not.
func (k *KernelCmdlineDescriptor) applies(hashtreeDisabled bool) bool {
	if k.Flags&CmdlineFlagUseOnlyIfHashtreeNotDisabled != 0 && hashtreeDisabled {
		return false
	}
	return k.Flags&CmdlineFlagUseOnlyIfHashtreeDisabled == 0 || hashtreeDisabled
}

// RootfsCmdlineDescriptors are the two kernel command-line descriptors
// avbtool adds with --setup_as_rootfs_from_kernel: the dm= line that sets
// the partition up with dm-verity (used unless the hashtree is disabled),
// and root=PARTUUID=... (used when it is).
func RootfsCmdlineDescriptors(ht *HashtreeDescriptor) []Descriptor {
	bs := uint64(ht.DataBlockSize)
	if bs == 0 {
		bs = 1 // a descriptor read from an image may say 0: no division by it
	}
	var c strings.Builder
	c.WriteString(`dm="1 vroot none ro 1,`)
	fmt.Fprintf(&c, "0 %d verity %d", ht.ImageSize/512, ht.DMVerityVersion)
	c.WriteString(" PARTUUID=$(ANDROID_SYSTEM_PARTUUID) PARTUUID=$(ANDROID_SYSTEM_PARTUUID)")
	fmt.Fprintf(&c, " %d %d %d %d %s %x %x", ht.DataBlockSize, ht.HashBlockSize, ht.ImageSize/bs, ht.ImageSize/bs,
		ht.HashAlgorithm, ht.RootDigest, ht.Salt)
	camo := ht.Flags&HashtreeFlagCheckAtMostOnce != 0
	n := 2
	if ht.FECNumRoots > 0 {
		n = 10
	}
	if camo {
		n++
	}
	fmt.Fprintf(&c, " %d", n)
	if camo {
		c.WriteString(" check_at_most_once")
	}
	c.WriteString(" $(ANDROID_VERITY_MODE) ignore_zero_blocks")
	if ht.FECNumRoots > 0 {
		fmt.Fprintf(&c, " use_fec_from_device PARTUUID=$(ANDROID_SYSTEM_PARTUUID) fec_roots %d fec_blocks %d fec_start %d",
			ht.FECNumRoots, ht.FECOffset/bs, ht.FECOffset/bs)
	}
	c.WriteString(`" root=/dev/dm-0`)
	return []Descriptor{
		&KernelCmdlineDescriptor{Flags: CmdlineFlagUseOnlyIfHashtreeNotDisabled, Cmdline: c.String()},
		&KernelCmdlineDescriptor{Flags: CmdlineFlagUseOnlyIfHashtreeDisabled, Cmdline: "root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)"},
	}
}

// SetupRootfsFromKernelDescriptors are the kernel command-line descriptors
// avbtool adds with --setup_rootfs_from_kernel IMAGE: those of
// RootfsCmdlineDescriptors for the first hashtree descriptor of the image's
// vbmeta (the image has a footer, or is a vbmeta image; Android sparse is
// read as expanded).
func SetupRootfsFromKernelDescriptors(path string) ([]Descriptor, error) {
	img, err := ReadImage(path)
	if err != nil {
		return nil, err
	}
	if ht := img.VBMeta.FirstHashtree(); ht != nil {
		return RootfsCmdlineDescriptors(ht), nil
	}
	return nil, inputErr("give the image of a partition made with a hashtree footer (add_hashtree_footer)",
		"%s: %w in given image", path, ErrNoHashtree)
}
