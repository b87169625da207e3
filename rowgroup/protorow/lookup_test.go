package protorow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
)

// plainOf is the PLAIN value of the first value of column c, nil when it
// has none.
func plainOf(c *rowgroup.Column) []byte {
	if c.NumValues() == 0 {
		return nil
	}
	switch c.Leaf.Physical {
	case meta.TypeInt32:
		return binary.LittleEndian.AppendUint32(nil, uint32(c.Int32[0]))
	case meta.TypeInt64:
		return binary.LittleEndian.AppendUint64(nil, uint64(c.Int64[0]))
	case meta.TypeDouble:
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(c.Double[0]))
	case meta.TypeBoolean:
		if c.Bool[0] {
			return []byte{1}
		}
		return []byte{0}
	}
	return c.ByteArray(0)
}

// TestLookup: on the reference messages (and on messages that omit the
// nested message, or the proto3 scalars), the values a Lookup reads are
// those the Decoder writes to the same columns; a field the type lacks is
// null; a message cut short, or with a field of the wrong wire type, is
// the Decoder's RecordError; a path to a repeated field or a message is
// refused.
func TestLookup(t *testing.T) {
	md := eventDescriptor(t)
	paths := [][]string{{"id"}, {"ts"}, {"country"}, {"amount"}, {"payload", "session"}, {"payload", "nested", "level"}, {"payload", "nested", "flag"}, {"missing"}}
	l, err := NewLookup(md, paths)
	if err != nil {
		t.Fatal(err)
	}
	g, b := newBuilder(t, md)
	msgs := eventMessages(t, md, 200)
	// id 5 and country "DE" only: ts, payload absent.
	short := protowire.AppendTag(nil, 1, protowire.VarintType)
	short = protowire.AppendVarint(short, 5)
	short = protowire.AppendTag(short, 4, protowire.BytesType)
	short = protowire.AppendString(short, "DE")
	msgs = append(msgs, short, nil)
	for i, m := range msgs {
		g.Reset()
		if err := b.Append(m, nil); err != nil {
			t.Fatal(err)
		}
		if err := l.Read(m); err != nil {
			t.Fatal(err)
		}
		for j, p := range paths {
			var want []byte
			if n := g.Schema().Lookup(p...); n != nil {
				want = plainOf(g.Column(n.Column))
			}
			if got := l.Value(j); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("message %d: %s = %x, the decoder wrote %x", i, strings.Join(p, "."), got, want)
			}
		}
	}
	// The empty message, read last: id is a proto3 scalar (0, as the
	// decoder writes it), and the nested message is absent (null).
	if got := l.Value(0); !bytes.Equal(got, make([]byte, 8)) {
		t.Errorf("id of the empty message = %x, want 0", got)
	}
	if got := l.Value(5); got != nil {
		t.Errorf("payload.nested.level of the empty message = %x, want null", got)
	}

	for _, c := range []struct {
		name, err string
		value     []byte
	}{
		{"cut short", "", msgs[0][:len(msgs[0])-3]},
		{"wire type", "wire type", protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1)},
	} {
		err := l.Read(c.value)
		var re *rowgroup.RecordError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want a RecordError with %q", c.name, err, c.err)
		}
	}
	for _, p := range [][]string{{"tags"}, {"payload"}, {"payload", "nested"}} {
		if _, err := NewLookup(md, [][]string{p}); err == nil || !strings.Contains(err.Error(), "is not a value a column holds") {
			t.Errorf("%s: error %v, want a refusal", strings.Join(p, "."), err)
		}
	}
}

// BenchmarkLookup measures what the path of a table partitioned by
// payload fields costs per Protobuf record: a whole decode of the
// reference message into a row group of one row (compare
// BenchmarkDecoder).
//
//	go test ./rowgroup/protorow -run '^$' -bench Lookup -benchmem
func BenchmarkLookup(b *testing.B) {
	md := eventDescriptor(b)
	msgs := eventMessages(b, md, 4096)
	l, err := NewLookup(md, [][]string{{"country"}, {"payload", "nested", "level"}})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	b.SetBytes(int64(n / len(msgs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Read(msgs[i%len(msgs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// FuzzLookup feeds arbitrary bytes to a lookup of the reference message:
// a value is read or rejected with a *rowgroup.RecordError, never a
// panic, and is rejected exactly when the Decoder rejects it.
func FuzzLookup(f *testing.F) {
	md := eventDescriptor(f)
	for _, m := range eventMessages(f, md, 4) {
		f.Add(m)
	}
	f.Add([]byte{})
	l, err := NewLookup(md, [][]string{{"country"}, {"payload", "nested", "level"}})
	if err != nil {
		f.Fatal(err)
	}
	g, b := newBuilder(f, md)
	f.Fuzz(func(t *testing.T, data []byte) {
		lerr := l.Read(data)
		if lerr != nil {
			var re *rowgroup.RecordError
			if !errors.As(lerr, &re) {
				t.Fatalf("error %v is a %T, want *rowgroup.RecordError", lerr, lerr)
			}
		}
		g.Reset()
		if derr := b.Append(data, nil); (derr == nil) != (lerr == nil) {
			t.Fatalf("lookup: %v, decoder: %v", lerr, derr)
		}
	})
}
