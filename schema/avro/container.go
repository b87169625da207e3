package avro

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Container file codecs, as named in the avro.codec metadata.
const (
	CodecNull      = "null"
	CodecDeflate   = "deflate"
	CodecSnappy    = "snappy"
	CodecZstandard = "zstandard"
	CodecBzip2     = "bzip2"
)

// MaxBlockSize bounds a container block, compressed and decompressed. A
// block's header declares its size; without a bound a corrupt or hostile
// file could make the reader allocate gigabytes, or a small compressed
// block expand without end. Writers flush blocks of 16 KiB (Java's
// default sync interval is 64 KiB) to a few MiB, so 256 MiB leaves room
// for any real file while keeping one block's memory predictable.
const MaxBlockSize = 256 << 20

var magic = []byte{'O', 'b', 'j', 1}

// Block is one block of a container file, decompressed.
type Block struct {
	Index  int    // 0 for the first block
	Offset int64  // byte offset of the block's header in the file
	Count  int64  // records in the block
	Data   []byte // the records, Avro binary back to back; valid until the next Next
}

// ContainerError is a container file that is truncated or corrupt. Block
// is -1 for the header.
type ContainerError struct {
	Block  int
	Offset int64
	Err    error
}

func (e *ContainerError) Error() string {
	if e.Block < 0 {
		return fmt.Sprintf("avro container: header at offset %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("avro container: block %d at offset %d: %v", e.Block, e.Offset, e.Err)
}

func (e *ContainerError) Unwrap() error { return e.Err }

// ContainerReader reads an Avro object container file block by block.
// Codecs: null, deflate, snappy, zstandard and bzip2 (goavro reads the
// first three; zstandard and bzip2 are here because Java and Python
// writers use them). Records are left as Avro binary for a compiled
// decoder; goavro's OCFReader would turn each into native Go values.
type ContainerReader struct {
	r      *bufio.Reader
	off    int64
	schema *Schema
	codec  string
	meta   map[string][]byte
	sync   [16]byte
	index  int
	done   bool

	raw, data []byte
	zr        io.ReadCloser // deflate, reused
}

// NewContainerReader reads the file header: magic, metadata (the writer
// schema under avro.schema, the codec under avro.codec) and sync marker.
func NewContainerReader(r io.Reader) (*ContainerReader, error) {
	c := &ContainerReader{r: bufio.NewReaderSize(r, 1<<16), meta: make(map[string][]byte)}
	fail := func(err error) (*ContainerReader, error) {
		return nil, &ContainerError{Block: -1, Offset: c.off, Err: err}
	}
	var m [4]byte
	if err := c.read(m[:]); err != nil {
		return fail(err)
	}
	if !bytes.Equal(m[:], magic) {
		return fail(fmt.Errorf("not an Avro object container file (magic %q)", m[:]))
	}
	for {
		n, err := c.long()
		if err != nil {
			return fail(err)
		}
		if n == 0 {
			break
		}
		if n < 0 {
			if n == -n { // MinInt64
				return fail(errors.New("bad metadata block count"))
			}
			n = -n
			if _, err := c.long(); err != nil {
				return fail(err)
			}
		}
		if n > 1<<16 {
			return fail(fmt.Errorf("metadata block of %d entries", n))
		}
		for range n {
			k, err := c.bytes(1 << 20)
			if err != nil {
				return fail(err)
			}
			v, err := c.bytes(64 << 20)
			if err != nil {
				return fail(err)
			}
			c.meta[string(k)] = v
		}
	}
	if err := c.read(c.sync[:]); err != nil {
		return fail(err)
	}
	text, ok := c.meta["avro.schema"]
	if !ok {
		return fail(errors.New("no avro.schema in the header"))
	}
	s, err := Parse(string(text))
	if err != nil {
		return fail(err)
	}
	c.schema = s
	c.codec = CodecNull
	if v, ok := c.meta["avro.codec"]; ok && len(v) > 0 {
		c.codec = string(v)
	}
	switch c.codec {
	case CodecNull, CodecDeflate, CodecSnappy, CodecZstandard, CodecBzip2:
	default:
		return fail(fmt.Errorf("unsupported codec %q (supported: null, deflate, snappy, zstandard, bzip2)", c.codec))
	}
	return c, nil
}

// Schema returns the writer schema of the file's records.
func (c *ContainerReader) Schema() *Schema { return c.schema }

// Codec returns the name of the file's codec.
func (c *ContainerReader) Codec() string { return c.codec }

// Metadata returns the value of a header metadata key.
func (c *ContainerReader) Metadata(key string) ([]byte, bool) {
	v, ok := c.meta[key]
	return v, ok
}

// Offset returns the number of bytes read so far.
func (c *ContainerReader) Offset() int64 { return c.off }

// Next returns the next block, or io.EOF after the last. A truncated or
// corrupt block is a *ContainerError naming the block and its offset.
func (c *ContainerReader) Next() (Block, error) {
	if c.done {
		return Block{}, io.EOF
	}
	b := Block{Index: c.index, Offset: c.off}
	fail := func(err error) (Block, error) {
		c.done = true
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Block{}, &ContainerError{Block: b.Index, Offset: b.Offset, Err: err}
	}
	if _, err := c.r.Peek(1); err == io.EOF {
		c.done = true
		return Block{}, io.EOF
	}
	count, err := c.long()
	if err != nil {
		return fail(fmt.Errorf("record count: %w", err))
	}
	size, err := c.long()
	if err != nil {
		return fail(fmt.Errorf("block size: %w", err))
	}
	if count < 0 || size < 0 || size > MaxBlockSize {
		return fail(fmt.Errorf("bad block header: %d records in %d bytes", count, size))
	}
	c.raw = grow(c.raw, int(size))
	if err := c.read(c.raw); err != nil {
		return fail(fmt.Errorf("%d bytes of block data: %w", size, err))
	}
	var sync [16]byte
	if err := c.read(sync[:]); err != nil {
		return fail(fmt.Errorf("sync marker: %w", err))
	}
	if sync != c.sync {
		return fail(errors.New("sync marker does not match the header's: the file is corrupt"))
	}
	if b.Data, err = c.decompress(c.raw); err != nil {
		return fail(fmt.Errorf("%s: %w", c.codec, err))
	}
	if count > int64(len(b.Data))+1<<20 {
		// Records take at least one byte, except those of empty types;
		// allow those some room, but no count that would loop for ever.
		return fail(fmt.Errorf("bad block header: %d records in %d bytes", count, len(b.Data)))
	}
	b.Count = count
	c.index++
	return b, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBlockSize), zstd.WithDecoderMaxWindow(MaxBlockSize))
	if err != nil {
		panic(err)
	}
	return d
}}

func (c *ContainerReader) decompress(raw []byte) ([]byte, error) {
	switch c.codec {
	case CodecNull:
		return raw, nil
	case CodecDeflate:
		if c.zr == nil {
			c.zr = flate.NewReader(bytes.NewReader(raw))
		} else if err := c.zr.(flate.Resetter).Reset(bytes.NewReader(raw), nil); err != nil {
			return nil, err
		}
		return c.readAll(c.zr)
	case CodecBzip2:
		return c.readAll(bzip2.NewReader(bytes.NewReader(raw)))
	case CodecSnappy:
		if len(raw) < 4 {
			return nil, errors.New("shorter than its checksum")
		}
		body, sum := raw[:len(raw)-4], binary.BigEndian.Uint32(raw[len(raw)-4:])
		n, err := snappy.DecodedLen(body)
		if err != nil {
			return nil, err
		}
		if n > MaxBlockSize {
			return nil, fmt.Errorf("decompresses to %d bytes, more than %d", n, MaxBlockSize)
		}
		c.data = grow(c.data, n)
		out, err := snappy.Decode(c.data, body)
		if err != nil {
			return nil, err
		}
		if crc32.ChecksumIEEE(out) != sum {
			return nil, errors.New("checksum mismatch")
		}
		return out, nil
	case CodecZstandard:
		d := zstdDecoders.Get().(*zstd.Decoder)
		defer zstdDecoders.Put(d)
		out, err := d.DecodeAll(raw, c.data[:0])
		if err != nil {
			return nil, err
		}
		c.data = out
		return out, nil
	}
	return nil, fmt.Errorf("unsupported codec %q", c.codec)
}

// readAll reads a decompressing reader into c.data, at most MaxBlockSize.
func (c *ContainerReader) readAll(r io.Reader) ([]byte, error) {
	buf := bytes.NewBuffer(c.data[:0])
	n, err := buf.ReadFrom(io.LimitReader(r, MaxBlockSize+1))
	if err != nil {
		return nil, err
	}
	if n > MaxBlockSize {
		return nil, fmt.Errorf("decompresses to more than %d bytes", MaxBlockSize)
	}
	c.data = buf.Bytes()
	return c.data, nil
}

func (c *ContainerReader) read(p []byte) error {
	n, err := io.ReadFull(c.r, p)
	c.off += int64(n)
	if err == io.EOF && len(p) > 0 {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (c *ContainerReader) long() (int64, error) {
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 70 {
			return 0, errors.New("varint longer than 10 bytes")
		}
		b, err := c.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		c.off++
		u |= uint64(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

func (c *ContainerReader) bytes(limit int64) ([]byte, error) {
	n, err := c.long()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > limit {
		return nil, fmt.Errorf("bad length %d", n)
	}
	b := make([]byte, n)
	return b, c.read(b)
}
