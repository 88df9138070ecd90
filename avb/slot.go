package avb

// A whole device's set of images checked as libavb's avb_slot_verify
// (libavb/avb_slot_verify.c) checks a slot: the top-level vbmeta, the
// vbmetas it chains to (each signed with the key its chain partition
// descriptor holds), and every hash and hashtree descriptor of them against
// the partition's image. LIBAVB.md ("A whole slot") lists the decisions.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// SlotVerifyResult is libavb's AvbSlotVerifyResult.
type SlotVerifyResult int

// The results of avb_slot_verify, and of each vbmeta and partition in it.
const (
	SlotOK SlotVerifyResult = iota
	SlotErrorOOM
	SlotErrorIO
	SlotErrorVerification
	SlotErrorRollbackIndex
	SlotErrorPublicKeyRejected
	SlotErrorInvalidMetadata
	SlotErrorUnsupportedVersion
	// SlotErrorInvalidArgument: the bootloader asked for what libavb
	// refuses (the logging hashtree error mode on a locked device).
	SlotErrorInvalidArgument
)

// String is libavb's avb_slot_verify_result_to_string.
func (r SlotVerifyResult) String() string {
	switch r {
	case SlotOK:
		return "OK"
	case SlotErrorOOM:
		return "ERROR_OOM"
	case SlotErrorIO:
		return "ERROR_IO"
	case SlotErrorVerification:
		return "ERROR_VERIFICATION"
	case SlotErrorRollbackIndex:
		return "ERROR_ROLLBACK_INDEX"
	case SlotErrorPublicKeyRejected:
		return "ERROR_PUBLIC_KEY_REJECTED"
	case SlotErrorInvalidMetadata:
		return "ERROR_INVALID_METADATA"
	case SlotErrorUnsupportedVersion:
		return "ERROR_UNSUPPORTED_VERSION"
	case SlotErrorInvalidArgument:
		return "ERROR_INVALID_ARGUMENT"
	}
	return fmt.Sprintf("SlotVerifyResult(%d)", int(r))
}

// Fatal says whether no bootloader goes on after r, locked or not
// (libavb's result_should_continue is false): out of memory, I/O,
// invalid metadata, an unsupported version. The others (a verification
// error, a rejected key, a rollback) stop a locked device only.
func (r SlotVerifyResult) Fatal() bool {
	switch r {
	case SlotOK, SlotErrorVerification, SlotErrorRollbackIndex, SlotErrorPublicKeyRejected:
		return false
	}
	return true
}

// severity orders results for the slot's verdict: fatal above what a
// locked device refuses, above OK.
func (r SlotVerifyResult) severity() int {
	switch {
	case r == SlotOK:
		return 0
	case r.Fatal():
		return 2
	}
	return 1
}

// ErrNoImage: the set has no image of a partition a vbmeta names. It
// matches fs.ErrNotExist too.
var ErrNoImage error = noImage{}

type noImage struct{}

func (noImage) Error() string        { return "no image of the partition" }
func (noImage) Is(target error) bool { return target == fs.ErrNotExist }

// ImageSource finds the image of a partition of the set.
type ImageSource interface {
	// ImagePath returns the file holding the partition's image (the
	// partition as libavb reads it: with the slot's A/B suffix, boot_a,
	// unless the descriptor says not to use it), or an
	// error matching ErrNoImage (and fs.ErrNotExist) when there is none.
	ImagePath(partition string) (string, error)
}

// SlotImages is an ImageSource: Files names images by partition; the
// others are PARTITION+Ext in Dir (as avbtool finds chained partitions'
// images: beside the image, with its extension), when Dir is not "".
type SlotImages struct {
	Dir   string
	Ext   string // ".img" when ""
	Files map[string]string
}

// ImagePath implements ImageSource.
func (s *SlotImages) ImagePath(partition string) (string, error) {
	if p, ok := s.Files[partition]; ok {
		return p, nil
	}
	if s.Dir == "" {
		return "", fmt.Errorf("%w %q: none given", ErrNoImage, partition)
	}
	if partition == "" || partition == "." || partition == ".." || strings.ContainsAny(partition, "/\x00") {
		return "", fmt.Errorf("%w %q: the name is not a file name", ErrNoImage, partition)
	}
	ext := s.Ext
	if ext == "" {
		ext = ".img"
	}
	p := filepath.Join(s.Dir, partition+ext)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w %q: no %s", ErrNoImage, partition, p)
		}
		return "", ioErr("%s: %w", p, err)
	}
	return p, nil
}

// SlotOptions are VerifySlot's options; the zero value checks the set
// with the embedded key trusted and no rollback index enforced.
type SlotOptions struct {
	// Key is the AVB public key blob the device trusts for the top-level
	// vbmeta (libavb's validate_vbmeta_public_key); nil takes the
	// embedded key (reported).
	Key []byte
	// StoredRollbackIndexes are the device's stored rollback indexes by
	// location: a vbmeta whose index is below its location's is
	// ERROR_ROLLBACK_INDEX. Locations not in it are not enforced.
	StoredRollbackIndexes map[uint32]uint64
	// ABSuffix is the slot's suffix ("_a"), which libavb appends to the
	// partitions it reads (vbmeta_a, boot_a, a chained vbmeta_system_a)
	// unless the chain, hash or hashtree descriptor's do-not-use-A/B flag
	// is set; "" for a device without A/B slots.
	ABSuffix string
	// PersistentValues are the device's named persistent values
	// (PersistentDigestPrefix+PARTITION holds the digest of a hash or
	// hashtree descriptor that stores none: avbtool
	// --use_persistent_digest). Nil: they are not known, and a persistent
	// digest is shown, not decided. Not nil: they are all the device
	// holds (an empty value is none), and libavb's rules decide.
	PersistentValues map[string][]byte
	// Requested are the partitions the bootloader asks avb_slot_verify to
	// load (its requested_partitions, unsuffixed: "boot"): libavb checks
	// the hash descriptors of those only, and returns them as loaded
	// partitions. The others are still checked here, an image missing
	// not held against the slot. Nil requests every partition a hash
	// descriptor names.
	Requested []string
	// PartUUIDs are the device's unique partition GUIDs by partition, as
	// libavb asks for them (with the A/B suffix: "system_a"), which its
	// kernel command line substitutes for $(ANDROID_SYSTEM_PARTUUID),
	// $(ANDROID_BOOT_PARTUUID) and $(ANDROID_VBMETA_PARTUUID). Nil leaves
	// them as they are (SlotBoot.Unsubstituted); not nil, they are all
	// the device has: one missing fails the slot as libavb fails it.
	PartUUIDs map[string]string
	// HashtreeErrorMode is the bootloader's hashtree error mode, which
	// sets dm-verity's options on the kernel command line.
	HashtreeErrorMode HashtreeErrorMode
	// AllowMissing: a partition whose image the set lacks is reported and
	// not held against the slot (else it is ERROR_IO, as libavb's read of
	// a partition that is not there).
	AllowMissing bool
	// Jobs, MaxProblems and Repair go to verity.Verify for each hashtree
	// partition (Repair writes the blocks the descriptor's FEC rebuilds
	// into the image; never a sparse one). Prepare, if set, may set the
	// options' Progress, OnStart and Warn before each of them, and
	// returns what to call once it is checked.
	Jobs        int
	MaxProblems int
	Repair      bool
	Prepare     func(*SlotPartition, *verity.VerifyOptions) (done func())
	// OnTree, if set, is called with each hashtree partition's result
	// while it is open (to list its problems); an error ends VerifySlot.
	OnTree func(*SlotPartition, *verity.VerifyResult) error
	// OnVBMeta, if set, is called when a vbmeta's verdict is made (before
	// its descriptors are taken), and again if one of its descriptors
	// makes it worse; OnPartition when a partition's is. A report can
	// then be written as the check goes.
	OnVBMeta    func(*SlotVBMeta)
	OnPartition func(*SlotPartition)
}

// SlotResult is what VerifySlot found.
type SlotResult struct {
	// Result is the slot's verdict: the most severe of its vbmetas' and
	// partitions' (fatal above what a locked device refuses, above OK).
	Result SlotVerifyResult
	// VBMetas are the vbmetas in libavb's order: the top-level one,
	// then each chained one in the order of the chain descriptors.
	VBMetas []*SlotVBMeta
	// Partitions are the checks of the hash and hashtree descriptors, in
	// the order libavb meets them.
	Partitions []*SlotPartition
	// VBMetaDigest is androidboot.vbmeta.digest: the VBMetaHashAlg
	// (sha512 for a top-level vbmeta signed with SHA512_*, else sha256)
	// of the vbmetas libavb loaded, in order; VBMetaSize is their size
	// (androidboot.vbmeta.size). Nil when the top-level one was not.
	VBMetaDigest  []byte
	VBMetaHashAlg string
	VBMetaSize    uint64
	// ABSuffix is the suffix the slot's partitions were read with.
	ABSuffix string
	// Unlocked and Locked are what avb_slot_verify gives the bootloader
	// on an unlocked device (allow_verification_error) and on a locked
	// one: its result, the loaded partitions and the kernel command line.
	Unlocked, Locked *SlotBoot
}

// SlotVBMeta is one vbmeta of the slot.
type SlotVBMeta struct {
	// Partition is the vbmeta's partition ("vbmeta", a chained one, or
	// the partition of a top-level image with a footer); Path its image.
	Partition, Path string
	// Chained: loaded through a chain partition descriptor, whose key
	// (ExpectedKey) it must be signed with.
	Chained     bool
	ExpectedKey []byte
	// Image is what was read (nil when nothing could be).
	Image *Image
	// VerifyResult is avb_vbmeta_image_verify's; KeyChecked says the
	// signing key was checked against a key (the chain descriptor's, or
	// SlotOptions.Key), not only taken from the vbmeta.
	VerifyResult VBMetaVerifyResult
	KeyChecked   bool
	// RollbackIndexLocation is the location libavb uses: the header's for
	// the top-level vbmeta, the chain descriptor's for a chained one.
	// StoredRollbackIndex is the device's, when given (RollbackChecked).
	RollbackIndexLocation uint32
	StoredRollbackIndex   uint64
	RollbackChecked       bool
	// Result is libavb's verdict on this vbmeta; Err says why it is not
	// OK. Notes say what was checked beyond libavb, or not decided.
	Result SlotVerifyResult
	Err    error
	Notes  []string
	// NotLoadedByLibavb: libavb stopped taking the descriptors of the
	// vbmeta holding this one's chain descriptor before it (at a
	// hashtree descriptor whose persistent digest it refused); it is
	// checked all the same, but is not in androidboot.vbmeta.digest.
	NotLoadedByLibavb bool
	loaded            bool
	// libavbStop is the descriptor (from 1) at which libavb returned from
	// this vbmeta without a fatal error (a persistent root digest it
	// refused): it takes none after it. 0: it took them all.
	libavbStop int
}

// SlotPartition is the check of one hash or hashtree descriptor against
// its partition's image.
type SlotPartition struct {
	// Partition is the descriptor's partition, Path its image ("" when
	// missing); VBMeta the partition of the vbmeta holding the descriptor,
	// Index its place there (from 1).
	Partition, Path string
	VBMeta          string
	Index           int
	// Descriptor is a *HashDescriptor or a *HashtreeDescriptor. With an
	// A/B suffix, Partition is its partition name and the suffix (unless
	// its do-not-use-A/B flag is set).
	Descriptor Descriptor
	// Checked: the image was there and was checked (Missing otherwise, or
	// the descriptor itself is refused: see Err).
	Checked, Missing bool
	// Result is the verdict (SlotOK when it matches); Err says why not.
	Result SlotVerifyResult
	Err    error
	Note   string
	// Tree: for a hashtree descriptor, what the check of data and tree
	// found (Problems not kept: SlotOptions.OnTree sees them), and
	// whether the FEC can rebuild it all (Repairable) or did (Repaired).
	Tree                 *merkle.VerifyReport
	Repairable, Repaired bool
	// Libavb is libavb's own verdict on the descriptor, the partition
	// requested: Result for a hash descriptor; for a hashtree one, what
	// libavb checks of it (a persistent root digest's name, algorithm,
	// suffix and value), not the tree, which the kernel checks.
	Libavb SlotVerifyResult
	// PersistentName is the persistent value a descriptor without a
	// digest is held to, when SlotOptions.PersistentValues is given.
	// PersistentInit: the device holds no such value, and a locked
	// device writes this, the image's digest, there and boots (an
	// unlocked one refuses the partition: Result); a hash descriptor's
	// only.
	PersistentName string
	PersistentInit []byte

	// NotRequested: a hash descriptor of a partition the bootloader does
	// not request (SlotOptions.Requested): libavb skips it (Libavb is
	// OK); it is checked all the same, a missing image not held.
	NotRequested bool

	persistentRoot []byte // a hashtree descriptor's, from the device
	size           uint64 // a hash partition's image size
	short          bool   // a hash partition's image shorter than image_size
}

// PersistentDigestPrefix is libavb's AVB_NPV_PERSISTENT_DIGEST_PREFIX: the
// persistent value holding a partition's digest is this and its name.
const PersistentDigestPrefix = "avb.persistent_digest."

// maxSlotVBMetas is libavb's MAX_NUMBER_OF_VBMETA_IMAGES.
const maxSlotVBMetas = 32

// VerifySlot checks a device's set of images as libavb's avb_slot_verify
// decides about a slot, with the device unlocked so that every problem is
// found (allow_verification_error), and more: top is the top-level vbmeta
// (a vbmeta image, or an image with a footer whose vbmeta is the top-level
// one, as libavb falls back to boot); images finds the partitions' images.
// Every vbmeta is verified (signature; a chained one with its chain
// descriptor's key, its flags 0; the top-level one with opts.Key when
// given; rollback indexes against opts.StoredRollbackIndexes when given),
// every hash descriptor's digest checked against its image, and every
// hashtree descriptor's data and tree checked block by block (which the
// kernel does at run time, libavb not at all). With opts.ABSuffix the
// partitions are those of one slot, named as libavb names them; with
// opts.PersistentValues a descriptor without a digest is held to the
// device's value. A chained vbmeta may not
// chain further (libavb's rule), which bounds the walk. The error is for
// what stops the whole check (ctx, OnTree); the verdicts are in the result.
func VerifySlot(ctx context.Context, top string, images ImageSource, opts *SlotOptions) (*SlotResult, error) {
	if opts == nil {
		opts = &SlotOptions{}
	}
	s := &slotCheck{opts: opts, images: images, res: &SlotResult{ABSuffix: opts.ABSuffix}, perName: map[string]int{}}
	if err := s.vbmeta(ctx, top, "", "", nil, 0); err != nil {
		return nil, err
	}
	r := s.res
	for _, v := range r.VBMetas {
		r.Result = worse(r.Result, v.Result)
	}
	for _, p := range r.Partitions {
		if p.Missing && (opts.AllowMissing || p.NotRequested) {
			continue
		}
		r.Result = worse(r.Result, p.Result)
	}
	if len(r.VBMetas) > 0 && r.VBMetas[0].loaded {
		var h hash.Hash
		r.VBMetaHashAlg, h = "sha256", sha256.New()
		if strings.HasPrefix(r.VBMetas[0].Image.VBMeta.Algorithm.Name, "SHA512") {
			r.VBMetaHashAlg, h = "sha512", sha512.New()
		}
		vs := r.VBMetas
		if vs[0].Image.VBMeta.Header.Flags&FlagVerificationDisabled != 0 {
			vs = vs[:1] // libavb loads no chained vbmeta then
		}
		for _, v := range vs {
			if v.loaded && !v.NotLoadedByLibavb {
				h.Write(v.Image.VBMeta.Raw)
				r.VBMetaSize += uint64(len(v.Image.VBMeta.Raw))
			}
		}
		r.VBMetaDigest = h.Sum(nil)
	}
	r.Unlocked, r.Locked = s.boot(false), s.boot(true)
	if u := r.Unlocked; u.Result.Fatal() && u.Err != nil && (opts.Requested != nil || !u.disabled) {
		// What the command line needs of the device failed it, or a
		// partition requested (not only named by a descriptor) that
		// libavb loads whole with verification disabled.
		r.Result = worse(r.Result, u.Result)
	}
	return r, nil
}

func worse(a, b SlotVerifyResult) SlotVerifyResult {
	if b.severity() > a.severity() {
		return b
	}
	return a
}

type slotCheck struct {
	opts    *SlotOptions
	images  ImageSource
	res     *SlotResult
	perName map[string]int
	// notLoaded: the vbmeta about to be chained to is not one libavb
	// loads (the partition of the vbmeta where libavb stopped).
	notLoaded string
	// substs counts the top-level vbmeta's persistent root digests,
	// each a kernel command-line substitution for libavb; substList are
	// those whose value is known.
	substs    int
	substList []cmdlineSubst
}

// maxCmdlineSubsts is libavb's AVB_MAX_NUM_CMDLINE_SUBST: the persistent
// root digests of the top-level vbmeta it takes.
const maxCmdlineSubsts = 10

// slotResultOf is the libavb result an error stands for.
func slotResultOf(err error) SlotVerifyResult {
	var ve *verity.Error
	switch {
	case err == nil:
		return SlotOK
	case errors.Is(err, ErrUnsupportedVersion):
		return SlotErrorUnsupportedVersion
	case errors.Is(err, ErrNotSigned), errors.Is(err, ErrSignature):
		return SlotErrorVerification
	case errors.Is(err, ErrNoImage), errors.Is(err, fs.ErrNotExist):
		return SlotErrorIO
	case errors.As(err, &ve) && ve.Kind == verity.KindCorrupt:
		return SlotErrorVerification
	case errors.As(err, &ve) && (ve.Kind == verity.KindIO || ve.Kind == verity.KindRefused):
		return SlotErrorIO
	case errors.As(err, &ve) && ve.Role != "":
		// The file could not be opened as a partition (a directory, a
		// FIFO): there is no partition to read.
		return SlotErrorIO
	}
	return SlotErrorInvalidMetadata
}

// vbmeta loads and checks a vbmeta as libavb's load_and_verify_vbmeta:
// the top-level one (name "", expected nil) from path, a chained one from
// its partition's image with the chain descriptor's key and location.
//
// name is the chain descriptor's partition, full the partition read (name
// and the A/B suffix, unless the descriptor says not to).
func (s *slotCheck) vbmeta(ctx context.Context, path, name, full string, expected []byte, location uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	chained := expected != nil
	v := &SlotVBMeta{Partition: full, Path: path, Chained: chained, ExpectedKey: expected, RollbackIndexLocation: location}
	if !chained {
		v.Partition = "vbmeta" + s.opts.ABSuffix // until its footer says otherwise
	}
	if chained && s.notLoaded != "" {
		v.NotLoadedByLibavb = true
		v.Notes = append(v.Notes, "libavb does not load it: it stops at an earlier hashtree descriptor of "+s.notLoaded+", whose persistent digest it refuses")
	}
	s.res.VBMetas = append(s.res.VBMetas, v)
	fail := func(r SlotVerifyResult, err error) error {
		v.Result, v.Err = r, err
		s.decided(v)
		return nil
	}
	if len(s.res.VBMetas) > maxSlotVBMetas {
		return fail(SlotErrorOOM, inputErr("", "more than %d vbmetas in the slot: libavb loads at most %d", maxSlotVBMetas-1, maxSlotVBMetas))
	}
	if chained && len(full) >= libavbPartNameMax {
		return fail(SlotErrorInvalidMetadata, malformed("chain partition descriptor: partition %q of %d bytes, libavb takes at most %d (with the A/B suffix)", full, len(full), libavbPartNameMax-1))
	}
	if chained {
		p, err := s.images.ImagePath(full)
		if err != nil {
			return fail(slotResultOf(err), err)
		}
		v.Path = p
	}
	img, err := readSlotVBMeta(v.Path, name)
	if err != nil {
		return fail(slotResultOf(err), err)
	}
	v.Image = img
	if !chained {
		v.Partition = s.topPartition(img)
	}
	h := img.VBMeta.Header
	res, sigErr := VerifyVBMetaBlob(img.VBMeta.Raw)
	v.VerifyResult = res
	if lerr := img.VerifyVBMeta(nil); lerr != nil && !errors.Is(lerr, ErrNotSigned) && !errors.Is(lerr, ErrSignature) {
		// A footer or a blob larger than libavb loads, an invalid header,
		// an unsupported version: no way to go on.
		return fail(slotResultOf(lerr), prefixErr(v.Path, lerr))
	}
	if sigErr != nil {
		v.Result, v.Err = SlotErrorVerification, prefixErr(v.Path, sigErr)
	}
	if chained && h.Flags != 0 {
		return fail(SlotErrorInvalidMetadata, prefixErr(v.Path, malformed("a chained vbmeta with flags %d: libavb takes flags from the top-level vbmeta only and refuses a chained one with any set", h.Flags)))
	}
	if !chained {
		v.RollbackIndexLocation = h.RollbackIndexLocation
	}
	if res == VBMetaOK {
		s.checkKey(v, expected)
	}
	if v.RollbackIndexLocation >= MaxRollbackIndexLocations {
		// libavb reads the stored index before it looks at the location:
		// a device has no such location, and the read fails (had it
		// read one, the location would be INVALID_METADATA after the
		// descriptors).
		return fail(SlotErrorIO, prefixErr(v.Path, malformed("rollback index location %d: a device has locations 0 to %d, and reading this one fails", v.RollbackIndexLocation, MaxRollbackIndexLocations-1)))
	}
	if stored, ok := s.opts.StoredRollbackIndexes[v.RollbackIndexLocation]; ok {
		v.StoredRollbackIndex, v.RollbackChecked = stored, true
		if h.RollbackIndex < stored && v.Result == SlotOK {
			v.Result, v.Err = SlotErrorRollbackIndex, prefixErr(v.Path, &verity.Error{Kind: verity.KindCorrupt,
				Err: fmt.Errorf("rollback index %d is below the %d stored at location %d", h.RollbackIndex, stored, v.RollbackIndexLocation)})
		}
	}
	v.loaded = true
	if h.Flags&FlagVerificationDisabled != 0 {
		v.Notes = append(v.Notes, "the flags disable verification: libavb checks no descriptor and loads no chained vbmeta; this check still does")
	}
	if !chained && h.Flags&FlagHashtreeDisabled != 0 {
		v.Notes = append(v.Notes, "the flags disable the hashtree: the device sets no dm-verity up; the trees are still checked")
	}
	s.decided(v)
	return s.descriptors(ctx, v)
}

// topPartition names the top-level vbmeta's partition as libavb finds it:
// the vbmeta partition's, or boot's (with its footer) on a device without
// one.
func (s *slotCheck) topPartition(img *Image) string {
	if img.Footer == nil {
		return "vbmeta" + s.opts.ABSuffix
	}
	if n := img.VBMeta.Partition().Name; n != "" {
		return n + s.opts.ABSuffix
	}
	return "boot" + s.opts.ABSuffix
}

// checkKey holds a verified vbmeta's key to the one the device trusts for
// it: its chain descriptor's, or for the top-level vbmeta the key given
// (none given: the embedded key is taken, as reported).
func (s *slotCheck) checkKey(v *SlotVBMeta, expected []byte) {
	key := v.Image.VBMeta.PublicKey
	switch {
	case v.Chained:
		v.KeyChecked = true
		if !bytes.Equal(key, expected) {
			v.Result, v.Err = SlotErrorPublicKeyRejected, prefixErr(v.Path, signatureErr(fmt.Sprintf("signed with the key of sha1 %s, not with the key of the chain partition descriptor (sha1 %s)", sha1Hex(key), sha1Hex(expected))))
		}
	case s.opts.Key != nil:
		v.KeyChecked = true
		if !bytes.Equal(key, s.opts.Key) {
			v.Result, v.Err = SlotErrorPublicKeyRejected, prefixErr(v.Path, signatureErr("the embedded public key is not the key given"))
		}
	}
}

func (s *slotCheck) decided(v *SlotVBMeta) {
	if s.opts.OnVBMeta != nil {
		s.opts.OnVBMeta(v)
	}
}

// readSlotVBMeta reads a vbmeta as libavb finds it in a partition: a
// vbmeta partition's ("vbmeta..." names) at its start, another's where
// its footer says, or at its start without a footer.
func readSlotVBMeta(path, name string) (*Image, error) {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	img := &Image{Size: uint64(src.Size()), Sparse: src.Format() == "android-sparse"}
	if !strings.HasPrefix(name, "vbmeta") {
		f, err := ReadFooter(src, src.Size())
		switch {
		case err == nil:
			img.Footer = f
			if f.VBMetaSize > LibavbMaxVBMetaSize {
				return img, prefixErr(path, malformed("the AVB footer declares a vbmeta of %d bytes; libavb loads at most %d", f.VBMetaSize, LibavbMaxVBMetaSize))
			}
			if img.VBMeta, err = ReadVBMeta(src, int64(f.VBMetaOffset), f.VBMetaSize); err != nil {
				return nil, prefixErr(path, err)
			}
			return img, nil
		case !errors.Is(err, ErrNoFooter):
			return nil, prefixErr(path, err)
		}
	}
	n := min(uint64(src.Size()), LibavbMaxVBMetaSize)
	if img.VBMeta, err = ReadVBMeta(src, 0, n); err != nil {
		if errors.Is(err, ErrMalformed) && !hasVBMetaMagic(src) {
			return nil, prefixErr(path, malformed("no vbmeta at the start of the partition and no AVB footer"))
		}
		return nil, prefixErr(path, err)
	}
	return img, nil
}

// descriptors takes a loaded vbmeta's descriptors as libavb does: each
// validated, hash and hashtree ones checked against their images, chain
// ones (in the top-level vbmeta only) followed.
func (s *slotCheck) descriptors(ctx context.Context, v *SlotVBMeta) error {
	i := 0
	// libavbStopped: libavb returned from this vbmeta at a hashtree
	// descriptor (its persistent digest refused); this check goes on.
	libavbStopped := false
	for d := range v.Image.VBMeta.Descriptors() {
		i++
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := libavbDescriptor(d); err != nil {
			v.Result, v.Err = SlotErrorInvalidMetadata, prefixErr(v.Path, malformed("descriptor %d (%s): %v", i, descriptorKind(d), err))
			s.decided(v)
			return nil
		}
		switch d := d.(type) {
		case *ChainPartitionDescriptor:
			if v.Chained {
				v.Result, v.Err = SlotErrorInvalidMetadata, prefixErr(v.Path, malformed("descriptor %d chains to partition %q, but libavb follows chain partition descriptors of the top-level vbmeta only", i, d.PartitionName))
				s.decided(v)
				return nil
			}
			full := d.PartitionName
			if d.Flags&ChainFlagDoNotUseAB == 0 {
				full += s.opts.ABSuffix
			}
			s.notLoaded = ""
			if libavbStopped {
				s.notLoaded = v.Partition
			}
			if err := s.vbmeta(ctx, "", d.PartitionName, full, d.PublicKey, d.RollbackIndexLocation); err != nil {
				return err
			}
		case *HashDescriptor:
			if err := s.partition(ctx, v, i, d, s.suffixed(d.PartitionName, d.Flags&HashFlagDoNotUseAB != 0)); err != nil {
				return err
			}
		case *HashtreeDescriptor:
			if err := s.partition(ctx, v, i, d, s.suffixed(d.PartitionName, d.Flags&HashtreeFlagDoNotUseAB != 0)); err != nil {
				return err
			}
			if p := s.res.Partitions[len(s.res.Partitions)-1]; p.Libavb != SlotOK && !libavbStopped {
				libavbStopped, v.libavbStop = true, i
			}
		}
	}
	return nil
}

// suffixed is the partition libavb reads for a descriptor's: its name and
// the A/B suffix, unless the descriptor's do-not-use-A/B flag is set.
func (s *slotCheck) suffixed(name string, doNotUseAB bool) string {
	if doNotUseAB {
		return name
	}
	return name + s.opts.ABSuffix
}

// partition checks a hash or hashtree descriptor against its image.
func (s *slotCheck) partition(ctx context.Context, v *SlotVBMeta, i int, d Descriptor, name string) error {
	p := &SlotPartition{Partition: name, VBMeta: v.Partition, Index: i, Descriptor: d}
	s.res.Partitions = append(s.res.Partitions, p)
	if err := s.checkPartition(ctx, p, v, i, d, name); err != nil {
		return err
	}
	if h, ok := d.(*HashDescriptor); ok {
		p.Libavb = p.Result
		if !s.requested(h.PartitionName) {
			// libavb skips it before any other check of it.
			p.NotRequested, p.Libavb = true, SlotOK
			const why = "not requested: libavb neither loads nor checks it"
			if p.Note == "" {
				p.Note = why
			} else {
				p.Note += "; " + why
			}
		}
	}
	if v.VerifyResult != VBMetaOK && p.Note == "" {
		// libavb unlocked checks it too; what it matches vouches for
		// nothing.
		p.Note = fmt.Sprintf("the descriptor is in vbmeta %q, whose signature does not hold", v.Partition)
	}
	if s.opts.OnPartition != nil {
		s.opts.OnPartition(p)
	}
	return nil
}

func (s *slotCheck) checkPartition(ctx context.Context, p *SlotPartition, v *SlotVBMeta, i int, d Descriptor, name string) error {
	fail := func(r SlotVerifyResult, err error) error {
		p.Result, p.Err = r, err
		return nil
	}
	if done := s.descriptorMetadata(p, v, i, d, name); done {
		return nil
	}
	// Each check is a pass over the image: a crafted vbmeta could name
	// one partition thousands of times.
	s.perName[name]++
	if s.perName[name] > maxPartitionDescriptors {
		return fail(SlotErrorInvalidMetadata, malformed("more than %d hash and hashtree descriptors name partition %q; avbtool writes one, and this check takes at most %d (each is a pass over the image)", maxPartitionDescriptors, name, maxPartitionDescriptors))
	}
	path, err := s.images.ImagePath(name)
	if err != nil {
		p.Missing = errors.Is(err, ErrNoImage)
		return fail(slotResultOf(err), err)
	}
	p.Path = path
	switch d := d.(type) {
	case *HashDescriptor:
		return s.hashPartition(ctx, p, path, d)
	case *HashtreeDescriptor:
		return s.tree(ctx, p, path, d)
	}
	return nil
}

// descriptorMetadata makes libavb's checks of a hash or hashtree descriptor
// itself, in its order, before any image is read; it reports whether the
// partition is decided (failed) by them.
func (s *slotCheck) descriptorMetadata(p *SlotPartition, v *SlotVBMeta, i int, d Descriptor, name string) bool {
	fail := func(r SlotVerifyResult, err error) bool {
		p.Result, p.Err = r, err
		return true
	}
	suffix := s.opts.ABSuffix
	switch d := d.(type) {
	case *HashDescriptor:
		if err := libavbHash(d); err != nil {
			return fail(SlotErrorInvalidMetadata, malformed("hash descriptor %d of %s: %v", i, v.Partition, err))
		}
		if d.Flags&HashFlagDoNotUseAB == 0 && len(d.Digest) == 0 && suffix != "" {
			// The value is the device's, not a slot's.
			return fail(SlotErrorInvalidMetadata, malformed("hash descriptor %d of %s: a persistent digest without the do-not-use-A/B flag, which libavb refuses with the A/B suffix %q (avbtool --do_not_use_ab sets it)", i, v.Partition, suffix))
		}
		if len(name) >= libavbPartNameMax {
			return fail(SlotErrorInvalidMetadata, malformed("hash descriptor %d of %s: partition %q of %d bytes with the A/B suffix, libavb takes at most %d", i, v.Partition, name, len(name), libavbPartNameMax-1))
		}
	case *HashtreeDescriptor:
		libavbFail := func(err error) bool {
			p.Libavb = SlotErrorInvalidMetadata
			return fail(SlotErrorInvalidMetadata, err)
		}
		if len(d.RootDigest) == 0 && d.Flags&HashtreeFlagDoNotUseAB == 0 && suffix != "" {
			return libavbFail(malformed("hashtree descriptor %d of %s: a persistent root digest without the do-not-use-A/B flag, which libavb refuses with the A/B suffix %q (avbtool --do_not_use_ab sets it)", i, v.Partition, suffix))
		}
		if len(d.RootDigest) == 0 && len(d.PartitionName) >= libavbPartNameMax {
			return libavbFail(malformed("hashtree descriptor %d of %s with a persistent digest: partition name of %d bytes, libavb takes at most %d", i, v.Partition, len(d.PartitionName), libavbPartNameMax-1))
		}
		if len(d.RootDigest) == 0 && libavbDigestSize(d.HashAlgorithm, true) == 0 {
			return libavbFail(malformed("hashtree descriptor %d of %s with a persistent digest: hash algorithm %q (libavb reads persistent digests of sha1, sha256 and sha512)", i, v.Partition, d.HashAlgorithm))
		}
		if len(d.RootDigest) == 0 && s.opts.PersistentValues != nil {
			// libavb reads the value whether the image is there or not
			// (and writes none when it is missing): the kernel's table
			// takes it as the root digest.
			root, err := s.persistentValue(p, d.PartitionName, libavbDigestSize(d.HashAlgorithm, true))
			if err != nil {
				p.Libavb, p.Err = p.Result, err
				return true
			}
			p.persistentRoot = root
			if !v.Chained {
				s.substList = append(s.substList, cmdlineSubst{"$(AVB_" + asciiUpper(d.PartitionName) + "_ROOT_DIGEST)", fmt.Sprintf("%x", root)})
				// Its $(AVB_NAME_ROOT_DIGEST), for the kernel command line.
				if s.substs++; s.substs > maxCmdlineSubsts {
					return libavbFail(malformed("hashtree descriptor %d of %s: more than %d persistent root digests in the top-level vbmeta, which libavb refuses (each is a kernel command-line substitution)", i, v.Partition, maxCmdlineSubsts))
				}
			}
		}
	}
	return false
}

// hashPartition checks a hash partition's image against its descriptor
// (or the device's persistent value), as libavb loads and hashes it.
func (s *slotCheck) hashPartition(ctx context.Context, p *SlotPartition, path string, d *HashDescriptor) error {
	fail := func(r SlotVerifyResult, err error) error {
		p.Result, p.Err = r, err
		return nil
	}
	size, err := imageSize(path)
	if err != nil {
		return fail(slotResultOf(err), err)
	}
	p.size = size
	if d.ImageSize > size {
		p.short = true
		// libavb reads image_size bytes: past the end the read fails
		// on a locked device (ERROR_IO); an unlocked one hashes what
		// there is, which cannot match.
		p.Checked = true
		return fail(SlotErrorVerification, &verity.Error{Kind: verity.KindCorrupt, Path: path,
			Err: fmt.Errorf("%s: the image is %d bytes, shorter than the %d bytes its hash descriptor covers", path, size, d.ImageSize)})
	}
	if len(d.Digest) == 0 && s.opts.PersistentValues != nil {
		return s.persistentHash(ctx, p, path, d)
	}
	c, err := checkHash(ctx, path, d)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fail(slotResultOf(err), err)
	}
	p.Checked, p.Note = true, c.Note
	if !c.Matches {
		return fail(SlotErrorVerification, &verity.Error{Kind: verity.KindCorrupt, Path: path, Err: fmt.Errorf("%s: %s", path, c.Problem)})
	}
	return nil
}

// tree checks the data and tree of a hashtree partition against the
// descriptor, as VerifyHashtree checks an image against its own.
func (s *slotCheck) tree(ctx context.Context, p *SlotPartition, path string, ht *HashtreeDescriptor) error {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		p.Result, p.Err = slotResultOf(err), err
		return nil
	}
	img := &Image{Size: uint64(src.Size()), Sparse: src.Format() == "android-sparse"}
	// The footer only bounds where the tree may be: libavb reads nothing
	// of a hashtree partition.
	if f, err := ReadFooter(src, src.Size()); err == nil {
		img.Footer = f
	}
	root, o, err := img.HashtreeCheck(ht)
	if err == nil && root == nil && p.persistentRoot != nil {
		root = p.persistentRoot
		p.Note = fmt.Sprintf("persistent digest: the tree is checked against the device's value %s", p.PersistentName)
	} else if err == nil && root == nil {
		// A persistent digest: the device holds it; the tree is checked
		// against its own root.
		root, err = ownRoot(ctx, src, o)
		p.Note = "persistent digest: the device holds the root digest; the tree is checked against its own root"
	}
	src.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		p.Result, p.Err = slotResultOf(err), prefixErr(path, err)
		return nil
	}
	o.Jobs, o.MaxProblems, o.Repair = s.opts.Jobs, s.opts.MaxProblems, s.opts.Repair
	if o.FECRoots > 0 {
		o.FECDevice = path
	}
	if img.Sparse && o.Repair {
		o.Repair = false
		p.Note = "an Android sparse image: not repaired (a repair cannot write into it; expand it with simg2img first)"
	}
	done := func() {}
	if s.opts.Prepare != nil {
		done = s.opts.Prepare(p, o)
	}
	res, err := verity.Verify(ctx, path, path, root, o)
	done()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.Result, p.Err = slotResultOf(err), err
		return nil
	}
	defer res.Close()
	p.Checked, p.Tree, p.Repaired = true, res.Report, res.Repaired
	p.Repairable = res.Repair != nil && res.Repair.Whole()
	if s.opts.OnTree != nil {
		if err := s.opts.OnTree(p, res); err != nil {
			return err
		}
	}
	if !res.Verified {
		rep := res.Report
		if res.Repaired && res.AfterRepair != nil {
			rep = res.AfterRepair
		}
		root := "the root digest of the hashtree descriptor"
		if p.persistentRoot != nil {
			root = "the root digest the device holds, " + p.PersistentName
		}
		p.Result, p.Err = SlotErrorVerification, &verity.Error{Kind: verity.KindCorrupt, Path: path,
			Err: fmt.Errorf("%s: %s: the data and the tree do not match %s", path, corruptCounts(rep), root)}
	}
	return nil
}

// persistentValue is the device's persistent digest of a partition as
// libavb's read_persistent_digest takes it: missing (none, or empty) is
// ERROR_VERIFICATION, another size than the digest's INVALID_METADATA. It
// sets p's PersistentName, and p's Result when the value is refused.
func (s *slotCheck) persistentValue(p *SlotPartition, partition string, size int) ([]byte, error) {
	p.PersistentName = PersistentDigestPrefix + partition
	v := s.opts.PersistentValues[p.PersistentName]
	switch {
	case len(v) == 0:
		p.Result = SlotErrorVerification
		return nil, &verity.Error{Kind: verity.KindCorrupt, Err: fmt.Errorf("the device holds no persistent value %s, which the descriptor's digest is", p.PersistentName)}
	case len(v) != size:
		p.Result = SlotErrorInvalidMetadata
		return nil, malformed("the persistent value %s is %d bytes, not the %d of a digest", p.PersistentName, len(v), size)
	}
	return v, nil
}

// persistentHash checks a hash descriptor without a digest against the
// device's persistent value, as libavb's load_and_verify_hash_partition.
func (s *slotCheck) persistentHash(ctx context.Context, p *SlotPartition, path string, d *HashDescriptor) error {
	got, err := hashDigest(ctx, path, d)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		p.Result, p.Err = slotResultOf(err), err
		return nil
	}
	p.Checked = true
	want, err := s.persistentValue(p, p.Partition, len(got))
	switch {
	case err != nil && p.Result == SlotErrorVerification:
		// libavb initializes a missing value from the image when locked.
		p.PersistentInit = got
		p.Err = &verity.Error{Kind: verity.KindCorrupt, Path: path, Err: fmt.Errorf("%s: the device holds no persistent value %s: an unlocked device refuses the partition; a locked one writes the image's %s digest %x there and boots", path, p.PersistentName, d.HashAlgorithm, got)}
	case err != nil:
		p.Err = err
	case !bytes.Equal(got, want):
		p.Result, p.Err = SlotErrorVerification, &verity.Error{Kind: verity.KindCorrupt, Path: path,
			Err: fmt.Errorf("%s: its %s digest is %x, the device's persistent value %s holds %x", path, d.HashAlgorithm, got, p.PersistentName, want)}
	default:
		p.Note = fmt.Sprintf("persistent digest: matches the device's value %s", p.PersistentName)
	}
	return nil
}

// corruptCounts says how many blocks are corrupted ("1 corrupted data
// block, 2 corrupted hash blocks").
func corruptCounts(r *merkle.VerifyReport) string {
	var parts []string
	for _, c := range []struct {
		n    uint64
		what string
	}{{r.CorruptDataBlocks, "data block"}, {r.CorruptHashBlocks, "hash block"}, {r.CorruptHeaderBytes, "superblock byte"}} {
		switch {
		case c.n == 1:
			parts = append(parts, "1 corrupted "+c.what)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d corrupted %ss", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return "the top of the tree does not match the root digest"
	}
	return strings.Join(parts, ", ")
}

// imageSize is the size of the image at path (its expansion, if sparse).
func imageSize(path string) (uint64, error) {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "image"})
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return uint64(src.Size()), nil
}
