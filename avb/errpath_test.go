package avb

import (
	"errors"
	"testing"

	"github.com/veritytree/veritytree/verity"
)

// Whether an error names its image is in its Path, not in its text: a
// message that merely contains the path's letters is still prefixed once.
func TestErrorNamesFile(t *testing.T) {
	const path = "img"
	named := prefixErr(path, inputErr("", "hash descriptor: image size %d is beyond the file's %d bytes", 9, 8))
	if !namesFile(named, path) || named.Error() != "img: hash descriptor: image size 9 is beyond the file's 8 bytes" {
		t.Errorf("prefixed: names it %v, text %q", namesFile(named, path), named)
	}
	var ve *verity.Error
	if !errors.As(named, &ve) || ve.Path != path || ve.Kind != verity.KindInput {
		t.Errorf("prefixed: %+v", ve)
	}
	coincidence := inputErr("", "the vbmeta image is malformed")
	if namesFile(coincidence, path) {
		t.Errorf("%q is taken for naming %s", coincidence, path)
	}
	key := prefixName("key "+path, inputErr("", "not a key"))
	if namesFile(key, path) || key.Error() != "key img: not a key" {
		t.Errorf("key: names the image %v, text %q", namesFile(key, path), key)
	}
	quoted := keepPath(ioErr("hashing: %v", named), named)
	if !namesFile(quoted, path) {
		t.Errorf("%q lost the Path of what it quotes", quoted)
	}
}
