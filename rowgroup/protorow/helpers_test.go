package protorow

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/writer"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// testdata is schema/protobuf's test data.
const testdata = "../../schema/protobuf/testdata"

// newBuilder returns a row group of md's Parquet schema and a builder
// over a compiled decoder.
func newBuilder(t testing.TB, md protoreflect.MessageDescriptor) (*rowgroup.RowGroup, *rowgroup.Builder) {
	t.Helper()
	s, err := protobuf.Parquet(md)
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(s)
	d, err := NewDecoder(g, md)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	return g, b
}

// readBack writes g to a Parquet file and reads its records back as JSON
// with the reader, with the entries of maps in key order.
func readBack(t testing.TB, g *rowgroup.RowGroup) [][]byte {
	t.Helper()
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := writer.New(&buf, g.Schema())
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
	var out [][]byte
	for {
		v, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, protoref.SortMaps(t, v.AppendJSON(nil)))
	}
}
