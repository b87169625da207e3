package reader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

const smallSchema = `message m {
  required int64 id;
  optional binary name (STRING);
  optional group tags (LIST) {
    repeated group list {
      optional int32 element;
    }
  }
}`

const smallJSON = `{"id":1,"name":"a","tags":[1,null]}
{"id":2,"name":null,"tags":null}
{"id":3,"name":"c","tags":[]}
`

// smallChunks returns the columns of smallJSON; dict makes the name column
// dictionary-encoded, v2 uses data pages v2.
func smallChunks(v2, dict bool) []testChunk {
	name := testChunk{def: []uint8{1, 0, 1}, vals: byteArrays("a", "c"), v2: v2}
	if dict {
		d := byteArrays("c", "a")
		name = testChunk{def: []uint8{1, 0, 1}, dict: &d, indices: []int32{1, 0}, v2: v2}
	}
	return []testChunk{
		{vals: Values{Type: meta.TypeInt64, Int64: []int64{1, 2, 3}}, v2: v2},
		name,
		{rep: []uint8{0, 1, 0, 0}, def: []uint8{3, 2, 0, 1}, vals: Values{Type: meta.TypeInt32, Int32: []int32{1}}, v2: v2},
	}
}

func smallFile(t testing.TB, header func(int, *meta.PageHeader), footer func(*meta.FileMetaData)) []byte {
	return buildFile(t, mustParse(t, smallSchema), 3, smallChunks(false, false), header, footer)
}

func TestCraftedFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v2, dict bool
	}{
		{"v1", false, false},
		{"v2", true, false},
		{"v1 dictionary", false, true},
		{"v2 dictionary", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := buildFile(t, mustParse(t, smallSchema), 3, smallChunks(tc.v2, tc.dict), nil, nil)
			got, err := readBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != smallJSON {
				t.Errorf("got\n%s\nwant\n%s", got, smallJSON)
			}
		})
	}
}

// TestCorruptFiles damages a small file in the ways the issue lists; each
// must give an error that says what is wrong, and never panic.
func TestCorruptFiles(t *testing.T) {
	good := smallFile(t, nil, nil)
	footerLen := int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	for _, tc := range []struct {
		name string
		data []byte
		want string // in the error
		is   error
	}{
		{"wrong head magic", append([]byte("PAR2"), good[4:]...), "starts with", ErrNotParquet},
		{"wrong tail magic", append(good[:len(good)-4:len(good)-4], "PAR2"...), "ends with", ErrNotParquet},
		{"encrypted footer", append(good[:len(good)-4:len(good)-4], "PARE"...), "encrypted", ErrEncrypted},
		{"too short", []byte("PAR1PAR1"), "shorter than", ErrNotParquet},
		{"footer length too big", setFooterLen(good, uint32(len(good))), "does not fit", ErrCorrupt},
		{"footer length huge", setFooterLen(good, 0xffffffff), "does not fit", ErrCorrupt},
		{"footer length zero", setFooterLen(good, 0), "does not fit", ErrCorrupt},
		{"footer length short", setFooterLen(good, uint32(footerLen-5)), "footer", ErrCorrupt},
		{"page compressed size lies", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 0 {
				h.CompressedPageSize = 999999
			}
		}, nil), "compressed size 999999 exceeds chunk end", ErrCorrupt},
		{"page uncompressed size huge", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 0 {
				h.UncompressedPageSize = 1<<31 - 1
			}
		}, nil), "header says 2147483647 uncompressed", ErrCorrupt},
		{"negative page size", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 1 {
				h.CompressedPageSize = -1
			}
		}, nil), "negative page size", ErrCorrupt},
		{"absurd num_values", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 2 {
				h.DataPageHeader.NumValues = 1 << 30
			}
		}, nil), "num_values 1073741824: pages hold more than", ErrCorrupt},
		{"num_values over the values", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 0 {
				h.DataPageHeader.NumValues = 1000
			}
		}, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[0].MetaData.NumValues = 1000
		}), "1000 values need at least 8000 bytes", ErrCorrupt},
		{"num_values over the chunk's", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 0 {
				h.DataPageHeader.NumValues = 1000
			}
		}, nil), "pages hold more than the 3 values", ErrCorrupt},
		{"checksum", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 1 {
				*h.CRC++
			}
		}, nil), "page 0 at offset", ErrChecksum},
		{"unknown encoding", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 0 {
				h.DataPageHeader.Encoding = 42
			}
		}, nil), "value encoding Encoding(42)", ErrUnsupported},
		{"chunk beyond the file", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[1].MetaData.DataPageOffset = 1 << 40
		}), "exceeds the", ErrCorrupt},
		{"chunk size lies", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[1].MetaData.TotalCompressedSize = 1 << 40
		}), "exceeds the", ErrCorrupt},
		{"chunk size short", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[0].MetaData.TotalCompressedSize = 10
		}), "row group 0, column id, page 0 at offset 4", ErrCorrupt},
		{"more values than declared", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[2].MetaData.NumValues = 2
		}), "more than the 2 values", ErrCorrupt},
		{"fewer values than declared", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[0].MetaData.NumValues = 7
		}), "after 3 of the 7 values", ErrCorrupt},
		{"more rows than the columns hold", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].NumRows = 4
		}), "column ends before", ErrCorrupt},
		{"missing column chunk", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns = md.RowGroups[0].Columns[:2]
		}), "2 column chunks for 3 leaf columns", ErrCorrupt},
		{"type mismatch", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].Columns[0].MetaData.Type = meta.TypeInt32
		}), "chunk has type INT32, schema says INT64", ErrCorrupt},
		{"schema children lie", smallFile(t, nil, func(md *meta.FileMetaData) {
			n := int32(1000)
			md.Schema[0].NumChildren = &n
		}), "1000 children", ErrCorrupt},
		{"rows without columns", smallFile(t, nil, func(md *meta.FileMetaData) {
			zero := int32(0)
			md.Schema = []meta.SchemaElement{{Name: "m", NumChildren: &zero}}
			md.RowGroups[0].Columns = nil
			md.RowGroups[0].NumRows = 1 << 62
		}), "rows but the schema has no columns", ErrCorrupt},
		{"absurd nesting", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.Schema = deepSchema(100000)
		}), "nested more than", ErrCorrupt},
		{"level encoding", smallFile(t, func(c int, h *meta.PageHeader) {
			if c == 2 {
				h.DataPageHeader.DefinitionLevelEncoding = meta.EncodingPlain
			}
		}, nil), "definition levels: unsupported feature: level encoding PLAIN", ErrCorrupt},
		{"more values than rows", smallFile(t, nil, func(md *meta.FileMetaData) {
			md.RowGroups[0].NumRows = 2
		}), "column id has values after the row group's 2 rows", ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readBytes(tc.data)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant one wrapping %v and containing %q", err, tc.is, tc.want)
			}
		})
	}
}

func setFooterLen(file []byte, n uint32) []byte {
	out := bytes.Clone(file)
	binary.LittleEndian.PutUint32(out[len(out)-8:], n)
	return out
}

// deepSchema returns a schema of depth required groups around one leaf.
func deepSchema(depth int) []meta.SchemaElement {
	one := int32(1)
	req := meta.Required
	typ := meta.TypeInt64
	elems := []meta.SchemaElement{{Name: "m", NumChildren: &one}}
	for range depth {
		elems = append(elems, meta.SchemaElement{Name: "g", NumChildren: &one, RepetitionType: &req})
	}
	return append(elems, meta.SchemaElement{Name: "x", Type: &typ, RepetitionType: &req})
}

// TestTruncated cuts a file at every length: each must fail cleanly.
func TestTruncated(t *testing.T) {
	for _, data := range [][]byte{
		smallFile(t, nil, nil),
		mustRead(t, testingDir+"/nested_lists.snappy.parquet"),
	} {
		for n := range len(data) {
			if _, err := readBytes(data[:n]); err == nil {
				t.Fatalf("file cut at %d of %d bytes: no error", n, len(data))
			}
		}
	}
}

// TestFlippedBytes damages every byte of a small file in turn: reading may
// succeed, since not every byte is checked, but must never panic.
func TestFlippedBytes(t *testing.T) {
	data := smallFile(t, nil, nil)
	for i := range data {
		for _, x := range []byte{0xff, 0x80, 0x01} {
			d := bytes.Clone(data)
			d[i] ^= x
			readBytes(d, VerifyChecksums(false))
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	data, err := readTestFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestHugeDeclaredSizesBoundMemory reads small crafted files whose headers
// declare huge sizes and counts, and checks that the reader allocates in
// proportion to the file, not to the declarations.
func TestHugeDeclaredSizesBoundMemory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header func(int, *meta.PageHeader)
		footer func(*meta.FileMetaData)
	}{
		{"uncompressed size", func(c int, h *meta.PageHeader) { h.UncompressedPageSize = 1<<31 - 1 }, nil},
		{"num_values", func(c int, h *meta.PageHeader) { h.DataPageHeader.NumValues = 1<<31 - 1 }, nil},
		{"row count", nil, func(md *meta.FileMetaData) { md.NumRows, md.RowGroups[0].NumRows = 1<<62, 1<<62 }},
		{"chunk values", nil, func(md *meta.FileMetaData) {
			for i := range md.RowGroups[0].Columns {
				md.RowGroups[0].Columns[i].MetaData.NumValues = 1 << 62
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := smallFile(t, tc.header, tc.footer)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := readBytes(data)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("no error")
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("reading a %d-byte file allocated %d bytes", len(data), alloc)
			}
		})
	}
}

// TestRLEPageBoundedByMaxMemory checks that a page whose run-length
// encoded levels describe many values in few bytes is refused, as over the
// memory budget and not as corrupt, when its levels do not fit in
// MaxMemory, and read when they do.
func TestRLEPageBoundedByMaxMemory(t *testing.T) {
	s := mustParse(t, `message m { optional int32 x; }`)
	const n = 100000
	def := make([]uint8, n) // all null: a single RLE run of a few bytes
	data := buildFile(t, s, n, []testChunk{{def: def, vals: Values{Type: meta.TypeInt32}}}, nil, nil)
	if len(data) > 300 {
		t.Fatalf("crafted file is %d bytes; the run should be tiny", len(data))
	}
	_, err := readBytes(data, MaxMemory(n-1))
	if !errors.Is(err, ErrMemoryBudget) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "reader.MaxMemory") {
		t.Fatalf("MaxMemory(n-1): got %v", err)
	}
	got, err := readBytes(data, MaxMemory(4*n))
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(got, []byte(`{"x":null}`)); lines != n {
		t.Fatalf("%d null rows, want %d", lines, n)
	}
}
