package protorow

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
	"google.golang.org/protobuf/proto"
)

// FuzzDecoder feeds arbitrary bytes to compiled decoders of the all-types
// message (every scalar, enum, nested, repeated, map, oneof and
// well-known type), of the all-types message into microsecond Timestamp
// columns (schema.NarrowNanos, a table's), and of the reference event. A
// value is either
// appended, leaving a consistent row group, or rejected with a
// *rowgroup.RecordError, leaving it unchanged; it never panics. The seed
// corpus is in testdata/fuzz/FuzzDecoder (the all-types messages as
// protoc encodes them, one cut short, one with a Struct nested deep) and
// the messages added below.
func FuzzDecoder(f *testing.F) {
	all, ev := protoref.AllTypes(f), eventDescriptor(f)
	msgs, _ := protoref.Messages(f)
	for _, text := range msgs {
		b, err := proto.Marshal(protoref.FromText(f, all, text))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, m := range eventMessages(f, ev, 4) {
		f.Add(m)
	}
	f.Add(deepValue(120))
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x01, 0x08, 0x02})

	type target struct {
		g *rowgroup.RowGroup
		b *rowgroup.Builder
	}
	var targets []target
	g1, b1 := newBuilder(f, all)
	g2, b2 := newBuilder(f, ev)
	targets = append(targets, target{g1, b1}, target{g2, b2})
	ps, err := protobuf.Parquet(all)
	if err != nil {
		f.Fatal(err)
	}
	narrow, _, err := schema.NarrowNanos(ps)
	if err != nil {
		f.Fatal(err)
	}
	g3 := rowgroup.New(narrow)
	d3, err := NewDecoder(g3, all, CountTruncated(new(atomic.Int64)))
	if err != nil {
		f.Fatal(err)
	}
	b3, err := rowgroup.NewBuilder(g3, d3)
	if err != nil {
		f.Fatal(err)
	}
	targets = append(targets, target{g3, b3})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tg := range targets {
			if tg.g.NumRows() > 1000 {
				tg.g.Reset()
			}
			size, rows := tg.g.Size(), tg.g.NumRows()
			err := tg.b.Append(data, nil)
			if err != nil {
				var re *rowgroup.RecordError
				if !errors.As(err, &re) {
					t.Fatalf("error %v is a %T, want *rowgroup.RecordError", err, err)
				}
				if tg.g.Size() != size || tg.g.NumRows() != rows {
					t.Fatalf("rejected record changed the row group")
				}
				continue
			}
			if err := tg.g.Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
