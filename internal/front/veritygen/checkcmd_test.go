package veritygen

// The check command: the veritycheck line the report prints checks what
// veritygen just wrote (issue 21 item 15).

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/internal/front/fronttest"
	"github.com/veritytree/veritytree/internal/front/veritycheck"
)

// shellWords splits a command line as a POSIX shell does for the quoting
// cli.CommandLine uses: words apart by spaces, single quotes, and a quote
// escaped by a backslash between two quoted parts.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.IndexByte("\"$`*?[]{}()<>|&;#~!\t\n", c) >= 0:
			t.Fatalf("unquoted %q in %q", c, line)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestCheckCommand: for each layout, the report's "Check with:" line and
// --json's check_command are the same command, and run through
// veritycheck it verifies what veritygen wrote (exit 0).
func TestCheckCommand(t *testing.T) {
	for _, c := range []struct {
		name  string
		size  int64
		flags []string
		hash  string // "" for the default, "DATA" for DATA itself
	}{
		{name: "plain tree", size: 40 * 4096},
		{name: "HASH given", size: 40 * 4096, hash: "tree 'one'.bin"},
		{name: "no superblock", size: 40*4096 + 104, flags: []string{"--no-superblock", "--hash=sha1", "--data-block-size=1024", "--hash-block-size=512"}, hash: "t.bin"},
		{name: "no superblock, no salt, format 0", size: 40 * 4096, flags: []string{"--no-superblock", "--salt=-", "--format=0"}},
		{name: "append", size: 40*4096 + 8, flags: []string{"--append"}},
		{name: "append fec", size: 300*4096 + 8, flags: []string{"--append", "--fec", "--fec-roots=8", "--hash=blake2b-256"}},
		{name: "HASH = DATA with offset", size: 100 * 4096, flags: []string{"--hash-offset=262144", "--data-blocks=64"}, hash: "DATA"},
		{name: "HASH = DATA with offset, no superblock", size: 100 * 4096, flags: []string{"--hash-offset=262144", "--data-blocks=64", "--no-superblock"}, hash: "DATA"},
		{name: "FEC file", size: 40 * 4096, flags: []string{"--fec-device=FEC", "--fec-offset=8192"}},
		{name: "FEC in HASH", size: 40 * 4096, flags: []string{"--fec-device=HASH", "--fec-offset=1048576"}, hash: "h.img"},
		{name: "AVB unsigned", size: 40 * 4096, flags: []string{"--append", "--fec", "--avb"}},
		{name: "AVB signed", size: 40 * 4096, flags: []string{"--append", "--avb", "--avb-algorithm=SHA256_RSA2048", "--avb-key=KEYS/rsa2048.pem"}},
		{name: "AVB no footer", size: 40 * 4096, flags: []string{"--append", "--avb", "--do-not-append-vbmeta-image", "--output-vbmeta-image=VB"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "my data.img")
			fronttest.Image(t, data, c.size, 7)
			args := make([]string, 0, len(c.flags)+2)
			hash := ""
			switch c.hash {
			case "":
			case "DATA":
				hash = data
			default:
				hash = filepath.Join(dir, c.hash)
			}
			for _, f := range c.flags {
				f = strings.Replace(f, "=FEC", "="+filepath.Join(dir, "parity.fec"), 1)
				f = strings.Replace(f, "=HASH", "="+hash, 1)
				f = strings.Replace(f, "=KEYS", "="+filepath.Join(fronttest.AVBVectors, "keys"), 1)
				f = strings.Replace(f, "=VB", "="+filepath.Join(dir, "vbmeta.img"), 1)
				args = append(args, f)
			}
			args = append(args, data)
			if hash != "" {
				args = append(args, hash)
			}
			before, err := os.ReadFile(data)
			if err != nil {
				t.Fatal(err)
			}
			text := cliOK(t, args...).stdout
			// A tree without superblock is headed as one, without a UUID
			// line (issue 21 item 17).
			noSB := strings.Contains(strings.Join(c.flags, " "), "--no-superblock") || strings.Contains(strings.Join(c.flags, " "), "--append")
			if noSB != strings.HasPrefix(text, "VERITY hash tree (no superblock) in ") || noSB == strings.Contains(text, "\nUUID:") {
				t.Errorf("report's heading:\n%s", text)
			}
			line := ""
			for _, l := range strings.Split(text, "\n") {
				if s, ok := strings.CutPrefix(l, "Check with:      \t"); ok {
					line = s
				}
			}
			if line == "" {
				t.Fatalf("no check command in\n%s", text)
			}
			// The same run again, for --json (an --append writes the same
			// bytes again with the salt given).
			var salt string
			for _, l := range strings.Split(text, "\n") {
				if s, ok := strings.CutPrefix(l, "Salt:            \t"); ok {
					salt = s
				}
			}
			if !strings.Contains(strings.Join(c.flags, " "), "--append") {
				if err := os.WriteFile(data, before, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(c.name, "AVB") {
				// --avb starts again from the image its footer names.
				os.Remove(filepath.Join(dir, "vbmeta.img"))
				if err := os.WriteFile(data, before, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			jargs := append([]string{"--json", "--salt=" + salt}, args...)
			if strings.Contains(strings.Join(c.flags, " "), "--salt") {
				jargs = append([]string{"--json"}, args...)
			}
			if strings.Contains(line, "--uuid") {
				t.Errorf("check command gives --uuid: %s", line)
			}
			var res struct {
				CheckCommand string `json:"check_command"`
			}
			if err := json.Unmarshal([]byte(cliOK(t, jargs...).stdout), &res); err != nil {
				t.Fatal(err)
			}
			if res.CheckCommand != line {
				t.Errorf("check_command\n%s\nreport's\n%s", res.CheckCommand, line)
			}
			words := shellWords(t, line)
			if words[0] != "veritycheck" {
				t.Fatalf("check command %q", line)
			}
			var stdout, stderr bytes.Buffer
			if code := veritycheck.Main(context.Background(), "veritycheck", words[1:], &stdout, &stderr); code != 0 {
				t.Fatalf("%s\n-> exit %d\n%s%s", line, code, stdout.Bytes(), stderr.Bytes())
			}
			if !strings.Contains("\n"+stdout.String(), "\nverified:") {
				t.Errorf("%s:\n%s", line, stdout.Bytes())
			}
		})
	}
}
