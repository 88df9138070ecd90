package avb_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/avbvectors/signhelper"
	"github.com/veritytree/veritytree/verity"
)

// The footer verbs replayed by TestVectors2.
func init() {
	replayed["add_hash_footer"] = runAddHashFooter
	replayed["add_hashtree_footer"] = runAddHashtreeFooter
	replayed["append_vbmeta_image"] = runAppendVBMetaImage
	replayed["resize_image"] = runResizeImage
	replayed["zero_hashtree"] = runZeroHashtree
}

// refusedOnPurpose are the cases where avbtool succeeds and the package
// refuses, and why.
var refusedOnPurpose = map[string]string{
	// avbtool appends the vbmeta, then cuts the file to the partition
	// less a block, into the image data, and appends the footer there:
	// the image is broken, its footer points past its end.
	"av-err-too-small": "the partition is too small for the image and the vbmeta",
	// AOSP's fec makes parity of 1 to 254 roots; the kernel's dm-verity
	// takes 2 to 24.
	"fec-roots1":  "1 FEC root: the kernel takes 2 to 24",
	"fec-roots25": "25 FEC roots: the kernel takes 2 to 24",
}

// commonArgs takes avbtool's common vbmeta options.
type commonArgs struct {
	props, propFiles             []string
	keyPath, helper, helperFiles string
	printVersion                 bool
}

// take takes the option a (and its value) into c, or says it is not one.
func (ca *commonArgs) take(ctx context.Context, p *argParser, a string, c *avb.VBMetaCommonOptions) (bool, error) {
	switch a {
	case "--chain_partition", "--chain_partition_do_not_use_ab":
		ch, err := avb.ParseChainPartition(ctx, p.value(a), a == "--chain_partition_do_not_use_ab")
		if err != nil {
			return true, err
		}
		c.ChainPartitions = append(c.ChainPartitions, ch)
	case "--algorithm":
		c.Algorithm = p.value(a)
	case "--key":
		ca.keyPath = p.value(a)
	case "--public_key_metadata":
		b, err := os.ReadFile(p.value(a))
		if err != nil {
			return true, err
		}
		c.PublicKeyMetadata = b
	case "--rollback_index":
		c.RollbackIndex = p.number(a)
	case "--rollback_index_location":
		c.RollbackIndexLocation = uint32(p.number(a))
	case "--flags":
		c.Flags |= uint32(p.number(a))
	case "--set_hashtree_disabled_flag":
		c.Flags |= avb.FlagHashtreeDisabled
	case "--prop":
		ca.props = append(ca.props, p.value(a))
	case "--prop_from_file":
		ca.propFiles = append(ca.propFiles, p.value(a))
	case "--kernel_cmdline":
		c.KernelCmdlines = append(c.KernelCmdlines, p.value(a))
	case "--setup_rootfs_from_kernel":
		c.SetupRootfsFromKernel = p.value(a)
	case "--include_descriptors_from_image":
		c.IncludeDescriptorsFrom = append(c.IncludeDescriptorsFrom, p.value(a))
	case "--signing_helper":
		ca.helper = p.value(a)
	case "--signing_helper_with_files":
		ca.helperFiles = p.value(a)
	case "--internal_release_string":
		c.ReleaseString = new(p.value(a))
	case "--append_to_release_string":
		c.AppendToReleaseString = new(p.value(a))
	case "--print_required_libavb_version":
		ca.printVersion = true
	default:
		return false, nil
	}
	return true, nil
}

// finish reads the properties and the key into c, as the front does.
func (ca *commonArgs) finish(ctx context.Context, c *avb.VBMetaCommonOptions) error {
	for _, s := range ca.props {
		pr, err := avb.ParseProperty(s)
		if err != nil {
			return err
		}
		c.Properties = append(c.Properties, pr)
	}
	for _, s := range ca.propFiles {
		pr, err := avb.ParsePropertyFromFile(ctx, s)
		if err != nil {
			return err
		}
		c.Properties = append(c.Properties, pr)
	}
	if ca.keyPath == "" {
		return nil
	}
	if ca.helper == "" && ca.helperFiles == "" {
		k, err := avb.LoadPrivateKey(ctx, ca.keyPath)
		if err != nil {
			return err
		}
		c.Key = k
		return nil
	}
	pub, err := avb.LoadPublicKey(ctx, ca.keyPath)
	if err != nil {
		return err
	}
	s := &avb.HelperSigner{Program: signhelper.Program(ca.helper), KeyPath: ca.keyPath, Public: pub}
	if ca.helperFiles != "" {
		s.Program, s.WithFiles = signhelper.Program(ca.helperFiles), true
	}
	c.Signer = s
	return nil
}

func parseSalt(v string) ([]byte, error) {
	b, err := hex.DecodeString(v)
	if err != nil {
		return nil, &verity.Error{Kind: verity.KindParam, Field: "salt", Err: fmt.Errorf("salt %q is not hexadecimal", v)}
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

type hashFooterArgs struct {
	commonArgs
	o         *avb.HashFooterOptions
	image     string
	calcMax   bool
	salt      string
	saltGiven bool
}

func (h *hashFooterArgs) parse(ctx context.Context, p *argParser) error {
	o := h.o
	for {
		a, ok := p.next()
		if !ok {
			return p.err
		}
		switch a {
		case "--image":
			h.image = p.value(a)
		case "--partition_size":
			o.PartitionSize = p.number(a)
		case "--dynamic_partition_size":
			o.DynamicPartitionSize = true
		case "--partition_name":
			o.PartitionName = p.value(a)
		case "--hash_algorithm":
			o.HashAlgorithm = p.value(a)
		case "--salt":
			h.salt, h.saltGiven = p.value(a), true
		case "--calc_max_image_size":
			h.calcMax = true
		case "--output_vbmeta_image":
			o.OutputVBMeta = p.value(a)
		case "--do_not_append_vbmeta_image":
			o.DoNotAppendVBMeta = true
		case "--use_persistent_digest":
			o.UsePersistentDigest = true
		case "--do_not_use_ab":
			o.DoNotUseAB = true
		default:
			took, err := h.take(ctx, p, a, &o.VBMetaCommonOptions)
			if err != nil {
				return err
			}
			if !took {
				return fmt.Errorf("option %s not replayed", a)
			}
		}
	}
}

func runAddHashFooter(ctx context.Context, args []string, stdout io.Writer) error {
	h := &hashFooterArgs{o: &avb.HashFooterOptions{}}
	if err := h.parse(ctx, &argParser{args: args}); err != nil {
		return err
	}
	o := h.o
	if h.printVersion {
		fmt.Fprintf(stdout, "1.%d\n", o.RequiredLibavbMinor())
		return nil
	}
	if h.calcMax {
		n, err := avb.MaxHashImageSize(o.PartitionSize)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d\n", n)
		return nil
	}
	if h.saltGiven {
		var err error
		if o.Salt, err = parseSalt(h.salt); err != nil {
			return err
		}
	}
	if err := h.finish(ctx, &o.VBMetaCommonOptions); err != nil {
		return err
	}
	_, err := avb.AddHashFooter(ctx, h.image, o)
	return err
}

func runAddHashtreeFooter(ctx context.Context, args []string, stdout io.Writer) error {
	p := &argParser{args: args}
	var ca commonArgs
	var c avb.VBMetaCommonOptions
	o := &avb.HashtreeFooterOptions{FEC: true}
	var image string
	var calcMax, zeroRoots bool
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--image":
			image = p.value(a)
		case "--partition_size":
			o.PartitionSize = p.number(a)
		case "--partition_name":
			o.PartitionName = p.value(a)
		case "--do_not_generate_fec":
			o.FEC = false
		case "--hash_algorithm":
			o.HashAlgorithm = p.value(a)
		case "--salt":
			s, err := parseSalt(p.value(a))
			if err != nil {
				return err
			}
			o.Salt = s
		case "--check_at_most_once":
			o.CheckAtMostOnce = true
		case "--fec_num_roots":
			o.FECRoots = int(p.number(a))
			zeroRoots = o.FECRoots == 0
		case "--block_size":
			o.BlockSize = int(p.number(a))
		case "--calc_max_image_size":
			calcMax = true
		default:
			took, err := ca.take(ctx, p, a, &c)
			if err != nil {
				return err
			}
			if !took {
				return fmt.Errorf("option %s not replayed", a)
			}
		}
	}
	if p.err != nil {
		return p.err
	}
	if zeroRoots && o.FEC && !o.NoHashtree {
		// The front's check: avbtool's fec refuses 0 roots, the package's 0 is the default.
		return &verity.Error{Kind: verity.KindParam, Field: "fec_num_roots", Err: errors.New("FEC roots 0: no parity without roots")}
	}
	if calcMax {
		n, err := avb.MaxImageSize(o)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d\n", n)
		return nil
	}
	if err := ca.finish(ctx, &c); err != nil {
		return err
	}
	o.Algorithm, o.Key, o.Signer, o.ChainPartitions, o.Properties = c.Algorithm, c.Key, c.Signer, c.ChainPartitions, c.Properties
	o.KernelCmdlines, o.SetupRootfsFromKernel, o.IncludeDescriptorsFrom = c.KernelCmdlines, c.SetupRootfsFromKernel, c.IncludeDescriptorsFrom
	o.PublicKeyMetadata, o.RollbackIndex, o.RollbackIndexLocation, o.Flags = c.PublicKeyMetadata, c.RollbackIndex, c.RollbackIndexLocation, c.Flags
	o.ReleaseString, o.AppendToReleaseString = c.ReleaseString, c.AppendToReleaseString
	_, err := avb.AddHashtreeFooter(ctx, image, o)
	return err
}

func runAppendVBMetaImage(ctx context.Context, args []string, _ io.Writer) error {
	p := &argParser{args: args}
	var image, vbmeta string
	var size uint64
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--image":
			image = p.value(a)
		case "--vbmeta_image":
			vbmeta = p.value(a)
		case "--partition_size":
			size = p.number(a)
		default:
			return fmt.Errorf("option %s not replayed", a)
		}
	}
	if p.err != nil {
		return p.err
	}
	_, err := avb.AppendVBMetaImage(ctx, image, vbmeta, size)
	return err
}

func runResizeImage(ctx context.Context, args []string, _ io.Writer) error {
	p := &argParser{args: args}
	var image string
	var size uint64
	for {
		a, ok := p.next()
		if !ok {
			break
		}
		switch a {
		case "--image":
			image = p.value(a)
		case "--partition_size":
			size = p.number(a)
		default:
			return fmt.Errorf("option %s not replayed", a)
		}
	}
	if p.err != nil {
		return p.err
	}
	return avb.ResizeImage(ctx, image, size)
}

func runZeroHashtree(ctx context.Context, args []string, _ io.Writer) error {
	if len(args) != 2 || args[0] != "--image" {
		return fmt.Errorf("arguments %q not replayed", args)
	}
	return avb.ZeroHashtree(ctx, args[1])
}
