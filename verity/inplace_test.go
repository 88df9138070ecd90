package verity

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/veritytree/veritytree/merkle"
)

// TestFormatInPlaceKeepsBytes: an existing HASH that is not a tree is
// written in place, as veritysetup writes it: the superblock and the tree
// are Format's, every other byte (between the superblock and the tree,
// past the tree) and the file's mode are kept.
func TestFormatInPlaceKeepsBytes(t *testing.T) {
	dir := t.TempDir()
	dataPath := filepath.Join(dir, "data.img")
	fmtImage(t, dataPath, 16*4096)
	ref, err := Format(context.Background(), dataPath, filepath.Join(dir, "ref.verity"), fixedOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := fmtRead(t, ref.Layout.HashPath)

	hashPath := filepath.Join(dir, "existing.bin")
	old := bytes.Repeat([]byte("not a tree "), 2000) // 22000 bytes, past the tree's 8192
	if err := os.WriteFile(hashPath, old, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hashPath, 0o640); err != nil {
		t.Fatal(err)
	}
	opts := fixedOptions()
	opts.InPlace = true
	res, err := Format(context.Background(), dataPath, hashPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.RootHash, ref.RootHash) {
		t.Errorf("root hash %x, Format's %x", res.RootHash, ref.RootHash)
	}
	got := fmtRead(t, hashPath)
	g := res.Layout.Geometry
	tree := g.TreeOffset()
	switch {
	case len(got) != len(old):
		t.Fatalf("HASH is %d bytes, want its %d kept", len(got), len(old))
	case !bytes.Equal(got[:merkle.SuperblockSize], want[:merkle.SuperblockSize]):
		t.Error("the superblock is not Format's")
	case !bytes.Equal(got[merkle.SuperblockSize:tree], old[merkle.SuperblockSize:tree]):
		t.Error("the bytes between the superblock and the tree were not kept")
	case !bytes.Equal(got[tree:g.HashEnd()], want[tree:g.HashEnd()]):
		t.Error("the tree is not Format's")
	case !bytes.Equal(got[g.HashEnd():], old[g.HashEnd():]):
		t.Error("the bytes past the tree were not kept")
	}
	if info, err := os.Stat(hashPath); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("HASH mode %v (%v), want 0640 kept", info.Mode().Perm(), err)
	}
}

// TestFormatInPlaceNewFiles: new outputs are created 0600, as veritysetup
// creates them, and the root hash file holds the root hash.
func TestFormatInPlaceNewFiles(t *testing.T) {
	dir := t.TempDir()
	dataPath := filepath.Join(dir, "data.img")
	fmtImage(t, dataPath, 16*4096)
	opts := fixedOptions()
	opts.InPlace = true
	opts.FECDevice = filepath.Join(dir, "fec.bin")
	opts.RootHashFile = filepath.Join(dir, "root.hex")
	res, err := Format(context.Background(), dataPath, filepath.Join(dir, "tree.bin"), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tree.bin", "fec.bin", "root.hex"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", name, info.Mode().Perm(), err)
		}
	}
	if got := string(fmtRead(t, opts.RootHashFile)); got != hex.EncodeToString(res.RootHash) {
		t.Errorf("root hash file holds %q, want %x", got, res.RootHash)
	}
}

// TestFormatInPlaceCanceled: a run stopped before hashing leaves no file it
// created (veritysetup would leave an empty HASH).
func TestFormatInPlaceCanceled(t *testing.T) {
	dir := t.TempDir()
	dataPath := filepath.Join(dir, "data.img")
	fmtImage(t, dataPath, 16*4096)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := fixedOptions()
	opts.InPlace = true
	opts.FECDevice = filepath.Join(dir, "fec.bin")
	if _, err := Format(ctx, dataPath, filepath.Join(dir, "tree.bin"), opts); err == nil {
		t.Fatal("a canceled run succeeded")
	}
	if got := fmtListing(t, dir); got != "data.img:65536" {
		t.Errorf("left %s, want only data.img", got)
	}
}

// TestFormatInPlaceOptions: InPlace refuses Append (veritysetup does not
// append) before anything is written, and PlanFormat, like Format, lets it
// write into a HASH that Format alone would refuse as foreign.
func TestFormatInPlaceOptions(t *testing.T) {
	dir := t.TempDir()
	dataPath := filepath.Join(dir, "data.img")
	data := fmtImage(t, dataPath, 16*4096)
	opts := fixedOptions()
	opts.InPlace, opts.Append = true, true
	_, err := Format(context.Background(), dataPath, "", opts)
	fmtWantError(t, err, KindParam, "Append", "FormatOptions.Append cannot be used with FormatOptions.InPlace")
	if !bytes.Equal(fmtRead(t, dataPath), data) {
		t.Error("DATA changed")
	}

	hashPath := filepath.Join(dir, "existing.bin")
	if err := os.WriteFile(hashPath, bytes.Repeat([]byte("not a tree "), 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = PlanFormat(dataPath, hashPath, fixedOptions())
	fmtWantError(t, err, KindRefused, "", "is not a tree Format could have written")
	opts = fixedOptions()
	opts.InPlace = true
	if _, err := PlanFormat(dataPath, hashPath, opts); err != nil {
		t.Errorf("PlanFormat with InPlace: %v", err)
	}
}

// TestFormatInPlaceEmptyTreeNoSuperblock: a one-block DATA has no hash
// block, and without a superblock veritysetup writes nothing, so HASH keeps
// its size (0 for a new one) whatever the hash offset; with a superblock,
// or with a tree, HASH ends where the last block written ends. (Measured
// with veritysetup 2.6.1: one block, --no-superblock --hash-offset=8192
// leaves a new HASH 0 bytes and a 100-byte one 100; two blocks give 12288.)
func TestFormatInPlaceEmptyTreeNoSuperblock(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		blocks       int
		superblock   bool
		existing     int // -1: no HASH yet
		offset, want uint64
	}{
		{1, false, -1, 8192, 0},
		{1, false, 100, 8192, 100},
		{1, false, -1, 0, 0},
		{1, true, -1, 8192, 12288},
		{2, false, -1, 8192, 12288},
		{2, false, 100, 8192, 12288},
	} {
		dataPath := filepath.Join(dir, "data.img")
		fmtImage(t, dataPath, c.blocks*4096)
		hashPath := filepath.Join(dir, "hash.img")
		os.Remove(hashPath)
		if c.existing >= 0 {
			if err := os.WriteFile(hashPath, make([]byte, c.existing), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		opts := fixedOptions()
		opts.InPlace, opts.NoSuperblock, opts.HashOffset = true, !c.superblock, c.offset
		if _, err := Format(context.Background(), dataPath, hashPath, opts); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(hashPath)
		if err != nil || uint64(info.Size()) != c.want {
			t.Errorf("%+v: HASH %v bytes (%v), want %d", c, info.Size(), err, c.want)
		}
	}
}

// TestFormatInPlaceRefusesImages: written in place, an output keeps its
// other bytes, so only a file system or image it holds is at stake: an
// ext4 image named as HASH (DATA and HASH swapped) is refused and left as
// it is; Force writes anyway.
func TestFormatInPlaceRefusesImages(t *testing.T) {
	dir := t.TempDir()
	dataPath := filepath.Join(dir, "data.img")
	fmtImage(t, dataPath, 16*4096)
	ext4 := make([]byte, 64<<10)
	copy(ext4[1080:], []byte{0x53, 0xEF})
	copy(ext4[1048:], []byte{2, 0, 0, 0})
	hashPath := filepath.Join(dir, "rootfs.ext4")
	if err := os.WriteFile(hashPath, ext4, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := fixedOptions()
	opts.InPlace = true
	_, err := Format(context.Background(), dataPath, hashPath, opts)
	fmtWantError(t, err, KindRefused, "", "(an ext2/3/4 filesystem): replacing it would destroy it")
	if !bytes.Equal(fmtRead(t, hashPath), ext4) {
		t.Error("the ext4 image changed")
	}
	opts.Force = true
	if _, err := Format(context.Background(), dataPath, hashPath, opts); err != nil {
		t.Errorf("InPlace with Force: %v", err)
	}
}
