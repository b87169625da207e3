package meta

import (
	"bytes"
	"reflect"
	"testing"
)

// Golden encodings worked out by hand from the compact protocol spec:
// a field header is (id delta << 4 | type) when the delta is 1..15, else the
// type byte followed by the zigzag varint id; integers are zigzag varints;
// a bool field's value is its header type (1 true, 2 false); a list header
// is (size << 4 | element type) below 15 elements, else 0xf0|type and a
// varint size; every struct ends with a 0 stop byte.
func TestGoldenBytes(t *testing.T) {
	hist := make([]int64, 16)
	for i := range hist {
		hist[i] = int64(i)
	}
	tests := []struct {
		name string
		m    Message
		want []byte
	}{
		{
			name: "DecimalType",
			m:    &DecimalType{Scale: 2, Precision: 10},
			// 0x15 = field 1 i32; 2 zigzags to 4; 0x15 = field 2 i32; 10 -> 20.
			want: []byte{0x15, 0x04, 0x15, 0x14, 0x00},
		},
		{
			name: "TimestampType",
			m:    &TimestampType{IsAdjustedToUTC: true, Unit: TimeUnit{Micros: &MicroSeconds{}}},
			// 0x11 = field 1 bool true; 0x1c = field 2 struct;
			// 0x2c = TimeUnit member 2 struct; empty struct, two stops.
			want: []byte{0x11, 0x1c, 0x2c, 0x00, 0x00, 0x00},
		},
		{
			name: "IntType",
			m:    &IntType{BitWidth: 16, IsSigned: false},
			// 0x13 = field 1 i8, raw byte 16; 0x12 = field 2 bool false.
			want: []byte{0x13, 0x10, 0x12, 0x00},
		},
		{
			name: "KeyValue",
			m:    &KeyValue{Key: "a", Value: ptr("bc")},
			want: []byte{0x18, 0x01, 'a', 0x18, 0x02, 'b', 'c', 0x00},
		},
		{
			name: "KeyValue without value",
			m:    &KeyValue{Key: ""},
			want: []byte{0x18, 0x00, 0x00},
		},
		{
			name: "LogicalType FILE uses a long field header",
			m:    &LogicalType{File: &FileType{}},
			// Delta 19 > 15: type byte 0x0c, then zigzag(19) = 38.
			want: []byte{0x0c, 0x26, 0x00, 0x00},
		},
		{
			name: "PageHeader v2",
			m: &PageHeader{
				Type: PageDataV2, UncompressedPageSize: 100, CompressedPageSize: 64, CRC: ptr(int32(-1)),
				DataPageHeaderV2: &DataPageHeaderV2{NumValues: 1, NumRows: 1, Encoding: EncodingRLEDictionary,
					DefinitionLevelsByteLength: 2, IsCompressed: ptr(false)},
			},
			want: []byte{
				0x15, 0x06, // type 3
				0x15, 0xc8, 0x01, // 100 -> 200
				0x15, 0x80, 0x01, // 64 -> 128
				0x15, 0x01, // crc -1 -> 1
				0x4c,       // field 8 (delta 4) struct
				0x15, 0x02, // num_values 1
				0x15, 0x00, // num_nulls 0
				0x15, 0x02, // num_rows 1
				0x15, 0x10, // encoding 8
				0x15, 0x04, // definition_levels_byte_length 2
				0x15, 0x00, // repetition_levels_byte_length 0
				0x12, // is_compressed false
				0x00, 0x00,
			},
		},
		{
			name: "SizeStatistics with a long list",
			m:    &SizeStatistics{DefinitionLevelHistogram: hist},
			// 0x39 = field 3 list; 0xf6 = long list of i64, size 16.
			want: append(append([]byte{0x39, 0xf6, 0x10}, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), 0x00),
		},
		{
			name: "ColumnIndex",
			m: &ColumnIndex{NullPages: []bool{true, false}, MinValues: [][]byte{{}, {7}},
				MaxValues: [][]byte{{}, {9}}, BoundaryOrder: BoundaryAscending, NullCounts: []int64{3, 0}},
			want: []byte{
				0x19, 0x21, 0x01, 0x02, // null_pages: list of 2 bools, 1 = true, 2 = false
				0x19, 0x28, 0x00, 0x01, 0x07, // min_values: 2 binaries
				0x19, 0x28, 0x00, 0x01, 0x09, // max_values
				0x15, 0x02, // boundary_order 1
				0x19, 0x26, 0x06, 0x00, // null_counts: 2 i64
				0x00,
			},
		},
		{
			name: "Statistics with a negative i64 and empty binary",
			m:    &Statistics{Min: []byte{}, NullCount: ptr(int64(-64))},
			// Field 2 binary (delta 2): 0x28, length 0; field 3 i64: 0x16, zigzag(-64) = 127.
			want: []byte{0x28, 0x00, 0x16, 0x7f, 0x00},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Marshal(tt.m)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("Marshal:\ngot  % x\nwant % x", got, tt.want)
			}
			back := reflect.New(reflect.TypeOf(tt.m).Elem()).Interface().(Message)
			if err := Unmarshal(tt.want, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.m) {
				t.Fatalf("Unmarshal: got %+v, want %+v", back, tt.m)
			}
		})
	}
}
