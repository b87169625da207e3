package keyindex

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The file format of snapshots and of spilled runs (one format for both;
// the kind in the footer tells them apart). All integers are unsigned
// varints unless said otherwise.
//
//	file    := header block* footer trailer
//	header  := "PQKIDX" version(2 bytes, big-endian; 1)
//	block   := entry*            (at most blockTarget bytes unless one entry is larger)
//	entry   := keyLen key epoch value
//	           value is offset+1, or 0 for a deleted key (a tombstone)
//	footer  := kind seq baseSeq baseID(4 bytes) count minEpoch maxEpoch
//	           blockCount (blockLen blockCRC(4 bytes) entries firstKeyLen firstKey)*
//	trailer := footerLen(4 bytes) footerCRC(4 bytes) "PQKIDXev"
//
// Keys increase strictly through the file. Each block's CRC-32C
// (Castagnoli) covers its bytes, and the footer's covers the footer, so
// every byte of the file is checked; the footer's CRC is the file's id,
// which a delta snapshot names as its base. Blocks follow the header with
// no gap, so their offsets are implied.

const (
	version      = 1
	headerLen    = 8
	trailerLen   = 16
	blockTarget  = 4 << 10
	maxBlockLen  = 1 << 20 // a block holds at most one entry over blockTarget; keys are at most MaxKeyLen
	maxFooterLen = 1 << 30
	// MaxKeyLen is the largest key the index takes, in bytes.
	MaxKeyLen = 64 << 10
)

var (
	headerMagic  = []byte("PQKIDX\x00\x01")
	trailerMagic = []byte("PQKIDXev")
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
)

// Kind says what a file holds.
type Kind uint8

const (
	kindRun Kind = iota // a spilled run of the local index, never in the store
	// KindFull is a snapshot of every live key.
	KindFull
	// KindDelta is a snapshot of the keys changed since its base snapshot,
	// deleted keys included.
	KindDelta
)

func (k Kind) String() string {
	switch k {
	case kindRun:
		return "run"
	case KindFull:
		return "full"
	case KindDelta:
		return "delta"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// fileMeta is a file's footer less its blocks.
type fileMeta struct {
	kind     Kind
	seq      uint64
	baseSeq  uint64
	baseID   uint32
	count    uint64
	minEpoch uint64
	maxEpoch uint64
}

type blockMeta struct {
	off      int64
	len      uint32
	crc      uint32
	entries  uint32
	firstKey []byte
}

// entry is one key's latest change: off < 0 is a tombstone.
type entry struct {
	key   []byte
	off   int64
	epoch uint64
}

// fileWriter writes entries in key order as a file.
type fileWriter struct {
	w       *bufio.Writer
	n       int64
	meta    fileMeta
	blocks  []blockMeta
	block   []byte
	entries uint32
	first   []byte
	last    []byte
	started bool
	err     error
}

func newFileWriter(w io.Writer, meta fileMeta) *fileWriter {
	fw := &fileWriter{w: bufio.NewWriterSize(w, 64<<10), meta: meta}
	fw.meta.count, fw.meta.minEpoch, fw.meta.maxEpoch = 0, 0, 0
	fw.write(headerMagic)
	return fw
}

func (fw *fileWriter) write(b []byte) {
	if fw.err != nil {
		return
	}
	n, err := fw.w.Write(b)
	fw.n += int64(n)
	if err != nil {
		fw.err = fmt.Errorf("keyindex: writing the index: %w", err)
	}
}

// add appends an entry; keys must increase strictly.
func (fw *fileWriter) add(e entry) error {
	if fw.err != nil {
		return fw.err
	}
	if fw.started && bytes.Compare(e.key, fw.last) <= 0 {
		return fmt.Errorf("keyindex: internal error: keys out of order in a file being written")
	}
	if len(fw.block) > 0 && len(fw.block)+len(e.key)+30 > blockTarget {
		fw.flushBlock()
	}
	if fw.entries == 0 {
		fw.first = append(fw.first[:0], e.key...)
	}
	fw.block = binary.AppendUvarint(fw.block, uint64(len(e.key)))
	fw.block = append(fw.block, e.key...)
	fw.block = binary.AppendUvarint(fw.block, e.epoch)
	fw.block = binary.AppendUvarint(fw.block, uint64(e.off+1)) // a tombstone's -1 is 0
	fw.entries++
	if !fw.started || e.epoch < fw.meta.minEpoch {
		fw.meta.minEpoch = e.epoch
	}
	if e.epoch > fw.meta.maxEpoch {
		fw.meta.maxEpoch = e.epoch
	}
	fw.meta.count++
	fw.last = append(fw.last[:0], e.key...)
	fw.started = true
	return fw.err
}

func (fw *fileWriter) flushBlock() {
	if len(fw.block) == 0 {
		return
	}
	fw.blocks = append(fw.blocks, blockMeta{
		off: fw.n, len: uint32(len(fw.block)), crc: crc32.Checksum(fw.block, castagnoli),
		entries: fw.entries, firstKey: bytes.Clone(fw.first),
	})
	fw.write(fw.block)
	fw.block, fw.entries = fw.block[:0], 0
}

// finish writes the footer and trailer, and returns the file's size and id.
func (fw *fileWriter) finish() (size int64, id uint32, err error) {
	fw.flushBlock()
	f := encodeFooter(fw.meta, fw.blocks)
	id = crc32.Checksum(f, castagnoli)
	fw.write(f)
	var t [trailerLen]byte
	binary.BigEndian.PutUint32(t[0:], uint32(len(f)))
	binary.BigEndian.PutUint32(t[4:], id)
	copy(t[8:], trailerMagic)
	fw.write(t[:])
	if fw.err == nil {
		if err := fw.w.Flush(); err != nil {
			fw.err = fmt.Errorf("keyindex: writing the index: %w", err)
		}
	}
	return fw.n, id, fw.err
}

func encodeFooter(m fileMeta, blocks []blockMeta) []byte {
	var f []byte
	f = binary.AppendUvarint(f, uint64(m.kind))
	f = binary.AppendUvarint(f, m.seq)
	f = binary.AppendUvarint(f, m.baseSeq)
	f = binary.BigEndian.AppendUint32(f, m.baseID)
	f = binary.AppendUvarint(f, m.count)
	f = binary.AppendUvarint(f, m.minEpoch)
	f = binary.AppendUvarint(f, m.maxEpoch)
	f = binary.AppendUvarint(f, uint64(len(blocks)))
	for _, b := range blocks {
		f = binary.AppendUvarint(f, uint64(b.len))
		f = binary.BigEndian.AppendUint32(f, b.crc)
		f = binary.AppendUvarint(f, uint64(b.entries))
		f = binary.AppendUvarint(f, uint64(len(b.firstKey)))
		f = append(f, b.firstKey...)
	}
	return f
}

// fileReader reads a file written by fileWriter, checked as it goes.
type fileReader struct {
	r      io.ReaderAt
	size   int64
	meta   fileMeta
	blocks []blockMeta
	id     uint32
}

// ErrCorrupt is wrapped by every error about bytes that are not a valid
// snapshot or chain of snapshots, as opposed to an error reading them.
var ErrCorrupt = errors.New("corrupt key index")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("keyindex: %w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// openFile reads and checks a file's header, trailer and footer. The
// blocks are checked as they are read.
func openFile(r io.ReaderAt, size int64) (*fileReader, error) {
	if size < headerLen+trailerLen {
		return nil, corrupt("%d bytes, fewer than a header and a trailer", size)
	}
	var h [headerLen]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("keyindex: reading the header: %w", err)
	}
	if !bytes.Equal(h[:6], headerMagic[:6]) {
		return nil, corrupt("no PQKIDX header: not a key index file")
	}
	if v := binary.BigEndian.Uint16(h[6:]); v != version {
		return nil, corrupt("format version %d, this release reads version %d", v, version)
	}
	var t [trailerLen]byte
	if _, err := r.ReadAt(t[:], size-trailerLen); err != nil {
		return nil, fmt.Errorf("keyindex: reading the trailer: %w", err)
	}
	if !bytes.Equal(t[8:], trailerMagic) {
		return nil, corrupt("no trailer: the file is cut short or not a key index file")
	}
	flen := int64(binary.BigEndian.Uint32(t[0:]))
	if flen > maxFooterLen || flen > size-headerLen-trailerLen {
		return nil, corrupt("a footer of %d bytes in a file of %d", flen, size)
	}
	f := make([]byte, flen)
	if _, err := r.ReadAt(f, size-trailerLen-flen); err != nil {
		return nil, fmt.Errorf("keyindex: reading the footer: %w", err)
	}
	id := binary.BigEndian.Uint32(t[4:])
	if got := crc32.Checksum(f, castagnoli); got != id {
		return nil, corrupt("footer checksum %08x, the trailer says %08x", got, id)
	}
	fr := &fileReader{r: r, size: size, id: id}
	if err := fr.decodeFooter(f, size-trailerLen-flen); err != nil {
		return nil, err
	}
	return fr, nil
}

// byteReader decodes a footer, remembering its first error.
type byteReader struct {
	b   []byte
	err error
}

func (br *byteReader) uvarint(what string) uint64 {
	if br.err != nil {
		return 0
	}
	v, n := binary.Uvarint(br.b)
	if n <= 0 {
		br.err = corrupt("footer: bad varint for %s", what)
		return 0
	}
	br.b = br.b[n:]
	return v
}

func (br *byteReader) u32(what string) uint32 {
	if br.err != nil {
		return 0
	}
	if len(br.b) < 4 {
		br.err = corrupt("footer: cut short in %s", what)
		return 0
	}
	v := binary.BigEndian.Uint32(br.b)
	br.b = br.b[4:]
	return v
}

func (br *byteReader) bytes(n uint64, what string) []byte {
	if br.err != nil {
		return nil
	}
	if n > uint64(len(br.b)) {
		br.err = corrupt("footer: %s of %d bytes, %d left", what, n, len(br.b))
		return nil
	}
	v := br.b[:n]
	br.b = br.b[n:]
	return v
}

func (fr *fileReader) decodeFooter(f []byte, blocksEnd int64) error {
	br := &byteReader{b: f}
	kind := br.uvarint("the kind")
	m := fileMeta{
		seq: br.uvarint("the sequence number"), baseSeq: br.uvarint("the base"), baseID: br.u32("the base id"),
		count: br.uvarint("the count"), minEpoch: br.uvarint("the epochs"), maxEpoch: br.uvarint("the epochs"),
	}
	n := br.uvarint("the block count")
	if br.err != nil {
		return br.err
	}
	if kind > uint64(KindDelta) {
		return corrupt("unknown kind %d", kind)
	}
	m.kind = Kind(kind)
	// Each block takes at least 7 bytes of footer: a bound before allocating.
	if n > uint64(len(br.b))/7 {
		return corrupt("%d blocks in a footer of %d bytes", n, len(f))
	}
	blocks := make([]blockMeta, 0, n)
	off := int64(headerLen)
	var total uint64
	var prev []byte
	for i := uint64(0); i < n; i++ {
		l := br.uvarint("a block length")
		crc := br.u32("a block checksum")
		ents := br.uvarint("a block's entries")
		fk := br.bytes(br.uvarint("a first key's length"), "a first key")
		if br.err != nil {
			return br.err
		}
		if l == 0 || l > maxBlockLen || int64(l) > blocksEnd-off {
			return corrupt("block %d: %d bytes at %d, the blocks end at %d", i, l, off, blocksEnd)
		}
		if ents == 0 || ents > l/3 {
			return corrupt("block %d: %d entries in %d bytes", i, ents, l)
		}
		if len(fk) == 0 || len(fk) > MaxKeyLen || (i > 0 && bytes.Compare(fk, prev) <= 0) {
			return corrupt("block %d: its first key is empty, too long, or not after the previous block's", i)
		}
		blocks = append(blocks, blockMeta{off: off, len: uint32(l), crc: crc, entries: uint32(ents), firstKey: fk})
		off += int64(l)
		total += ents
		prev = fk
	}
	if len(br.b) != 0 {
		return corrupt("%d bytes after the footer's blocks", len(br.b))
	}
	if off != blocksEnd {
		return corrupt("the blocks end at %d, the footer starts at %d", off, blocksEnd)
	}
	if total != m.count {
		return corrupt("the blocks hold %d entries, the footer says %d", total, m.count)
	}
	if m.minEpoch > m.maxEpoch {
		return corrupt("epochs from %d to %d", m.minEpoch, m.maxEpoch)
	}
	fr.meta, fr.blocks = m, blocks
	return nil
}

// readBlock reads block i into buf (grown as needed) and checks it.
func (fr *fileReader) readBlock(i int, buf []byte) ([]byte, error) {
	b := fr.blocks[i]
	if cap(buf) < int(b.len) {
		buf = make([]byte, b.len)
	}
	buf = buf[:b.len]
	if _, err := fr.r.ReadAt(buf, b.off); err != nil {
		return buf, fmt.Errorf("keyindex: reading block %d: %w", i, err)
	}
	if got := crc32.Checksum(buf, castagnoli); got != b.crc {
		return buf, corrupt("block %d: checksum %08x, the footer says %08x", i, got, b.crc)
	}
	return buf, nil
}

// blockEntries calls fn for each entry of a checked block, checking that
// keys increase from after (nil for none) and that the first key is the
// footer's. The entry's key aliases data.
func (fr *fileReader) blockEntries(i int, data []byte, after []byte, fn func(entry) error) error {
	b := fr.blocks[i]
	prev := after
	for n := uint32(0); n < b.entries; n++ {
		kl, k := binary.Uvarint(data)
		if k <= 0 || kl == 0 || kl > MaxKeyLen || kl > uint64(len(data)-k) {
			return corrupt("block %d, entry %d: bad key length", i, n)
		}
		key := data[k : k+int(kl)]
		data = data[k+int(kl):]
		epoch, k1 := binary.Uvarint(data)
		if k1 <= 0 {
			return corrupt("block %d, entry %d: bad epoch", i, n)
		}
		data = data[k1:]
		v, k2 := binary.Uvarint(data)
		if k2 <= 0 || v > 1<<63 {
			return corrupt("block %d, entry %d: bad offset", i, n)
		}
		data = data[k2:]
		if n == 0 && !bytes.Equal(key, b.firstKey) {
			return corrupt("block %d: its first key is not the footer's", i)
		}
		if prev != nil && bytes.Compare(key, prev) <= 0 {
			return corrupt("block %d, entry %d: keys out of order", i, n)
		}
		if epoch < fr.meta.minEpoch || epoch > fr.meta.maxEpoch {
			return corrupt("block %d, entry %d: epoch %d outside the footer's %d to %d", i, n, epoch, fr.meta.minEpoch, fr.meta.maxEpoch)
		}
		if err := fn(entry{key: key, off: int64(v) - 1, epoch: epoch}); err != nil {
			return err
		}
		prev = key
	}
	if len(data) != 0 {
		return corrupt("block %d: %d bytes after its entries", i, len(data))
	}
	return nil
}

// iter walks a file's entries in order.
type fileIter struct {
	fr   *fileReader
	blk  int
	buf  []byte
	ents []entry
	pos  int
	last []byte
	err  error
}

func (fr *fileReader) iter() *fileIter { return &fileIter{fr: fr, blk: -1} }

// next returns the next entry; its key is valid until the iterator moves
// past its block.
func (it *fileIter) next() (entry, bool) {
	for it.pos >= len(it.ents) {
		if it.err != nil || it.blk+1 >= len(it.fr.blocks) {
			return entry{}, false
		}
		it.blk++
		buf, err := it.fr.readBlock(it.blk, nil) // a fresh buffer: keys of the previous block may still be held
		if err != nil {
			it.err = err
			return entry{}, false
		}
		it.buf = buf
		it.ents, it.pos = it.ents[:0], 0
		err = it.fr.blockEntries(it.blk, it.buf, it.last, func(e entry) error {
			it.ents = append(it.ents, e)
			return nil
		})
		if err != nil {
			it.err = err
			return entry{}, false
		}
		if len(it.ents) > 0 {
			it.last = it.ents[len(it.ents)-1].key
		}
	}
	e := it.ents[it.pos]
	it.pos++
	return e, true
}
