package meta

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// footer returns the serialized FileMetaData of a Parquet file: the file
// ends with it, its 4-byte little-endian length, and "PAR1".
func footer(t testing.TB, file []byte) []byte {
	t.Helper()
	if len(file) < 12 || string(file[len(file)-4:]) != "PAR1" {
		t.Fatal("not a Parquet file")
	}
	n := int(binary.LittleEndian.Uint32(file[len(file)-8:]))
	if n > len(file)-12 {
		t.Fatalf("footer length %d too large", n)
	}
	return file[len(file)-8-n : len(file)-8]
}

func readTestFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRealFooters(t *testing.T) {
	tests := []struct {
		file      string
		rows      int64
		columns   int // leaf columns of the first row group
		codec     CompressionCodec
		createdBy string
		// identical is set when the writer emits fields exactly as we do,
		// so re-encoding reproduces the original bytes.
		identical bool
		check     func(t *testing.T, m *FileMetaData)
	}{
		{
			file: "alltypes_plain.parquet", rows: 8, columns: 11, codec: CodecUncompressed,
			createdBy: "impala version 1.3.0-INTERNAL (build 8a48ddb1eff84592b3fc06bc6f51ec120e1fffc9)", identical: true,
			check: func(t *testing.T, m *FileMetaData) {
				if got := m.Schema[2]; got.Name != "bool_col" || *got.Type != TypeBoolean || *got.RepetitionType != Optional {
					t.Errorf("schema[2] = %+v", got)
				}
				if got := *m.Schema[11].Type; got != TypeInt96 {
					t.Errorf("timestamp_col type = %v, want INT96", got)
				}
			},
		},
		{
			file: "data_index_bloom_encoding_with_length.parquet", rows: 14, columns: 1, codec: CodecUncompressed,
			createdBy: "parquet-rs version 49.0.0", identical: true,
			check: func(t *testing.T, m *FileMetaData) {
				cc := m.RowGroups[0].Columns[0]
				md := cc.MetaData
				if md.BloomFilterOffset == nil || md.BloomFilterLength == nil || *md.BloomFilterLength <= 0 {
					t.Fatalf("bloom filter location missing: %+v", md)
				}
				if cc.ColumnIndexOffset == nil || cc.OffsetIndexOffset == nil {
					t.Fatal("page index location missing")
				}
				if m.Schema[1].LogicalType == nil || m.Schema[1].LogicalType.String == nil {
					t.Errorf("column is not annotated STRING: %+v", m.Schema[1])
				}
				if s := md.Statistics; s == nil || string(s.MinValue) != "Hello" || s.IsMinValueExact == nil || !*s.IsMinValueExact {
					t.Errorf("statistics = %+v", s)
				}
			},
		},
		{
			file: "column_chunk_key_value_metadata.parquet", rows: 0, columns: 2, codec: CodecUncompressed,
			createdBy: "parquet-cpp-arrow version 17.0.0-SNAPSHOT", identical: true,
			check: func(t *testing.T, m *FileMetaData) {
				kv := m.RowGroups[0].Columns[0].MetaData.KeyValueMetadata
				if len(kv) != 2 || kv[0].Key != "foo" || kv[0].Value == nil || *kv[0].Value != "bar" ||
					kv[1].Key != "thisiskeywithoutvalue" || kv[1].Value != nil {
					t.Errorf("column key_value_metadata = %+v", kv)
				}
				if len(m.ColumnOrders) != 2 || m.ColumnOrders[0].TypeOrder == nil {
					t.Errorf("column_orders = %+v", m.ColumnOrders)
				}
			},
		},
		{
			// The second column's LogicalType has a member id this spec
			// does not define: it must be skipped, leaving an empty union.
			file: "unknown-logical-type.parquet", rows: 3, columns: 2, codec: CodecSnappy,
			createdBy: "parquet-cpp-arrow version 20.0.0-SNAPSHOT", identical: false,
			check: func(t *testing.T, m *FileMetaData) {
				if lt := m.Schema[1].LogicalType; lt == nil || lt.String == nil {
					t.Errorf("known column LogicalType = %+v", lt)
				}
				lt := m.Schema[2].LogicalType
				if lt == nil || *lt != (LogicalType{}) {
					t.Errorf("unknown LogicalType decoded as %+v, want present and empty", lt)
				}
			},
		},
		{
			file: "datapage_v2_empty_datapage.snappy.parquet", rows: 1, columns: 1, codec: CodecSnappy,
			createdBy: "parquet-mr version 1.13.1 (build db4183109d5b734ec5930d870cdae161e408ddba)", identical: true,
			check: func(t *testing.T, m *FileMetaData) {
				es := m.RowGroups[0].Columns[0].MetaData.EncodingStats
				if len(es) != 1 || es[0].PageType != PageDataV2 {
					t.Errorf("encoding_stats = %+v", es)
				}
			},
		},
		{
			file: "float16_zeros_and_nans.parquet", rows: 3, columns: 1, codec: CodecUncompressed,
			createdBy: "parquet-cpp-arrow version 15.0.0-SNAPSHOT", identical: true,
			check: func(t *testing.T, m *FileMetaData) {
				el := m.Schema[1]
				if *el.Type != TypeFixedLenByteArray || *el.TypeLength != 2 || el.LogicalType.Float16 == nil {
					t.Errorf("schema[1] = %+v", el)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := footer(t, readTestFile(t, tt.file))
			var m FileMetaData
			if err := Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if m.NumRows != tt.rows {
				t.Errorf("num_rows = %d, want %d", m.NumRows, tt.rows)
			}
			if len(m.RowGroups) == 0 || len(m.RowGroups[0].Columns) != tt.columns {
				t.Fatalf("row groups = %+v, want %d columns in the first", m.RowGroups, tt.columns)
			}
			for i, c := range m.RowGroups[0].Columns {
				if c.MetaData == nil || c.MetaData.Codec != tt.codec {
					t.Errorf("column %d codec: got %+v, want %v", i, c.MetaData, tt.codec)
				}
			}
			if m.CreatedBy == nil || *m.CreatedBy != tt.createdBy {
				t.Errorf("created_by = %v, want %q", m.CreatedBy, tt.createdBy)
			}
			tt.check(t, &m)

			again := Marshal(&m)
			if tt.identical && !bytes.Equal(again, raw) {
				t.Errorf("re-encoding differs from the writer's bytes:\ngot  % x\nwant % x", again, raw)
			}
			var m2 FileMetaData
			if err := Unmarshal(again, &m2); err != nil {
				t.Fatal(err)
			}
			if third := Marshal(&m2); !bytes.Equal(third, again) {
				t.Error("encode(decode(encode(footer))) is not stable")
			}
		})
	}
}

// TestRealPageStructures decodes the page headers, page index and bloom
// filter header that the footers point at.
func TestRealPageStructures(t *testing.T) {
	t.Run("page headers", func(t *testing.T) {
		for _, name := range []string{"alltypes_plain.parquet", "datapage_v2_empty_datapage.snappy.parquet", "unknown-logical-type.parquet"} {
			file := readTestFile(t, name)
			var m FileMetaData
			if err := Unmarshal(footer(t, file), &m); err != nil {
				t.Fatal(err)
			}
			for _, off := range pageOffsets(&m) {
				var ph PageHeader
				n, err := ph.Decode(file[off:])
				if err != nil {
					t.Fatalf("%s at %d: %v", name, off, err)
				}
				if ph.CompressedPageSize < 0 || int(off)+n+int(ph.CompressedPageSize) > len(file) {
					t.Fatalf("%s at %d: page of %d bytes runs past the file", name, off, ph.CompressedPageSize)
				}
				switch ph.Type {
				case PageDictionary:
					if ph.DictionaryPageHeader == nil {
						t.Errorf("%s at %d: dictionary page without its header", name, off)
					}
				case PageData:
					if ph.DataPageHeader == nil {
						t.Errorf("%s at %d: data page without its header", name, off)
					}
				case PageDataV2:
					h := ph.DataPageHeaderV2
					if h == nil || h.NumValues != 1 || h.NumNulls != 1 || h.NumRows != 1 {
						t.Errorf("%s at %d: v2 header = %+v", name, off, h)
					}
				default:
					t.Errorf("%s at %d: unexpected page type %v", name, off, ph.Type)
				}
				if !bytes.Equal(Marshal(&ph), file[off:int(off)+n]) {
					t.Errorf("%s at %d: page header does not re-encode to the same bytes", name, off)
				}
			}
		}
	})
	t.Run("page index and bloom filter", func(t *testing.T) {
		file := readTestFile(t, "data_index_bloom_encoding_with_length.parquet")
		var m FileMetaData
		if err := Unmarshal(footer(t, file), &m); err != nil {
			t.Fatal(err)
		}
		cc := m.RowGroups[0].Columns[0]
		var ci ColumnIndex
		if err := Unmarshal(file[*cc.ColumnIndexOffset:*cc.ColumnIndexOffset+int64(*cc.ColumnIndexLength)], &ci); err != nil {
			t.Fatal(err)
		}
		if len(ci.NullPages) != 1 || ci.NullPages[0] || string(ci.MinValues[0]) != "Hello" || string(ci.MaxValues[0]) != "today" {
			t.Errorf("column index = %+v", ci)
		}
		var oi OffsetIndex
		if err := Unmarshal(file[*cc.OffsetIndexOffset:*cc.OffsetIndexOffset+int64(*cc.OffsetIndexLength)], &oi); err != nil {
			t.Fatal(err)
		}
		if len(oi.PageLocations) != 1 || oi.PageLocations[0].Offset != cc.MetaData.DataPageOffset || oi.PageLocations[0].FirstRowIndex != 0 {
			t.Errorf("offset index = %+v", oi)
		}
		var bf BloomFilterHeader
		n, err := bf.Decode(file[*cc.MetaData.BloomFilterOffset:])
		if err != nil {
			t.Fatal(err)
		}
		if bf.Algorithm.Block == nil || bf.Hash.XXHash == nil || bf.Compression.Uncompressed == nil {
			t.Errorf("bloom filter header = %+v", bf)
		}
		if n+int(bf.NumBytes) != int(*cc.MetaData.BloomFilterLength) {
			t.Errorf("header %d + bitset %d bytes != bloom_filter_length %d", n, bf.NumBytes, *cc.MetaData.BloomFilterLength)
		}
	})
}

// pageOffsets returns the offsets of the first page header of each column
// chunk (the dictionary page when there is one, and the first data page).
func pageOffsets(m *FileMetaData) []int64 {
	var offs []int64
	for _, rg := range m.RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.DictionaryPageOffset != nil && *c.MetaData.DictionaryPageOffset > 0 {
				offs = append(offs, *c.MetaData.DictionaryPageOffset)
			}
			if c.MetaData.DataPageOffset >= 4 { // 0 when the chunk has no data page
				offs = append(offs, c.MetaData.DataPageOffset)
			}
		}
	}
	return offs
}
