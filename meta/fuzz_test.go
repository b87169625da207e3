package meta

import (
	"bytes"
	"reflect"
	"testing"
)

var fuzzFiles = []string{
	"alltypes_plain.parquet", "data_index_bloom_encoding_with_length.parquet",
	"column_chunk_key_value_metadata.parquet", "unknown-logical-type.parquet",
	"datapage_v2_empty_datapage.snappy.parquet", "float16_zeros_and_nans.parquet",
}

// checkStable asserts that a successfully decoded value re-encodes, decodes
// again to an equal value, and re-encodes to the same bytes. Bytes are
// compared as well as values because NaN doubles defeat DeepEqual.
func checkStable(t *testing.T, first Message, fresh func() Message) {
	enc := Marshal(first)
	second := fresh()
	if err := Unmarshal(enc, second); err != nil {
		t.Fatalf("re-encoded value does not decode: %v", err)
	}
	if again := Marshal(second); !bytes.Equal(enc, again) {
		t.Fatalf("encoding not stable:\n% x\n% x", enc, again)
	}
	if !hasNaN(reflect.ValueOf(first)) && !reflect.DeepEqual(first, second) {
		t.Fatalf("value changed across a round trip:\n%+v\n%+v", first, second)
	}
}

// hasNaN reports whether any float64 reachable from v is a NaN.
func hasNaN(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float64:
		return v.Float() != v.Float()
	case reflect.Pointer:
		return !v.IsNil() && hasNaN(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if hasNaN(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if hasNaN(v.Index(i)) {
				return true
			}
		}
	}
	return false
}

func FuzzUnmarshalFileMetaData(f *testing.F) {
	for _, name := range fuzzFiles {
		f.Add(footer(f, readTestFile(f, name)))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m FileMetaData
		if err := Unmarshal(in, &m); err != nil {
			return
		}
		checkStable(t, &m, func() Message { return new(FileMetaData) })
	})
}

func FuzzUnmarshalPageHeader(f *testing.F) {
	for _, name := range fuzzFiles {
		file := readTestFile(f, name)
		var m FileMetaData
		if err := Unmarshal(footer(f, file), &m); err != nil {
			f.Fatal(err)
		}
		for _, off := range pageOffsets(&m) {
			var ph PageHeader
			n, err := ph.Decode(file[off:])
			if err != nil {
				f.Fatalf("%s at %d: %v", name, off, err)
			}
			f.Add(file[off : int(off)+n])
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var ph PageHeader
		n, err := ph.Decode(in)
		if err != nil {
			return
		}
		if n <= 0 || n > len(in) {
			t.Fatalf("Decode consumed %d of %d bytes", n, len(in))
		}
		checkStable(t, &ph, func() Message { return new(PageHeader) })
	})
}

func FuzzUnmarshalColumnIndex(f *testing.F) {
	file := readTestFile(f, "data_index_bloom_encoding_with_length.parquet")
	var m FileMetaData
	if err := Unmarshal(footer(f, file), &m); err != nil {
		f.Fatal(err)
	}
	cc := m.RowGroups[0].Columns[0]
	f.Add(file[*cc.ColumnIndexOffset : *cc.ColumnIndexOffset+int64(*cc.ColumnIndexLength)])
	f.Add(Marshal(&ColumnIndex{NullPages: []bool{true, false}, MinValues: [][]byte{{}, {1}}, MaxValues: [][]byte{{}, {2}}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var ci ColumnIndex
		if err := Unmarshal(in, &ci); err != nil {
			return
		}
		checkStable(t, &ci, func() Message { return new(ColumnIndex) })
	})
}
