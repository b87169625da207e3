package meta

import (
	"strconv"
	"strings"
	"testing"
)

// realisticFooter builds the footer of a file as pqsink writes it: 40 flat
// columns, 4 row groups, chunk statistics, encoding and size statistics,
// page index locations and the Kafka key/value metadata.
func realisticFooter() *FileMetaData {
	const columns, rowGroups = 40, 4
	m := &FileMetaData{
		Version:   2,
		NumRows:   4 * 250000,
		CreatedBy: ptr("pqsink version 0.1.0 (build abcdef)"),
		Schema:    []SchemaElement{{Name: "schema", NumChildren: ptr(int32(columns))}},
		KeyValueMetadata: []KeyValue{
			{Key: "pqsink.kafka.topic", Value: ptr("orders")},
			{Key: "pqsink.kafka.partition", Value: ptr("7")},
			{Key: "pqsink.kafka.first_offset", Value: ptr("1200000")},
			{Key: "pqsink.kafka.last_offset", Value: ptr("2199999")},
			{Key: "avro.schema", Value: ptr(strings.Repeat(`{"name":"field","type":["null","string"]},`, 40))},
		},
	}
	for c := 0; c < columns; c++ {
		el := SchemaElement{Name: "column_" + strconv.Itoa(c), RepetitionType: ptr(Optional), FieldID: ptr(int32(c + 1))}
		if c%2 == 0 {
			el.Type = ptr(TypeByteArray)
			el.ConvertedType = ptr(ConvertedUTF8)
			el.LogicalType = &LogicalType{String: &StringType{}}
		} else {
			el.Type = ptr(TypeInt64)
			el.LogicalType = &LogicalType{Timestamp: &TimestampType{IsAdjustedToUTC: true, Unit: TimeUnit{Millis: &MilliSeconds{}}}}
		}
		m.Schema = append(m.Schema, el)
		m.ColumnOrders = append(m.ColumnOrders, ColumnOrder{TypeOrder: &TypeDefinedOrder{}})
	}
	offset := int64(4)
	for r := 0; r < rowGroups; r++ {
		rg := RowGroup{NumRows: 250000, FileOffset: ptr(offset), Ordinal: ptr(int16(r))}
		for c := 0; c < columns; c++ {
			size := int64(100000 + c*1000)
			md := &ColumnMetaData{
				Type: *m.Schema[c+1].Type, Encodings: []Encoding{EncodingPlain, EncodingRLE, EncodingRLEDictionary},
				PathInSchema: []string{m.Schema[c+1].Name}, Codec: CodecZstd, NumValues: 250000,
				TotalUncompressedSize: size * 3, TotalCompressedSize: size, DataPageOffset: offset + 2000,
				DictionaryPageOffset: ptr(offset),
				Statistics: &Statistics{NullCount: ptr(int64(12)), MinValue: []byte("aaaaaaaa"), MaxValue: []byte("zzzzzzzz"),
					IsMinValueExact: ptr(true), IsMaxValueExact: ptr(true)},
				EncodingStats: []PageEncodingStats{{PageType: PageDictionary, Encoding: EncodingPlain, Count: 1},
					{PageType: PageData, Encoding: EncodingRLEDictionary, Count: 12}},
				SizeStatistics: &SizeStatistics{UnencodedByteArrayDataBytes: ptr(size * 4), DefinitionLevelHistogram: []int64{12, 249988}},
			}
			rg.Columns = append(rg.Columns, ColumnChunk{FileOffset: offset, MetaData: md,
				OffsetIndexOffset: ptr(offset + 1<<30), OffsetIndexLength: ptr(int32(120)),
				ColumnIndexOffset: ptr(offset + 1<<29), ColumnIndexLength: ptr(int32(300))})
			offset += size
			rg.TotalByteSize += size * 3
		}
		rg.TotalCompressedSize = ptr(offset - *rg.FileOffset)
		m.RowGroups = append(m.RowGroups, rg)
	}
	return m
}

func BenchmarkMarshalFileMetaData(b *testing.B) {
	m := realisticFooter()
	buf := m.Append(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = m.Append(buf[:0])
	}
}

func BenchmarkUnmarshalFileMetaData(b *testing.B) {
	buf := Marshal(realisticFooter())
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var m FileMetaData
		if err := Unmarshal(buf, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRealisticFooterRoundTrip(t *testing.T) {
	roundTrip(t, realisticFooter())
}
