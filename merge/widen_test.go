package merge

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
)

// timestampsText is a payload of millisecond timestamps, at the top,
// nullable and in a list; unit is MILLIS (a table's file of an older
// pqsink) or MICROS (the newer files).
func timestampsText(unit string) string {
	return strings.ReplaceAll(`message m {
  required int64 ts (TIMESTAMP(UNIT,true));
  optional int64 lts (TIMESTAMP(UNIT,false));
  optional group arr (LIST) { repeated group list { optional int64 element (TIMESTAMP(UNIT,true)); } }
  optional int64 n;
}`, "UNIT", unit)
}

// timestampsRecord is record i, its timestamps in milliseconds times
// scale: before 1970 too, nulls and empty lists.
func timestampsRecord(scale int64) func(i int64) []byte {
	return func(i int64) []byte {
		ms := (i - 50) * 86_399_123
		switch i % 3 {
		case 0:
			return fmt.Appendf(nil, `{"ts":%d,"lts":%d,"arr":[%d,null,%d],"n":%d}`, ms*scale, (ms+7)*scale, (ms-1)*scale, (ms+1)*scale, ms)
		case 1:
			return fmt.Appendf(nil, `{"ts":%d,"lts":null,"arr":null,"n":%d}`, ms*scale, ms)
		}
		return fmt.Appendf(nil, `{"ts":%d,"arr":[],"n":%d}`, ms*scale, ms)
	}
}

// timestampsShape is the shape of timestampsText in unit, the envelope's
// timestamp in the same unit.
func timestampsShape(unit schema.TimeUnit) shape {
	scale := int64(1)
	if unit == schema.Micros {
		scale = 1000
	}
	return shape{
		name: "ts-" + unit.String(),
		schema: func(t testing.TB) *schema.Schema {
			p := schema.MustParse(timestampsText(unit.String()))
			s, err := schema.New(p.Name(), append(append([]*schema.Node(nil), p.Fields()...), rowgroup.EnvelopeNodeIn(unit))...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		rows: jsonRows(timestampsRecord(scale)),
	}
}

// TestMergeWidenMillis merges a file whose timestamps are milliseconds
// (TIMESTAMP(MILLIS)) with files of the same columns in microseconds:
// with WidenMillis the output's columns are TIMESTAMP(MICROS), and every
// value of the millisecond file is there times 1000, nulls and lists as
// they were (pqsink's reader and arrow-go read it; DuckDB reads the same
// instants). Without it the schemas differ and the merge refuses.
func TestMergeWidenMillis(t *testing.T) {
	dir := t.TempDir()
	millis, micros := timestampsShape(schema.Millis), timestampsShape(schema.Micros)
	paths := []string{
		writeInput(t, dir, micros, spec{p: 0, first: 100, n: 60, opts: plainPages}),
		writeInput(t, dir, millis, spec{p: 0, first: 0, n: 100, perGroup: 40, opts: smallDicts}),
		writeInput(t, dir, millis, spec{p: 1, first: 0, n: 30, opts: deltaPages}),
	}
	if _, _, err := mergeFiles(t, dir, paths); err == nil || !strings.Contains(err.Error(), "another schema") {
		t.Fatalf("merge without WidenMillis: %v, want a refusal of the other schema", err)
	}
	out, outs, err := mergeFiles(t, dir, paths, WidenMillis())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("%d outputs", len(out))
	}
	// What the output must hold: every row in microseconds, in order by
	// partition and offset.
	want := rowgroup.New(micros.schema(t))
	add := micros.rows(t, want)
	for _, r := range [][3]int64{{0, 0, 160}, {1, 0, 30}} {
		for i := r[1]; i < r[2]; i++ {
			env := &rowgroup.Envelope{Topic: "clicks", Partition: int32(r[0]), Offset: i, Timestamp: time.UnixMilli(1_790_000_000_000 + i),
				Key: []byte(fmt.Sprint(i % 10)), Headers: []rowgroup.Header{{Key: "h", Value: []byte{byte(i)}}}}
			if i%4 == 0 {
				env.Key, env.Headers = nil, nil
			}
			if err := add(i, env); err != nil {
				t.Fatal(err)
			}
		}
	}
	sch := micros.schema(t)
	for _, l := range outs[0].Metadata.Schema {
		if l.LogicalType != nil && l.LogicalType.Timestamp != nil && l.LogicalType.Timestamp.Unit.Micros == nil {
			t.Errorf("output column %s is not TIMESTAMP(MICROS)", l.Name)
		}
	}
	for _, r := range []struct {
		name string
		read func(string) ([][]crossread.Chunk, error)
	}{{"pqsink", crossread.PQSink}, {"arrow-go", crossread.Arrow}} {
		sameColumns(t, r.name, sch, crossread.FromRowGroup(want), columnsOf(t, r.read, out))
	}
	// DuckDB reads the instants the producer wrote: n holds ts in
	// milliseconds.
	db := duckdb.Start(t)
	res := db.Query(t, fmt.Sprintf(`SELECT count(*) FILTER (WHERE epoch_ms(ts) <> n), count(*) FILTER (WHERE epoch_ms(_kafka.timestamp) <> 1790000000000 + _kafka.offset), count(*)
FROM read_parquet('%s')`, filepath.ToSlash(out[0])))
	if got := res.Rows[0]; fmt.Sprint(got) != "[0 0 190]" {
		t.Errorf("DuckDB: rows whose ts or _kafka.timestamp is not the producer's instant, and rows: %v, want [0 0 190]", got)
	}
}

// TestToMicrosRefusesOverflow: a millisecond value whose microseconds do
// not fit 64 bits is refused, never wrapped.
func TestToMicrosRefusesOverflow(t *testing.T) {
	lim := int64(math.MaxInt64 / 1000)
	tests := []struct {
		in   []int64
		want []int64
		ok   bool
	}{
		{[]int64{0, -1, 1}, []int64{0, -1000, 1000}, true},
		{[]int64{lim, -lim}, []int64{lim * 1000, -lim * 1000}, true},
		{[]int64{lim + 1}, nil, false},
		{[]int64{-lim - 1}, nil, false},
		{[]int64{math.MinInt64}, nil, false},
	}
	for _, tt := range tests {
		got, err := toMicros(nil, tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("toMicros(%v): error %v", tt.in, err)
			continue
		}
		if tt.ok && fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("toMicros(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestMergeWidenMillisRefusesOverflow: an input whose milliseconds do
// not fit 64 bits in microseconds fails the merge, naming the input and
// the column, and nothing is written wrapped.
func TestMergeWidenMillisRefusesOverflow(t *testing.T) {
	dir := t.TempDir()
	far := shape{
		name:   "far",
		schema: timestampsShape(schema.Millis).schema,
		rows: jsonRows(func(i int64) []byte {
			return fmt.Appendf(nil, `{"ts":%d,"n":%d}`, int64(math.MaxInt64/1000)+i, i)
		}),
	}
	paths := []string{writeInput(t, dir, far, spec{p: 0, first: 0, n: 3})}
	_, _, err := mergeFiles(t, dir, paths, WidenMillis())
	if err == nil || !strings.Contains(err.Error(), "column ts") || !strings.Contains(err.Error(), "do not fit 64 bits") {
		t.Fatalf("merge: %v, want the overflow of column ts refused", err)
	}
}
