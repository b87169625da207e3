package meta

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"testing"
)

// allMessages returns a zero value of every struct and union type.
// TestAllMessagesCoversGeneratedTypes keeps the list complete.
func allMessages() []Message {
	return []Message{
		&SizeStatistics{}, &BoundingBox{}, &GeospatialStatistics{}, &Statistics{}, &StringType{}, &UUIDType{},
		&MapType{}, &ListType{}, &EnumType{}, &DateType{}, &Float16Type{}, &NullType{}, &DecimalType{},
		&MilliSeconds{}, &MicroSeconds{}, &NanoSeconds{}, &TimeUnit{}, &TimestampType{}, &TimeType{},
		&IntType{}, &JsonType{}, &BsonType{}, &VariantType{}, &GeometryType{}, &GeographyType{}, &FileType{},
		&LogicalType{}, &SchemaElement{}, &DataPageHeader{}, &IndexPageHeader{}, &DictionaryPageHeader{},
		&DataPageHeaderV2{}, &SplitBlockAlgorithm{}, &BloomFilterAlgorithm{}, &XxHash{}, &BloomFilterHash{},
		&Uncompressed{}, &BloomFilterCompression{}, &BloomFilterHeader{}, &PageHeader{}, &KeyValue{},
		&SortingColumn{}, &PageEncodingStats{}, &ColumnMetaData{}, &EncryptionWithFooterKey{},
		&EncryptionWithColumnKey{}, &ColumnCryptoMetaData{}, &ColumnChunk{}, &RowGroup{},
		&TypeDefinedOrder{}, &IEEE754TotalOrder{}, &Int96TimestampOrder{}, &ColumnOrder{}, &PageLocation{},
		&OffsetIndex{}, &ColumnIndex{}, &AesGcmV1{}, &AesGcmCtrV1{}, &EncryptionAlgorithm{}, &FileMetaData{},
		&FileCryptoMetaData{},
	}
}

func TestAllMessagesCoversGeneratedTypes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "thrift_gen.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.StructType); ok {
					declared = append(declared, ts.Name.Name)
				}
			}
		}
	}
	var listed []string
	for _, m := range allMessages() {
		listed = append(listed, reflect.TypeOf(m).Elem().Name())
	}
	sort.Strings(declared)
	sort.Strings(listed)
	if !reflect.DeepEqual(declared, listed) {
		t.Fatalf("allMessages lists\n%v\nthrift_gen.go declares\n%v", listed, declared)
	}
}

// filler sets every field of a value to a distinct non-zero value, so a
// round trip exercises every field of every struct. Integers alternate in
// sign and grow so that multi-byte varints and negative zigzag values occur;
// list lengths alternate between short and long (>= 15) list headers.
type filler struct{ n int64 }

func (f *filler) next() int64 {
	f.n++
	v := f.n * f.n * 977
	if f.n%2 == 0 {
		v = -v
	}
	return v
}

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f.fill(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, f.n%7+1)
			for i := range b {
				b[i] = byte(f.next())
			}
			v.SetBytes(b)
			return
		}
		n := 2
		if f.n%3 == 0 {
			n = 17
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := 0; i < n; i++ {
			f.fill(v.Index(i))
		}
	case reflect.Bool:
		v.SetBool(f.next()%3 != 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := f.next()
		if v.OverflowInt(x) {
			x = x % (1 << (v.Type().Bits() - 1))
		}
		v.SetInt(x)
	case reflect.Float64:
		v.SetFloat(float64(f.next()) / 3)
	case reflect.String:
		v.SetString("s" + string(rune('a'+f.n%26)) + "é")
	default:
		panic("filler: unhandled kind " + v.Kind().String())
	}
}

func roundTrip(t *testing.T, m Message) {
	t.Helper()
	b := Marshal(m)
	got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(Message)
	if err := Unmarshal(b, got); err != nil {
		t.Fatalf("%T: %v\nbytes % x", m, err, b)
	}
	if !reflect.DeepEqual(m, got) {
		t.Fatalf("%T: round trip changed the value\nwant %+v\ngot  %+v", m, m, got)
	}
	// Decode with trailing bytes reports exactly the message length.
	n, err := got.Decode(append(append([]byte{}, b...), 0xff, 0xff))
	if err != nil || n != len(b) {
		t.Fatalf("%T: Decode with trailing bytes = %d, %v; want %d, nil", m, n, err, len(b))
	}
}

func TestRoundTripFullyPopulated(t *testing.T) {
	for _, m := range allMessages() {
		f := &filler{}
		f.fill(reflect.ValueOf(m).Elem())
		t.Run(reflect.TypeOf(m).Elem().Name(), func(t *testing.T) { roundTrip(t, m) })
	}
}

func TestRoundTripZero(t *testing.T) {
	// Required lists and binaries of a zero value encode as empty, and
	// decode as present-empty; every other field must survive unchanged.
	for _, m := range allMessages() {
		b := Marshal(m)
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(Message)
		if err := Unmarshal(b, got); err != nil {
			t.Errorf("%T: zero value does not decode: %v", m, err)
			continue
		}
		if again := Marshal(got); !bytes.Equal(again, b) {
			t.Errorf("%T: re-encoding changed bytes: % x then % x", m, b, again)
		}
	}
}

func TestRoundTripEveryUnionMember(t *testing.T) {
	adj := true
	unit := TimeUnit{Nanos: &NanoSeconds{}}
	version := int8(1)
	crs := "OGC:CRS84"
	algo := EdgeKarney
	logical := []LogicalType{
		{String: &StringType{}}, {Map: &MapType{}}, {List: &ListType{}}, {Enum: &EnumType{}},
		{Decimal: &DecimalType{Scale: 3, Precision: 38}}, {Date: &DateType{}},
		{Time: &TimeType{IsAdjustedToUTC: adj, Unit: TimeUnit{Millis: &MilliSeconds{}}}},
		{Timestamp: &TimestampType{IsAdjustedToUTC: !adj, Unit: unit}},
		{Timestamp: &TimestampType{IsAdjustedToUTC: adj, Unit: TimeUnit{Micros: &MicroSeconds{}}}},
		{Integer: &IntType{BitWidth: 64, IsSigned: false}}, {Integer: &IntType{BitWidth: 8, IsSigned: true}},
		{Unknown: &NullType{}}, {JSON: &JsonType{}}, {BSON: &BsonType{}}, {UUID: &UUIDType{}},
		{Float16: &Float16Type{}}, {Variant: &VariantType{}}, {Variant: &VariantType{SpecificationVersion: &version}},
		{Geometry: &GeometryType{}}, {Geometry: &GeometryType{CRS: &crs}},
		{Geography: &GeographyType{CRS: &crs, Algorithm: &algo}}, {File: &FileType{}},
	}
	for _, lt := range logical {
		roundTrip(t, &lt)
		el := SchemaElement{Name: "c", LogicalType: &lt}
		roundTrip(t, &el)
	}
	others := []Message{
		&ColumnOrder{TypeOrder: &TypeDefinedOrder{}},
		&ColumnOrder{IEEE754TotalOrder: &IEEE754TotalOrder{}},
		&ColumnOrder{Int96TimestampOrder: &Int96TimestampOrder{}},
		&BloomFilterHeader{NumBytes: 1024, Algorithm: BloomFilterAlgorithm{Block: &SplitBlockAlgorithm{}},
			Hash: BloomFilterHash{XXHash: &XxHash{}}, Compression: BloomFilterCompression{Uncompressed: &Uncompressed{}}},
		&ColumnCryptoMetaData{EncryptionWithFooterKey: &EncryptionWithFooterKey{}},
		&ColumnCryptoMetaData{EncryptionWithColumnKey: &EncryptionWithColumnKey{PathInSchema: []string{"a", "b"}, KeyMetadata: []byte{}}},
		&EncryptionAlgorithm{AesGcmV1: &AesGcmV1{AADPrefix: []byte("p")}},
		&EncryptionAlgorithm{AesGcmCtrV1: &AesGcmCtrV1{AADFileUnique: []byte{1, 2}, SupplyAADPrefix: &adj}},
		&FileCryptoMetaData{EncryptionAlgorithm: EncryptionAlgorithm{AesGcmV1: &AesGcmV1{}}, KeyMetadata: []byte("k")},
	}
	for _, m := range others {
		roundTrip(t, m)
	}
}

func TestPresentEmptyBinaryIsNotAbsent(t *testing.T) {
	cases := []Statistics{
		{},
		{MinValue: []byte{}, MaxValue: []byte{}},
		{MinValue: []byte{}},
		{Max: []byte{}, Min: []byte{0}},
	}
	for _, s := range cases {
		var got Statistics
		if err := Unmarshal(Marshal(&s), &got); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name      string
			want, got []byte
		}{{"min_value", s.MinValue, got.MinValue}, {"max_value", s.MaxValue, got.MaxValue}, {"min", s.Min, got.Min}, {"max", s.Max, got.Max}} {
			if (p.want == nil) != (p.got == nil) || !bytes.Equal(p.want, p.got) {
				t.Errorf("%s: sent %#v, got %#v", p.name, p.want, p.got)
			}
		}
	}
}

func TestDecodeDoesNotAliasInput(t *testing.T) {
	src := Marshal(&KeyValue{Key: "k", Value: ptr("v")})
	st := Marshal(&Statistics{MinValue: []byte("abc")})
	var s Statistics
	if err := Unmarshal(st, &s); err != nil {
		t.Fatal(err)
	}
	for i := range st {
		st[i] = 0
	}
	if string(s.MinValue) != "abc" {
		t.Fatalf("MinValue changed with the input buffer: %q", s.MinValue)
	}
	var kv KeyValue
	if err := Unmarshal(src, &kv); err != nil || kv.Key != "k" || *kv.Value != "v" {
		t.Fatalf("got %+v, %v", kv, err)
	}
}

func TestDecodeReplacesReceiver(t *testing.T) {
	x := SchemaElement{Name: "old", FieldID: ptr(int32(7)), NumChildren: ptr(int32(2))}
	if err := Unmarshal(Marshal(&SchemaElement{Name: "new"}), &x); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, SchemaElement{Name: "new"}) {
		t.Fatalf("stale fields survived Decode: %+v", x)
	}
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		v    interface{ String() string }
		want string
	}{
		{TypeInt32, "INT32"}, {TypeFixedLenByteArray, "FIXED_LEN_BYTE_ARRAY"}, {Type(99), "Type(99)"},
		{ConvertedUTF8, "UTF8"}, {ConvertedMapKeyValue, "MAP_KEY_VALUE"}, {ConvertedUint8, "UINT_8"},
		{ConvertedInterval, "INTERVAL"}, {Required, "REQUIRED"}, {Repeated, "REPEATED"},
		{EncodingPlain, "PLAIN"}, {EncodingRLEDictionary, "RLE_DICTIONARY"}, {EncodingByteStreamSplit, "BYTE_STREAM_SPLIT"},
		{Encoding(1), "Encoding(1)"}, {CodecZstd, "ZSTD"}, {CodecLZ4Raw, "LZ4_RAW"}, {PageDataV2, "DATA_PAGE_V2"},
		{PageIndex, "INDEX_PAGE"}, {BoundaryDescending, "DESCENDING"}, {EdgeVincenty, "VINCENTY"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%T(%v).String() = %q, want %q", tt.v, tt.v, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
