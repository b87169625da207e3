package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/table"
)

// TestAvroTimeMillisTablePartValues: a table takes a writer schema's
// time-millis as the files hold it, INT64 TIME(MICROS) (its own INT32
// TIME(MILLIS) it refuses), and partition fields over it (a nullable
// one too) have the values of the microseconds: bucket as iceberg-go
// buckets the time, identity the time of day (as table renders it); a
// null is the null partition, and a time outside the day, which no
// identity value names, an error of the record.
func TestAvroTimeMillisTablePartValues(t *testing.T) {
	ctx := context.Background()
	_, tc := newAvroTableSink(t, `["bucket[4](tod)", "identity(maybe)"]`)
	as := avro.MustParse(`{"type":"record","name":"ev","fields":[
 {"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"maybe","type":["null",{"type":"int","logicalType":"time-millis"}],"default":null}]}`)
	ps, err := as.Parquet(rowgroup.EnvelopeNodeIn(schema.Micros))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Fit(ctx, ps); !errors.Is(err, table.ErrIncompatible) || !strings.Contains(err.Error(), "TIME") {
		t.Errorf("INT32 TIME(MILLIS): error %v, want ErrIncompatible naming TIME", err)
	}
	wide, _, err := schema.WidenTimeMillis(ps)
	if err != nil {
		t.Fatal(err)
	}
	fitted, err := tc.Fit(ctx, wide)
	if err != nil {
		t.Fatal(err)
	}
	ap, schemaErr, err := newAvroTablePart(ctx, tc, as, fitted)
	if err != nil || schemaErr != nil {
		t.Fatalf("%v %v", schemaErr, err)
	}
	bucket := func(ms int64) string {
		lit := iceberg.NewLiteral(iceberg.Time(ms * 1000))
		return fmt.Sprint(iceberg.BucketTransform{NumBuckets: 4}.Apply(iceberg.Optional[iceberg.Literal]{Val: lit, Valid: true}).Val.Any())
	}
	rec := func(tod int64, maybe *int64) []byte {
		b := avro.AppendLong(nil, tod)
		if maybe == nil {
			return avro.AppendLong(b, 0)
		}
		return avro.AppendLong(avro.AppendLong(b, 1), *maybe)
	}
	noon, late, beyond := int64(43_200_000), int64(86_399_999), int64(86_400_000)
	for _, c := range []struct {
		name string
		body []byte
		want []string // nil: an error
	}{
		{"noon", rec(45_296_789, &noon), []string{bucket(45_296_789), "12%3A00%3A00"}},
		{"last millisecond", rec(0, &late), []string{bucket(0), "23%3A59%3A59.999"}},
		{"null", rec(1, nil), []string{bucket(1), archive.HiveNull}},
		{"beyond the day", rec(1, &beyond), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := make([]string, len(tc.Computed()))
			err := ap.values(c.body, vals)
			if c.want == nil {
				if err == nil {
					t.Errorf("values %q, want an error", vals)
				}
				return
			}
			if err != nil || strings.Join(vals, "|") != strings.Join(c.want, "|") {
				t.Errorf("values %q (%v), want %q", vals, err, c.want)
			}
		})
	}
}
