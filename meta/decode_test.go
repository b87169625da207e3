package meta

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestSkipUnknownFields(t *testing.T) {
	var in []byte
	in = append(in, 0x18, 0x01, 'k') // 1: key "k"
	in = append(in,
		0x21,       // 3: bool true
		0x12,       // 4: bool false
		0x13, 0x7f, // 5: i8
		0x14, 0x80, 0x01, // 6: i16
		0x15, 0x03, // 7: i32
		0x16, 0xff, 0xff, 0xff, 0xff, 0x0f, // 8: i64
		0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // 9: double 1.0
		0x18, 0x02, 'x', 'y', // 10: binary
		0x19, 0x35, 0x02, 0x04, 0x06, // 11: list<i32> of 3
		0x19, 0x21, 0x01, 0x02, // 12: list<bool> of 2
		0x1a, 0x18, 0x01, 'z', // 13: set<binary> of 1
		0x1b, 0x02, 0x58, 0x02, 0x01, 'a', 0x04, 0x01, 'b', // 14: map<i32,binary> of 2
		0x1b, 0x00, // 15: empty map
		0x1b, 0x01, 0x11, 0x01, 0x02, // 16: map<bool,bool> of 1
		0x0c, 0xc8, 0x01, // 100 (long header): struct
		0x19, 0x2c, // 1: list of 2 structs
		0x15, 0x02, 0x00, // {1: i32}
		0x00,       // {}
		0x1c,       // 2: struct
		0x11, 0x00, // {1: true}
		0x00,                         // end of field 100
		0x1d, 1, 2, 3, 4, 5, 6, 7, 8, // 101: uuid
		9, 10, 11, 12, 13, 14, 15, 16,
		0x19, 0xf9, 0x0f, // 102: list of 15 lists, each empty
		0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09,
	)
	in = append(in, 0x08, 0x04, 0x01, 'v') // 2 (long header, going back): value "v"
	in = append(in, 0x00)

	var kv KeyValue
	if err := Unmarshal(in, &kv); err != nil {
		t.Fatal(err)
	}
	if kv.Key != "k" || kv.Value == nil || *kv.Value != "v" {
		t.Fatalf("got %+v", kv)
	}

	// The same unknown fields inside a nested struct of a list element.
	fmd := Marshal(&FileMetaData{Version: 2, KeyValueMetadata: []KeyValue{{Key: "m"}}})
	// Splice the unknown fields (all but key, value and stop) in before
	// the stop byte of the list element.
	unknown := in[3 : len(in)-5]
	el := Marshal(&KeyValue{Key: "m"})
	spliced := bytes.Replace(fmd, el, append(append(el[:len(el)-1:len(el)-1], unknown...), 0), 1)
	if len(spliced) != len(fmd)+len(unknown) {
		t.Fatal("splice did not happen")
	}
	var m FileMetaData
	if err := Unmarshal(spliced, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.KeyValueMetadata) != 1 || m.KeyValueMetadata[0].Key != "m" || m.Version != 2 {
		t.Fatalf("got %+v", m)
	}
}

func TestDecodeErrors(t *testing.T) {
	deep := []byte{0x18, 0x00, 0x2c}
	for i := 0; i < MaxDepth+1; i++ {
		deep = append(deep, 0x1c)
	}
	deepLists := []byte{0x18, 0x00, 0x29}
	for i := 0; i < MaxDepth+1; i++ {
		deepLists = append(deepLists, 0x19)
	}
	tests := []struct {
		name string
		m    Message
		in   []byte
		is   error
		want string
	}{
		{"empty input", &DecimalType{}, nil, ErrUnexpectedEOF,
			"meta: DecimalType: unexpected end of input at offset 0"},
		{"truncated value", &DecimalType{}, []byte{0x15}, ErrUnexpectedEOF,
			"meta: DecimalType.scale: unexpected end of input at offset 1"},
		{"missing required", &DecimalType{}, []byte{0x15, 0x04, 0x00}, ErrMissingField,
			"meta: DecimalType.precision: required field missing at offset 3"},
		{"missing required nested", &LogicalType{}, []byte{0x8c, 0x11, 0x00, 0x00}, ErrMissingField,
			"meta: LogicalType.TIMESTAMP.unit: required field missing at offset 3"},
		// A known field of another type is skipped, as Thrift's readers do;
		// a required one is then missing.
		{"wrong type", &DecimalType{}, []byte{0x18, 0x01, 'a', 0x15, 0x04, 0x00}, ErrMissingField,
			"meta: DecimalType.scale: required field missing"},
		{"wrong bool type", &IntType{}, []byte{0x13, 0x08, 0x15, 0x00, 0x00}, ErrMissingField,
			"meta: IntType.isSigned: required field missing"},
		{"wrong list element type", &ColumnMetaData{}, []byte{0x15, 0x02, 0x19, 0x18, 0x00, 0x00}, ErrMissingField,
			"ColumnMetaData.encodings: required field missing"},
		{"i32 out of range", &DecimalType{}, []byte{0x15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, ErrMalformed,
			"DecimalType.scale: malformed input: value 17179869184 out of range for i32"},
		{"varint too long", &Statistics{}, []byte{0x36, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed,
			"Statistics.null_count: malformed input: varint"},
		{"binary past end", &KeyValue{}, []byte{0x18, 0x05, 'a'}, ErrUnexpectedEOF,
			"KeyValue.key: unexpected end of input: 5 bytes wanted, 1 left at offset 2"},
		{"list bomb", &FileMetaData{}, []byte{0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00}, ErrMalformed,
			"FileMetaData.schema: malformed input: list of 2147483647 elements cannot fit in 1 remaining bytes"},
		{"list too long for its element size", &SizeStatistics{}, []byte{0x29, 0x46, 0x00, 0x00, 0x00}, ErrMalformed,
			"SizeStatistics.repetition_level_histogram: malformed input: list of 4 elements cannot fit in 3 remaining bytes at offset 2"},
		{"list size overflow", &SizeStatistics{}, []byte{0x29, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed,
			"collection size"},
		{"unknown compact type", &KeyValue{}, []byte{0x18, 0x00, 0x2e}, ErrMalformed,
			"meta: KeyValue.#3: malformed input: unknown compact type 14 at offset 3"},
		{"nesting too deep", &KeyValue{}, deep, ErrTooDeep, "nesting deeper than 64 levels"},
		{"list nesting too deep", &KeyValue{}, deepLists, ErrTooDeep, "nesting deeper than 64 levels"},
		{"unknown map bomb", &KeyValue{}, []byte{0x18, 0x00, 0x2b, 0xff, 0xff, 0xff, 0xff, 0x07, 0x55, 0x00}, ErrMalformed,
			"map of 2147483647 entries cannot fit"},
		{"field id overflow", &KeyValue{}, []byte{0x18, 0x00, 0x03, 0xfe, 0xff, 0x03, 0x00, 0xf3, 0x00}, ErrMalformed,
			"field id 32782 out of range"},
		{"trailing bytes", &DecimalType{}, []byte{0x15, 0x04, 0x15, 0x14, 0x00, 0x00}, ErrTrailingBytes,
			"meta: DecimalType: trailing bytes after message at offset 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Unmarshal(tt.in, tt.m)
			if err == nil {
				t.Fatal("no error")
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%v is not a *DecodeError", err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("%v does not wrap %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n%q\ndoes not contain\n%q", err, tt.want)
			}
		})
	}
}

func TestDecodeErrorPath(t *testing.T) {
	const marker = 123456789
	m := FileMetaData{
		Version: 1,
		Schema:  []SchemaElement{{Name: "root"}},
		RowGroups: []RowGroup{
			{Columns: []ColumnChunk{{}}},
			{Columns: []ColumnChunk{{}, {MetaData: &ColumnMetaData{NumValues: marker}}}},
		},
	}
	b := Marshal(&m)
	value := appendVarint(nil, marker)
	i := bytes.Index(b, value)
	if i < 1 || b[i-1] != 0x16 {
		t.Fatalf("num_values header not found in % x", b)
	}
	b[i-1] = 0x18 // now a binary field whose length is the marker: past the end
	err := Unmarshal(b, &FileMetaData{})
	want := "meta: FileMetaData.row_groups[1].columns[1].meta_data.num_values: unexpected end of input"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got  %v\nwant %s...", err, want)
	}
}

// TestEveryPrefixFails cuts valid encodings at every length: each cut must
// fail cleanly, never panic, and report an offset inside the input.
func TestEveryPrefixFails(t *testing.T) {
	inputs := map[string][]byte{}
	for _, name := range []string{"alltypes_plain.parquet", "data_index_bloom_encoding_with_length.parquet", "unknown-logical-type.parquet"} {
		inputs[name] = footer(t, readTestFile(t, name))
	}
	f := &filler{}
	var full FileMetaData
	f.fill(reflect.ValueOf(&full).Elem())
	inputs["filled"] = Marshal(&full)
	for name, in := range inputs {
		for n := 0; n < len(in); n++ {
			var m FileMetaData
			err := Unmarshal(in[:n], &m)
			var de *DecodeError
			if !errors.As(err, &de) || de.Offset > n {
				t.Fatalf("%s cut at %d: %v", name, n, err)
			}
		}
	}
}

// TestForgedSizesDoNotAllocate checks that headers claiming huge lists or
// strings on a tiny input are refused before anything large is allocated.
func TestForgedSizesDoNotAllocate(t *testing.T) {
	big := []byte{0xfc, 0xff, 0xff, 0xff, 0xff, 0x07} // list header: 2^31-1 structs
	inputs := []struct {
		m  Message
		in []byte
	}{
		{&FileMetaData{}, append([]byte{0x15, 0x02, 0x19}, big...)},
		{&ColumnIndex{}, []byte{0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x01}},
		{&ColumnIndex{}, []byte{0x19, 0x00, 0x19, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00}},
		{&OffsetIndex{}, []byte{0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00}},
		{&KeyValue{}, []byte{0x18, 0xff, 0xff, 0xff, 0xff, 0x07, 'a'}},
		{&Statistics{}, []byte{0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 'a'}},
		{&ColumnMetaData{}, []byte{0x15, 0x02, 0x19, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00, 0x00}},
	}
	var before, after runtime.MemStats
	for _, tt := range inputs {
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := Unmarshal(tt.in, tt.m)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%T % x: no error", tt.m, tt.in)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
			t.Errorf("%T % x: allocated %d bytes", tt.m, tt.in, got)
		}
	}
}

func TestDoubleBitsSurvive(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, -1e308} {
		b := Marshal(&BoundingBox{Xmin: v})
		var got BoundingBox
		if err := Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got.Xmin) != math.Float64bits(v) {
			t.Errorf("%v came back as %v", v, got.Xmin)
		}
	}
}
