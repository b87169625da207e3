package protorow

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/schema/protobuf"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The reference record (internal/events, about 210 bytes as JSON, 100 as
// Protobuf) decoded by the compiled decoder into column buffers, and by
// proto.Unmarshal into a dynamicpb message (which is all it does: no
// columns). Run both in the same run, on the same machine:
//
//	go test ./rowgroup/protorow -run '^$' -bench . -benchmem

func eventDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := protobuf.LoadFile(context.Background(), filepath.Join(testdata, "event.proto"), nil, "pqsink.bench.Event")
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// eventMessages returns n reference events in the Protobuf encoding.
func eventMessages(t testing.TB, md protoreflect.MessageDescriptor, n int) [][]byte {
	t.Helper()
	gen := events.New(1, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	out := make([][]byte, 0, n)
	for range n {
		m := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal(gen.Append(nil), m); err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func avgSize(recs [][]byte) int64 {
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	return int64(n / len(recs))
}

func BenchmarkDecoder(b *testing.B) {
	md := eventDescriptor(b)
	recs := eventMessages(b, md, 4096)
	g, bl := newBuilder(b, md)
	b.SetBytes(avgSize(recs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(recs) == 0 && i > 0 {
			g.Reset()
		}
		if err := bl.Append(recs[i%len(recs)], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkDynamicpbUnmarshal(b *testing.B) {
	md := eventDescriptor(b)
	recs := eventMessages(b, md, 4096)
	m := dynamicpb.NewMessage(md)
	b.SetBytes(avgSize(recs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Reset()
		if err := proto.Unmarshal(recs[i%len(recs)], m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
