package duckdb

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestRoundTripThroughParquet has DuckDB write a Parquet file and read it
// back, and checks that every value survives the trip to Go exactly.
func TestRoundTripThroughParquet(t *testing.T) {
	db := Start(t)
	path := filepath.Join(t.TempDir(), "it's.parquet") // the quote exercises Quote
	db.Query(t, `COPY (
		SELECT * FROM (VALUES
			(1,
			 9223372036854775807::BIGINT,
			 '-1234567890123456789012345678.0123456789'::DECIMAL(38,10),
			 'NaN'::DOUBLE,
			 '\x00\xFFpq\x0A'::BLOB,
			 DATE '2024-02-29',
			 TIMESTAMP '2024-01-02 03:04:05.123456',
			 [1, NULL, 3]::BIGINT[],
			 {'name': 'a''b', 'score': 0.1::DOUBLE},
			 MAP {'k1': 10, 'k2': NULL}::MAP(VARCHAR, INTEGER)),
			(2,
			 (-9223372036854775808)::BIGINT,
			 '0.0000000001'::DECIMAL(38,10),
			 '-Infinity'::DOUBLE,
			 ''::BLOB,
			 DATE '1970-01-01',
			 TIMESTAMP '1969-12-31 23:59:59',
			 []::BIGINT[],
			 NULL,
			 MAP {}::MAP(VARCHAR, INTEGER)),
			(3, NULL, NULL, -0.0::DOUBLE, NULL, NULL, NULL, NULL, {'name': NULL, 'score': 1e308}, NULL)
		) AS v(id, i64, dec, dbl, bin, d, ts, list, st, m)
	) TO `+Quote(path)+` (FORMAT parquet)`)

	res := db.Query(t, "SELECT * FROM read_parquet("+Quote(path)+") ORDER BY id")
	wantTypes := []string{
		"INTEGER", "BIGINT", "DECIMAL(38,10)", "DOUBLE", "BLOB", "DATE", "TIMESTAMP",
		"BIGINT[]", `STRUCT("name" VARCHAR, "score" DOUBLE)`, "MAP(VARCHAR, INTEGER)",
	}
	if !reflect.DeepEqual(res.Types, wantTypes) {
		t.Errorf("types = %q, want %q", res.Types, wantTypes)
	}
	type n = json.Number
	want := [][]any{
		{n("1"), "9223372036854775807", "-1234567890123456789012345678.0123456789", "NaN",
			"AP9wcQo=", "2024-02-29", "2024-01-02 03:04:05.123456",
			[]any{"1", nil, "3"},
			map[string]any{"name": "a'b", "score": n("0.1")},
			[]any{map[string]any{"key": "k1", "value": n("10")}, map[string]any{"key": "k2", "value": nil}}},
		{n("2"), "-9223372036854775808", "0.0000000001", "-Infinity",
			"", "1970-01-01", "1969-12-31 23:59:59",
			[]any{}, nil, []any{}},
		{n("3"), nil, nil, "-0", nil, nil, nil, nil,
			map[string]any{"name": nil, "score": n("1e+308")}, nil},
	}
	if !reflect.DeepEqual(res.Rows, want) {
		t.Errorf("rows:\n got %#v\nwant %#v", res.Rows, want)
	}

	// The converters give back the Go values.
	if f, err := Float(res.Value(0, "dbl")); err != nil || !math.IsNaN(f) {
		t.Errorf("Float(NaN) = %v, %v", f, err)
	}
	if f, err := Float(res.Value(2, "dbl")); err != nil || f != 0 || !math.Signbit(f) {
		t.Errorf("Float(-0) = %v, %v; want negative zero", f, err)
	}
	if b, err := Blob(res.Value(0, "bin")); err != nil || string(b) != "\x00\xffpq\n" {
		t.Errorf("Blob = %q, %v", b, err)
	}
}

// TestTextForms pins the documented text forms of the types whose JSON form
// is a string, against DuckDB's own VARCHAR cast.
func TestTextForms(t *testing.T) {
	db := Start(t)
	tests := []struct {
		expr string
		want any
	}{
		{"170141183460469231731687303715884105727::HUGEINT", "170141183460469231731687303715884105727"},
		{"18446744073709551615::UBIGINT", "18446744073709551615"},
		{"'-12.34'::DECIMAL(10,4)", "-12.3400"},
		{"'Infinity'::DOUBLE", "Infinity"},
		{"0.1::FLOAT", json.Number("0.10000000149011612")},
		{"'12345678-9abc-def0-1234-56789abcdef0'::UUID", "12345678-9abc-def0-1234-56789abcdef0"},
		{"TIME '12:34:56.5'", "12:34:56.5"},
		{"TIMESTAMP_NS '2024-01-02 03:04:05.123456789'", "2024-01-02 03:04:05.123456789"},
		{"TIMESTAMP_MS '2024-01-02 03:04:05.120'", "2024-01-02 03:04:05.12"},
		{"TIMESTAMPTZ '2024-01-02 03:04:05+02'", "2024-01-02 01:04:05+00"},
		{"'infinity'::TIMESTAMP", "infinity"},
		{"INTERVAL '1 month 2 days 3 microseconds'", map[string]any{"months": json.Number("1"), "days": json.Number("2"), "micros": "3"}},
		{"{'a': [1, 2]}::VARIANT", map[string]any{"a": []any{json.Number("1"), json.Number("2")}}},
		{"'\\x01'::BLOB::VARIANT", "AQ=="},
	}
	for _, tt := range tests {
		res := db.Query(t, "SELECT "+tt.expr+" AS v")
		got := res.Rows[0][0]
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.expr, got, tt.want)
		}
		// Where the JSON form is DuckDB's text form, it must match the cast.
		if s, ok := got.(string); ok && !strings.Contains(res.Types[0], "BLOB") &&
			!strings.Contains(res.Types[0], "DOUBLE") && res.Types[0] != "VARIANT" {
			cast := db.Query(t, "SELECT CAST("+tt.expr+" AS VARCHAR)").Rows[0][0]
			if cast != s {
				t.Errorf("%s: JSON form %q differs from CAST AS VARCHAR %q", tt.expr, s, cast)
			}
		}
	}
}

func TestMetadataAndSchema(t *testing.T) {
	db := Start(t)
	path := filepath.Join(t.TempDir(), "m.parquet")
	db.Query(t, "COPY (SELECT range AS id, range::VARCHAR AS s FROM range(10000)) TO "+Quote(path)+
		" (FORMAT parquet, ROW_GROUP_SIZE 2048, COMPRESSION zstd)")

	md := db.Metadata(t, path)
	groups := map[any]bool{}
	var rows int64
	for i := range md.Rows {
		if md.Value(i, "compression") != "ZSTD" {
			t.Errorf("chunk %d compression = %v, want ZSTD", i, md.Value(i, "compression"))
		}
		groups[md.Value(i, "row_group_id")] = true
		if md.Value(i, "path_in_schema") == "id" {
			n, err := strconv.ParseInt(md.Value(i, "row_group_num_rows").(string), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			rows += n
		}
	}
	if len(groups) < 2 || len(md.Rows) != 2*len(groups) {
		t.Errorf("parquet_metadata: %d chunks in %d row groups, want 2 chunks per group and several groups", len(md.Rows), len(groups))
	}
	if rows != 10000 {
		t.Errorf("row groups hold %d rows, want 10000", rows)
	}

	sc := db.Schema(t, path)
	var names []any
	for i := range sc.Rows {
		names = append(names, sc.Value(i, "name"))
	}
	if want := []any{"duckdb_schema", "id", "s"}; !reflect.DeepEqual(names, want) {
		t.Errorf("schema names = %q, want %q", names, want)
	}
	if got := sc.Value(2, "converted_type"); got != "UTF8" {
		t.Errorf("converted_type of s = %v, want UTF8", got)
	}
}

func TestQueryError(t *testing.T) {
	db := Start(t)
	if _, err := db.Run("SELECT no_such_column"); err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Errorf("Run(bad SQL) error = %v, want DuckDB's binder error", err)
	}
	// The server survives a failed query.
	if got := db.Query(t, "SELECT 40 + 2 AS x").Rows[0][0]; got != json.Number("42") {
		t.Errorf("after an error, SELECT 40 + 2 = %v", got)
	}
}

func TestConcurrentQueries(t *testing.T) {
	db := Start(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			want := json.Number(strings.Repeat("7", i+1))
			res, err := db.Run("SELECT " + string(want))
			if err != nil {
				t.Error(err)
				return
			}
			if res.Rows[0][0] != want {
				t.Errorf("query %d answered %v", i, res.Rows[0][0])
			}
		})
	}
	wg.Wait()
}

// fatalRecorder captures the failure of a harness that is not provisioned.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestStartFailsWhenNotProvisioned(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	dir := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		startIn(rec, dir)
	}()
	<-done
	if !strings.Contains(rec.msg, "provision.sh") {
		t.Errorf("unprovisioned Start failed with %q, want a hint naming provision.sh", rec.msg)
	}
}
