package protorow

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/protobuf"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestProto2: a required field is a required column and a message
// without it is rejected; an optional field with an explicit default is
// NULL when unset; an enum number the (closed) enum lacks is its text;
// repeated scalars are read packed and unpacked alike; a group is refused.
func TestProto2(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(testdata, "proto2.proto")
	md, err := protobuf.LoadFile(ctx, file, nil, "pqsink.test2.Record")
	if err != nil {
		t.Fatal(err)
	}
	g, b := newBuilder(t, md)
	if s := g.Schema().Lookup("id"); s == nil || s.Repetition.String() != "required" {
		t.Fatalf("id: %+v", s)
	}
	var full []byte
	full = protowire.AppendVarint(protowire.AppendTag(full, 1, protowire.VarintType), 7)
	full = protowire.AppendVarint(protowire.AppendTag(full, 3, protowire.VarintType), 9)
	full = protowire.AppendVarint(protowire.AppendTag(full, 4, protowire.VarintType), 1)
	full = protowire.AppendBytes(protowire.AppendTag(full, 4, protowire.BytesType), []byte{2, 3})
	full = protowire.AppendVarint(protowire.AppendTag(full, 5, protowire.VarintType), 4)
	full = protowire.AppendBytes(protowire.AppendTag(full, 5, protowire.BytesType), []byte{5})
	if err := b.Append(full, nil); err != nil {
		t.Fatal(err)
	}
	var re *rowgroup.RecordError
	if err := b.Append(protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1), nil); !errors.As(err, &re) || !strings.Contains(err.Error(), "id: required field missing") {
		t.Errorf("without id: %v", err)
	}
	got := readBack(t, g)
	want := `{"id":7,"name":null,"level":"9","unpacked":[1,2,3],"packed":[4,5]}`
	if len(got) != 1 {
		t.Fatalf("%d rows", len(got))
	}
	if ok, err := testutil.JSONEqual(got[0], []byte(want)); !ok || err != nil {
		t.Errorf("got %s, want %s", got[0], want)
	}
	wg, err := protobuf.LoadFile(ctx, file, nil, "pqsink.test2.WithGroup")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protobuf.Parquet(wg); err == nil || !strings.Contains(err.Error(), "proto2 groups are not supported") {
		t.Errorf("a group: %v", err)
	}
}
