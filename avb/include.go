package avb

import (
	"encoding/binary"
	"sort"
)

// includedPart is an included descriptor (or a run of adjacent ones):
// bytes from:to of the inclusion's source src, the descriptor area of an
// included image's vbmeta or the inclusion's own copy. Small, as there may
// be a part for each of 170,000 descriptors.
type includedPart struct {
	src      uint32
	from, to uint32
}

// inclusion gathers the descriptors of the images of
// --include_descriptors_from_image without an object or a copy each: a
// million of them are parts of the blob they were read in.
type inclusion struct {
	srcs [][]byte
	// unnamed are the descriptors without a partition name, in order;
	// named the last one of each type and partition name, by avbtool's
	// dictionary key.
	unnamed []includedPart
	named   map[string]includedPart
	// size is the bytes that go into the vbmeta; held the bytes of the
	// blobs the parts are in, which a copy of what is kept bounds.
	size, held int
}

func (in *inclusion) bytes(p includedPart) []byte { return in.srcs[p.src][p.from:p.to] }

// include gathers the descriptors of the images at paths, as avbtool's
// --include_descriptors_from_image takes them: those without a partition
// name in order, then those with one, the last of each type and name only,
// ordered by avbtool's dictionary key (class name, partition name). They
// are refused once they exceed what a vbmeta holds.
func (p *prepared) include(paths []string) error {
	in := &inclusion{named: map[string]includedPart{}}
	for _, path := range paths {
		img, err := ReadImage(path)
		if err != nil {
			return err
		}
		p.minor = max(p.minor, img.VBMeta.Header.RequiredLibavbMinor)
		descs := img.VBMeta.descs
		in.srcs = append(in.srcs, descs)
		in.held += len(descs)
		walkDescriptors(descs, func(off, tag uint64, raw []byte) error {
			in.add(uint32(off), tag, raw)
			if in.size > MaxVBMetaSize {
				return errStopWalk
			}
			return nil
		})
		if in.size > MaxVBMetaSize {
			return inputErr("", "the descriptors of the images included (%s...) take more than the %d bytes of a vbmeta", path, MaxVBMetaSize)
		}
		if in.held > MaxVBMetaSize {
			in.compact() // the older blobs go, what is kept of them is copied
		}
	}
	p.included = in.encoded()
	return nil
}

// add takes the descriptor raw, at off in the last source.
func (in *inclusion) add(off uint32, tag uint64, raw []byte) {
	pt := includedPart{uint32(len(in.srcs) - 1), off, off + uint32(len(raw))}
	in.size += len(raw)
	key := ""
	switch tag {
	case TagHashtree, TagHash, TagChainPartition:
		key = namedKey(tag, raw)
	}
	last := len(in.unnamed) - 1
	switch {
	case key != "":
		if old, ok := in.named[key]; ok {
			in.size -= int(old.to - old.from)
		}
		in.named[key] = pt
	case last >= 0 && in.unnamed[last].src == pt.src && in.unnamed[last].to == off:
		in.unnamed[last].to = pt.to // a run of adjacent descriptors
	default:
		in.unnamed = append(in.unnamed, pt)
	}
}

// compact copies the descriptors kept from every source but the last
// (the blob just read, which stays) into one source of their own, so
// that the blobs they were read in go. Copying only the older parts keeps
// the peak at two blobs read and what is kept of the others.
func (in *inclusion) compact() {
	last := uint32(len(in.srcs) - 1)
	n := 0
	for _, p := range in.unnamed {
		if p.src != last {
			n += int(p.to - p.from)
		}
	}
	for _, p := range in.named {
		if p.src != last {
			n += int(p.to - p.from)
		}
	}
	buf := make([]byte, 0, n)
	move := func(p includedPart) includedPart {
		if p.src == last {
			p.src = 1
			return p
		}
		from := len(buf)
		buf = append(buf, in.bytes(p)...)
		return includedPart{0, uint32(from), uint32(len(buf))}
	}
	for i, p := range in.unnamed {
		in.unnamed[i] = move(p)
	}
	for k, p := range in.named {
		in.named[k] = move(p)
	}
	in.srcs = [][]byte{buf, in.srcs[last]}
	in.held = len(buf) + len(in.srcs[1])
}

// encoded returns the descriptors in avbtool's order.
func (in *inclusion) encoded() [][]byte {
	keys := make([]string, 0, len(in.named))
	for k := range in.named {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([][]byte, 0, len(in.unnamed)+len(keys))
	for _, p := range in.unnamed {
		parts = append(parts, in.bytes(p))
	}
	for _, k := range keys {
		parts = append(parts, in.bytes(in.named[k]))
	}
	return parts
}

// namedKey is avbtool's dictionary key of an included descriptor that has
// a partition name (hashtree, hash, chain partition): its class name and
// the name, read in place (the descriptor was checked when parsed).
func namedKey(tag uint64, raw []byte) string {
	var class string
	var lenAt, nameAt int
	switch tag {
	case TagHashtree:
		class, lenAt, nameAt = "AvbHashtreeDescriptor_", 104, hashtreeFixed
	case TagHash:
		class, lenAt, nameAt = "AvbHashDescriptor_", 56, hashFixed
	case TagChainPartition:
		class, lenAt, nameAt = "AvbChainPartitionDescriptor_", 20, chainFixed
	default:
		return ""
	}
	n := int(binary.BigEndian.Uint32(raw[lenAt:]))
	return class + string(raw[nameAt:nameAt+n])
}
