package events

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/schema/protobuf"
)

// TestAppendProto: AppendProto writes what Go's protobuf library writes
// for the event read with protojson, and ProtoSchema is
// schema/protobuf/testdata/event.proto's message.
func TestAppendProto(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "event.proto")
	if err := os.WriteFile(path, []byte(ProtoSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.LoadFile(t.Context(), path, nil, ProtoMessage)
	if err != nil {
		t.Fatal(err)
	}
	testdata, err := protobuf.LoadFile(t.Context(), filepath.Join("..", "..", "schema", "protobuf", "testdata", "event.proto"), nil, ProtoMessage)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := protobuf.Parquet(md)
	b, _ := protobuf.Parquet(testdata)
	if !a.Equal(b) {
		t.Errorf("ProtoSchema is not testdata/event.proto:\n%s\n%s", a, b)
	}
	gen := New(3, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for i := range 500 {
		js := gen.Append(nil)
		got, err := AppendProto(nil, js)
		if err != nil {
			t.Fatal(err)
		}
		want := wantProto(t, md, js)
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d %s:\n got % x\nwant % x", i, js, got, want)
		}
	}
}

func wantProto(t *testing.T, md protoreflect.MessageDescriptor, js []byte) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal(js, m); err != nil {
		t.Fatal(err)
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
