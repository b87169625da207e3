package reader

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pqsink/pqsink/compress"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

// fuzzSeedMax keeps seeds small enough for the fuzzer to mutate usefully.
const fuzzSeedMax = 4 << 10

// fuzzMaxMemory is the memory budget the fuzz targets read under: low, so
// that the fuzzer cannot make the process run out of memory with
// legitimately huge declarations, and checked after every input.
const fuzzMaxMemory = 16 << 20

var fuzzOptions = []Option{MaxMemory(fuzzMaxMemory)}

// FuzzReadFile reads whole files: footer, pages and records. It must never
// panic, whatever the bytes.
func FuzzReadFile(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(testingDir, "*.parquet"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && len(data) <= fuzzSeedMax {
			f.Add(data)
		}
	}
	f.Add(smallFile(f, nil, nil))
	f.Add(buildFile(f, mustParse(f, smallSchema), 3, smallChunks(true, true), nil, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := readBytes(data, fuzzOptions...)
		if err == nil && len(out) > 0 && out[len(out)-1] != '\n' {
			t.Fatal("incomplete output without an error")
		}
		// The budget holds record by record, whatever the bytes.
		file, err := Open(bytesReader(data), int64(len(data)), fuzzOptions...)
		if err != nil {
			return
		}
		rows, err := file.Rows()
		if err != nil {
			return
		}
		for range 1000 {
			_, err := rows.Next()
			if rows.mem.used > fuzzMaxMemory {
				t.Fatalf("the read holds %d bytes, over its %d-byte budget", rows.mem.used, fuzzMaxMemory)
			}
			if err != nil {
				return
			}
		}
	})
}

// fuzzLeaves are the columns FuzzPage decodes pages for, one per physical
// type and level shape.
var fuzzSchema = `message m {
  required boolean b;
  optional int32 i32;
  required int64 i64;
  optional int96 i96;
  optional float f;
  required double d;
  optional group l (LIST) { repeated group list { optional binary element (STRING); } }
  optional fixed_len_byte_array(3) fixed;
}`

// FuzzPage decodes a column chunk of arbitrary bytes: page headers,
// dictionary and data pages of every kind, with any codec.
func FuzzPage(f *testing.F) {
	for _, name := range []string{
		"alltypes_plain.parquet", "alltypes_dictionary.parquet", "nested_lists.snappy.parquet",
		"datapage_v2_empty_datapage.snappy.parquet", "rle_boolean_encoding.parquet",
		"delta_length_byte_array.parquet", "byte_stream_split.zstd.parquet", "hadoop_lz4_compressed.parquet",
	} {
		data, err := os.ReadFile(filepath.Join(testingDir, name))
		if err != nil {
			f.Fatal(err)
		}
		file, err := Open(bytesReader(data), int64(len(data)))
		if err != nil {
			f.Fatal(err)
		}
		for col := range file.Schema().Leaves() {
			cc := file.md.RowGroups[0].Columns[col].MetaData
			c, err := file.ColumnChunk(0, col)
			if err != nil || c.length > fuzzSeedMax {
				continue
			}
			buf, err := c.window(0, c.length)
			if err != nil {
				continue
			}
			f.Add(buf, uint8(cc.Codec), uint8(fuzzColumnFor(file.Schema().Leaves()[col])))
		}
	}
	s, err := schema.Parse(fuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, chunk []byte, codec, column uint8) {
		leaves := s.Leaves()
		leaf := leaves[int(column)%len(leaves)]
		file := &File{schema: s, size: int64(len(chunk)) + 1<<20, opts: defaultOptions()}
		for _, o := range fuzzOptions {
			o(&file.opts)
		}
		c, err := chunkReaderFor(file, leaf, meta.CompressionCodec(codec%8), chunk)
		if err != nil {
			return
		}
		for range 64 {
			p, err := c.Next()
			if c.mem.used > fuzzMaxMemory {
				t.Fatalf("the chunk reader holds %d bytes, over its %d-byte budget", c.mem.used, fuzzMaxMemory)
			}
			if err != nil {
				return
			}
			if n := p.Values.Len(); n > p.NumValues {
				t.Fatalf("%d values for %d levels", n, p.NumValues)
			}
			if leaf.MaxDef > 0 && len(p.Def) != p.NumValues {
				t.Fatalf("%d definition levels for %d values", len(p.Def), p.NumValues)
			}
		}
	})
}

// fuzzColumnFor picks the fuzz schema's column of the leaf's physical type.
func fuzzColumnFor(n *schema.Node) int {
	switch n.Physical {
	case meta.TypeBoolean:
		return 0
	case meta.TypeInt32:
		return 1
	case meta.TypeInt64:
		return 2
	case meta.TypeInt96:
		return 3
	case meta.TypeFloat:
		return 4
	case meta.TypeDouble:
		return 5
	case meta.TypeFixedLenByteArray:
		return 7
	}
	return 6
}

// chunkReaderFor returns a reader of chunk as the chunk of leaf.
func chunkReaderFor(f *File, leaf *schema.Node, codec meta.CompressionCodec, chunk []byte) (*ChunkReader, error) {
	c := &ChunkReader{
		f: f, leaf: leaf, buf: chunk, length: len(chunk), base: 4, mem: newBudget(f.opts.maxMemory),
		cm: &meta.ColumnMetaData{Type: leaf.Physical, Codec: codec, NumValues: 1 << 40, TotalCompressedSize: int64(len(chunk))},
	}
	var err error
	c.codec, err = compress.New(codec)
	return c, err
}

// FuzzPlainInPlace decodes arbitrary bytes as n PLAIN byte arrays in
// place and checks the values against Plain's decoder: the same values,
// or a refusal where Plain fails.
func FuzzPlainInPlace(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00a\x03\x00\x00\x00bcd\x00\x00\x00\x00"), uint16(3))
	f.Add([]byte("\x05\x00\x00\x00ab"), uint16(1))
	f.Add([]byte("\x00\x00\x00\x00"), uint16(2))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, src []byte, count uint16) {
		n := int(count)
		want := Values{Type: meta.TypeByteArray}
		wantErr := want.decode(encoding.Plain{}, src, n)
		got := Values{Type: meta.TypeByteArray}
		buf := bytes.Clone(src)
		ok := got.plainInPlace(buf, n)
		switch {
		case ok && wantErr != nil:
			t.Fatalf("in place accepted %d values that Plain refuses: %v", n, wantErr)
		case !ok && wantErr == nil && n > 0:
			t.Fatalf("in place refused %d values that Plain decodes", n)
		case !ok:
			return
		}
		if got.Len() != want.Len() {
			t.Fatalf("%d values, Plain decodes %d", got.Len(), want.Len())
		}
		for i := range n {
			if !bytes.Equal(got.Bytes(i), want.Bytes(i)) {
				t.Fatalf("value %d is %q, Plain decodes %q", i, got.Bytes(i), want.Bytes(i))
			}
		}
	})
}
