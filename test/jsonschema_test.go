package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/schema/jsonschema"
)

// jsEventSchemaPath is the JSON Schema with every construct of the
// mapping (docs/json-schema.md).
func jsEventSchemaPath(t testing.TB) string {
	return filepath.Join(testutil.RepoRoot(t), "schema", "jsonschema", "testdata", "event.schema.json")
}

// jsEvent returns record i of the event schema, compact with its members
// in the schema's order (the form replay writes back), and the row
// DuckDB reads from it (jsEventQuery's columns) as JSON.
func jsEvent(i int) (value, row string) {
	id := fmt.Sprintf("7b1c9a52-8a3e-4e0c-9a51-%012x", i)
	at := fmt.Sprintf("2026-11-27T08:%02d:%02d.%06dZ", i/60%60, i%60, i*7%1000000)
	kind := []string{"click", "view"}[i%2]
	var b, r strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"at":%q`, id, at)
	fmt.Fprintf(&r, `{"id":%q,"at":%d`, id, time.Date(2026, 11, 27, 8, i/60%60, i%60, i*7%1000000*1000, time.UTC).UnixMicro())
	if i%3 != 0 {
		fmt.Fprintf(&b, `,"day":"2026-%02d-%02d","clock":"%02d:30:00+02:00"`, i%12+1, i%28+1, i%24)
		fmt.Fprintf(&r, `,"day":"2026-%02d-%02d","clock":"%02d:30:00+00"`, i%12+1, i%28+1, (i%24+22)%24)
	} else {
		r.WriteString(`,"day":null,"clock":null`)
	}
	fmt.Fprintf(&b, `,"kind":%q,"count":%d`, kind, i-5)
	fmt.Fprintf(&r, `,"kind":%q,"count":%d`, kind, i-5)
	if i%4 != 0 {
		fmt.Fprintf(&b, `,"score":%d.5,"price":%d.%02d,"note":"n%d","ok":%t`, i, i, i%100, i, i%2 == 0)
		fmt.Fprintf(&r, `,"score":%d.5,"price":"%d.%02d","note":"n%d","ok":%t`, i, i, i%100, i, i%2 == 0)
	} else {
		fmt.Fprintf(&b, `,"note":null`)
		r.WriteString(`,"score":null,"price":null,"note":null,"ok":null`)
	}
	if i%5 != 0 {
		fmt.Fprintf(&b, `,"tags":["a%d","b"],"user":{"name":"u%d","age":%d}`, i, i, 20+i%50)
		fmt.Fprintf(&r, `,"tags":["a%d","b"],"user":{"name":"u%d","age":%d}`, i, i, 20+i%50)
	} else {
		fmt.Fprintf(&b, `,"tags":[],"user":{"name":"u%d"}`, i)
		fmt.Fprintf(&r, `,"tags":[],"user":{"name":"u%d","age":null}`, i)
	}
	if i%2 == 1 {
		fmt.Fprintf(&b, `,"extra":{"k":%d,"nested":[true,null]},"labels":{"l_x":"y%d"},"choice":"c%d","maybe":%d,"anything":[1,"two",{"three":3.25}]`, i, i, i, i)
		fmt.Fprintf(&r, `,"extra":{"k":%d,"nested":[true,null]},"labels":{"l_x":"y%d"},"choice":"c%d","maybe":%d,"anything":[1,"two",{"three":3.25}]`, i, i, i, i)
	} else {
		fmt.Fprintf(&b, `,"choice":%d,"maybe":null`, i)
		fmt.Fprintf(&r, `,"extra":null,"labels":null,"choice":%d,"maybe":null,"anything":null`, i)
	}
	fmt.Fprintf(&b, `,"tree":{"value":%d,"children":[{"value":1,"children":[{"value":2}]}]}}`, i)
	fmt.Fprintf(&r, `,"tree":{"value":%d,"children":[{"value":1,"children":[{"value":2}]}]}}`, i)
	return b.String(), r.String()
}

// jsEventQuery reads the event file back as one JSON object per row, the
// VARIANT columns as their JSON.
const jsEventQuery = `SELECT to_json({'id': "id"::VARCHAR, 'at': epoch_us("at"), 'day': "day"::VARCHAR, 'clock': "clock"::VARCHAR,
  'kind': "kind", 'count': "count", 'score': "score", 'price': "price"::VARCHAR, 'note': "note", 'ok': "ok", 'tags': "tags",
  'user': "user", 'extra': "extra"::JSON, 'labels': "labels"::JSON, 'choice': "choice"::JSON, 'maybe': "maybe",
  'anything': "anything"::JSON, 'tree': {'value': "tree"."value", 'children': "tree"."children"::JSON}})::VARCHAR AS j
FROM read_parquet(%s, file_row_number = true) ORDER BY file_row_number`

// jsInvalid are values the event schema refuses, each for one reason.
var jsInvalid = []string{
	`{"at":"2026-11-27T08:00:00Z","kind":"click","count":1}`,                                                               // id missing
	`{"id":"not-a-uuid","at":"2026-11-27T08:00:00Z","kind":"click","count":1}`,                                             // format uuid
	`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000000","at":"2026-11-27T08:00:00Z","kind":"buy","count":1}`,                     // enum
	`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000000","at":"2026-11-27T08:00:00Z","kind":"view","count":1,"zz":true}`,          // additionalProperties
	`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000000","at":"2026-11-27T08:00:00Z","kind":"view","count":1,"price":0.001}`,      // multipleOf
	`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000000","at":"yesterday","kind":"view","count":1}`,                               // format date-time
	`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000000","at":"2026-11-27T08:00:00Z","kind":"view","count":1,"labels":{"l_a":1}}`, // patternProperties
}

// TestJSONSchemaConvert: JSON Lines of a JSON Schema with every construct
// of the mapping through convert, read back by DuckDB; lines the schema
// refuses are rejected, each with the validator's reason.
func TestJSONSchemaConvert(t *testing.T) {
	text, err := os.ReadFile(jsEventSchemaPath(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsonschema.Compile(text)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 300
	var in bytes.Buffer
	var wants []string
	for i := range rows {
		v, r := jsEvent(i)
		in.WriteString(v + "\n")
		wants = append(wants, r)
		if i%50 == 7 {
			in.WriteString(jsInvalid[i/50%len(jsInvalid)] + "\n")
		}
	}
	for _, bad := range jsInvalid {
		in.WriteString(bad + "\n")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "events.parquet")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	var rejects bytes.Buffer
	st, err := convert.RunJSONSchema(context.Background(), &in, f, s, convert.Options{Errors: convert.Skip, Rejects: &rejects, RowGroupSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st.Rows != rows || st.Skipped != int64(6+len(jsInvalid)) {
		t.Fatalf("rows %d, skipped %d; want %d and %d\n%s", st.Rows, st.Skipped, rows, 6+len(jsInvalid), rejects.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(rejects.String()), "\n") {
		var rej struct{ Error string }
		if err := json.Unmarshal([]byte(line), &rej); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rej.Error, "json schema: invalid value: at /") {
			t.Errorf("reject without the validator's reason: %s", line)
		}
	}
	db := duckdb.Start(t)
	res := db.Query(t, fmt.Sprintf(jsEventQuery, duckdb.Quote(out)))
	if len(res.Rows) != rows {
		t.Fatalf("duckdb read %d rows, want %d", len(res.Rows), rows)
	}
	for i, row := range res.Rows {
		if eq, err := testutil.JSONEqual([]byte(row[0].(string)), []byte(wants[i])); err != nil || !eq {
			t.Fatalf("row %d:\nduckdb %s\nwant   %s", i, row[0], wants[i])
		}
	}
	checkArrowJSON(t, out, wants)
	_ = errors.Is
}

// checkArrowJSON reads the event file with arrow-go and compares each row,
// as arrow-go's JSON of the record, with the DuckDB row wants[i] (VARIANT
// values, which arrow-go decodes, as their JSON; timestamps as arrow-go
// writes them).
//
// The comparison is DuckDB's row, so both readers agree with the input.
func checkArrowJSON(t *testing.T, path string, wants []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow-go read: %v", err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 1<<20)
	defer tr.Release()
	var out bytes.Buffer
	for tr.Next() {
		if err := array.RecordToJSON(tr.Record(), &out); err != nil {
			t.Fatalf("arrow-go json: %v", err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(wants) {
		t.Fatalf("arrow-go read %d rows, want %d", len(lines), len(wants))
	}
	for i, line := range lines {
		var row map[string]any
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&row); err != nil {
			t.Fatal(err)
		}
		// arrow-go writes timestamps as RFC 3339, a UTC TIME without its
		// zone, and an ENUM (a binary column to arrow) in base64.
		at, err := time.Parse(time.RFC3339Nano, row["at"].(string))
		if err != nil {
			t.Fatalf("row %d: at: %v", i, err)
		}
		row["at"] = at.UnixMicro()
		if c, ok := row["clock"].(string); ok {
			row["clock"] = c + "+00"
		}
		delete(row, "_kafka")
		delete(row, "channel")
		kind, err := base64.StdEncoding.DecodeString(row["kind"].(string))
		if err != nil {
			t.Fatalf("row %d: kind: %v", i, err)
		}
		row["kind"] = string(kind)
		if p, ok := row["price"].(string); ok { // arrow-go drops trailing zeros of the DECIMAL(38,2)
			whole, frac, _ := strings.Cut(p, ".")
			row["price"] = whole + "." + (frac + "00")[:2]
		}
		got, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if eq, err := testutil.JSONEqual(got, []byte(wants[i])); err != nil || !eq {
			t.Fatalf("row %d:\narrow-go %s\nwant     %s", i, got, wants[i])
		}
	}
}
