package avb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/avbvectors"
	"github.com/veritytree/veritytree/verity"
)

// The known answers of testdata/vectors (made with avbtool 1.3.0; see its
// README.md).
const vectorDir = "testdata/vectors"

type vectorCase struct {
	name, image string
	args        []string
	result      string
	size        uint64
	sha256      string
	footer      string
	vbmeta      string
	rerun       string
	expanded    string
}

func readTSV(t *testing.T, name string) [][]string {
	t.Helper()
	rows, err := avbvectors.ReadTSV(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func loadCases(t *testing.T) []vectorCase {
	var cs []vectorCase
	for _, r := range readTSV(t, "cases.tsv") {
		c := vectorCase{name: r[0], image: r[1], result: r[3], sha256: r[5], footer: r[6], vbmeta: r[7], rerun: r[8], expanded: r[9]}
		if err := json.Unmarshal([]byte(r[2]), &c.args); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.size, _ = strconv.ParseUint(r[4], 10, 64)
		cs = append(cs, c)
	}
	if len(cs) != 56 {
		t.Fatalf("%d cases in cases.tsv, want 56", len(cs))
	}
	return cs
}

// makeImage builds the bytes of the README's image notation.
func makeImage(t *testing.T, spec string) []byte {
	t.Helper()
	b, err := avbvectors.Image(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// avbtoolArgs turns add_hashtree_footer's argv into options, as the
// avbtool front will; paths are relative to dir.
func avbtoolArgs(t *testing.T, dir string, args []string) (image string, o *HashtreeFooterOptions, printVersion, calcMax bool, err error) {
	p := &argvOptions{t: t, dir: dir, o: &HashtreeFooterOptions{FEC: true}}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if p.flag(a) {
			continue
		}
		if i++; i == len(args) {
			t.Fatalf("%s: no value", a)
		}
		if !p.treeValue(a, args[i]) {
			p.vbmetaValue(a, args[i])
		}
	}
	p.o.Properties = append(p.props, p.propFiles...)
	return p.image, p.o, p.printVersion, p.calcMax, nil
}

// argvOptions is add_hashtree_footer's argv read so far.
type argvOptions struct {
	t                     *testing.T
	dir                   string
	o                     *HashtreeFooterOptions
	image                 string
	props, propFiles      []Property
	printVersion, calcMax bool
}

func (p *argvOptions) rel(path string) string { return filepath.Join(p.dir, path) }

func (p *argvOptions) num(a, v string) uint64 {
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		p.t.Fatalf("%s: %v", a, err)
	}
	return n
}

// flag reads a, if it is an option without a value.
func (p *argvOptions) flag(a string) bool {
	o := p.o
	switch a {
	case "--do_not_generate_fec":
		o.FEC = false
	case "--set_hashtree_disabled_flag":
		o.Flags |= FlagHashtreeDisabled
	case "--do_not_use_ab":
		o.DoNotUseAB = true
	case "--check_at_most_once":
		o.CheckAtMostOnce = true
	case "--use_persistent_digest":
		o.UsePersistentDigest = true
	case "--no_hashtree":
		o.NoHashtree = true
	case "--setup_as_rootfs_from_kernel":
		o.SetupAsRootfsFromKernel = true
	case "--do_not_append_vbmeta_image":
		o.DoNotAppendVBMeta = true
	case "--print_required_libavb_version":
		p.printVersion = true
	case "--calc_max_image_size":
		p.calcMax = true
	default:
		return false
	}
	return true
}

// treeValue reads option a of value v, if it is about the image and its
// tree.
func (p *argvOptions) treeValue(a, v string) bool {
	o := p.o
	switch a {
	case "--image":
		p.image = p.rel(v)
	case "--fec_num_roots":
		o.FECRoots = int(p.num(a, v))
	case "--partition_name":
		o.PartitionName = v
	case "--partition_size":
		o.PartitionSize = p.num(a, v)
	case "--hash_algorithm":
		o.HashAlgorithm = v
	case "--block_size":
		o.BlockSize = int(p.num(a, v))
	case "--salt":
		s, err := hex.DecodeString(v)
		if err != nil {
			p.t.Fatal(err)
		}
		o.Salt = s
	default:
		return false
	}
	return true
}

// vbmetaValue reads option a of value v, about the vbmeta.
func (p *argvOptions) vbmetaValue(a, v string) {
	o, t := p.o, p.t
	var err error
	switch a {
	case "--algorithm":
		o.Algorithm = v
	case "--key":
		o.Key, err = LoadPrivateKey(context.Background(), p.rel(v))
	case "--prop":
		var pr Property
		pr, err = ParseProperty(v)
		p.props = append(p.props, pr)
	case "--prop_from_file":
		k, path, _ := strings.Cut(v, ":")
		var pr Property
		pr, err = ParsePropertyFromFile(context.Background(), k+":"+p.rel(path))
		p.propFiles = append(p.propFiles, pr)
	case "--rollback_index":
		o.RollbackIndex = p.num(a, v)
	case "--rollback_index_location":
		o.RollbackIndexLocation = uint32(p.num(a, v))
	case "--flags":
		o.Flags = uint32(p.num(a, v))
	case "--kernel_cmdline":
		o.KernelCmdlines = append(o.KernelCmdlines, v)
	case "--output_vbmeta_image":
		o.OutputVBMeta = p.rel(v)
	case "--append_to_release_string":
		o.AppendToReleaseString = &v
	case "--internal_release_string":
		o.ReleaseString = &v
	case "--chain_partition", "--chain_partition_do_not_use_ab":
		f := strings.Split(v, ":")
		var c ChainPartition
		c, err = ParseChainPartition(context.Background(), f[0]+":"+f[1]+":"+p.rel(f[2]), a == "--chain_partition_do_not_use_ab")
		c.Spec = v // avbtool sorts the strings given
		o.ChainPartitions = append(o.ChainPartitions, c)
	case "--public_key_metadata":
		o.PublicKeyMetadata, err = os.ReadFile(p.rel(v))
	case "--include_descriptors_from_image":
		o.IncludeDescriptorsFrom = append(o.IncludeDescriptorsFrom, p.rel(v))
	default:
		t.Fatalf("argument %q not handled by the test", a)
	}
	if err != nil {
		t.Fatalf("%s: %v", a, err)
	}
}

// errorMeaning maps each error case to words our message must contain.
var errorMeaning = map[string]string{
	"rsa-key-mismatch": "key is wrong size for algorithm SHA256_RSA4096",
	"rsa-no-key":       "key is required for algorithm SHA256_RSA2048",
	"size-4097-p0":     "file size of 4097 is not a multiple of the image block size 4096",
	"psize-too-small":  "image size of 262144 exceeds maximum image size of 253952 in order to fit in a partition size of 327680",
	"psize-unaligned":  "partition size of 1000000 is not a multiple of the image block size 4096",
}

// expand is simg2img: the image a sparse file expands to.
func expand(t *testing.T, b []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.simg")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := verity.OpenSource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := make([]byte, s.Size())
	if _, err := s.ReadAt(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// setupCase makes a directory holding image.img and links to the vectors'
// keys, props and vbmeta, as the README ran avbtool.
func setupCase(t *testing.T, c vectorCase) string {
	dir := t.TempDir()
	var img []byte
	if strings.HasPrefix(c.image, "sparse:") {
		var err error
		if img, err = os.ReadFile(filepath.Join(vectorDir, "sparse", c.name+".simg")); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(expand(t, img), makeImage(t, strings.TrimPrefix(c.image, "sparse:"))) {
			t.Fatal("the stored sparse input does not expand to its spec")
		}
	} else {
		img = makeImage(t, c.image)
	}
	if err := os.WriteFile(filepath.Join(dir, "image.img"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"keys", "props", "vbmeta"} {
		abs, _ := filepath.Abs(filepath.Join(vectorDir, d))
		if err := os.Symlink(abs, filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestAddHashtreeFooterVectors(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := setupCase(t, c)
			image, o, printVersion, _, _ := avbtoolArgs(t, dir, c.args)
			before, _ := os.ReadFile(image)
			check := func(run string) {
				t.Helper()
				got, err := os.ReadFile(image)
				if err != nil {
					t.Fatal(err)
				}
				if uint64(len(got)) != c.size || sha256Hex(got) != c.sha256 {
					t.Fatalf("%s: file of %d bytes, sha256 %s; avbtool: %d, %s", run, len(got), sha256Hex(got), c.size, c.sha256)
				}
			}
			if printVersion {
				want := strings.TrimPrefix(c.result, "ok: ")
				if got := fmt.Sprintf("1.%d", o.RequiredLibavbMinor()); got != want {
					t.Fatalf("required libavb version %s, avbtool %s", got, want)
				}
				check("print version")
				return
			}
			res, err := AddHashtreeFooter(context.Background(), image, o)
			if strings.HasPrefix(c.result, "error: ") {
				if err == nil {
					t.Fatal("no error; avbtool: " + c.result)
				}
				if want := errorMeaning[c.name]; !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want)) {
					t.Fatalf("error %q does not say %q", err, want)
				}
				if after, _ := os.ReadFile(image); !bytes.Equal(after, before) {
					t.Fatal("the image changed on error")
				}
				check("error")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check("first run")
			if c.expanded != "-" {
				got, _ := os.ReadFile(image)
				if e := sha256Hex(expand(t, got)); e != c.expanded {
					t.Fatalf("expanded output sha256 %s, avbtool's %s", e, c.expanded)
				}
			}
			blobFile := c.vbmeta
			if strings.HasPrefix(c.name, "sparse-") {
				// The vectors hold no blob for sparse outputs (empty
				// files); the raw twin's is the same.
				blobFile = "vbmeta/raw-" + strings.TrimPrefix(c.name, "sparse-") + ".bin"
			}
			wantBlob, err := os.ReadFile(filepath.Join(vectorDir, blobFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.VBMeta, wantBlob) {
				t.Fatalf("vbmeta blob differs from avbtool's (%d bytes, avbtool %d)", len(res.VBMeta), len(wantBlob))
			}
			if c.footer == "-" {
				if res.Footer != nil {
					t.Fatal("a footer was written")
				}
			} else if got := fmt.Sprintf("%d,%d,%d", res.Footer.OriginalImageSize, res.Footer.VBMetaOffset, res.Footer.VBMetaSize); got != c.footer {
				t.Fatalf("footer %s, avbtool %s", got, c.footer)
			}
			if c.footer != "-" {
				// avbtool's own outputs are what libavb and the footer
				// checks take.
				acceptedAsLibavb(t, image)
			}
			if o.OutputVBMeta != "" {
				if b, _ := os.ReadFile(o.OutputVBMeta); !bytes.Equal(b, wantBlob) {
					t.Fatal("the vbmeta file differs from avbtool's")
				}
			}
			if c.rerun == "same" {
				if _, err := AddHashtreeFooter(context.Background(), image, o); err != nil {
					t.Fatal(err)
				}
				check("rerun")
			}
		})
	}
}

// acceptedAsLibavb requires the image at path to pass the checks a
// bootloader makes (VerifyVBMeta: nil when signed, ErrNotSigned when not;
// CheckMetadata) and CheckFooter.
func acceptedAsLibavb(t *testing.T, path string) {
	t.Helper()
	img, err := ReadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	checkVBMeta(t, img)
	if err := img.CheckMetadata(); err != nil {
		t.Fatalf("CheckMetadata: %v", err)
	}
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := img.CheckFooter(src); err != nil {
		t.Fatalf("CheckFooter: %v", err)
	}
}
