package test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pqgo "github.com/parquet-go/parquet-go"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

const errorsSchema = `message m {
  required int64 id;
  optional group tags (LIST) { repeated group list { optional int32 element (INTEGER(8,true)); } }
  optional group attrs (MAP) { repeated group key_value { required binary key (STRING); optional int32 value (DATE); } }
}`

// TestWriterLineErrors checks that a line that does not fit says which line,
// which field and why, and that under convert.Skip the good lines, and only
// they, reach the file.
func TestWriterLineErrors(t *testing.T) {
	good := []string{
		`{"id": 1, "tags": [1, null, -128]}`,
		`{"id": 2, "attrs": {"a": "2024-02-29"}}`,
		`{"id": 3}`,
	}
	bad := []struct {
		line, path, reason string
	}{
		{`{"id": 10, "tags": [1, 128]}`, "tags[1]", "out of range"},
		{`{"id": 11, "attrs": {"a": "2024-02-30"}}`, `attrs["a"]`, "invalid"},
		{`{"tags": []}`, "id", "required"},
		{`{"id": "x"}`, "id", "expected number"},
		{`{"id": 12, "nope": 1}`, "nope", ""},
		{`{"id": 13,`, "", ""},
	}
	s := schema.MustParse(errorsSchema)
	for i, b := range bad {
		// The bad line is line 3, after two good ones and a blank line.
		in := good[0] + "\n\n" + b.line + "\n" + good[1]
		_, err := convert.Run(context.Background(), strings.NewReader(in), &bytes.Buffer{}, convert.Options{Schema: s})
		var le *convert.LineError
		if !errors.As(err, &le) {
			t.Errorf("case %d: error %v is not a *convert.LineError", i, err)
			continue
		}
		msg := err.Error()
		if le.Line != 3 || !strings.HasPrefix(msg, "line 3: ") {
			t.Errorf("case %d: %q: want line 3", i, msg)
		}
		if !strings.Contains(msg, b.path) || !strings.Contains(msg, b.reason) {
			t.Errorf("case %d: %q does not name the field %q and the reason %q", i, msg, b.path, b.reason)
		}
	}

	// Skip: every bad line is left out and reported; the good ones are
	// written, in order, and DuckDB reads exactly those.
	var in []string
	for i, g := range good {
		in = append(in, g, bad[i].line)
	}
	var out, rejects bytes.Buffer
	st, err := convert.Run(context.Background(), strings.NewReader(strings.Join(in, "\n")), &out, convert.Options{
		Schema: s, Errors: convert.Skip, Rejects: &rejects,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 3 || st.Skipped != 3 {
		t.Errorf("rows %d, skipped %d; want 3 and 3", st.Rows, st.Skipped)
	}
	if n := strings.Count(rejects.String(), "\n"); n != 3 || !strings.Contains(rejects.String(), `"line":2`) {
		t.Errorf("rejects: %s", rejects.String())
	}
	path := filepath.Join(t.TempDir(), "skip.parquet")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	db := duckdb.Start(t)
	res := db.Query(t, "SELECT id FROM read_parquet("+duckdb.Quote(path)+")")
	var ids []string
	for _, r := range res.Rows {
		ids = append(ids, r[0].(string))
	}
	if strings.Join(ids, ",") != "1,2,3" {
		t.Errorf("ids written: %v, want 1,2,3", ids)
	}
}

// TestWriterPageChecksums checks that every page carries the CRC-32 of its
// bytes as written, and that a reader that verifies them (parquet-go does
// whenever crc is set; arrow-go v18.8.0 has no option to) notices a flipped
// byte in a page.
func TestWriterPageChecksums(t *testing.T) {
	for _, v := range []int{1, 2} {
		mc := &matrixCase{name: "crc", schema: requiredSchema(leafTypes()), seed: 7, codec: meta.CodecSnappy, version: v, dict: true}
		w := writeCase(t, mc)
		data, err := os.ReadFile(w.path)
		if err != nil {
			t.Fatal(err)
		}
		n := binary.LittleEndian.Uint32(data[len(data)-8:])
		var md meta.FileMetaData
		if _, err := md.Decode(data[len(data)-8-int(n) : len(data)-8]); err != nil {
			t.Fatal(err)
		}
		pages := 0
		var lastBody int64
		for _, rg := range md.RowGroups {
			for _, cc := range rg.Columns {
				cm := cc.MetaData
				off := cm.DataPageOffset
				if cm.DictionaryPageOffset != nil {
					off = *cm.DictionaryPageOffset
				}
				for end := off + cm.TotalCompressedSize; off < end; {
					var h meta.PageHeader
					k, err := h.Decode(data[off:])
					if err != nil {
						t.Fatalf("page header at %d: %v", off, err)
					}
					body := data[off+int64(k) : off+int64(k)+int64(h.CompressedPageSize)]
					if h.CRC == nil || uint32(*h.CRC) != crc32.ChecksumIEEE(body) {
						t.Errorf("v%d %v page at %d: crc %v, want %08x", v, cm.PathInSchema, off, h.CRC, crc32.ChecksumIEEE(body))
					}
					lastBody = off + int64(k)
					pages++
					off += int64(k) + int64(h.CompressedPageSize)
				}
			}
		}
		if pages == 0 {
			t.Fatal("no pages")
		}
		if err := readAllParquetGo(data); err != nil {
			t.Fatalf("v%d: parquet-go reads the intact file: %v", v, err)
		}
		corrupt := bytes.Clone(data)
		corrupt[lastBody] ^= 0x40
		if err := readAllParquetGo(corrupt); !errors.Is(err, pqgo.ErrCorrupted) {
			t.Errorf("v%d: parquet-go read a page with a flipped byte: %v, want a checksum error", v, err)
		}
	}
}

func readAllParquetGo(data []byte) error {
	f, err := pqgo.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	buf := make([]pqgo.Row, 64)
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		for {
			_, err := rows.ReadRows(buf)
			if err != nil {
				rows.Close()
				if err == io.EOF {
					break
				}
				return err
			}
		}
	}
	return nil
}
