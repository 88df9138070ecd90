package cli

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/veritytree/veritytree/merkle"
)

// FuzzParseHex: ParseHex accepts exactly what encoding/hex does, decodes
// to bytes that encode back to the input (in lower case), and names the
// value in every error, on one line.
func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"", "00", "4f2A", "abc", "zz", "0g", "é0", "00\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseHex("salt", s)
		want, werr := hex.DecodeString(s)
		if (err == nil) != (werr == nil) {
			t.Fatalf("ParseHex(%q) error %v, encoding/hex %v", s, err, werr)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "salt ") {
				t.Fatalf("error does not name the value: %v", err)
			}
			return
		}
		if hex.EncodeToString(b) != strings.ToLower(s) || string(b) != string(want) {
			t.Fatalf("ParseHex(%q) = %x", s, b)
		}
	})
}

var uuidForm = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// FuzzParseUUID: ParseUUID accepts exactly the text form, and FormatUUID
// gives it back in lower case.
func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{"a60c98d2-ae9b-4865-bfcb-b4e3ace11033", "A60C98D2-AE9B-4865-BFCB-B4E3ACE11033",
		"a60c98d2ae9b4865bfcbb4e3ace11033", "a60c98d2-ae9b-4865-bfcb-b4e3ace1103", "g60c98d2-ae9b-4865-bfcb-b4e3ace11033",
		"a60c98d2-ae9b-4865-bfcb+b4e3ace11033", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUUID(s)
		if (err == nil) != uuidForm.MatchString(s) {
			t.Fatalf("ParseUUID(%q) error %v", s, err)
		}
		if err == nil && FormatUUID(u) != strings.ToLower(s) {
			t.Fatalf("ParseUUID(%q) then FormatUUID = %q", s, FormatUUID(u))
		}
	})
}

// FuzzTreeFlags: any values of the tree flags, as typed on the command
// line, are refused with a one-line *Error or give parameters that hold
// what was typed, with offsets that later arithmetic cannot wrap; and
// NewGeometry then accepts them or refuses them as invalid parameters.
func FuzzTreeFlags(f *testing.F) {
	f.Add("sha256", "4f2a", "a60c98d2-ae9b-4865-bfcb-b4e3ace11033", "1", "4096", "4096", "262144", "0", false)
	f.Add("blake2b-256", "-", "", "0", "512", "1024", "1", "4096", true)
	f.Add("sha1", "", "x", "2", "3", "0", "0", "18446744073709551104", false)
	f.Add("md5", "zz", "", "-1", "524288", "1048576", "18446744073709551615", "9223372036854775807", true)
	f.Fuzz(func(t *testing.T, hash, salt, uuid, format, dbs, hbs, blocks, offset string, noSB bool) {
		var tf TreeFlags
		fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		fs.SetOutput(nopWriter{})
		tf.Register(fs)
		args := []string{"--hash=" + hash, "--format=" + format, "--data-block-size=" + dbs, "--hash-block-size=" + hbs,
			"--hash-offset=" + offset, fmt.Sprintf("--no-superblock=%v", noSB)}
		if salt != "" {
			args = append(args, "--salt="+salt)
		}
		if uuid != "" {
			args = append(args, "--uuid="+uuid)
		}
		if blocks != "" {
			args = append(args, "--data-blocks="+blocks)
		}
		if err := fs.Parse(args); err != nil {
			return // pflag's own errors: not numbers, out of range
		}
		o, err := tf.Options()
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			if strings.Contains(strings.ToLower(err.Error()), "negative") {
				t.Fatalf("error speaks of a negative value: %v", err)
			}
			return
		}
		// The library takes what the flags accept, and the format given.
		p, err := o.Params()
		if err != nil {
			t.Fatalf("flags accepted, options refused: %v", err)
		}
		if p.Format() != tf.Format {
			t.Fatalf("--format=%s gave format %d", format, p.Format())
		}
		if p.Hash == nil || !strings.EqualFold(p.Hash.Name(), hash) {
			t.Fatalf("--hash=%s gave %v", hash, p.Hash)
		}
		switch {
		case salt == "-" && (p.Salt == nil || len(p.Salt) != 0):
			t.Fatalf("--salt=- gave %x", p.Salt)
		case salt != "" && salt != "-" && hex.EncodeToString(p.Salt) != strings.ToLower(salt):
			t.Fatalf("--salt=%s gave %x", salt, p.Salt)
		case salt == "" && p.Salt != nil:
			t.Fatalf("no --salt gave %x", p.Salt)
		}
		if uuid != "" && FormatUUID(p.UUID) != strings.ToLower(uuid) {
			t.Fatalf("--uuid=%s gave %s", uuid, FormatUUID(p.UUID))
		}
		if p.Superblock == noSB {
			t.Fatalf("--no-superblock=%v gave Superblock %v", noSB, p.Superblock)
		}
		if p.HashOffset > 1<<63-uint64(p.HashBlockSize)-merkle.SuperblockSize || p.HashOffset%merkle.SuperblockSize != 0 {
			t.Fatalf("--hash-offset=%s accepted as %d", offset, p.HashOffset)
		}
		if p.DataBlocks == 0 && blocks != "" {
			t.Fatalf("--data-blocks=%s accepted as 0", blocks)
		}
		if p.DataBlocks == 0 {
			p.DataBlocks = 1
		}
		if _, err := merkle.NewGeometry(p); err != nil && !errors.Is(err, merkle.ErrInvalidParams) {
			t.Fatalf("NewGeometry: %v", err)
		}
	})
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
