package protofmt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/writer"
)

// TestProtoTimestampMicros replays Protobuf messages from a file whose
// Timestamps are in microseconds, as a table's files are with
// table.timestamp_precision micros: each Timestamp comes back with its
// seconds, and nanos = micros%1e6*1000 (before 1970 and at the range's
// edges too), so a message whose nanos were whole microseconds comes back
// byte for byte, and one with finer nanos with those digits as zeros. A
// Duration stays in nanoseconds.
func TestProtoTimestampMicros(t *testing.T) {
	const text = `syntax = "proto3";
package pqsink.replay;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message M {
  google.protobuf.Timestamp ts = 1;
  repeated google.protobuf.Timestamp many = 2;
  map<string, google.protobuf.Timestamp> named = 3;
  google.protobuf.Duration took = 4;
}
`
	path := filepath.Join(t.TempDir(), "m.proto")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.LoadFile(context.Background(), path, nil, "pqsink.replay.M")
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(secs int64, nanos int32) []byte {
		var b []byte
		if secs != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(secs))
		}
		if nanos != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), uint64(int64(nanos)))
		}
		return b
	}
	msg := func(ts []byte, many [][]byte, key string, named []byte, took []byte) []byte {
		var b []byte
		if ts != nil {
			b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), ts)
		}
		for _, e := range many {
			b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), e)
		}
		if named != nil {
			entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
			entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), named)
			b = protowire.AppendBytes(protowire.AppendTag(b, 3, protowire.BytesType), entry)
		}
		if took != nil {
			b = protowire.AppendBytes(protowire.AppendTag(b, 4, protowire.BytesType), took)
		}
		return b
	}
	const minSecs, maxSecs = -62135596800, 253402300799
	cases := []struct{ in, want []byte }{
		{msg(stamp(1_795_780_800, 123_456_000), nil, "", nil, stamp(2, 5)), nil},
		{msg(stamp(-1, 500_000_000), [][]byte{stamp(0, 1000), stamp(0, 0), stamp(-1, 999_999_000)}, "", nil, nil), nil},
		{msg(nil, nil, "a", stamp(minSecs, 0), nil), nil},
		{msg(stamp(maxSecs, 999_999_000), nil, "", nil, nil), nil},
		// Finer than microseconds: cut.
		{msg(stamp(-1, 500_000_001), [][]byte{stamp(7, 999)}, "b", stamp(1, 1_001), nil),
			msg(stamp(-1, 500_000_000), [][]byte{stamp(7, 0)}, "b", stamp(1, 1_000), nil)},
	}
	ps, err := protobuf.Parquet(md)
	if err != nil {
		t.Fatal(err)
	}
	narrow, _, err := schema.NarrowNanos(ps)
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(narrow)
	d, err := protorow.NewDecoder(g, md)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if err := d.Append(c.in); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		g.EndRow()
	}
	var buf bytes.Buffer
	w, err := writer.New(&buf, narrow)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := reader.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	pv := &encoder{message: md}
	for i := 0; ; i++ {
		v, err := rows.Next()
		if errors.Is(err, io.EOF) {
			if i != len(cases) {
				t.Errorf("%d rows, want %d", i, len(cases))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := pv.AppendRecord(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		want := cases[i].want
		if want == nil {
			want = cases[i].in
		}
		if !bytes.Equal(got, want) {
			t.Errorf("message %d replayed as %x, want %x", i, got, want)
		}
	}
}
