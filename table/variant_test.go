package table

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

// TestVariantTable: format.type variant lands in an Iceberg v3 table whose
// payload column is a variant, and iceberg-go reads every record back.
func TestVariantTable(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.cfg.Table.FormatVersion = 3
	c := e.open(t)
	payload, err := rowgroup.VariantNode("payload", schema.Required, variant.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New("m", payload, rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Table(ctx, "clicks", s)
	if err != nil {
		t.Fatal(err)
	}
	// Two files, two commits: row ids continue from one to the next.
	const n = 7
	for first := int64(0); first < 2*n; first += n {
		g := rowgroup.New(h.Schema())
		sh, err := rowgroup.NewVariantShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rowgroup.NewBuilder(g, sh)
		if err != nil {
			t.Fatal(err)
		}
		for o := first; o < first+n; o++ {
			rec := fmt.Sprintf(`{"user":"u%d","n":%d,"tags":["a"]}`, o, o)
			if err := b.Append([]byte(rec), &rowgroup.Envelope{Topic: "clicks", Offset: o, Timestamp: day0}); err != nil {
				t.Fatal(err)
			}
		}
		path := strings.TrimPrefix(c.Location("clicks"), "file://") + fmt.Sprintf("/data/clicks+0+%d.parquet", first)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := writer.New(out, h.Schema())
		if err != nil {
			t.Fatal(err)
		}
		archive.Range{Topic: "clicks", First: first, Last: first + n - 1, Records: n}.Footer(w.SetKeyValue)
		if err := w.WriteRowGroup(g); err != nil {
			t.Fatal(err)
		}
		md, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out.Close()
		f := File{Location: "file://" + path, Size: w.Offset(), Footer: md, PathID: "p"}
		res, err := h.Commit(ctx, "g", []File{f}, State{{"g", "clicks", 0}: {Committed: first + n}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Appended != 1 {
			t.Fatalf("commit = %+v", res)
		}
	}
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	if v := tbl.Metadata().Version(); v != 3 {
		t.Errorf("format version %d, want 3", v)
	}
	if f, ok := tbl.Schema().FindFieldByName("payload"); !ok || f.Type.String() != "variant" {
		t.Errorf("payload is %v in the table", f.Type)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 2*n {
		t.Errorf("iceberg-go scans %d rows, want %d", at.NumRows(), 2*n)
	}
	if next := tbl.Metadata().NextRowID(); next != 2*n {
		t.Errorf("next row id %d, want %d", next, 2*n)
	}
}
