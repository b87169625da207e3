package reader

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/meta"
)

// pagesDecoded counts the data pages a full iteration of rows decodes.
func pagesDecoded(t *testing.T, f *File, opts ...RowsOption) ([]Value, int) {
	t.Helper()
	rows, err := f.Rows(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var out []Value
	decoded := 0
	for {
		for _, c := range rows.cursors() {
			decoded -= c.chunk.decoded
		}
		v, err := rows.Next()
		for _, c := range rows.cursors() {
			decoded += c.chunk.decoded
		}
		if err != nil {
			break
		}
		out = append(out, v)
	}
	return out, decoded
}

func TestWherePageIndex(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "alltypes_tiny_pages.parquet"))
	all, err := readAll(f, Columns("id", "int_col"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op    Op
		value any
	}{
		{Eq, 1000}, {Eq, int64(-5)}, {Lt, 100}, {Le, 100}, {Gt, 7200}, {Ge, int32(7200)}, {Gt, 1 << 40},
	} {
		t.Run(fmt.Sprintf("id %v %v", tc.op, tc.value), func(t *testing.T) {
			cf, err := compileFilter(f.Schema(), Filter{Column: "id", Op: tc.op, Value: tc.value})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, v := range all {
				if id, _ := v.Field("id"); cf.match(id) {
					want = append(want, string(v.AppendJSON(nil)))
				}
			}
			got, decoded := pagesDecoded(t, f, Columns("id", "int_col"), Where(Filter{Column: "id", Op: tc.op, Value: tc.value}))
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range got {
				if s := string(got[i].AppendJSON(nil)); s != want[i] {
					t.Fatalf("row %d: %s, want %s", i, s, want[i])
				}
			}
			// id has 325 pages and int_col 325: a selective filter must
			// leave most of them undecoded.
			if len(want) < 200 && decoded > 40 {
				t.Errorf("decoded %d pages for %d rows", decoded, len(want))
			}
		})
	}
}

func TestWhereUnprojectedColumn(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "alltypes_tiny_pages.parquet"))
	got, err := readAll(f, Columns("string_col"), Where(Filter{Column: "id", Op: Eq, Value: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].AppendJSON(nil)) != `{"string_col":"0"}` {
		t.Fatalf("got %d rows: %v", len(got), got)
	}
}

func TestBloomFilter(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "data_index_bloom_encoding_stats.parquet"))
	bf, err := f.BloomFilter(0, 0)
	if err != nil || bf == nil {
		t.Fatalf("BloomFilter: %v, %v", bf, err)
	}
	all, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range all {
		s, _ := v.Field("String")
		if !bf.Check(bloom.HashBytes(s.Bytes())) {
			t.Errorf("filter misses %q", s.Bytes())
		}
	}
	// A value the filter rules out skips the row group unread.
	if bf.Check(bloom.HashBytes([]byte("not in the file"))) {
		t.Fatal("pick another absent value")
	}
	got, decoded := pagesDecoded(t, f, Where(Filter{Column: "String", Op: Eq, Value: "not in the file"}))
	if len(got) != 0 || decoded != 0 {
		t.Errorf("%d rows, %d pages decoded", len(got), decoded)
	}
	got, _ = pagesDecoded(t, f, Where(Filter{Column: "String", Op: Eq, Value: "Hello"}))
	if len(got) != 1 {
		t.Errorf("%d rows match Hello, want 1", len(got))
	}
}

func TestChunkStatistics(t *testing.T) {
	s := mustParse(t, `message m { optional int64 a; optional int32 u (INTEGER(32,false)); optional binary s (STRING); optional double d; }`)
	le64 := func(x int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(x)) }
	le32 := func(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
	i64 := func(x int64) *int64 { return &x }
	for _, tc := range []struct {
		filter Filter
		stats  meta.Statistics
		values int64
		want   bool
	}{
		{Filter{"a", Eq, 5}, meta.Statistics{MinValue: le64(1), MaxValue: le64(10)}, 10, true},
		{Filter{"a", Eq, 11}, meta.Statistics{MinValue: le64(1), MaxValue: le64(10)}, 10, false},
		{Filter{"a", Lt, 1}, meta.Statistics{MinValue: le64(1), MaxValue: le64(10)}, 10, false},
		{Filter{"a", Le, 1}, meta.Statistics{MinValue: le64(1), MaxValue: le64(10)}, 10, true},
		{Filter{"a", Gt, 10}, meta.Statistics{MinValue: le64(1), MaxValue: le64(10)}, 10, false},
		{Filter{"a", Ge, 10}, meta.Statistics{MinValue: le64(1), MaxValue: le64(10)}, 10, true},
		{Filter{"a", Eq, 5}, meta.Statistics{Min: le64(6), Max: le64(10)}, 10, false}, // legacy, signed: trusted
		{Filter{"a", Eq, 5}, meta.Statistics{NullCount: i64(10)}, 10, false},          // all null
		{Filter{"a", Eq, 5}, meta.Statistics{}, 10, true},
		{Filter{"u", Gt, uint32(1 << 31)}, meta.Statistics{MinValue: le32(1), MaxValue: le32(0xffffffff)}, 10, true}, // unsigned order
		{Filter{"u", Lt, 1}, meta.Statistics{MinValue: le32(1), MaxValue: le32(0xffffffff)}, 10, false},
		{Filter{"s", Eq, "b"}, meta.Statistics{MinValue: []byte("c"), MaxValue: []byte("d")}, 10, false},
		{Filter{"s", Eq, "b"}, meta.Statistics{Min: []byte("c"), Max: []byte("d")}, 10, true}, // legacy byte order: not trusted
		{Filter{"s", Ge, "cz"}, meta.Statistics{MinValue: []byte("c"), MaxValue: []byte("d")}, 10, true},
		{Filter{"d", Gt, 1.5}, meta.Statistics{MinValue: le64(0), MaxValue: le64(0)}, 10, false}, // 0.0..0.0
	} {
		cf, err := compileFilter(s, tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		cc := &meta.ColumnChunk{MetaData: &meta.ColumnMetaData{NumValues: tc.values, Statistics: &tc.stats}}
		if got := cf.chunkMayMatch(nil, 0, cc); got != tc.want {
			t.Errorf("%v with %+v: %v, want %v", tc.filter, tc.stats, got, tc.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "nested_lists.snappy.parquet"))
	for _, fl := range []Filter{
		{Column: "nope", Op: Eq, Value: 1},
		{Column: "b", Op: Eq, Value: "x"},
		{Column: "b", Op: 0, Value: 1},
		{Column: "a.list.element.list.element.list.element", Op: Eq, Value: "a"},
	} {
		if _, err := f.Rows(Where(fl)); err == nil {
			t.Errorf("%+v: no error", fl)
		}
	}
}

func TestProjection(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "nullable.impala.parquet"))
	for _, tc := range []struct {
		columns []string
		first   string
	}{
		{[]string{"id"}, `{"id":1}`},
		{[]string{"int_map", "id"}, `{"id":1,"int_map":{"k1":1,"k2":100}}`},
		{[]string{"nested_struct.A", "nested_struct.g"}, `{"nested_struct":{"A":1,"g":{"foo":{"H":{"i":[1.1]}}}}}`},
		{[]string{"nested_struct.C.d.list.element.list.element.E"}, `{"nested_struct":{"C":{"d":[[{"E":10},{"E":-10}],[{"E":11}]]}}}`},
	} {
		got, err := readAll(f, Columns(tc.columns...))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 7 || string(got[0].AppendJSON(nil)) != tc.first {
			t.Errorf("%v: %d rows, first %s, want %s", tc.columns, len(got), got[0].AppendJSON(nil), tc.first)
		}
	}
	if _, err := f.Rows(Columns("nope")); err == nil {
		t.Error("unknown column: no error")
	}
}
