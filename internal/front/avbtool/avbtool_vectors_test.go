package avbtool

// The avbtool front against avbtool 1.3.0's known answers
// (avb/testdata/vectors, and testdata/verify*, the
// verify_image answers): every add_hashtree_footer case run with its own
// argument list, then info_image, calculate_kernel_cmdline, verify_image and
// erase_footer on the output.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/verity"
)

// avbVerifyDir holds the verify_image answers, absolute: the tests change
// into work directories.
var avbVerifyDir = avbAbs("testdata")

func avbAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

type avbRun struct {
	code           int
	stdout, stderr string
}

// run runs the front in-process as "avbtool.py" (the name the
// vectors' messages carry).
func run(t *testing.T, args ...string) avbRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), "avbtool.py", args, &stdout, &stderr)
	t.Logf("avbtool %q -> exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout.String(), stderr.String())
	return avbRun{code, stdout.String(), stderr.String()}
}

// avbExpandedSum is the SHA-256 of what a (sparse) file expands to.
func avbExpandedSum(t *testing.T, path string) string {
	t.Helper()
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(src, 0, src.Size())); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func avbVector(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fronttest.AVBVectors, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAvbtoolFrontVectors: each add_hashtree_footer case of cases.tsv, run
// through the front with avbtool's own arguments, gives avbtool's file
// (size, SHA-256, footer, vbmeta blob, expansion of a sparse output), the
// same file again on a rerun, its errors as exit 1 with the file unchanged;
// then info_image and calculate_kernel_cmdline print avbtool's texts.
func TestAvbtoolFrontVectors(t *testing.T) {
	for _, c := range fronttest.AVBCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			dir := fronttest.AVBWorkDir(t, c)
			before, beforeSum := fronttest.AVBFileSum(t, "image.img")
			r := run(t, c.Args...)
			switch {
			case strings.HasPrefix(c.Result, "error:"):
				if r.code != exitFailed {
					t.Fatalf("exit %d, want 1 (avbtool: %s)", r.code, c.Result)
				}
				// avbtool's own line, or one of ours (and a hint) where
				// the front does not word it as avbtool yet.
				avbLine := "avbtool.py: " + strings.TrimPrefix(c.Result, "error: ") + "\n"
				if r.stderr != avbLine && (!strings.HasPrefix(r.stderr, "avbtool.py: error: ") || strings.Count(r.stderr, "\n") > 2) {
					t.Errorf("stderr %q: want %q, or one error line (and a hint)", r.stderr, avbLine)
				}
				if size, sum := fronttest.AVBFileSum(t, "image.img"); size != before || sum != beforeSum {
					t.Errorf("the image changed on error: %d bytes, want %d", size, before)
				}
				return
			case strings.HasPrefix(c.Result, "ok: "):
				if r.code != 0 || r.stdout != strings.TrimPrefix(c.Result, "ok: ")+"\n" {
					t.Fatalf("exit %d, stdout %q; want 0, %q", r.code, r.stdout, strings.TrimPrefix(c.Result, "ok: ")+"\n")
				}
				return
			}
			if r.code != 0 || r.stdout != "" || avbNotWarnings(r.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and nothing printed but warnings", r.code, r.stdout, r.stderr)
			}
			checkVectorOutput(t, c)
			checkVectorReads(t, c)
			_ = dir
		})
	}
}

// checkVectorOutput checks the files add_hashtree_footer wrote for c
// against avbtool's, and a rerun's.
func checkVectorOutput(t *testing.T, c fronttest.AVBCase) {
	size, sum := fronttest.AVBFileSum(t, "image.img")
	if size != c.Size || sum != c.SHA256 {
		t.Fatalf("image.img: %d bytes, sha256 %s; want %d, %s", size, sum, c.Size, c.SHA256)
	}
	if c.Expanded != "-" {
		if got := avbExpandedSum(t, "image.img"); got != c.Expanded {
			t.Errorf("expansion sha256 %s, want %s", got, c.Expanded)
		}
	}
	wantBlob := avbVector(t, c.VBMeta)
	if c.Footer != "-" {
		if got := fronttest.AVBFooterOf(t, "image.img"); got != c.Footer {
			t.Errorf("footer %s, want %s", got, c.Footer)
		}
		img, err := avb.ReadImage("image.img")
		if err != nil {
			t.Fatal(err)
		}
		// The sparse cases' blob files are empty: nothing to compare.
		if wantBlob != "" && string(img.VBMeta.Raw) != wantBlob {
			t.Error("the vbmeta blob is not avbtool's")
		}
	}
	if i := indexOf(c.Args, "--output_vbmeta_image"); i > 0 {
		if got, err := os.ReadFile(c.Args[i+1]); err != nil || string(got) != wantBlob {
			t.Errorf("%s is not avbtool's vbmeta blob (%v)", c.Args[i+1], err)
		}
	}
	if c.Rerun == "same" {
		if r := run(t, c.Args...); r.code != 0 {
			t.Fatalf("rerun: exit %d", r.code)
		}
		if size, sum := fronttest.AVBFileSum(t, "image.img"); size != c.Size || sum != c.SHA256 {
			t.Errorf("rerun: %d bytes, sha256 %s; want the same file", size, sum)
		}
	}
}

// checkVectorReads checks info_image and calculate_kernel_cmdline on c's
// output against avbtool's.
func checkVectorReads(t *testing.T, c fronttest.AVBCase) {
	infoOf := "image.img"
	if c.Footer == "-" {
		infoOf = c.Args[indexOf(c.Args, "--output_vbmeta_image")+1]
	}
	if r := run(t, "info_image", "--image", infoOf); r.code != 0 || r.stdout != avbVector(t, "info/"+c.Name+".txt") {
		t.Errorf("info_image: exit %d, output differs from info/%s.txt:\n%s", r.code, c.Name, r.stdout)
	}
	for _, suffix := range []string{"", ".hashtree_disabled"} {
		want, err := os.ReadFile(filepath.Join(fronttest.AVBVectors, "cmdline", c.Name+suffix+".txt"))
		if err != nil {
			continue // no kernel command line in this case
		}
		args := []string{"calculate_kernel_cmdline", "--image", "image.img"}
		if suffix != "" {
			args = append(args, "--hashtree_disabled")
		}
		if r := run(t, args...); r.code != 0 || r.stdout != string(want) {
			t.Errorf("%v: exit %d, %q; want %q", args, r.code, r.stdout, want)
		}
	}
}

// avbNotWarnings reports whether stderr holds more than warnings.
func avbNotWarnings(stderr string) bool {
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "avbtool.py: warning: ") {
			return true
		}
	}
	return false
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestAvbtoolFrontVerifyImage: verify_image on each case's output, copied
// to PARTITION.img, prints what avbtool printed (stdout, then stderr) and
// exits as it did (verify.tsv). include-descriptors, where avbtool died of
// a Python traceback on the absent system.img, is compared up to it.
func TestAvbtoolFrontVerifyImage(t *testing.T) {
	cases := map[string]fronttest.AVBCase{}
	for _, c := range fronttest.AVBCases(t) {
		cases[c.Name] = c
	}
	rows := fronttest.AVBTSV(t, filepath.Join(avbVerifyDir, "verify.tsv"))
	if len(rows) < 60 {
		t.Fatalf("%d rows in verify.tsv", len(rows))
	}
	for _, row := range rows {
		c := cases[row[0]]
		var args []string
		if err := json.Unmarshal([]byte(row[1]), &args); err != nil {
			t.Fatal(err)
		}
		wantCode, _ := strconv.Atoi(row[2])
		t.Run(row[0]+"/"+strings.TrimSuffix(filepath.Base(row[3]), ".txt"), func(t *testing.T) {
			fronttest.AVBWorkDir(t, c)
			if r := run(t, c.Args...); r.code != 0 {
				t.Fatalf("add_hashtree_footer: exit %d", r.code)
			}
			if img := args[indexOf(args, "--image")+1]; img != "image.img" {
				if err := os.Rename("image.img", img); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(filepath.Join(avbVerifyDir, row[3]))
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, args...)
			if r.code != wantCode {
				t.Errorf("exit %d, want %d", r.code, wantCode)
			}
			got := r.stdout + r.stderr
			if tb := strings.Index(string(want), "Traceback"); tb >= 0 {
				// Ours says which file is missing in one line instead.
				if !strings.HasPrefix(got, string(want[:tb])) || !strings.Contains(r.stderr, "system.img") {
					t.Errorf("output:\n%s\nwant it to start with:\n%s", got, want[:tb])
				}
				return
			}
			if got != string(want) {
				t.Errorf("output:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestAvbtoolFrontEraseFooter: erase_footer (and --keep_hashtree) leaves
// the file avbtool left (erase_footer.tsv).
func TestAvbtoolFrontEraseFooter(t *testing.T) {
	cases := map[string]fronttest.AVBCase{}
	for _, c := range fronttest.AVBCases(t) {
		cases[c.Name] = c
	}
	for i, row := range fronttest.AVBTSV(t, filepath.Join(fronttest.AVBVectors, "erase_footer.tsv")) {
		var args []string
		if err := json.Unmarshal([]byte(row[1]), &args); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%d-%s", i, row[0]), func(t *testing.T) {
			c := cases[row[0]]
			fronttest.AVBWorkDir(t, c)
			if r := run(t, c.Args...); r.code != 0 {
				t.Fatalf("add_hashtree_footer: exit %d", r.code)
			}
			if r := run(t, args...); r.code != 0 || r.stdout != "" {
				t.Fatalf("%v: exit %d", args, r.code)
			}
			size, sum := fronttest.AVBFileSum(t, "image.img")
			if strconv.FormatInt(size, 10) != row[2] || sum != row[3] {
				t.Errorf("%d bytes, sha256 %s; want %s, %s", size, sum, row[2], row[3])
			}
		})
	}
}

// TestAvbtoolFrontCalcMaxImageSize: --calc_max_image_size prints avbtool's
// number for every row of calc_max_image_size.tsv, FEC included.
func TestAvbtoolFrontCalcMaxImageSize(t *testing.T) {
	rows := fronttest.AVBTSV(t, filepath.Join(fronttest.AVBVectors, "calc_max_image_size.tsv"))
	for _, row := range rows {
		var args []string
		if err := json.Unmarshal([]byte(row[5]), &args); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), "avbtool", args, &stdout, &stderr)
		if code != 0 || stdout.String() != row[6]+"\n" {
			t.Errorf("%v: exit %d, %q (%s); want %s", args, code, stdout.String(), stderr.String(), row[6])
		}
	}
}

// TestAvbtoolFrontExtractPublicKey: extract_public_key writes avbtool's
// blob, from the private and the public PEM.
func TestAvbtoolFrontExtractPublicKey(t *testing.T) {
	dir := t.TempDir()
	for _, bits := range []string{"2048", "4096", "8192"} {
		want, err := os.ReadFile(filepath.Join(fronttest.AVBVectors, "keys", "rsa"+bits+".avbpubkey"))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"rsa" + bits + ".pem", "rsa" + bits + ".pub.pem"} {
			out := filepath.Join(dir, key+".avbpubkey")
			r := run(t, "extract_public_key", "--key", filepath.Join(fronttest.AVBVectors, "keys", key), "--output", out)
			got, err := os.ReadFile(out)
			if r.code != 0 || err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: exit %d, %v; the blob is not avbtool's", key, r.code, err)
			}
		}
	}
}
