package avro

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// TestParquetAllTypes: the Parquet schema of every type and logical type,
// as parquet-java's AvroSchemaConverter names and shapes it.
func TestParquetAllTypes(t *testing.T) {
	text, err := os.ReadFile("testdata/all_types.avsc")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/all_types.parquet.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		os.WriteFile("testdata/all_types.parquet.txt.got", []byte(got.String()), 0o644)
		t.Errorf("Parquet schema differs from testdata/all_types.parquet.txt (see .got):\n%s", got)
	}
	if s.String() == s.Canonical() || !strings.Contains(s.String(), `"aliases":["str"]`) {
		t.Errorf("String() lost docs or aliases: %s", s.String())
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`, "recursive schema"},
		{`{"type":"record","name":"A","fields":[{"name":"b","type":{"type":"record","name":"B","fields":[{"name":"a","type":["null","A"]}]}}]}`, "recursive schema"},
		{`{"type":"nope"}`, "avro schema"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"Undefined"}]}`, "avro schema"},
		// goavro panics on these; Parse reports an error.
		{`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"bytes","logicalType":"decimal"}},{"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":4}}]}`, ""},
	} {
		_, err := Parse(c.schema)
		if c.want == "" {
			continue // must not panic; accepted or not
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s): %v, want %q", c.schema, err, c.want)
		}
	}
}

func TestLogicalFallback(t *testing.T) {
	for _, c := range []struct{ typ, want string }{
		{`{"type":"string","logicalType":"made-up"}`, "required binary f (STRING);"},
		{`{"type":"string","logicalType":"date"}`, "required binary f (STRING);"},
		{`{"type":"fixed","name":"F","size":2,"logicalType":"decimal","precision":5}`, "required fixed_len_byte_array(2) f;"},
		{`{"type":"fixed","name":"F","size":2,"logicalType":"decimal","precision":4}`, "required fixed_len_byte_array(2) f (DECIMAL(4,0));"},
		{`{"type":"bytes","logicalType":"decimal","precision":4,"scale":5}`, "required binary f;"},
		{`{"type":"fixed","name":"F","size":15,"logicalType":"uuid"}`, "required fixed_len_byte_array(15) f;"},
		{`{"type":"int","logicalType":"timestamp-millis"}`, "required int32 f;"},
		{`["null","string","int"]`, "optional group f {"},
		{`["int"]`, "required group f {\n    optional int32 member0;"},
		{`["null"]`, "optional int32 f (UNKNOWN);"},
	} {
		s, err := Parse(`{"type":"record","name":"R","fields":[{"name":"f","type":` + c.typ + `}]}`)
		if err != nil {
			t.Errorf("%s: %v", c.typ, err)
			continue
		}
		p, err := s.Parquet()
		if err != nil {
			t.Errorf("%s: %v", c.typ, err)
			continue
		}
		if !strings.Contains(p.String(), c.want) {
			t.Errorf("%s:\n%s\nwant %q", c.typ, p, c.want)
		}
	}
}

func TestMaxFixedPrecision(t *testing.T) {
	for size, want := range map[int]int{1: 2, 2: 4, 4: 9, 8: 18, 16: 38, 32: 76} {
		if got := maxFixedPrecision(size); got != want {
			t.Errorf("maxFixedPrecision(%d) = %d, want %d", size, got, want)
		}
	}
}

func TestEncodeDefault(t *testing.T) {
	s := MustParse(`{"type":"record","name":"R","fields":[
		{"name":"u","type":["null","int"]},{"name":"a","type":{"type":"array","items":"long"}},
		{"name":"by","type":"bytes"},{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}}]}`)
	for i, c := range []struct {
		json string
		want []byte
	}{
		{`null`, []byte{0}},
		{`[1,-1]`, []byte{4, 2, 1, 0}},
		{`"\u00ff\u0001"`, []byte{4, 0xff, 1}},
		{`"Y"`, []byte{2}},
	} {
		got, err := EncodeDefault(s.Root.Fields[i].Type, []byte(c.json))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("default %s: %x, %v; want %x", c.json, got, err, c.want)
		}
	}
	if _, err := EncodeDefault(s.Root.Fields[3].Type, []byte(`"Z"`)); err == nil {
		t.Error("default Z accepted for enum E")
	}
}

func TestContainerHeaderErrors(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"", "header at offset 0"},
		{"PAR1", "not an Avro object container"},
		{"Obj\x01\x02\x16avro.schema", "header"},
	} {
		_, err := NewContainerReader(strings.NewReader(c.data))
		var ce *ContainerError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
	// The smallest file: header, no blocks.
	var b []byte
	b = append(b, "Obj\x01"...)
	b = AppendLong(b, 1)
	b = AppendLong(b, int64(len("avro.schema")))
	b = append(b, "avro.schema"...)
	b = AppendLong(b, 6)
	b = append(b, `"long"`...)
	b = append(b, 0)
	b = append(b, make([]byte, 16)...)
	cr, err := NewContainerReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); err != io.EOF {
		t.Errorf("Next of an empty file: %v", err)
	}
	if p, err := cr.Schema().Parquet(); err != nil || p.Fields()[0].Name != ValueField || p.Fields()[0].Physical != 2 {
		t.Errorf("Parquet of a long: %v %v", p, err)
	}
	_ = schema.Required
}
