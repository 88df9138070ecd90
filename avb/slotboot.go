package avb

// What avb_slot_verify hands the bootloader besides its verdict: the
// partitions it loaded and the kernel command line it built
// (avb_slot_verify.c, avb_cmdline.c). LIBAVB.md ("What libavb gives the
// kernel") lists the rules.

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"strings"
)

// HashtreeErrorMode is libavb's AvbHashtreeErrorMode: what the kernel is
// told to do when dm-verity finds a corrupted block. The zero value is
// libavb's first, RESTART_AND_INVALIDATE.
type HashtreeErrorMode int

// The hashtree error modes, in libavb's order.
const (
	HashtreeRestartAndInvalidate HashtreeErrorMode = iota
	HashtreeRestart
	HashtreeEIO
	HashtreeLogging
	HashtreeManagedRestartAndEIO
	HashtreePanic
)

var hashtreeModeNames = []string{"restart_and_invalidate", "restart", "eio", "logging", "managed_restart_and_eio", "panic"}

// String is the mode's name in lower case, libavb's without its
// AVB_HASHTREE_ERROR_MODE_ prefix ("restart_and_invalidate").
func (m HashtreeErrorMode) String() string {
	if m >= 0 && int(m) < len(hashtreeModeNames) {
		return hashtreeModeNames[m]
	}
	return "HashtreeErrorMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseHashtreeErrorMode takes a mode's name as String gives it.
func ParseHashtreeErrorMode(s string) (HashtreeErrorMode, error) {
	if i := slices.Index(hashtreeModeNames, strings.ToLower(s)); i >= 0 {
		return HashtreeErrorMode(i), nil
	}
	return 0, inputErr("", "hashtree error mode %q: one of %s", s, strings.Join(hashtreeModeNames, ", "))
}

// ManagedVerityModeValue is libavb's AVB_NPV_MANAGED_VERITY_MODE: the
// persistent value in which the managed_restart_and_eio mode keeps the
// sha256 vbmeta digest of the OS that hit a corruption.
const ManagedVerityModeValue = "avb.managed_verity_mode"

// SlotBoot is what avb_slot_verify returns for one device state.
type SlotBoot struct {
	// Locked is the device state; Result libavb's result (its class:
	// libavb returns the first error when locked, the last unlocked).
	Locked bool
	Result SlotVerifyResult
	// Data: libavb returns slot data (a locked device only when Result
	// is OK, an unlocked one unless it is fatal); the fields below are
	// set only then.
	Data bool
	// Loaded are the loaded partitions (AvbSlotVerifyData's
	// loaded_partitions), in libavb's order.
	Loaded []SlotLoadedPartition
	// Cmdline is the kernel command line (AvbSlotVerifyData's cmdline).
	Cmdline string
	// HashtreeErrorMode is the mode the command line says
	// (resolved_hashtree_error_mode: managed_restart_and_eio becomes
	// restart or eio).
	HashtreeErrorMode HashtreeErrorMode
	// Unsubstituted are the variables left in Cmdline because the
	// device's value is not known (SlotOptions.PartUUIDs or
	// PersistentValues nil).
	Unsubstituted []string
	// Err says why Result is fatal when the command line made it so.
	Err error

	disabled bool // the top-level flags disable verification
}

// SlotLoadedPartition is one of libavb's loaded partitions (an
// AvbPartitionData): a requested partition's image, which the bootloader
// then boots.
type SlotLoadedPartition struct {
	// Partition is the name requested (without A/B suffix); Size the
	// bytes loaded: the hash descriptor's image_size on a locked device,
	// the whole partition on an unlocked one (or when the flags disable
	// verification).
	Partition string
	Size      uint64
	// Result is its verify_result: OK, or ERROR_VERIFICATION (unlocked).
	Result SlotVerifyResult
}

type cmdlineSubst struct{ token, value string }

// requested says whether the bootloader requests a hash partition.
func (s *slotCheck) requested(name string) bool {
	return s.opts.Requested == nil || slices.Contains(s.opts.Requested, name)
}

// requestedList is SlotOptions.Requested, or the partitions the hash
// descriptors libavb meets name when it is nil.
func (s *slotCheck) requestedList() []string {
	if s.opts.Requested != nil {
		return s.opts.Requested
	}
	var names []string
	for _, p := range s.res.Partitions {
		if h, ok := p.Descriptor.(*HashDescriptor); ok && !slices.Contains(names, h.PartitionName) {
			names = append(names, h.PartitionName)
		}
	}
	return names
}

// libavbLoads says whether libavb, locked or not, keeps vbmeta v (it is
// in its vbmeta_images, its descriptors taken): a locked device drops a
// chained vbmeta it refuses (and goes on: see libavbResult).
func (s *slotCheck) libavbLoads(v *SlotVBMeta, locked bool) bool {
	return v.loaded && !v.NotLoadedByLibavb && (!locked || !v.Chained || v.Result == SlotOK)
}

// libavbResult is avb_slot_verify's result, locked or unlocked, as
// load_and_verify_vbmeta's ret goes through the vbmetas and their
// descriptors: a hash partition's or a chained vbmeta's error is kept
// (unlocked: the last one; locked: a hash partition's ends the walk, a
// chained vbmeta's does not), a fatal one ends it, and a hashtree
// descriptor with a persistent root digest sets ret to its own result,
// OK included, which drops an earlier error. It also returns the hash
// partitions libavb takes, in its order, with their results, and where it
// stops in each vbmeta (the descriptor it returns at; 0: none).
func (s *slotCheck) libavbResult(locked, disabled bool) (SlotVerifyResult, []libavbPart, map[*SlotVBMeta]int) {
	var seen []libavbPart
	stops := map[*SlotVBMeta]int{}
	parts := s.partitionsByVBMeta()
	chained := s.res.VBMetas[1:]
	var run func(v *SlotVBMeta) SlotVerifyResult
	run = func(v *SlotVBMeta) SlotVerifyResult {
		if !v.loaded || v.Result.Fatal() || locked && v.Result != SlotOK {
			return v.Result
		}
		ret := v.Result
		if !v.Chained && disabled {
			return ret
		}
		ps := parts[v]
		stops[v] = v.libavbStop
		i := 0
		for d := range v.Image.VBMeta.Descriptors() {
			i++
			if v.libavbStop != 0 && i > v.libavbStop {
				break
			}
			var p *SlotPartition
			if len(ps) > 0 && ps[0].Index == i {
				p, ps = ps[0], ps[1:]
			}
			switch d := d.(type) {
			case *HashDescriptor:
				if p == nil || p.NotRequested {
					continue
				}
				r := libavbHashResult(p, locked)
				seen = append(seen, libavbPart{p, r})
				if r != SlotOK {
					ret = r
					if locked || r.Fatal() {
						// Kept in loaded_partitions unless fatal: a
						// chained vbmeta's caller goes on.
						stops[v] = i
						return ret
					}
				}
			case *ChainPartitionDescriptor:
				if len(chained) == 0 {
					continue
				}
				c := chained[0]
				chained = chained[1:]
				if r := run(c); r != SlotOK {
					ret = r
					if r.Fatal() {
						return ret
					}
				}
			case *HashtreeDescriptor:
				if p == nil {
					continue
				}
				if len(d.RootDigest) == 0 || p.Libavb != SlotOK {
					// A persistent root digest's result is ret, OK
					// included; any failure ends the walk.
					ret = p.Libavb
					if ret != SlotOK {
						return ret
					}
				}
			}
		}
		return ret
	}
	return run(s.res.VBMetas[0]), seen, stops
}

// partitionsByVBMeta lists the partitions of each vbmeta, in order.
func (s *slotCheck) partitionsByVBMeta() map[*SlotVBMeta][]*SlotPartition {
	parts := map[*SlotVBMeta][]*SlotPartition{}
	byName := map[string]*SlotVBMeta{}
	for _, v := range s.res.VBMetas {
		byName[v.Partition] = v
	}
	for _, p := range s.res.Partitions {
		if v := byName[p.VBMeta]; v != nil {
			parts[v] = append(parts[v], p)
		}
	}
	return parts
}

// libavbHashResult is what libavb's load of the hash partition p gives.
func libavbHashResult(p *SlotPartition, locked bool) SlotVerifyResult {
	switch {
	case locked && p.PersistentInit != nil:
		return SlotOK
	case locked && p.short:
		return SlotErrorIO // the read past the image's end fails
	}
	return p.Libavb
}

// libavbPart is a hash partition libavb takes, and its result there.
type libavbPart struct {
	p      *SlotPartition
	result SlotVerifyResult
}

// boot is what avb_slot_verify returns for the device state.
func (s *slotCheck) boot(locked bool) *SlotBoot {
	b := &SlotBoot{Locked: locked}
	r := s.res
	if locked && s.opts.HashtreeErrorMode == HashtreeLogging {
		b.Result, b.Err = SlotErrorInvalidArgument, inputErr("", "libavb refuses the logging hashtree error mode on a locked device")
		return b
	}
	if len(r.VBMetas) == 0 || !r.VBMetas[0].loaded {
		b.Result = SlotErrorIO
		if len(r.VBMetas) > 0 {
			b.Result = r.VBMetas[0].Result
		}
		return b
	}
	top := r.VBMetas[0]
	flags := top.Image.VBMeta.Header.Flags
	disabled := flags&FlagVerificationDisabled != 0
	b.disabled = disabled
	var seen []libavbPart
	var stops map[*SlotVBMeta]int
	b.Result, seen, stops = s.libavbResult(locked, disabled)
	if disabled && !b.Result.Fatal() && !(locked && b.Result != SlotOK) {
		// libavb loads the requested partitions whole, and checks nothing.
		for _, name := range s.requestedList() {
			full := name + s.opts.ABSuffix
			if len(full) >= libavbPartNameMax {
				b.Loaded, b.Result, b.Err = nil, SlotErrorInvalidMetadata, malformed("requested partition %q and the A/B suffix: %d bytes, libavb takes at most %d", name, len(full), libavbPartNameMax-1)
				return b
			}
			path, err := s.images.ImagePath(full)
			var size uint64
			if err == nil {
				size, err = imageSize(path)
			}
			if err != nil {
				b.Loaded, b.Result, b.Err = nil, SlotErrorIO, err
				return b
			}
			b.Loaded = append(b.Loaded, SlotLoadedPartition{Partition: name, Size: size})
		}
	}
	if locked && b.Result != SlotOK || b.Result.Fatal() {
		b.Loaded = nil
		return b
	}
	if !disabled {
		for _, lp := range seen {
			p := lp.p
			h := p.Descriptor.(*HashDescriptor)
			if p.Missing || lp.result.Fatal() || !p.Checked && p.PersistentInit == nil {
				continue
			}
			size := p.size
			if locked {
				size = h.ImageSize
			}
			b.Loaded = append(b.Loaded, SlotLoadedPartition{Partition: h.PartitionName, Size: size, Result: lp.result})
		}
	}
	b.Data = true
	if err := s.cmdline(b, top, disabled, stops); err != nil {
		b.Data, b.Loaded, b.Cmdline, b.Err = false, nil, "", err
	}
	return b
}

// cmdline builds the kernel command line as avb_slot_verify does, or
// fails as it does (b.Result set).
func (s *slotCheck) cmdline(b *SlotBoot, top *SlotVBMeta, disabled bool, stops map[*SlotVBMeta]int) error {
	var line cline
	if disabled {
		// No descriptor taken, no option added: root= is the system
		// partition, if there is one.
		if s.hasPartition("system" + s.opts.ABSuffix) {
			line.setTo("root=PARTUUID=$(ANDROID_SYSTEM_PARTUUID)")
		}
	} else {
		hashtreeDisabled := top.Image.VBMeta.Header.Flags&FlagHashtreeDisabled != 0
		s.cmdlineSnippets(&line, b, top, hashtreeDisabled, stops)
		if err := s.cmdlineOptions(&line, b, top, hashtreeDisabled); err != nil {
			return err
		}
	}
	b.Cmdline = line.String()
	if b.Cmdline == "" {
		return nil
	}
	return s.substitute(b, top)
}

// cmdlineSnippets adds the kernel command line descriptors of the
// vbmetas libavb walks, in its order (chained ones where their chain
// descriptor stands), those for the other dm-verity state left out.
func (s *slotCheck) cmdlineSnippets(line *cline, b *SlotBoot, top *SlotVBMeta, hashtreeDisabled bool, stops map[*SlotVBMeta]int) {
	chained := s.res.VBMetas[1:]
	var walk func(v *SlotVBMeta)
	walk = func(v *SlotVBMeta) {
		i := 0
		for d := range v.Image.VBMeta.Descriptors() {
			i++
			if stops[v] != 0 && i > stops[v] {
				return
			}
			switch d := d.(type) {
			case *KernelCmdlineDescriptor:
				if hashtreeDisabled && d.Flags&1 != 0 || !hashtreeDisabled && d.Flags&2 != 0 {
					continue // for the other dm-verity state
				}
				line.snippet(d.Cmdline)
			case *ChainPartitionDescriptor:
				if len(chained) == 0 {
					continue
				}
				c := chained[0]
				chained = chained[1:]
				if s.libavbLoads(c, b.Locked) {
					walk(c)
				}
			}
		}
	}
	walk(top)
}

// cmdlineOptions adds the options avb_append_options adds: the vbmeta's
// device, version, state, digest, and the hashtree error mode's.
func (s *slotCheck) cmdlineOptions(line *cline, b *SlotBoot, top *SlotVBMeta, hashtreeDisabled bool) error {
	mode := s.opts.HashtreeErrorMode
	if mode == HashtreeManagedRestartAndEIO {
		var err error
		if mode, err = s.managedMode(b); err != nil {
			b.Result = SlotErrorIO
			return err
		}
	}
	b.HashtreeErrorMode = mode
	line.option("androidboot.vbmeta.device", "PARTUUID=$(ANDROID_VBMETA_PARTUUID)")
	line.option("androidboot.vbmeta.avb_version", "1.3")
	state := "unlocked"
	if b.Locked {
		state = "locked"
	}
	line.option("androidboot.vbmeta.device_state", state)
	// libavb takes the top-level vbmeta's algorithm when it is done
	// with it; returned early (a refused persistent root digest), it
	// has none, and sha256 is used.
	alg := "sha256"
	if top.libavbStop == 0 && strings.HasPrefix(top.Image.VBMeta.Algorithm.Name, "SHA512") {
		alg = "sha512"
	}
	digest, size := s.vbmetaDigest(alg, b.Locked)
	line.option("androidboot.vbmeta.hash_alg", alg)
	line.option("androidboot.vbmeta.size", strconv.FormatUint(size, 10))
	line.option("androidboot.vbmeta.digest", hex.EncodeToString(digest))
	verityMode := "disabled"
	if !hashtreeDisabled {
		var dm string
		switch mode {
		case HashtreeRestartAndInvalidate:
			line.option("androidboot.vbmeta.invalidate_on_error", "yes")
			verityMode, dm = "enforcing", "restart_on_corruption"
		case HashtreeRestart:
			verityMode, dm = "enforcing", "restart_on_corruption"
		case HashtreeEIO:
			// libavb has no dm-verity option for EIO; this one is
			// set already and may be given twice.
			verityMode, dm = "eio", "ignore_zero_blocks"
		case HashtreeLogging:
			verityMode, dm = "logging", "ignore_corruption"
		case HashtreePanic:
			verityMode, dm = "panicking", "panic_on_corruption"
		default:
			b.Result = SlotErrorInvalidArgument
			return inputErr("", "hashtree error mode %d: libavb knows 0 to 5", int(mode))
		}
		line.replace("$(ANDROID_VERITY_MODE)", dm)
	}
	line.option("androidboot.veritymode", verityMode)
	if s.opts.HashtreeErrorMode == HashtreeManagedRestartAndEIO {
		line.option("androidboot.veritymode.managed", "yes")
	}
	return nil
}

// substitute is avb_sub_cmdline: each GUID looked for in the line as it
// was, then the top-level vbmeta's persistent root digests.
func (s *slotCheck) substitute(b *SlotBoot, top *SlotVBMeta) error {
	suffix := s.opts.ABSuffix
	orig := b.Cmdline
	vbmetaPart := "vbmeta"
	if top.Image.Footer != nil {
		vbmetaPart = "boot" // libavb's fallback: the top-level vbmeta is boot's
	}
	for _, g := range []struct{ part, token string }{
		{"system", "$(ANDROID_SYSTEM_PARTUUID)"}, {"boot", "$(ANDROID_BOOT_PARTUUID)"}, {vbmetaPart, "$(ANDROID_VBMETA_PARTUUID)"},
	} {
		if !strings.Contains(orig, g.token) {
			continue
		}
		full := g.part + suffix
		if len(full) >= libavbPartNameMax {
			b.Result = SlotErrorOOM
			return malformed("the kernel command line's %s: partition %q and the A/B suffix are %d bytes, libavb takes at most %d (and fails the slot, as out of memory)", g.token, full, len(full), libavbPartNameMax-1)
		}
		if s.opts.PartUUIDs == nil {
			b.Unsubstituted = append(b.Unsubstituted, g.token)
			continue
		}
		guid, ok := s.opts.PartUUIDs[full]
		if !ok {
			b.Result = SlotErrorOOM
			return inputErr("", "the kernel command line's %s: the device has no partition %q, whose GUID libavb asks for (and fails the slot, as out of memory)", g.token, full)
		}
		b.Cmdline = strings.ReplaceAll(b.Cmdline, g.token, cstr(guid))
	}
	for _, sub := range s.substList {
		b.Cmdline = strings.ReplaceAll(b.Cmdline, sub.token, sub.value)
	}
	if s.opts.PersistentValues == nil {
		for _, p := range s.res.Partitions {
			if h, ok := p.Descriptor.(*HashtreeDescriptor); ok && len(h.RootDigest) == 0 && p.VBMeta == top.Partition {
				t := "$(AVB_" + asciiUpper(h.PartitionName) + "_ROOT_DIGEST)"
				if strings.Contains(b.Cmdline, t) && !slices.Contains(b.Unsubstituted, t) {
					b.Unsubstituted = append(b.Unsubstituted, t)
				}
			}
		}
	}
	return nil
}

// managedMode is avb_manage_hashtree_error_mode's choice (no restart
// caused by a corruption): eio while the device's managed verity value
// holds this slot's sha256 vbmeta digest, else restart.
func (s *slotCheck) managedMode(b *SlotBoot) (HashtreeErrorMode, error) {
	v := s.opts.PersistentValues[ManagedVerityModeValue]
	switch {
	case len(v) == 0:
		return HashtreeRestart, nil
	case len(v) != sha256.Size:
		return 0, malformed("the persistent value %s is %d bytes, not the %d of a sha256 digest: libavb fails the slot (an I/O error)", ManagedVerityModeValue, len(v), sha256.Size)
	}
	if d, _ := s.vbmetaDigest("sha256", b.Locked); bytes.Equal(d, v) {
		return HashtreeEIO, nil
	}
	// A new OS: libavb clears the value and restarts on corruption.
	return HashtreeRestart, nil
}

// vbmetaDigest is avb_slot_verify_data_calculate_vbmeta_digest with the
// algorithm: of the vbmetas libavb loaded, in order; and their size.
func (s *slotCheck) vbmetaDigest(alg string, locked bool) ([]byte, uint64) {
	var h hash.Hash = sha256.New()
	if alg == "sha512" {
		h = sha512.New()
	}
	var size uint64
	vs := s.res.VBMetas
	if vs[0].Image.VBMeta.Header.Flags&FlagVerificationDisabled != 0 {
		vs = vs[:1]
	}
	for _, v := range vs {
		if s.libavbLoads(v, locked) {
			h.Write(v.Image.VBMeta.Raw)
			size += uint64(len(v.Image.VBMeta.Raw))
		}
	}
	return h.Sum(nil), size
}

// hasPartition is libavb's has_system_partition: the device has a GUID
// for it (without PartUUIDs: the set has its image).
func (s *slotCheck) hasPartition(name string) bool {
	if len(name) >= libavbPartNameMax {
		return false
	}
	if s.opts.PartUUIDs != nil {
		_, ok := s.opts.PartUUIDs[name]
		return ok
	}
	_, err := s.images.ImagePath(name)
	return err == nil
}

// cline is libavb's command line as a C string: nil until a snippet or
// an option sets it; each read stops at a NUL.
type cline struct {
	s   string
	set bool
}

func (l *cline) String() string { return cstr(l.s) }

func (l *cline) setTo(s string) { l.s, l.set = s, true }

// snippet appends a kernel command-line descriptor's text after a space
// (the first one alone, even when empty).
func (l *cline) snippet(s string) {
	if !l.set {
		l.setTo(s)
		return
	}
	l.setTo(cstr(l.s) + " " + s)
}

// option appends KEY=VALUE after a space unless the line is empty.
func (l *cline) option(key, value string) {
	if cur := cstr(l.s); cur != "" {
		l.setTo(cur + " " + key + "=" + value)
		return
	}
	l.setTo(key + "=" + value)
}

func (l *cline) replace(token, value string) { l.setTo(strings.ReplaceAll(cstr(l.s), token, value)) }

func cstr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// asciiUpper is avb_uppercase: a to z only.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 0x20
		}
	}
	return string(b)
}
