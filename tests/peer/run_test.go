package peer_test

// Running a case: its inputs are made once in a staging directory (the
// preparation runs there, by the real veritysetup), copied to one
// directory per tool, and the compared command runs in each. The outcome
// is the exit code, stdout, stderr and the state of every file after.

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// commandTimeout bounds one run of either tool; no generated case comes
// near it.
const commandTimeout = 2 * time.Minute

// side is what one tool did.
type side struct {
	code           int
	stdout, stderr string
	gist           string            // stderr's first message line
	files          map[string]string // path -> state, after the run
}

// result is a case run by both tools.
type result struct {
	c      *peerCase
	args   []string // the compared line, $ROOT expanded
	root   string   // the preparation's root hash
	before map[string]string
	real   side
	ours   side
	diffs  []string // "code", "stdout", "gist", "files"
}

func (r *result) differs(what string) bool {
	for _, d := range r.diffs {
		if d == what {
			return true
		}
	}
	return false
}

// tools names the two commands.
type tools struct{ real, ours string }

// runCase runs c in dir (made empty for it).
func runCase(ctx context.Context, tl tools, dir string, c *peerCase) (*result, error) {
	stage, dirs := filepath.Join(dir, "stage"), [2]string{filepath.Join(dir, "real"), filepath.Join(dir, "ours")}
	for _, d := range []string{stage, dirs[0], dirs[1]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	r := &result{c: c}
	if err := makeInputs(stage, c); err != nil {
		return nil, err
	}
	for _, l := range c.links {
		if err := makeLink(stage, l); err != nil {
			return nil, err
		}
	}
	if c.prep != nil {
		o, err := run(ctx, tl.real, stage, c.prep)
		if err != nil {
			return nil, err
		}
		r.root = rootHashOf(o.stdout)
	}
	if err := damage(stage, c, r.root); err != nil {
		return nil, err
	}
	linked := map[string]bool{}
	for _, l := range c.links {
		linked[l.name] = true
	}
	for _, d := range dirs {
		if err := copyTree(stage, d, linked); err != nil {
			return nil, err
		}
		for _, l := range c.links {
			if err := makeLink(d, l); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if r.before, err = snapshot(dirs[0], c); err != nil {
		return nil, err
	}
	r.args = expand(c.args, r.root)
	for i, bin := range []string{tl.real, tl.ours} {
		o, err := run(ctx, bin, dirs[i], r.args)
		if err != nil {
			return nil, err
		}
		if o.files, err = snapshot(dirs[i], c); err != nil {
			return nil, err
		}
		o.gist = gist(o.stderr)
		if i == 0 {
			r.real = *o
		} else {
			r.ours = *o
		}
	}
	if r.real.code != r.ours.code {
		r.diffs = append(r.diffs, "code")
	}
	if normStdout(r.real.stdout, c) != normStdout(r.ours.stdout, c) {
		r.diffs = append(r.diffs, "stdout")
	}
	if r.real.gist != r.ours.gist {
		r.diffs = append(r.diffs, "gist")
	}
	if fmt.Sprint(r.real.files) != fmt.Sprint(r.ours.files) {
		r.diffs = append(r.diffs, "files")
	}
	return r, nil
}

// run runs bin as "veritysetup" (its usage errors start with the name it
// is called by) in dir.
func run(ctx context.Context, bin, dir string, args []string) (*side, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Args = append([]string{"veritysetup"}, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := &side{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s %s: no end after %v", bin, strings.Join(args, " "), commandTimeout)
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	case err != nil:
		return nil, err
	}
	return o, nil
}

var rootLine = regexp.MustCompile(`(?m)^Root hash:\s+([0-9a-f]+)$`)

func rootHashOf(stdout string) string {
	if m := rootLine.FindStringSubmatch(stdout); m != nil {
		return m[1]
	}
	return ""
}

// expand replaces the $ROOT forms in words: the root hash, and spoiled
// versions of it (the last digit changed, upper case, half of it).
func expand(words []string, root string) []string {
	if root == "" {
		root = strings.Repeat("0", 64)
	}
	bad := []byte(root)
	bad[len(bad)-1] = "1032547698badcfe"[strings.IndexByte("0123456789abcdef", bad[len(bad)-1])]
	r := strings.NewReplacer("$ROOT_BAD", string(bad), "$ROOT_UPPER", strings.ToUpper(root),
		"$ROOT_SHORT", root[:len(root)/2], "$ROOT", root)
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = r.Replace(w)
	}
	return out
}

// keystream returns size bytes of AES-128-CTR keystream of key from a zero
// IV: what `openssl enc -aes-128-ctr -K key -iv 0` makes of zeros.
func keystream(key []byte, size int64, w io.Writer) error {
	b, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	s := cipher.NewCTR(b, make([]byte, aes.BlockSize))
	buf := make([]byte, 1<<16)
	for size > 0 {
		n := min(int64(len(buf)), size)
		clear(buf[:n])
		s.XORKeyStream(buf[:n], buf[:n])
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return nil
}

func makeInputs(dir string, c *peerCase) error {
	for _, f := range c.files {
		p := filepath.Join(dir, f.name)
		if f.kind == "dir" {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		out, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if f.kind == "random" {
			err = keystream(f.key, f.size, out)
		} else {
			err = out.Truncate(f.size)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func makeLink(dir string, l link) error {
	p := filepath.Join(dir, l.name)
	os.Remove(p)
	if l.symbolic {
		return os.Symlink(l.target, p)
	}
	return os.Link(filepath.Join(dir, l.target), p)
}

// damage applies the case's changes after the preparation.
func damage(dir string, c *peerCase, root string) error {
	for _, p := range c.pokes {
		f, err := os.OpenFile(filepath.Join(dir, p.name), os.O_WRONLY, 0)
		if err != nil {
			continue // the preparation failed to make it: nothing to damage
		}
		_, err = f.WriteAt(p.data, p.off)
		f.Close()
		if err != nil {
			return err
		}
	}
	names := make([]string, 0, len(c.truncs))
	for n := range c.truncs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.Truncate(filepath.Join(dir, n), c.truncs[n]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if c.rootFile != nil {
		content := expand([]string{*c.rootFile}, root)[0]
		if err := os.WriteFile(filepath.Join(dir, "rh"), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the regular files and directories of src into dst,
// holes kept (a hash area past 8 GB stays cheap), but not the names in
// skip (links, made again).
func copyTree(src, dst string, skip map[string]bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." || skip[rel] {
			return nil
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		err = extents(in, info.Size(), func(off int64, b []byte) error {
			_, err := out.WriteAt(b, off)
			return err
		})
		if err == nil {
			err = out.Truncate(info.Size())
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(to, info.Mode().Perm()) // past the umask
		}
		return err
	})
}

// extents calls fn with the data of f (size bytes), piece by piece,
// skipping its holes.
func extents(f *os.File, size int64, fn func(off int64, b []byte) error) error {
	fd := int(f.Fd())
	buf := make([]byte, 1<<16)
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil
		}
		if err != nil {
			return err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		for p := start; p < end; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), end-p)], p)
			if n > 0 {
				if err := fn(p, buf[:n]); err != nil {
					return err
				}
			}
			p += int64(n)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if n == 0 {
				break
			}
		}
		off = end
	}
	return nil
}

// contentDigest is a digest of the bytes of a file that does not depend on
// where its holes are: the sha256 of each 512-byte block that is not all
// zeros, with its offset.
func contentDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	var zero [512]byte
	var pos [8]byte
	err = extents(f, info.Size(), func(off int64, b []byte) error {
		// extents start on file system blocks, so on 512-byte blocks
		for i := 0; i < len(b); i += 512 {
			blk := b[i:min(i+512, len(b))]
			if bytes.Equal(blk, zero[:len(blk)]) {
				continue
			}
			binary.LittleEndian.PutUint64(pos[:], uint64(off)+uint64(i))
			h.Write(pos[:])
			h.Write(blk)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}

// snapshot returns the state of every name under dir: a directory, a
// link's target, or a file's size, mode and content (only its size when a
// random salt or UUID makes the content differ by design).
func snapshot(dir string, c *peerCase) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			out[rel] = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			out[rel] = "link->" + t
		case info.Mode().IsRegular():
			s := fmt.Sprintf("%d bytes %o", info.Size(), info.Mode().Perm())
			if !c.randomSalt && !c.randomUUID {
				d, err := contentDigest(p)
				if err != nil {
					return err
				}
				s += " " + d
			}
			out[rel] = s
		default:
			out[rel] = info.Mode().Type().String()
		}
		return nil
	})
	return out, err
}

var (
	debugLine = regexp.MustCompile(`(?m)^# .*\n`)
	saltLine  = regexp.MustCompile(`(?m)^(Salt|Root hash):(\s+)([0-9a-f]+)$`)
	uuidLine  = regexp.MustCompile(`(?m)^(UUID:\s+)(\S+)$`)
)

// normStdout drops --debug's lines (libcryptsetup's own trace, which the
// front does not imitate) and, for a case with a random salt or UUID, the
// values that are random by design (their length kept).
func normStdout(s string, c *peerCase) string {
	s = debugLine.ReplaceAllString(s, "")
	if c.randomSalt {
		s = saltLine.ReplaceAllStringFunc(s, func(m string) string {
			sub := saltLine.FindStringSubmatch(m)
			return fmt.Sprintf("%s:%s<%d hex digits>", sub[1], sub[2], len(sub[3]))
		})
	}
	if c.randomUUID {
		s = uuidLine.ReplaceAllString(s, "${1}<uuid>")
	}
	return s
}

// gist is the first message on stderr: popt's usage text and the debug
// trace skipped, the name the command was called by cut off.
func gist(stderr string) string {
	inUsage := false
	for l := range strings.Lines(stderr) {
		switch {
		case strings.HasPrefix(l, "Usage: "):
			inUsage = true
			continue
		case inUsage && strings.HasPrefix(l, " "):
			continue
		}
		inUsage = false
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "# ") {
			continue
		}
		return strings.TrimPrefix(l, "veritysetup: ")
	}
	return ""
}

// shellQuote quotes a word for sh.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./+:,") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func shellLine(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// snippet is a shell script that makes the case's inputs and runs both
// tools on them, each in a fresh directory.
func (r *result) snippet(tl tools, seed uint64) string {
	c := r.c
	var b strings.Builder
	fmt.Fprintf(&b, "# case %d of seed %d (go test ./tests/peer -run TestVeritysetupPeer -v -peer.seed=%d -peer.case=%d)\n",
		c.index, seed, seed, c.index)
	fmt.Fprintf(&b, "# OURS: go build -o /tmp/vg/veritygen ./cmd/veritygen && ln -sf veritygen /tmp/vg/veritysetup\n")
	b.WriteString("setup() {\n")
	for _, f := range c.files {
		switch f.kind {
		case "dir":
			fmt.Fprintf(&b, "  mkdir -p %s\n", shellQuote(f.name))
		case "random":
			fmt.Fprintf(&b, "  head -c %d /dev/zero | openssl enc -aes-128-ctr -K %x -iv %s > %s\n", f.size, f.key,
				strings.Repeat("0", 32), shellQuote(f.name))
		default:
			fmt.Fprintf(&b, "  truncate -s %d %s\n", f.size, shellQuote(f.name))
		}
	}
	for _, l := range c.links {
		if l.symbolic {
			fmt.Fprintf(&b, "  ln -sf %s %s\n", shellQuote(l.target), shellQuote(l.name))
		} else {
			fmt.Fprintf(&b, "  ln -f %s %s\n", shellQuote(l.target), shellQuote(l.name))
		}
	}
	if c.prep != nil {
		fmt.Fprintf(&b, "  %s %s >/dev/null  # root hash %s\n", tl.real, shellLine(c.prep), r.root)
	}
	for _, p := range c.pokes {
		var esc strings.Builder
		for _, x := range p.data {
			fmt.Fprintf(&esc, `\%03o`, x)
		}
		fmt.Fprintf(&b, "  printf '%s' | dd of=%s bs=1 seek=%d conv=notrunc status=none\n", esc.String(), shellQuote(p.name), p.off)
	}
	for n, size := range c.truncs {
		fmt.Fprintf(&b, "  truncate -s %d %s\n", size, shellQuote(n))
	}
	if c.rootFile != nil {
		fmt.Fprintf(&b, "  printf '%%s' %s > rh\n", shellQuote(expand([]string{*c.rootFile}, r.root)[0]))
	}
	b.WriteString("  :\n}\n")
	fmt.Fprintf(&b, "for tool in %s /tmp/vg/veritysetup; do\n", tl.real)
	fmt.Fprintf(&b, "  d=$(mktemp -d) && (cd \"$d\" && setup && \"$tool\" %s; echo \"exit $?\"; ls -l; sha256sum -- * 2>/dev/null)\n", shellLine(r.args))
	b.WriteString("done\n")
	return b.String()
}

// report shows the two outcomes side by side.
func (r *result) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: differs in %v\n  line: veritysetup %s\n", r.c.describe(), r.diffs, shellLine(r.args))
	if r.c.prep != nil {
		fmt.Fprintf(&b, "  after: veritysetup %s (root %s)\n", shellLine(r.c.prep), r.root)
	}
	if r.c.rootFile != nil {
		fmt.Fprintf(&b, "  rh holds %q\n", expand([]string{*r.c.rootFile}, r.root)[0])
	}
	for _, s := range []struct {
		name string
		o    *side
	}{{"real", &r.real}, {"ours", &r.ours}} {
		fmt.Fprintf(&b, "  %s: exit %d, gist %q\n", s.name, s.o.code, s.o.gist)
		if s.o.gist != strings.TrimSpace(s.o.stderr) {
			fmt.Fprintf(&b, "  %s stderr: %q\n", s.name, strings.TrimSpace(s.o.stderr))
		}
		if r.differs("stdout") {
			fmt.Fprintf(&b, "  %s stdout: %q\n", s.name, normStdout(s.o.stdout, r.c))
		}
		if r.differs("files") {
			fmt.Fprintf(&b, "  %s files: %v\n", s.name, s.o.files)
		}
	}
	if r.differs("files") {
		fmt.Fprintf(&b, "  before: %v\n", r.before)
	}
	return b.String()
}
