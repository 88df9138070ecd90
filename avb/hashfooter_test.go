package avb

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/internal/testtool"
	"github.com/veritytree/veritytree/verity"
)

// hashFooterCases are option sets of AddHashFooter whose uninterrupted
// output TestVectors2 compares with avbtool's (hf-psize, hf-dynamic,
// hf-do-not-append, hf-signed...): here the interrupted runs are compared
// with the uninterrupted one.
func hashFooterCases(t *testing.T) map[string]*HashFooterOptions {
	t.Helper()
	key, err := LoadPrivateKey(context.Background(), "testdata/vectors/keys/rsa2048.pem")
	if err != nil {
		t.Fatal(err)
	}
	salt := []byte("salt for the kill test")
	return map[string]*HashFooterOptions{
		"psize":      {PartitionSize: 1 << 20, PartitionName: "boot", Salt: salt},
		"dynamic":    {DynamicPartitionSize: true, PartitionName: "boot", Salt: salt},
		"do-not-app": {PartitionSize: 1 << 20, PartitionName: "boot", Salt: salt, DoNotAppendVBMeta: true},
		"signed": {PartitionSize: 1 << 20, PartitionName: "boot", Salt: salt,
			VBMetaCommonOptions: VBMetaCommonOptions{Algorithm: "SHA256_RSA2048", Key: key, Properties: []Property{{Key: "a", Value: []byte("1")}}}},
	}
}

// hashInterruptedState is what an AddHashFooter killed in its middle
// leaves of a raw image: start (cut to the original size its footer gives,
// on a rerun), then garbage or half of the finished file's metadata, and
// the provisional footer block past the finished size.
func hashInterruptedState(t *testing.T, state string, start, finished []byte, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	orig := uint64(len(start))
	if f, err := ReadFooter(bytes.NewReader(start), int64(len(start))); err == nil {
		orig = f.OriginalImageSize
	}
	end := max(uint64(len(finished)), uint64(len(start)))
	b := append([]byte{}, start[:orig]...)
	b = append(b, make([]byte, end-orig)...)
	switch state {
	case "garbage": // zeros, the padding, half written over
		for i := orig; i < orig+(end-orig)/2; i++ {
			b[i] = byte(rng.Uint32())
		}
	case "metadata": // the vbmeta and the footer block written
		copy(b[orig:], finished[orig:])
	}
	prov, err := provisionalBlockOf("add_hash_footer", orig, roundUp(end, imageBlockSize), imageBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, make([]byte, roundUp(end, imageBlockSize)-end)...)
	if !bytes.Contains(prov, []byte("add_hash_footer was interrupted")) {
		t.Fatal("the provisional footer does not name the verb")
	}
	return append(b, prov...)
}

// TestAddHashFooterFinishesInterrupted: what AddHashFooter killed at any
// moment leaves of a raw image (the provisional footer block past the
// original image, with what was below it half written; on a fresh image
// or on a rerun of a finished one) is finished by the same call into the
// file the uninterrupted call makes, byte for byte.
func TestAddHashFooterFinishesInterrupted(t *testing.T) {
	for name, o := range hashFooterCases(t) {
		for _, rerun := range []bool{false, true} {
			for i, state := range []string{"garbage", "metadata"} {
				t.Run(name+"/"+state+map[bool]string{true: "/rerun"}[rerun], func(t *testing.T) {
					image := filepath.Join(t.TempDir(), "boot.img")
					start := makeImage(t, "blockbyte:4096:60+fill:ab:1234")
					if err := os.WriteFile(image, start, 0o644); err != nil {
						t.Fatal(err)
					}
					if _, err := AddHashFooter(context.Background(), image, o); err != nil {
						t.Fatal(err)
					}
					finished, _ := os.ReadFile(image)
					if rerun {
						start = finished
					}
					if err := os.WriteFile(image, hashInterruptedState(t, state, start, finished, uint64(i)), 0o644); err != nil {
						t.Fatal(err)
					}
					img, err := ReadImage(image)
					if err != nil || !img.Interrupted() {
						t.Fatalf("the interrupted state is not reported as one: %v", err)
					}
					if _, err := AddHashFooter(context.Background(), image, o); err != nil {
						t.Fatal(err)
					}
					if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
						t.Errorf("the run on the interrupted state gives %d bytes, not the finished file's %d", len(got), len(finished))
					}
				})
			}
		}
	}
}

// TestAddHashFooterFinishesInterruptedSparse: on an Android sparse image
// (made by img2simg) the new chunks, not yet counted or counted with the
// record still past them, expand to the original or the finished image,
// and the same call finishes them into the uninterrupted call's file.
func TestAddHashFooterFinishesInterruptedSparse(t *testing.T) {
	img2simg := testtool.Require(t, "img2simg")
	for name, o := range hashFooterCases(t) {
		for _, state := range []string{"uncounted", "counted"} {
			t.Run(name+"/"+state, func(t *testing.T) {
				dir := t.TempDir()
				raw, image := filepath.Join(dir, "boot.raw"), filepath.Join(dir, "boot.img")
				if err := os.WriteFile(raw, makeImage(t, "blockbyte:4096:30+zero:16384+fill:01:8192"), 0o644); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(img2simg, raw, image).CombinedOutput(); err != nil {
					t.Fatalf("img2simg: %v\n%s", err, out)
				}
				start, _ := os.ReadFile(image)
				if _, err := AddHashFooter(context.Background(), image, o); err != nil {
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
				if _, err := AddHashFooter(context.Background(), image, o); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(image); !bytes.Equal(got, finished) {
					t.Errorf("the run on the interrupted state gives %d bytes, not the finished file's %d", len(got), len(finished))
				}
			})
		}
	}
}

// A cancelled context stops the hashing, and the image is left as it was.
func TestAddHashFooterCancelled(t *testing.T) {
	image := filepath.Join(t.TempDir(), "boot.img")
	start := makeImage(t, "blockbyte:4096:3000")
	if err := os.WriteFile(image, start, 0o644); err != nil {
		t.Fatal(err)
	}
	pl, err := PlanHashFooter(image, &HashFooterOptions{DynamicPartitionSize: true, Salt: []byte{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled once the image is being read: by the reader the plan
	// hashes through.
	src := &cancelAfter{r: bytes.NewReader(start), cancel: cancel}
	if _, err := hashImage(ctx, src, uint64(len(start)), pl.p.hash, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("hashing: got %v, want the context's error", err)
	}
	if _, err := pl.Apply(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if got, _ := os.ReadFile(image); !bytes.Equal(got, start) {
		t.Error("a cancelled run changed the image")
	}
}

type cancelAfter struct {
	r      *bytes.Reader
	cancel func()
}

func (c *cancelAfter) ReadAt(p []byte, off int64) (int, error) {
	c.cancel()
	return c.r.ReadAt(p, off)
}

// Too small a partition is refused in add_hash_footer's words, before the
// image is touched.
func TestAddHashFooterTooLarge(t *testing.T) {
	image := filepath.Join(t.TempDir(), "boot.img")
	start := makeImage(t, "blockbyte:4096:20")
	if err := os.WriteFile(image, start, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := AddHashFooter(context.Background(), image, &HashFooterOptions{PartitionSize: 69632 + 4096})
	if !errors.Is(err, verity.ErrInput) || !strings.Contains(err.Error(), "exceeds maximum image size of 4096") {
		t.Fatalf("got %v", err)
	}
	if got, _ := os.ReadFile(image); !bytes.Equal(got, start) {
		t.Error("the refused run changed the image")
	}
}
