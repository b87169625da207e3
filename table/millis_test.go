package table

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
)

// TestMillisTimestampColumn commits files whose payload timestamp is
// TIMESTAMP(MILLIS), as tables written before Avro's and schema files'
// millisecond columns were widened hold them, under the table's
// microsecond timestamptz: iceberg-go reads every value at its instant, and
// scans filtered on the column plan the files the bounds the commit
// converted to microseconds say (a bound left in milliseconds would prune
// the wrong files). The rows a filtered scan returns are not checked:
// iceberg-go compares the file's milliseconds with the filter's
// microseconds and returns none, which is why the sink writes millisecond
// timestamps in microseconds (test.TestTableSinkAvroMillis,
// test.TestTableSinkJSONMillis).
func TestMillisTimestampColumn(t *testing.T) {
	ctx := context.Background()
	s, err := schema.New("event",
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("at", schema.Optional, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: schema.Millis, UTC: true}),
		rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", s)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// File i holds records 10i..10i+9, "at" i hours after base plus the
	// record's offset in milliseconds (and 7 ms), one null per file.
	at := func(o int64) time.Time {
		return base.Add(time.Duration(o/10)*time.Hour + time.Duration(o)*time.Millisecond + 7*time.Millisecond)
	}
	loc := c.Location("events")
	var files []File
	for i := range int64(3) {
		files = append(files, writeMillisFile(t, h, loc, 10*i, 10*i+9, at))
	}
	state := State{{"g", "events", 0}: {Committed: 29, Paths: map[string]int64{}}}
	if _, err := h.Commit(ctx, "g", files, state); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		filter iceberg.BooleanExpression
		files  int     // data files the scan plans
		ids    []int64 // ids an unfiltered scan returns, in order
	}{
		{"all", iceberg.AlwaysTrue{}, 3, seq(0, 29, 9)},
		{"second hour", iceberg.GreaterThanEqual(iceberg.Reference("at"), micros(base.Add(time.Hour))), 2, nil},
		{"one instant", iceberg.EqualTo(iceberg.Reference("at"), micros(at(23))), 1, nil},
		{"before the first", iceberg.LessThan(iceberg.Reference("at"), micros(at(0))), 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scan := tbl.Scan(itable.WithRowFilter(tc.filter))
			tasks, err := scan.PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != tc.files {
				t.Errorf("the scan plans %d files, want %d", len(tasks), tc.files)
			}
			if tc.name != "all" {
				return
			}
			got := scanIDsAt(t, scan, at)
			if fmt.Sprint(got) != fmt.Sprint(tc.ids) {
				t.Errorf("ids = %v, want %v", got, tc.ids)
			}
		})
	}
}

// seq is lo..hi without the ids o with o%10 == skip (the nulls of "at").
func seq(lo, hi, skip int64) []int64 {
	var out []int64
	for o := lo; o <= hi; o++ {
		if o%10 != skip {
			out = append(out, o)
		}
	}
	return out
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// scanIDsAt reads a scan's rows with iceberg-go, checks that each row's
// "at" is at(id) to the microsecond (or null for the ninth of each ten),
// and returns the ids of the non-null rows in order.
func scanIDsAt(t *testing.T, scan *itable.Scan, at func(int64) time.Time) []int64 {
	t.Helper()
	tab, err := scan.ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Release()
	rdr := array.NewTableReader(tab, -1)
	defer rdr.Release()
	var ids []int64
	for rdr.Next() {
		rec := rdr.Record()
		var idCol *array.Int64
		var atCol *array.Timestamp
		for i, f := range rec.Schema().Fields() {
			switch f.Name {
			case "id":
				idCol = rec.Column(i).(*array.Int64)
			case "at":
				atCol = rec.Column(i).(*array.Timestamp)
			}
		}
		unit := rec.Schema().Field(rec.Schema().FieldIndices("at")[0]).Type.(*arrow.TimestampType).Unit
		for r := 0; r < int(rec.NumRows()); r++ {
			id := idCol.Value(r)
			if atCol.IsNull(r) {
				if id%10 != 9 {
					t.Errorf("id %d: at is null", id)
				}
				continue
			}
			if got, want := atCol.Value(r).ToTime(unit), at(id); !got.Equal(want) {
				t.Errorf("id %d: at = %v, want %v", id, got, want)
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// writeMillisFile writes records first..last of events[0] with the
// handle's schema: id o, "at" at(o) in milliseconds, null when o%10 == 9.
func writeMillisFile(t *testing.T, h *Handle, loc string, first, last int64, at func(int64) time.Time) File {
	t.Helper()
	s := h.Schema()
	g, b := rowgrouptest.JSON(t, s)
	for o := first; o <= last; o++ {
		rec := fmt.Sprintf(`{"id":%d,"at":%q}`, o, at(o).Format(time.RFC3339Nano))
		if o%10 == 9 {
			rec = fmt.Sprintf(`{"id":%d,"at":null}`, o)
		}
		if err := b.Append([]byte(rec), &rowgroup.Envelope{Topic: "events", Offset: o, Timestamp: at(o)}); err != nil {
			t.Fatal(err)
		}
	}
	return writeGroup(t, loc, g, archive.Range{Topic: "events", First: first, Last: last, Records: last - first + 1})
}
