package avb

import (
	"slices"
	"sort"
)

// span is where an included descriptor's bytes are in an inclusion's
// arena.
type span struct{ from, to int }

// inclusion gathers the descriptors of the images of
// --include_descriptors_from_image, encoded, in one arena: a million of
// them take their bytes and no object each.
type inclusion struct {
	arena []byte
	// unnamed are the descriptors without a partition name, in order
	// (runs of adjacent ones as one span); named the last one of each
	// type and partition name, by avbtool's dictionary key.
	unnamed []span
	named   map[string]span
	// size is the bytes that go into the vbmeta.
	size int
}

// include copies the descriptors of the images at paths, as avbtool's
// --include_descriptors_from_image takes them: those without a partition
// name in order, then those with one, the last of each type and name only,
// ordered by avbtool's dictionary key (class name, partition name). They
// are refused once they exceed what a vbmeta holds.
func (p *prepared) include(paths []string) error {
	in := &inclusion{named: map[string]span{}}
	for _, path := range paths {
		img, err := ReadImage(path)
		if err != nil {
			return err
		}
		p.minor = max(p.minor, img.VBMeta.Header.RequiredLibavbMinor)
		in.reserve(len(img.VBMeta.descs))
		img.VBMeta.walk(in.add)
		if in.size > MaxVBMetaSize {
			return inputErr("", "the descriptors of the images included (%s...) take more than the %d bytes of a vbmeta", path, MaxVBMetaSize)
		}
	}
	p.included = in.encoded()
	return nil
}

// reserve makes room for n more bytes in the arena, first dropping what
// later descriptors replaced once that is as much as a vbmeta.
func (in *inclusion) reserve(n int) {
	if len(in.arena)-in.size > MaxVBMetaSize {
		in.compact()
	}
	in.arena = slices.Grow(in.arena, min(n, MaxVBMetaSize+1))
}

// add takes one descriptor; false ends the walk once the descriptors
// exceed a vbmeta.
func (in *inclusion) add(tag uint64, raw []byte) bool {
	s := span{len(in.arena), len(in.arena) + len(raw)}
	in.arena = append(in.arena, raw...)
	in.size += len(raw)
	key := ""
	switch tag {
	case TagHashtree, TagHash, TagChainPartition:
		key = namedKey(tag, raw)
	}
	switch {
	case key != "":
		if old, ok := in.named[key]; ok {
			in.size -= old.to - old.from
		}
		in.named[key] = s
	case len(in.unnamed) > 0 && in.unnamed[len(in.unnamed)-1].to == s.from:
		in.unnamed[len(in.unnamed)-1].to = s.to
	default:
		in.unnamed = append(in.unnamed, s)
	}
	return in.size <= MaxVBMetaSize
}

// compact copies the descriptors kept into a new arena.
func (in *inclusion) compact() {
	arena := make([]byte, 0, in.size)
	move := func(s span) span {
		from := len(arena)
		arena = append(arena, in.arena[s.from:s.to]...)
		return span{from, len(arena)}
	}
	for i, s := range in.unnamed {
		in.unnamed[i] = move(s)
	}
	for k, s := range in.named {
		in.named[k] = move(s)
	}
	in.arena = arena
}

// encoded returns the descriptors in avbtool's order, parts of the arena.
func (in *inclusion) encoded() [][]byte {
	keys := make([]string, 0, len(in.named))
	for k := range in.named {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([][]byte, 0, len(in.unnamed)+len(keys))
	for _, s := range in.unnamed {
		parts = append(parts, in.arena[s.from:s.to])
	}
	for _, k := range keys {
		s := in.named[k]
		parts = append(parts, in.arena[s.from:s.to])
	}
	return parts
}

// namedKey is avbtool's dictionary key of an included descriptor that has
// a partition name (hashtree, hash, chain partition).
func namedKey(tag uint64, raw []byte) string {
	d, _ := decodeDescriptor(tag, raw, true) // checked when parsed
	switch d := d.(type) {
	case *HashtreeDescriptor:
		return "AvbHashtreeDescriptor_" + d.PartitionName
	case *HashDescriptor:
		return "AvbHashDescriptor_" + d.PartitionName
	case *ChainPartitionDescriptor:
		return "AvbChainPartitionDescriptor_" + d.PartitionName
	}
	return ""
}
