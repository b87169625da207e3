package protofmt

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/schema/protobuf"
)

const fuzzEnvelope = `syntax = "proto3";
package d;
import "google/protobuf/wrappers.proto";
message Envelope {
  message Value { int32 id = 1; repeated string tags = 2; map<string, double> m = 3; bytes f = 4; }
  Value before = 1;
  Value after = 2;
  Source source = 3;
  string op = 4;
  google.protobuf.Int64Value ts_ms = 5;
}
message Source { string name = 1; int64 ts_ms = 2; bool flag = 3; float x = 4; fixed64 y = 5; }
`

// FuzzReadEvent: untrusted bytes read as a Debezium event never panic;
// the rows of an event read lie within its bytes (or are their merge);
// and a row whose after is a message is, with the _cdc field appended, a
// message of the files' row type whose _cdc holds the event's op.
func FuzzReadEvent(f *testing.F) {
	path := filepath.Join(f.TempDir(), "envelope.proto")
	if err := os.WriteFile(path, []byte(fuzzEnvelope), 0o644); err != nil {
		f.Fatal(err)
	}
	env, err := protobuf.LoadFile(context.Background(), path, nil, "d.Envelope")
	if err != nil {
		f.Fatal(err)
	}
	row, fields, err := debeziumRow(env)
	if err != nil {
		f.Fatal(err)
	}
	msg := func(b []byte, num protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
	}
	varint := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
	}
	value := varint(nil, 1, 7)
	value = msg(value, 2, []byte("tag"))
	value = msg(value, 3, msg(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 1, []byte("k"))[:0])
	src := varint(msg(nil, 1, []byte("pg")), 2, 1700000000000)
	src = protowire.AppendFixed64(protowire.AppendTag(src, 5, protowire.Fixed64Type), 9)
	f.Add(msg(msg(msg(nil, 2, value), 3, src), 4, []byte("c")))
	f.Add(msg(msg(msg(msg(nil, 1, value), 2, value), 4, []byte("u")), 5, varint(nil, 1, 1)))
	f.Add(msg(msg(nil, 1, value), 4, []byte("d")))
	f.Add(msg(msg(nil, 2, value), 2, varint(nil, 1, 8)))
	f.Add(varint(nil, 2, 1))
	f.Add([]byte{0x12, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, _, err := readEvent(fields, b, nil)
		if err != nil {
			return
		}
		if len(ev.before) > len(b) {
			t.Fatalf("before of %d bytes in an event of %d", len(ev.before), len(b))
		}
		if !ev.hasAfter || proto.Unmarshal(ev.after, dynamicpb.NewMessage(row)) != nil {
			return
		}
		m := dynamicpb.NewMessage(row)
		if err := proto.Unmarshal(appendCDC(append([]byte(nil), ev.after...), fields.cdc, ev), m); err != nil {
			t.Fatalf("the row with _cdc: %v", err)
		}
		cdc := m.Get(row.Fields().ByName("_cdc")).Message()
		if got := cdc.Get(cdc.Descriptor().Fields().ByName("op")).String(); got != ev.op {
			t.Fatalf("_cdc.op %q, want %q", got, ev.op)
		}
		ts := cdc.Get(cdc.Descriptor().Fields().ByName("ts")).Message()
		if ev.hasTS {
			sec := ts.Get(ts.Descriptor().Fields().ByName("seconds")).Int()
			nanos := ts.Get(ts.Descriptor().Fields().ByName("nanos")).Int()
			if sec*1000+nanos/1_000_000 != ev.ts || nanos < 0 || nanos >= 1e9 {
				t.Fatalf("_cdc.ts %d s %d ns, want %d ms", sec, nanos, ev.ts)
			}
		}
	})
}
