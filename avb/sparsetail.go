package avb

// ResizeImage and ZeroHashtree of an Android sparse image cut the image at
// some point (the end of the vbmeta; the tree's start) and append new
// chunks there, as avbtool's ImageHandler does. The new chunks go over
// chunks the header still counts, and zero_hashtree's last chunk is made
// from bytes those chunks hold, so they cannot be written in place
// directly. Killed at any moment, the run leaves the original image, the
// finished one, or a state the same command finishes:
//
//  1. Phase A: a safefile.ResumeRecord past everything the file holds and
//     everything the run writes (its original size: the image's, as
//     found), then the new chunks, byte for byte as they go at the cut,
//     staged past the chunks the header counts, then (synced) a staging
//     block just before the record saying where they go. Until then the
//     header's image is untouched: a rerun starts again.
//  2. Phase B: the header of a chunk the cut keeps part of, the staged
//     chunks copied to the cut, (synced) one write of the header's counts,
//     and the file cut after the last chunk, which drops the staging and
//     the record. A rerun that finds the staging block does all of phase B
//     again (FinishSparseRewrite) before anything else.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// stagingSize is the size of the staging block, written at a multiple of
// 512 so that the write never crosses a page.
const stagingSize = 512

var stagingMagic = []byte("VTSTAGED")

const stagingText = "veritytree: an interrupted resize_image or zero_hashtree staged new chunks here; run it again to finish it\n"

// staging says where phase B copies the staged chunks and what the header
// says then.
type staging struct {
	verb string // "resize_image" or "zero_hashtree", for messages
	// cutHeader, if not nil, is the new header of the chunk the cut keeps
	// part of, at cutHeaderAt.
	cutHeader   []byte
	cutHeaderAt uint64
	// The staged chunks are length bytes at from, copied to to.
	to, from, length uint64
	// The header's counts once they are there.
	totalBlocks, totalChunks uint32
}

var stagingVerbs = []string{"", "resize_image", "zero_hashtree"}

// tailVerb reports whether verb (a ResumeRecord's) is one that rewrites a
// sparse image's tail (rewriteTail's).
func tailVerb(verb string) bool { return verb != "" && slices.Contains(stagingVerbs, verb) }

func (s *staging) encode() []byte {
	b := make([]byte, stagingSize)
	copy(b, stagingMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], 1)
	for i, v := range stagingVerbs {
		if v == s.verb && i > 0 {
			le.PutUint32(b[12:], uint32(i))
		}
	}
	if s.cutHeader != nil {
		le.PutUint32(b[16:], 1)
		copy(b[20:32], s.cutHeader)
		le.PutUint64(b[32:], s.cutHeaderAt)
	}
	le.PutUint64(b[40:], s.to)
	le.PutUint64(b[48:], s.from)
	le.PutUint64(b[56:], s.length)
	le.PutUint32(b[64:], s.totalBlocks)
	le.PutUint32(b[68:], s.totalChunks)
	copy(b[72:], stagingText)
	sum := sha256.Sum256(b[:stagingSize-sha256.Size])
	copy(b[stagingSize-sha256.Size:], sum[:])
	return b
}

// readStaging returns the staging block just before the record that ends
// the file (fileSize bytes), or nil if there is none, or it does not fit
// the file.
func readStaging(f io.ReaderAt, fileSize int64) *staging {
	rec := safefile.ReadResumeRecord(f, fileSize)
	if rec == nil || !rec.Sparse || rec.End < safefile.ResumeRecordSize+stagingSize+sparseHeaderSize {
		return nil
	}
	at := rec.End - safefile.ResumeRecordSize - stagingSize
	b := make([]byte, stagingSize)
	if _, err := f.ReadAt(b, int64(at)); err != nil {
		return nil
	}
	le := binary.LittleEndian
	sum := sha256.Sum256(b[:stagingSize-sha256.Size])
	if !bytes.Equal(b[:8], stagingMagic) || le.Uint32(b[8:]) != 1 || !bytes.Equal(sum[:], b[stagingSize-sha256.Size:]) {
		return nil
	}
	v := le.Uint32(b[12:])
	if v == 0 || v >= uint32(len(stagingVerbs)) {
		return nil
	}
	s := &staging{verb: stagingVerbs[v], to: le.Uint64(b[40:]), from: le.Uint64(b[48:]), length: le.Uint64(b[56:]),
		totalBlocks: le.Uint32(b[64:]), totalChunks: le.Uint32(b[68:])}
	if le.Uint32(b[16:]) == 1 {
		s.cutHeader, s.cutHeaderAt = append([]byte{}, b[20:32]...), le.Uint64(b[32:])
	}
	// What phase B writes lies below the staged chunks, which lie below
	// the staging block: nothing it copies is what it overwrites.
	if s.to < sparseHeaderSize || s.length > s.from || s.to > s.from-s.length || s.from > at || s.length > at-s.from ||
		s.cutHeader != nil && (s.cutHeaderAt < sparseHeaderSize || s.cutHeaderAt > s.to-chunkHeaderSize) {
		return nil
	}
	return s
}

// finish does phase B (see the top of this file).
func (s *staging) finish(f *os.File) error {
	if s.cutHeader != nil {
		if err := writeAt(f, s.cutHeader, s.cutHeaderAt); err != nil {
			return err
		}
	}
	buf := make([]byte, 1<<20)
	for done := uint64(0); done < s.length; {
		n := min(uint64(len(buf)), s.length-done)
		if _, err := f.ReadAt(buf[:n], int64(s.from+done)); err != nil {
			return ioErr("image %s: reading the staged chunks: %v", f.Name(), err)
		}
		if err := writeAt(f, buf[:n], s.to+done); err != nil {
			return err
		}
		done += n
	}
	if err := syncFile(f); err != nil {
		return err
	}
	counts := make([]byte, 8)
	binary.LittleEndian.PutUint32(counts, s.totalBlocks)
	binary.LittleEndian.PutUint32(counts[4:], s.totalChunks)
	if err := writeAt(f, counts, 16); err != nil {
		return err
	}
	if err := syncFile(f); err != nil {
		return err
	}
	if err := f.Truncate(int64(s.to + s.length)); err != nil {
		return ioErr("image %s: %v", f.Name(), err)
	}
	return syncFile(f)
}

// FinishSparseRewrite finishes what a ResizeImage or ZeroHashtree of the
// Android sparse image at imagePath left when killed after it staged its
// new chunks (see sparsetail.go), and reports whether it found that. The
// image is then what the interrupted call makes; other images are left as
// they are. ResizeImage and ZeroHashtree call it first themselves.
func FinishSparseRewrite(imagePath string) (bool, error) {
	f, fileSize, err := openLockedImage(imagePath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return finishStaged(f, fileSize)
}

func finishStaged(f *os.File, fileSize int64) (bool, error) {
	if !isSparse(f) {
		return false, nil
	}
	s := readStaging(f, fileSize)
	if s == nil {
		return false, nil
	}
	return true, s.finish(f)
}

// stagedChunk is a chunk of the new tail: its type, its blocks and, for a
// RAW chunk, what writes its data (n bytes).
type stagedChunk struct {
	typ    uint16
	blocks uint32
	n      uint64
	data   func(w io.Writer) error
}

// rewriteTail cuts the sparse image (opened as sw, at path) at cutAt and
// appends chunks, safely (see the top of this file).
func rewriteTail(ctx context.Context, sw *sparseWriter, verb string, cutAt uint64, chunks []stagedChunk) error {
	f := sw.f
	cut, err := sw.planCut(cutAt)
	if err != nil {
		return err
	}
	s := &staging{verb: verb, cutHeader: cut.header, cutHeaderAt: uint64(cut.headerAt), to: uint64(cut.end)}
	blocks, n := uint64(cut.blocks), uint64(cut.chunks)
	for _, c := range chunks {
		data := uint64(0)
		switch c.typ {
		case chunkRaw:
			data = c.n
		case chunkFill:
			data = 4
		}
		if chunkHeaderSize+data > 1<<32-1 {
			return inputErr("", "a sparse chunk of %d bytes: more than a chunk's 4 GiB", data)
		}
		s.length += chunkHeaderSize + data
		blocks += uint64(c.blocks)
		n++
	}
	if blocks > 1<<32-1 || n > 1<<32-1 {
		return inputErr("", "a sparse image of %d blocks in %d chunks: more than its header counts", blocks, n)
	}
	s.totalBlocks, s.totalChunks = uint32(blocks), uint32(n)
	newEnd := s.to + s.length
	s.from = roundUp(max(uint64(sw.end), newEnd), safefile.ResumeRecordSize)
	recAt := roundUp(s.from+s.length, safefile.ResumeRecordSize) + stagingSize
	if sw.record != nil {
		// An earlier run's record, rewritten in place or left behind.
		recAt = max(recAt, sw.record.End-safefile.ResumeRecordSize)
	}
	if _, err := writeResumeRecord(f, recAt, sw.size(), verb); err != nil {
		return err
	}
	if err := stage(ctx, f, s, chunks, recAt-stagingSize); err != nil {
		// Phase A changed nothing the header counts: what it wrote past
		// the chunks goes, with whatever an earlier run left there.
		_ = f.Truncate(sw.end)
		return err
	}
	return s.finish(f)
}

// stage writes the chunks at s.from, then the staging block at at (phase
// A, see the top of this file).
func stage(ctx context.Context, f *os.File, s *staging, chunks []stagedChunk, at uint64) error {
	bw := bufio.NewWriterSize(io.NewOffsetWriter(f, int64(s.from)), 1<<20)
	for _, c := range chunks {
		data := uint64(0)
		switch c.typ {
		case chunkRaw:
			data = c.n
		case chunkFill:
			data = 4
		}
		if _, err := bw.Write(chunkHeader(c.typ, c.blocks, data)); err != nil {
			return ioErr("image %s: %v", f.Name(), err)
		}
		if c.typ == chunkFill {
			if _, err := bw.Write(make([]byte, 4)); err != nil { // the fill is zeros
				return ioErr("image %s: %v", f.Name(), err)
			}
		}
		if c.data != nil {
			if err := c.data(safefile.ContextWriter(ctx, bw)); err != nil {
				return err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return ioErr("image %s: %v", f.Name(), err)
	}
	if err := syncFile(f); err != nil {
		return err
	}
	if err := writeAt(f, s.encode(), at); err != nil {
		return err
	}
	return syncFile(f)
}

// openSparseTail opens the sparse image f (at path) for ResizeImage or
// ZeroHashtree after FinishSparseRewrite: it refuses what another
// command's interrupted run left (a record of another original size), and
// returns the writer and the image's expansion.
func openSparseTail(f *os.File, path string) (*sparseWriter, *verity.Source, error) {
	sw, err := openSparseWriter(f)
	if err != nil {
		return nil, nil, prefixErr(path, err)
	}
	if rec := sw.record; rec != nil && rec.Verb != "" && !tailVerb(rec.Verb) {
		return nil, nil, inputErr("run "+verbCommand(rec.Verb)+" again to finish it",
			"%s: an interrupted %s left this sparse image with a record past its chunks", path, verbCommand(rec.Verb))
	}
	if sw.record != nil && sw.record.OriginalSize != sw.size() {
		return nil, nil, inputErr("run the command that was interrupted again (add_hashtree_footer, say) to finish it",
			"%s: an interrupted run left this sparse image in the middle of adding a footer", path)
	}
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return nil, nil, err
	}
	return sw, src, nil
}

// rawData writes b.
func rawData(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

// copyData writes n bytes of r from off on, a piece at a time.
func copyData(r io.ReaderAt, off, n uint64) func(io.Writer) error {
	return func(w io.Writer) error {
		if _, err := io.Copy(w, io.NewSectionReader(r, int64(off), int64(n))); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return ioErr("copying the image's end: %v", err)
		}
		return nil
	}
}
