package protorow

import (
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/rowgroup"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestAllTypes: each test message, encoded by protoc --encode and by Go's
// protobuf library, is read by the compiled decoder into a row group,
// written, read back, and equals what a reflection walk of the message
// (decoded by Go's protobuf library) says the mapping gives.
func TestAllTypes(t *testing.T) {
	md := protoref.AllTypes(t)
	msgs, names := protoref.Messages(t)
	for _, enc := range []string{"protoc", "go"} {
		t.Run(enc, func(t *testing.T) {
			g, b := newBuilder(t, md)
			var want [][]byte
			for _, n := range names {
				m := protoref.FromText(t, md, msgs[n])
				var wire []byte
				if enc == "protoc" {
					wire = protoref.Encode(t, msgs[n])
				} else {
					var err error
					if wire, err = (proto.MarshalOptions{Deterministic: true}).Marshal(m); err != nil {
						t.Fatal(err)
					}
				}
				if testing.Verbose() {
					t.Logf("%s: %d bytes", n, len(wire))
				}
				if err := b.Append(wire, nil); err != nil {
					t.Fatalf("%s: %v", n, err)
				}
				want = append(want, protoref.Expect(t, m))
			}
			got := readBack(t, g)
			if len(got) != len(want) {
				t.Fatalf("%d records read back, want %d", len(got), len(want))
			}
			for i := range got {
				if testing.Verbose() {
					t.Logf("%s: %s", names[i], got[i])
				}
				if ok, err := testutil.JSONEqual(got[i], want[i]); err != nil || !ok {
					t.Errorf("%s:\n got %s\nwant %s", names[i], got[i], want[i])
				}
			}
		})
	}
}

// TestRejected: bytes that are not a message of the type are refused
// with a RecordError that says why and where, and the row group is as
// before.
func TestRejected(t *testing.T) {
	md := protoref.AllTypes(t)
	g, b := newBuilder(t, md)
	good := encoded(t, "full.txtpb")
	if err := b.Append(good, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		wire []byte
		want string
	}{
		{"truncated tag", []byte{0x80}, "ends early"},
		{"field 0", []byte{0x00, 0x01}, "field tag"},
		{"wrong wire type", []byte{0x0d, 1, 2, 3, 4}, "i32: wire type 5, want 0"}, // i32 as fixed32
		{"string not UTF-8", []byte{0x72, 1, 0xff}, "name: string is not valid UTF-8"},
		{"length beyond", []byte{0x72, 5, 'a'}, "name: "},
		{"long varint", append([]byte{0x08}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "i32: "},
		{"twice", []byte{0x08, 1, 0x08, 2}, "i32: occurs twice"},
		{"two oneof members", []byte{0xca, 0x01, 1, 'a', 0xd0, 0x01, 1}, "another member of its oneof"},
		{"timestamp nanos", []byte{0xe2, 0x01, 2, 0x10, 0xff & 0x7f}, ""},
		{"timestamp far", []byte{0xe2, 0x01, 6, 0x08, 0x80, 0x80, 0x80, 0x80, 0x40}, "ts: "},
		{"timestamp year 1", timestamp(-62135596800, 0), "ts: -62135596800s is beyond what INT64 nanoseconds hold"},
		{"timestamp negative nanos", timestamp(5, -1), "ts: timestamp 5s -1ns is not valid"},
		{"bad inner", []byte{0x9a, 0x01, 2, 0x0a, 5}, "inner.id: "},
		{"unknown field cut", []byte{0xf8, 0x07}, "unknown field"},
		{"struct deep", deepValue(200), "nested more than 100 deep"},
		{"packed cut", []byte{0xa2, 0x01, 3, 0x80, 0x80}, "nums: "},
	} {
		size, rows := g.Size(), g.NumRows()
		err := b.Append(c.wire, nil)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var re *rowgroup.RecordError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a *rowgroup.RecordError", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "protobuf record: ") {
			t.Errorf("%s: %q, want it to hold %q", c.name, err, c.want)
		}
		if g.Size() != size || g.NumRows() != rows {
			t.Errorf("%s: the row group changed", c.name)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
}

// timestamp is an AllTypes whose ts is secs and nanos.
func timestamp(secs int64, nanos int32) []byte {
	ts := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(secs))
	ts = protowire.AppendVarint(protowire.AppendTag(ts, 2, protowire.VarintType), uint64(int64(nanos)))
	return protowire.AppendBytes(protowire.AppendTag(nil, 28, protowire.BytesType), ts)
}

// deepValue is an AllTypes whose any_value nests n lists.
func deepValue(n int) []byte {
	v := []byte{}
	for range n {
		list := append(append([]byte{0x0a}, lenVarint(len(v))...), v...)   // ListValue.values
		v = append(append([]byte{0x32}, lenVarint(len(list))...), list...) // Value.list_value
	}
	return wrap37(v)
}

func wrap37(v []byte) []byte {
	return append(append([]byte{0xaa, 0x02}, lenVarint(len(v))...), v...)
}

func lenVarint(n int) []byte {
	var out []byte
	for n >= 0x80 {
		out = append(out, byte(n)|0x80)
		n >>= 7
	}
	return append(out, byte(n))
}

// TestTruncated: every prefix of a message is either a message (the
// wire format has no end marker) or a clean RecordError.
func TestTruncated(t *testing.T) {
	md := protoref.AllTypes(t)
	g, b := newBuilder(t, md)
	full := encoded(t, "full.txtpb")
	for cut := range len(full) {
		size, rows := g.Size(), g.NumRows()
		err := b.Append(full[:cut], nil)
		var re *rowgroup.RecordError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if err != nil && (g.Size() != size || g.NumRows() != rows) {
			t.Fatalf("cut at %d: the row group changed", cut)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRecursiveRefused: a message that contains itself has no Parquet
// schema, and the error says so.
func TestRecursiveRefused(t *testing.T) {
	md := protoref.AllTypes(t).ParentFile().Messages().ByName("Recursive")
	if _, err := NewDecoder(nil, md); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Fatalf("got %v, want an error about recursion", err)
	}
}

// encoded is a test message as protoc --encode writes it.
func encoded(t testing.TB, name string) []byte {
	t.Helper()
	msgs, _ := protoref.Messages(t)
	return protoref.Encode(t, msgs[name])
}
