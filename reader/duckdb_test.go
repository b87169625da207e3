package reader

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/schema"
)

// duckDBCannotRead lists the files of parquet-testing that DuckDB fails to
// read, with why. For these the test checks that DuckDB still fails (so
// the list stays true) and compares our rows with facts checked by hand.
var duckDBCannotRead = map[string]string{
	// DuckDB supports LZ4_RAW but not the deprecated LZ4 codec (Hadoop
	// framing, or raw blocks labelled LZ4 by old Arrow versions).
	"hadoop_lz4_compressed.parquet":        `Unsupported compression codec "LZ4"`,
	"hadoop_lz4_compressed_larger.parquet": `Unsupported compression codec "LZ4"`,
	"non_hadoop_lz4_compressed.parquet":    `Unsupported compression codec "LZ4"`,
}

// meantToFail lists the files whose pages are deliberately damaged, and the
// error our reader must give. DuckDB reads them because it does not check
// page CRCs.
var meantToFail = map[string]error{
	"datapage_v1-corrupt-checksum.parquet":           ErrChecksum,
	"rle-dict-uncompressed-corrupt-checksum.parquet": ErrChecksum,
}

// knownGaps lists files our reader cannot read yet because of a bug in
// another package, with the error it gives today. If the bug is fixed the
// file is compared with DuckDB like any other.
var knownGaps = map[string]string{}

// TestAgainstDuckDB reads every file of parquet-testing and compares each
// row, value by value, with what DuckDB reads from the same file.
func TestAgainstDuckDB(t *testing.T) {
	db := duckdb.Start(t)
	for _, path := range testingFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			want, duckErr := db.Run("SELECT * FROM read_parquet(" + duckdb.Quote(abs) + ")")
			if reason, ok := duckDBCannotRead[name]; ok {
				if duckErr == nil || !strings.Contains(duckErr.Error(), reason) {
					t.Fatalf("DuckDB was expected to fail with %q, got %v", reason, duckErr)
				}
				if _, err := readAll(openFile(t, path)); err != nil {
					t.Fatalf("reading: %v", err)
				}
				return // compared by TestLZ4Files
			}
			if duckErr != nil {
				t.Fatalf("DuckDB: %v", duckErr)
			}
			f, err := openBytes(path)
			if gap, ok := knownGaps[name]; ok && err != nil {
				if !strings.Contains(err.Error(), gap) {
					t.Fatalf("known gap: want an error containing %q, got %v", gap, err)
				}
				t.Logf("known gap, not compared: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(f)
			if wantErr, ok := meantToFail[name]; ok {
				if !errors.Is(err, wantErr) {
					t.Fatalf("want an error wrapping %v, got %v", wantErr, err)
				}
				if !strings.Contains(err.Error(), "page 0 at offset 4") {
					t.Errorf("error does not say where: %v", err)
				}
				// Without verification the rows are DuckDB's.
				f := openFile(t, path, VerifyChecksums(false))
				if got, err = readAll(f); err != nil {
					t.Fatalf("reading without checksums: %v", err)
				}
			} else if err != nil {
				t.Fatalf("reading: %v", err)
			}
			compareWithDuckDB(t, got, want)
		})
	}
}

func openBytes(path string) (*File, error) {
	data, err := readTestFile(path)
	if err != nil {
		return nil, err
	}
	return Open(bytesReader(data), int64(len(data)))
}

func compareWithDuckDB(t *testing.T, got []Value, want *duckdb.Result) {
	t.Helper()
	if len(got) != len(want.Rows) {
		t.Fatalf("%d rows, DuckDB reads %d", len(got), len(want.Rows))
	}
	errs := 0
	for i, rec := range got {
		if rec.Len() != len(want.Columns) {
			t.Fatalf("row %d: %d columns, DuckDB has %d", i, rec.Len(), len(want.Columns))
		}
		for j, col := range rec.elems {
			if col.node.Name != want.Columns[j] {
				t.Fatalf("column %d is %q, DuckDB's is %q", j, col.node.Name, want.Columns[j])
			}
			if err := sameAsDuckDB(col, want.Rows[i][j], want.Types[j]); err != nil {
				t.Errorf("row %d, column %s: %v\n ours: %s\n duck: %v", i, want.Columns[j], err, col.AppendJSON(nil), want.Rows[i][j])
				if errs++; errs > 10 {
					t.Fatal("too many differences")
				}
			}
		}
	}
}

// sameAsDuckDB compares one of our values with DuckDB's rendering of it
// (see internal/testutil/duckdb). duckType is DuckDB's type, for the few
// places where DuckDB reads a type differently, or "" inside nested values.
func sameAsDuckDB(v Value, d any, duckType string) error {
	if v.kind == KindNull || d == nil {
		if v.kind == KindNull && d == nil {
			return nil
		}
		return fmt.Errorf("null mismatch: ours %v, DuckDB %v", v.kind, d)
	}
	switch v.kind {
	case KindGroup:
		m, ok := d.(map[string]any)
		if !ok || len(m) != v.Len() {
			return fmt.Errorf("group vs %T of %d", d, len(m))
		}
		for name, f := range v.Fields() {
			if err := sameAsDuckDB(f, m[name], ""); err != nil {
				return fmt.Errorf("field %s: %w", name, err)
			}
		}
		return nil
	case KindList:
		l, ok := d.([]any)
		if !ok || len(l) != v.Len() {
			return fmt.Errorf("list of %d vs %T %v", v.Len(), d, d)
		}
		for i, e := range v.List() {
			if err := sameAsDuckDB(e, l[i], ""); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case KindMap:
		l, ok := d.([]any)
		if !ok || len(l) != v.Len() {
			return fmt.Errorf("map of %d vs %T %v", v.Len(), d, d)
		}
		i := 0
		for k, val := range v.Entries() {
			e, _ := l[i].(map[string]any)
			if err := sameAsDuckDB(k, e["key"], ""); err != nil {
				return fmt.Errorf("key %d: %w", i, err)
			}
			if err := sameAsDuckDB(val, e["value"], ""); err != nil {
				return fmt.Errorf("value %d: %w", i, err)
			}
			i++
		}
		return nil
	case KindFloat, KindDouble:
		return sameFloat(v, d)
	case KindInt96:
		return sameTime(v, d)
	}
	l := v.Logical()
	switch l.Kind {
	case schema.Date:
		return sameString(strings.Trim(string(v.AppendJSON(nil)), `"`), d)
	case schema.Timestamp:
		return sameTime(v, d)
	case schema.Time:
		tod, _ := v.TimeOfDay()
		s, _ := d.(string)
		theirs, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return err
		}
		if got := time.Duration(theirs.Hour())*time.Hour + time.Duration(theirs.Minute())*time.Minute +
			time.Duration(theirs.Second())*time.Second + time.Duration(theirs.Nanosecond()); got != tod {
			return fmt.Errorf("time %v vs %v", tod, got)
		}
		return nil
	case schema.Decimal:
		return sameString(strings.Trim(string(v.AppendJSON(nil)), `"`), d)
	case schema.Float16:
		return sameFloat(v, d)
	case schema.Interval:
		m, _ := d.(map[string]any)
		months, days, millis, _ := v.Interval()
		if fmt.Sprint(m["months"]) != fmt.Sprint(months) || fmt.Sprint(m["days"]) != fmt.Sprint(days) ||
			fmt.Sprint(m["micros"]) != fmt.Sprint(int64(millis)*1000) {
			return fmt.Errorf("interval %d/%d/%d vs %v", months, days, millis, m)
		}
		return nil
	}
	switch v.kind {
	case KindBool:
		if b, ok := d.(bool); !ok || b != v.Bool() {
			return fmt.Errorf("%v vs %v", v.Bool(), d)
		}
		return nil
	case KindInt32, KindInt64:
		return sameString(string(v.AppendJSON(nil)), d)
	case KindBytes:
		switch l.Kind {
		case schema.String, schema.Enum, schema.JSON, schema.UUID:
			var s string
			if err := json.Unmarshal(v.AppendJSON(nil), &s); err != nil {
				return err
			}
			return sameString(s, d)
		}
		// DuckDB reads unannotated byte arrays as BLOB.
		return sameString(base64.StdEncoding.EncodeToString(v.bytes), d)
	case KindVariant:
		return sameVariant(v, d)
	}
	return fmt.Errorf("no comparison for %v", v.kind)
}

func sameString(s string, d any) error {
	var theirs string
	switch d := d.(type) {
	case string:
		theirs = d
	case json.Number:
		theirs = string(d)
	default:
		return fmt.Errorf("%q vs %T %v", s, d, d)
	}
	if s != theirs {
		return fmt.Errorf("%q vs %q", s, theirs)
	}
	return nil
}

func sameFloat(v Value, d any) error {
	var ours float64
	switch v.kind {
	case KindFloat:
		ours = float64(v.Float())
	case KindDouble:
		ours = v.Double()
	default:
		f, _ := v.Float16()
		ours = float64(f)
	}
	theirs, err := duckdb.Float(d)
	if err != nil {
		return err
	}
	if math.IsNaN(ours) || math.IsNaN(theirs) {
		// DuckDB prints every NaN as "NaN", whatever its sign.
		if math.IsNaN(ours) != math.IsNaN(theirs) {
			return fmt.Errorf("%v vs %v", ours, theirs)
		}
		return nil
	}
	if ours != theirs {
		return fmt.Errorf("%v vs %v", ours, theirs)
	}
	if math.Signbit(ours) != math.Signbit(theirs) {
		return fmt.Errorf("sign of %v vs %v", ours, theirs)
	}
	return nil
}

// sameTime compares a timestamp with DuckDB's "YYYY-MM-DD HH:MM:SS[.f][+00]".
func sameTime(v Value, d any) error {
	ours, ok := v.Time()
	if !ok {
		return fmt.Errorf("not a time")
	}
	s, _ := d.(string)
	s = strings.TrimSuffix(s, "+00")
	theirs, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		return err
	}
	if v.kind == KindInt96 {
		// DuckDB reads INT96 into a microsecond TIMESTAMP.
		ours = ours.Truncate(time.Microsecond)
	}
	if !ours.Equal(theirs) {
		return fmt.Errorf("%v vs %v", ours, theirs)
	}
	return nil
}
