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
	o = &HashtreeFooterOptions{FEC: true}
	var props, propFiles []Property
	rel := func(p string) string { return filepath.Join(dir, p) }
	for i := 1; i < len(args); i++ {
		a := args[i]
		val := func() string { i++; return args[i] }
		num := func() uint64 {
			n, perr := strconv.ParseUint(val(), 0, 64)
			if perr != nil {
				t.Fatalf("%s: %v", a, perr)
			}
			return n
		}
		switch a {
		case "--image":
			image = rel(val())
		case "--do_not_generate_fec":
			o.FEC = false
		case "--fec_num_roots":
			o.FECRoots = int(num())
		case "--partition_name":
			o.PartitionName = val()
		case "--partition_size":
			o.PartitionSize = num()
		case "--hash_algorithm":
			o.HashAlgorithm = val()
		case "--block_size":
			o.BlockSize = int(num())
		case "--salt":
			s, herr := hex.DecodeString(val())
			if herr != nil {
				t.Fatal(herr)
			}
			o.Salt = s
		case "--algorithm":
			o.Algorithm = val()
		case "--key":
			k, kerr := LoadPrivateKey(context.Background(), rel(val()))
			if kerr != nil {
				t.Fatal(kerr)
			}
			o.Key = k
		case "--prop":
			p, perr := ParseProperty(val())
			if perr != nil {
				t.Fatal(perr)
			}
			props = append(props, p)
		case "--prop_from_file":
			k, v, _ := strings.Cut(val(), ":")
			p, perr := ParsePropertyFromFile(context.Background(), k+":"+rel(v))
			if perr != nil {
				t.Fatal(perr)
			}
			propFiles = append(propFiles, p)
		case "--rollback_index":
			o.RollbackIndex = num()
		case "--rollback_index_location":
			o.RollbackIndexLocation = uint32(num())
		case "--flags":
			o.Flags = uint32(num())
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
		case "--kernel_cmdline":
			o.KernelCmdlines = append(o.KernelCmdlines, val())
		case "--output_vbmeta_image":
			o.OutputVBMeta = rel(val())
		case "--do_not_append_vbmeta_image":
			o.DoNotAppendVBMeta = true
		case "--append_to_release_string":
			o.AppendToReleaseString = val()
		case "--internal_release_string":
			o.ReleaseString = val()
		case "--chain_partition", "--chain_partition_do_not_use_ab":
			f := strings.Split(val(), ":")
			c, cerr := ParseChainPartition(context.Background(), f[0]+":"+f[1]+":"+rel(f[2]), a == "--chain_partition_do_not_use_ab")
			if cerr != nil {
				t.Fatal(cerr)
			}
			c.Spec = strings.Join(f, ":") // avbtool sorts the strings given
			o.ChainPartitions = append(o.ChainPartitions, c)
		case "--public_key_metadata":
			b, rerr := os.ReadFile(rel(val()))
			if rerr != nil {
				t.Fatal(rerr)
			}
			o.PublicKeyMetadata = b
		case "--include_descriptors_from_image":
			o.IncludeDescriptorsFrom = append(o.IncludeDescriptorsFrom, rel(val()))
		case "--print_required_libavb_version":
			printVersion = true
		case "--calc_max_image_size":
			calcMax = true
		default:
			t.Fatalf("argument %q not handled by the test", a)
		}
	}
	o.Properties = append(props, propFiles...)
	return image, o, printVersion, calcMax, nil
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
