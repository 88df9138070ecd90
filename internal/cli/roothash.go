package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// The root hash as the commands take it, --root-hash or --root-hash-file:
// errors are *verity.Error values of the library's kinds, so that they
// are reported as its own.

// maxRootHashFile bounds what is read of a root hash file: a root hash is
// at most 128 hex digits, and room is left for spaces and a newline.
const maxRootHashFile = 4096

// ReadRootHashFile reads a root hash written in hex (as veritygen
// --root-hash-file writes it; spaces and newlines around it are ignored)
// from path, which may be a pipe or a FIFO (bash's <(...)): the wait for
// its writer ends when ctx does (with ctx's error). A file of more than
// 4 KiB is refused unread: no root hash is that long.
func ReadRootHashFile(ctx context.Context, path string) ([]byte, error) {
	const role = "--root-hash-file"
	b, err := safefile.ReadSmall(ctx, path, maxRootHashFile)
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, safefile.Interrupted(ctx, role+" "+path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, &verity.Error{Kind: verity.KindInput, Hint: "the file holds the root hash in hex, as veritygen --root-hash-file writes it",
			Err: fmt.Errorf("--root-hash-file %s is larger than any root hash (more than %d bytes): is it the right file?", path, maxRootHashFile)}
	case errors.Is(err, safefile.ErrNotFile):
		return nil, &verity.Error{Kind: verity.KindInput, Err: fmt.Errorf("%s %s %s", role, path, safefile.Message(err))}
	default:
		return nil, &verity.Error{Kind: verity.KindIO, Err: fmt.Errorf("reading %s %s: %s", role, path, safefile.Message(err))}
	}
	return ParseRootHash("root hash in "+path, strings.TrimSpace(string(b)))
}

// ParseRootHash decodes a root hash given in hex; what names it in errors
// (e.g. "--root-hash").
func ParseRootHash(what, text string) ([]byte, error) {
	const hint = "the root hash is the hex string veritygen prints as \"Root hash\""
	root, err := hex.DecodeString(text)
	if err != nil {
		var ie hex.InvalidByteError
		switch {
		case errors.As(err, &ie):
			err = fmt.Errorf("%s %q is not hexadecimal: bad character %q", what, text, rune(ie))
		case errors.Is(err, hex.ErrLength):
			err = fmt.Errorf("%s %q has an odd number of hex digits", what, text)
		default:
			err = fmt.Errorf("%s %q: %v", what, text, err)
		}
		return nil, &verity.Error{Kind: verity.KindInput, Err: err, Hint: hint}
	}
	if len(root) == 0 {
		return nil, &verity.Error{Kind: verity.KindInput, Err: fmt.Errorf("%s is empty", what)}
	}
	return root, nil
}
