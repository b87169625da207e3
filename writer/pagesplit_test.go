package writer

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// TestHugeRecordPages writes one record whose list needs several times the
// page limit (lowered here to 64 KiB): with data page v1 and no page index
// it spans pages, which the reader puts back together; otherwise it is
// refused before the row group is written.
func TestHugeRecordPages(t *testing.T) {
	defer func(n int) { maxPageBytes = n }(maxPageBytes)
	maxPageBytes = 64 << 10
	s := schema.MustParse(`message m { required int64 id; optional group l (LIST) { repeated group list { required int64 element; } } }`)
	const n = 50_000 // 400 KB of values: 7 pages of 64 KiB
	var line strings.Builder
	line.WriteString(`{"id":1,"l":[`)
	for i := range n {
		if i > 0 {
			line.WriteByte(',')
		}
		fmt.Fprint(&line, i)
	}
	line.WriteString("]}")
	for _, tc := range []struct {
		name    string
		opts    []Option
		wantErr string
	}{
		{"v1 without page index", []Option{DataPageVersion(1), PageIndex(false)}, ""},
		{"v1 with page index", []Option{DataPageVersion(1)}, "can span pages only with data page v1 and no page index"},
		{"v2", []Option{DataPageVersion(2), PageIndex(false)}, "can span pages only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rowgroup.New(s)
			sh, err := rowgroup.NewJSONShredder(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := sh.Shred([]byte(line.String())); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w, err := New(&out, s, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			err = w.WriteRowGroup(g)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "l.list.element") {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := reader.Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil {
				t.Fatal(err)
			}
			cr, err := f.ColumnChunk(0, 1)
			if err != nil {
				t.Fatal(err)
			}
			pages := 0
			for {
				p, err := cr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if p.Values.Len()*8 > maxPageBytes {
					t.Errorf("page of %d values", p.Values.Len())
				}
				pages++
			}
			if pages < 6 {
				t.Errorf("%d pages", pages)
			}
			rows, err := f.Rows()
			if err != nil {
				t.Fatal(err)
			}
			rec, err := rows.Next()
			if err != nil {
				t.Fatal(err)
			}
			l, _ := rec.Field("l")
			if l.Len() != n || l.List()[n-1].Int64() != n-1 {
				t.Errorf("list of %d elements", l.Len())
			}
		})
	}
}
