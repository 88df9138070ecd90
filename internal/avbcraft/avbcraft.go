// Package avbcraft makes the crafted AVB partition images of the AVB
// trust tests: images made with package avb, then changed as an attacker
// or a careless signer would change them (a footer that lies, an unsigned
// vbmeta embedding someone's public key, a second descriptor, a vbmeta
// for a newer libavb...). Everything is deterministic (fixed data, salt and
// PKCS#1 v1.5 signatures), so that the answers of the real avbtool,
// recorded on images made by internal/avbcraft/_mkcrafted
// (internal/front/avbtool/testdata/record-avbauth.sh), hold for the images
// the tests make. It uses only package avb's public API.
package avbcraft

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/testimages"
)

// Salt is the hashtree salt of every crafted image; Key (in the keys
// directory given) signs them with Algorithm.
const (
	Salt      = "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
	Key       = "rsa2048.pem"
	PubKey    = "rsa2048.pub.pem"
	Algorithm = "SHA256_RSA2048"
)

const mib = 1 << 20

// Case is one crafted image.
type Case struct {
	Name string
	// Partition is the partition the image is of: avbtool verify_image
	// reads it as Partition.img beside the image.
	Partition string
	// Doc says what is crafted.
	Doc  string
	make func(path, keys string) error
}

// Make writes the case's image to path, with the keys of directory keys
// (avb/testdata/vectors/keys).
func (c *Case) Make(path, keys string) error {
	if err := c.make(path, keys); err != nil {
		return fmt.Errorf("crafting %s: %w", c.Name, err)
	}
	return nil
}

// Cases are the crafted images, by name.
var Cases = []*Case{
	{Name: "signed", Partition: "system", Doc: "a signed 1 MiB hashtree image, as made",
		make: func(p, k string) error { return hashtreeImage(p, k, mib, 1, nil) }},
	{Name: "unsigned", Partition: "system", Doc: "an unsigned (NONE) 1 MiB hashtree image, as made",
		make: func(p, k string) error { return hashtreeImage(p, "", mib, 1, nil) }},
	{Name: "none-victim-key", Partition: "system",
		Doc:  "someone's own data with an unsigned (NONE) vbmeta that embeds the victim's public key blob (public material)",
		make: noneVictimKey},
	{Name: "tampered", Partition: "system", Doc: "signed; a byte of the root digest changed after signing",
		make: func(p, k string) error {
			if err := hashtreeImage(p, k, mib, 1, nil); err != nil {
				return err
			}
			img, err := avb.ReadImage(p)
			if err != nil {
				return err
			}
			at := bytes.Index(img.VBMeta.Raw, img.VBMeta.FirstHashtree().RootDigest)
			return patchAt(p, int64(img.Footer.VBMetaOffset)+int64(at), []byte{img.VBMeta.Raw[at] ^ 0x01})
		}},
	{Name: "second-hashtree-wrong-root", Partition: "system",
		Doc: "signed; a second hashtree descriptor for the partition, its root digest wrong",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(v *avb.VBMeta, b *blob) {
				ht := *v.FirstHashtree()
				ht.RootDigest = bytes.Clone(ht.RootDigest)
				ht.RootDigest[0] ^= 0xff
				b.descs = append(b.descs, &ht)
			})
		}},
	{Name: "second-hashtree-same", Partition: "system", Doc: "signed; the hashtree descriptor twice",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(v *avb.VBMeta, b *blob) { b.descs = append(b.descs, v.FirstHashtree()) })
		}},
	{Name: "dm-verity-0", Partition: "system",
		Doc: "signed; the hashtree descriptor says dm-verity version 0 (the kernel's format 0: salt after the data) of a tree made in format 1",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(v *avb.VBMeta, b *blob) {
				ht := *v.FirstHashtree()
				ht.DMVerityVersion = 0
				b.descs = append([]avb.Descriptor{&ht}, b.descs[1:]...)
			})
		}},
	{Name: "required-2.0", Partition: "system", Doc: "signed; the vbmeta requires libavb 2.0",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(_ *avb.VBMeta, b *blob) { b.h.RequiredLibavbMajor, b.h.RequiredLibavbMinor = 2, 0 })
		}},
	{Name: "required-1.99", Partition: "system", Doc: "signed; the vbmeta requires libavb 1.99",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(_ *avb.VBMeta, b *blob) { b.h.RequiredLibavbMinor = 99 })
		}},
	{Name: "release-no-nul", Partition: "system", Doc: "signed; the release string fills its 48 bytes (no NUL)",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(_ *avb.VBMeta, b *blob) { b.release48 = true })
		}},
	{Name: "rollback-location-32", Partition: "system", Doc: "signed; rollback index location 32 (libavb has 0 to 31)",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(_ *avb.VBMeta, b *blob) { b.h.RollbackIndexLocation = 32 })
		}},
	{Name: "bad-key-rr", Partition: "system",
		Doc: "signed, and the signature verifies with the modulus; but the embedded key blob's R^2 mod n is wrong (libavb computes with it)",
		make: func(p, k string) error {
			return hashtreeImage(p, k, mib, 1, func(_ *avb.VBMeta, b *blob) { b.pub[len(b.pub)-1] ^= 1 })
		}},
	{Name: "footer-orig-4096", Partition: "system", Doc: "signed 4 MiB image; the footer's original image size set to 4096",
		make: func(p, k string) error { return footerOrig(hashtreeImage(p, k, 4*mib, 2, nil), p, 4096) }},
	{Name: "footer-orig-minus-100", Partition: "system",
		Doc:  "signed 1 MiB image ending in data; the footer's original image size 100 bytes short (the cut would take data, not padding)",
		make: func(p, k string) error { return footerOrig(hashtreeImage(p, k, mib, 3, nil), p, mib-100) }},
	{Name: "footer-orig-unpadded", Partition: "system",
		Doc:  "signed image of 1 MiB + 100 bytes in a 2 MiB partition (zero-padded to a block by add_hashtree_footer): a consistent footer",
		make: func(p, k string) error { return hashtreeImageIn(p, k, mib+100, 4, 2*mib, nil) }},
	{Name: "vbmeta-size-over-64k", Partition: "system",
		Doc: "signed, in a partition with room; the footer's vbmeta size set past libavb's 64 KiB",
		make: func(p, k string) error {
			if err := hashtreeImageIn(p, k, mib, 1, 2*mib, nil); err != nil {
				return err
			}
			return patchFooter(p, func(f *avb.Footer) { f.VBMetaSize = 64<<10 + 64 })
		}},
	{Name: "hash", Partition: "boot", Doc: "a signed hash-footer image (as avbtool add_hash_footer lays one out) of 100000 bytes",
		make: func(p, k string) error { return hashImage(p, k, 100000, "sha256", nil) }},
	{Name: "hash-wrong-digest", Partition: "boot", Doc: "signed hash-footer image; the digest does not match the data",
		make: func(p, k string) error {
			return hashImage(p, k, 100000, "sha256", func(d *avb.HashDescriptor, _ *avb.Footer) { d.Digest[0] ^= 0xff })
		}},
	{Name: "hash-orig-small", Partition: "boot", Doc: "signed hash-footer image; the footer's original image size 4096",
		make: func(p, k string) error {
			return hashImage(p, k, 100000, "sha256", func(_ *avb.HashDescriptor, f *avb.Footer) { f.OriginalImageSize = 4096 })
		}},
	{Name: "hash-sha1", Partition: "boot", Doc: "signed hash-footer image with a sha1 digest (avbtool makes them; libavb checks sha256 and sha512 only)",
		make: func(p, k string) error { return hashImage(p, k, 100000, "sha1", nil) }},
}

// ByName returns the case of that name, or nil.
func ByName(name string) *Case {
	for _, c := range Cases {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// blob is what a vbmeta blob is built from: the header's fields that are
// not layout, the descriptors, the public key blob (nil: the signing
// key's) and the key that signs it (nil: NONE).
type blob struct {
	h         avb.Header
	descs     []avb.Descriptor
	pub       []byte
	key       *rsa.PrivateKey
	alg       *avb.Algorithm
	release48 bool
}

// encode lays the blob out as avbtool does (header; hash, signature;
// descriptors, public key) and signs it.
func (b *blob) encode() ([]byte, error) {
	desc := avb.EncodeDescriptors(b.descs)
	h := b.h
	h.AlgorithmType = b.alg.Type
	h.HashOffset, h.HashSize = 0, uint64(b.alg.HashSize)
	h.SignatureOffset, h.SignatureSize = uint64(b.alg.HashSize), uint64(b.alg.SignatureSize)
	h.AuthenticationBlockSize = roundUp(uint64(b.alg.HashSize+b.alg.SignatureSize), 64)
	h.DescriptorsOffset, h.DescriptorsSize = 0, uint64(len(desc))
	h.PublicKeyOffset, h.PublicKeySize = uint64(len(desc)), uint64(len(b.pub))
	h.PublicKeyMetadataOffset, h.PublicKeyMetadataSize = uint64(len(desc)+len(b.pub)), 0
	h.AuxiliaryBlockSize = roundUp(uint64(len(desc)+len(b.pub)), 64)
	out := make([]byte, avb.HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize)
	copy(out, h.Encode())
	if b.release48 {
		copy(out[128:176], bytes.Repeat([]byte{'r'}, 48))
	}
	aux := out[avb.HeaderSize+h.AuthenticationBlockSize:]
	copy(aux[copy(aux, desc):], b.pub)
	if b.key == nil {
		return out, nil
	}
	hh := b.alg.Hash.New()
	hh.Write(out[:avb.HeaderSize])
	hh.Write(aux)
	digest := hh.Sum(nil)
	sig, err := rsa.SignPKCS1v15(nil, b.key, b.alg.Hash, digest)
	if err != nil {
		return nil, err
	}
	copy(out[avb.HeaderSize:], digest)
	copy(out[avb.HeaderSize+len(digest):], sig)
	return out, nil
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// hashtreeImage writes size bytes of sample data (seed) to path and adds a
// hashtree footer for partition "system" (sha256, Salt, no FEC: avbtool
// makes FEC with an external tool), signed with keys/Key unless keys is
// "". edit, if not nil, changes the vbmeta, which is then built again,
// signed the same way, and written in the place of the old one.
func hashtreeImage(path, keys string, size int64, seed uint64, edit func(*avb.VBMeta, *blob)) error {
	return hashtreeImageIn(path, keys, size, seed, 0, edit)
}

func hashtreeImageIn(path, keys string, size int64, seed uint64, partitionSize uint64, edit func(*avb.VBMeta, *blob)) error {
	if err := testimages.WriteFile(path, func(w io.Writer) error { return testimages.Sample(w, size, seed) }); err != nil {
		return err
	}
	// The last block is data to the end, so that a cut into it takes
	// data (Sample may end in zeros).
	if err := patchAt(path, size-512, bytes.Repeat([]byte{0xd7}, 512)); err != nil {
		return err
	}
	salt, _ := hex.DecodeString(Salt)
	o := &avb.HashtreeFooterOptions{PartitionName: "system", HashAlgorithm: "sha256", Salt: salt, PartitionSize: partitionSize}
	var key *rsa.PrivateKey
	if keys != "" {
		var err error
		if key, err = avb.LoadPrivateKey(context.Background(), filepath.Join(keys, Key)); err != nil {
			return err
		}
		o.Algorithm, o.Key = Algorithm, key
	}
	if _, err := avb.AddHashtreeFooter(context.Background(), path, o); err != nil {
		return err
	}
	if edit == nil {
		return nil
	}
	return rewriteVBMeta(path, key, edit)
}

// rewriteVBMeta builds the image's vbmeta again from what edit makes of
// it, signed with key (nil: NONE), and writes it where the old one was.
func rewriteVBMeta(path string, key *rsa.PrivateKey, edit func(*avb.VBMeta, *blob)) error {
	img, err := avb.ReadImage(path)
	if err != nil {
		return err
	}
	v := img.VBMeta
	b := &blob{h: *v.Header, descs: slices.Collect(v.Descriptors()), pub: bytes.Clone(v.PublicKey), key: key, alg: v.Algorithm}
	edit(v, b)
	raw, err := b.encode()
	if err != nil {
		return err
	}
	f := img.Footer
	room := img.Size - 4096 - f.VBMetaOffset // the vbmeta's blocks, up to the footer's
	if uint64(len(raw)) > room {
		return fmt.Errorf("the new vbmeta of %d bytes does not fit in %d", len(raw), room)
	}
	if err := patchAt(path, int64(f.VBMetaOffset), append(raw, make([]byte, room-uint64(len(raw)))...)); err != nil {
		return err
	}
	return patchFooter(path, func(f *avb.Footer) { f.VBMetaSize = uint64(len(raw)) })
}

// noneVictimKey: someone's own data (seed 9), unsigned, with the victim's
// public key blob (the key of keys/Key) embedded.
func noneVictimKey(path, keys string) error {
	victim, err := avb.ExtractPublicKey(context.Background(), filepath.Join(keys, PubKey))
	if err != nil {
		return err
	}
	return hashtreeImage(path, "", mib, 9, func(_ *avb.VBMeta, b *blob) { b.pub = victim })
}

// footerOrig sets the footer's original image size of the image at path.
func footerOrig(err error, path string, size uint64) error {
	if err != nil {
		return err
	}
	return patchFooter(path, func(f *avb.Footer) { f.OriginalImageSize = size })
}

func patchFooter(path string, edit func(*avb.Footer)) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	b := make([]byte, avb.FooterSize)
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	_, err = fh.ReadAt(b, fi.Size()-avb.FooterSize)
	fh.Close()
	if err != nil {
		return err
	}
	f, err := avb.ParseFooter(b)
	if err != nil {
		return err
	}
	edit(f)
	return patchAt(path, fi.Size()-avb.FooterSize, f.Encode())
}

func patchAt(path string, off int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, off); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// hashImage writes a hash-footer image of partition "boot" as avbtool
// add_hash_footer lays one out: size bytes of data, zeros to a 4096-byte
// block, the vbmeta (a hash descriptor of the data, with salt Salt,
// signed) in 4096-byte blocks, then a last block ending in the footer.
// edit, if not nil, changes the descriptor before signing and the footer
// after.
func hashImage(path, keys string, size int64, alg string, edit func(*avb.HashDescriptor, *avb.Footer)) error {
	var data bytes.Buffer
	if err := testimages.Random(&data, size, 5); err != nil {
		return err
	}
	salt, _ := hex.DecodeString(Salt)
	h := crypto.SHA256
	if alg == "sha1" {
		h = crypto.SHA1
	}
	hh := h.New()
	hh.Write(salt)
	hh.Write(data.Bytes())
	d := &avb.HashDescriptor{ImageSize: uint64(size), HashAlgorithm: alg, PartitionName: "boot", Salt: salt, Digest: hh.Sum(nil)}
	key, err := avb.LoadPrivateKey(context.Background(), filepath.Join(keys, Key))
	if err != nil {
		return err
	}
	f := avb.NewFooter(uint64(size), roundUp(uint64(size), 4096), 0)
	if edit != nil {
		edit(d, f)
	}
	pub, err := avb.EncodePublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	alg256, _ := avb.AlgorithmByName(Algorithm)
	b := &blob{h: avb.Header{RequiredLibavbMajor: 1, ReleaseString: avb.ReleaseString}, descs: []avb.Descriptor{d}, pub: pub, key: key, alg: alg256}
	raw, err := b.encode()
	if err != nil {
		return err
	}
	vbOff := roundUp(uint64(size), 4096)
	f.VBMetaSize = uint64(len(raw))
	out := make([]byte, vbOff+roundUp(uint64(len(raw)), 4096)+4096)
	copy(out, data.Bytes())
	copy(out[vbOff:], raw)
	copy(out[len(out)-avb.FooterSize:], f.Encode())
	return os.WriteFile(path, out, 0o644)
}

// Sum is the SHA-256 of the file at path, in hex.
func Sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Blob is a vbmeta blob changed in one place, for comparing a verifier
// with libavb's avb_vbmeta_image_verify.
type Blob struct {
	Name string
	Data []byte
}

// Blobs returns vbmeta blobs around a signed one (SHA256_RSA2048, keys/Key)
// and an unsigned one: every header field set to values at and around its
// bounds, the blob cut short, bytes of each part flipped, and key blobs
// changed and signed again (libavb computes with the key blob's n0inv and
// R^2 mod n).
func Blobs(keys string) ([]Blob, error) {
	key, err := avb.LoadPrivateKey(context.Background(), filepath.Join(keys, Key))
	if err != nil {
		return nil, err
	}
	pub, err := avb.EncodePublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	salt, _ := hex.DecodeString(Salt)
	descs := []avb.Descriptor{
		&avb.HashtreeDescriptor{DMVerityVersion: 1, ImageSize: 1 << 20, TreeOffset: 1 << 20, TreeSize: 12288, DataBlockSize: 4096, HashBlockSize: 4096,
			HashAlgorithm: "sha256", PartitionName: "system", Salt: salt, RootDigest: bytes.Repeat([]byte{0x42}, 32)},
		&avb.PropertyDescriptor{Key: "k", Value: []byte("v")},
	}
	signedAlg, _ := avb.AlgorithmByName(Algorithm)
	noneAlg, _ := avb.AlgorithmByName("NONE")
	signed := &blob{h: avb.Header{RequiredLibavbMajor: 1, ReleaseString: avb.ReleaseString}, descs: descs, pub: pub, key: key, alg: signedAlg}
	unsigned := &blob{h: avb.Header{RequiredLibavbMajor: 1, ReleaseString: avb.ReleaseString}, descs: descs, alg: noneAlg}
	var out []Blob
	for _, base := range []struct {
		name string
		b    *blob
	}{{"signed", signed}, {"unsigned", unsigned}} {
		raw, err := base.b.encode()
		if err != nil {
			return nil, err
		}
		out = append(out, Blob{base.name, raw})
		out = append(out, fieldBlobs(base.name, raw)...)
		for _, n := range []int{len(raw) - 1, len(raw) - 64, avb.HeaderSize, avb.HeaderSize - 1, 4} {
			out = append(out, Blob{fmt.Sprintf("%s/cut-%d", base.name, n), bytes.Clone(raw[:n])})
		}
		for _, at := range []int{0, 3, 127, 128, 174, 175, 200, 255, avb.HeaderSize, avb.HeaderSize + 31, avb.HeaderSize + 32, avb.HeaderSize + 287, len(raw) - 1} {
			if at < len(raw) {
				b := bytes.Clone(raw)
				b[at] ^= 0x01
				out = append(out, Blob{fmt.Sprintf("%s/flip-%d", base.name, at), b})
			}
		}
	}
	resigned, err := resignedBlobs(signed, pub)
	if err != nil {
		return nil, err
	}
	return append(out, resigned...), nil
}

// fieldBlobs sets each header field of raw to values at and around its
// bounds, without signing again.
func fieldBlobs(name string, raw []byte) []Blob {
	be := binary.BigEndian
	var out []Blob
	u32 := map[int]string{4: "major", 8: "minor", 28: "algorithm", 120: "flags", 124: "rollback-location"}
	u64 := map[int]string{12: "auth-size", 20: "aux-size", 32: "hash-offset", 40: "hash-size", 48: "signature-offset", 56: "signature-size",
		64: "key-offset", 72: "key-size", 80: "key-metadata-offset", 88: "key-metadata-size", 96: "descriptors-offset",
		104: "descriptors-size", 112: "rollback-index"}
	for _, off := range sortedKeys(u32) {
		v := be.Uint32(raw[off:])
		for _, x := range []uint32{0, 1, 2, 3, 4, 6, 7, v - 1, v + 1, 1<<31 + 1, ^uint32(0)} {
			b := bytes.Clone(raw)
			be.PutUint32(b[off:], x)
			out = append(out, Blob{fmt.Sprintf("%s/%s=%d", name, u32[off], x), b})
		}
	}
	for _, off := range sortedKeys(u64) {
		v := be.Uint64(raw[off:])
		for _, x := range []uint64{0, 1, 8, 63, 64, v - 64, v - 1, v + 1, v + 64, uint64(len(raw)), 1 << 32, 1<<63 + 64, ^uint64(0) - 63, ^uint64(0)} {
			b := bytes.Clone(raw)
			be.PutUint64(b[off:], x)
			out = append(out, Blob{fmt.Sprintf("%s/%s=%d", name, u64[off], x), b})
		}
	}
	return out
}

func sortedKeys(m map[int]string) []int {
	ks := slices.Collect(maps.Keys(m))
	slices.Sort(ks)
	return ks
}

// resignedBlobs are the signed blob with its key blob changed (and the
// whole signed again, so that only the key is wrong), or its signature
// replaced by values libavb's arithmetic meets rarely.
func resignedBlobs(signed *blob, pub []byte) ([]Blob, error) {
	be := binary.BigEndian
	changes := []struct {
		name string
		edit func(b *blob)
	}{
		{"key-n0inv", func(b *blob) { b.pub[7] ^= 1 }},
		{"key-rr-first", func(b *blob) { b.pub[8+256] ^= 0x80 }},
		{"key-rr-last", func(b *blob) { b.pub[len(b.pub)-1] ^= 1 }},
		{"key-bits-1024", func(b *blob) { be.PutUint32(b.pub, 1024) }},
		{"key-bits-4096", func(b *blob) { be.PutUint32(b.pub, 4096) }},
		{"key-short", func(b *blob) { b.pub = b.pub[:len(b.pub)-8] }},
		{"key-none", func(b *blob) { b.pub = nil }},
		{"key-modulus", func(b *blob) { b.pub[8+100] ^= 1 }},
		{"release-48", func(b *blob) { b.release48 = true }},
		{"required-1.3", func(b *blob) { b.h.RequiredLibavbMinor = 3 }},
		{"required-1.4", func(b *blob) { b.h.RequiredLibavbMinor = 4 }},
		{"required-0.0", func(b *blob) { b.h.RequiredLibavbMajor = 0 }},
	}
	var out []Blob
	for _, c := range changes {
		b := *signed
		b.pub = bytes.Clone(pub)
		c.edit(&b)
		raw, err := b.encode()
		if err != nil {
			return nil, err
		}
		out = append(out, Blob{"resigned/" + c.name, raw})
	}
	// A signature of n itself, and of all ones (not below n).
	raw, err := signed.encode()
	if err != nil {
		return nil, err
	}
	sigAt := avb.HeaderSize + 32
	for _, s := range []struct {
		name string
		sig  []byte
	}{{"signature-n", pub[8 : 8+256]}, {"signature-ff", bytes.Repeat([]byte{0xff}, 256)}} {
		b := bytes.Clone(raw)
		copy(b[sigAt:], s.sig)
		out = append(out, Blob{"resigned/" + s.name, b})
	}
	return out, nil
}
