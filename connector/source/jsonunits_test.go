package source

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// TestReplayJSONMillisWidened replays the same JSON records from a file
// with a schema file's TIMESTAMP(MILLIS) columns, as the sink writes them
// without a table, and from a table's file, where they are
// TIMESTAMP(MICROS) holding the milliseconds times 1000 and the footer
// names them (pqsink.json.timestamp_units): both replays produce the same
// bytes, at the top, in lists, as map values and keys, before 1970 and at
// the ends of RFC 3339's years; a native microsecond column keeps its six
// digits. Without the footer entry the widened file would replay six
// digits, so the test fails with the entry's reading removed.
func TestReplayJSONMillisWidened(t *testing.T) {
	const text = `message m {
  required int64 ts (TIMESTAMP(MILLIS,true));
  optional int64 local (TIMESTAMP(MILLIS,false));
  optional int64 us (TIMESTAMP(MICROS,true));
  optional group many (LIST) { repeated group list { optional int64 element (TIMESTAMP(MILLIS,true)); } }
  optional group named (MAP) { repeated group key_value { required binary key (STRING); optional int64 value (TIMESTAMP(MILLIS,true)); } }
  optional group byTime (MAP) { repeated group key_value { required int64 key (TIMESTAMP(MILLIS,true)); optional binary value (STRING); } }
  optional group g { optional int64 at (TIMESTAMP(MILLIS,true)); }
  optional int32 tod (TIME(MILLIS,true));
  optional group times (LIST) { repeated group list { optional int32 element (TIME(MILLIS,false)); } }
}`
	values := []string{
		`{"ts":1700000000123,"local":"2026-11-23T10:00:00.5","us":7,"many":[1,null,"1969-12-31T23:59:59.999Z"],"named":{"a":-1},"byTime":{"3":"x"},"g":{"at":0},"tod":86399999,"times":["00:00:00.001",0,null]}`,
		`{"ts":"0001-01-01T00:00:00Z","local":"9999-12-31T23:59:59.999","many":[]}`,
		`{"ts":"9999-12-31T23:59:59.999Z","g":{}}`,
		`{"ts":-1}`,
	}
	msg, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	wide, _, err := schema.WidenMillis(msg)
	if err != nil {
		t.Fatal(err)
	}
	if wide, _, err = schema.WidenTimeMillis(wide); err != nil {
		t.Fatal(err)
	}
	units := map[string]schema.TimeUnit{}
	for _, l := range msg.Leaves() {
		if l.Logical.Unit == schema.Millis && (l.Logical.Kind == schema.Timestamp || l.Logical.Kind == schema.Time) {
			units[l.PathString()] = schema.Millis
		}
	}
	plain := replayJSON(t, msg, values, "")
	widened := replayJSON(t, wide, values, `{"byTime.key_value.key":"MILLIS","g.at":"MILLIS","local":"MILLIS","many.list.element":"MILLIS","named.key_value.value":"MILLIS","times.list.element":"MILLIS","tod":"MILLIS","ts":"MILLIS"}`,
		rowgroup.JSONTimestampUnits(units))
	if !bytes.Equal(plain, widened) {
		t.Errorf("replayed from the table's file:\n%s\nwithout a table:\n%s", widened, plain)
	}
	for _, want := range []string{`"tod":"23:59:59.999"`, `"times":["00:00:00.001","00:00:00.000",null]`, `"ts":"2023-11-14T22:13:20.123Z"`, `"us":"1970-01-01T00:00:00.000007Z"`, `"0001-01-01T00:00:00.000Z"`, `"9999-12-31T23:59:59.999"`, `"1969-12-31T23:59:59.999Z"`} {
		if !bytes.Contains(plain, []byte(want)) {
			t.Errorf("replayed records lack %s:\n%s", want, plain)
		}
	}
}

// replayJSON writes values, JSON records of s, into a file as the sink
// does (its footer entry archive.JSONTimestampUnitsKey footer, unless empty) and
// returns what a replay of it produces, one line per record.
func replayJSON(t *testing.T, s *schema.Schema, values []string, footer string, opts ...rowgroup.JSONOption) []byte {
	t.Helper()
	dir := t.TempDir()
	fs, err := schema.New(s.Name(), append(s.Fields(), rowgroup.EnvelopeNodeIn(schema.Micros))...)
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(fs)
	sh, err := rowgroup.NewJSONShredder(g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if err := b.Append([]byte(v), &rowgroup.Envelope{Topic: "t", Offset: int64(i), Timestamp: time.UnixMilli(int64(i))}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	var out bytes.Buffer
	w, err := writer.New(&out, fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	w.SetKeyValue(archive.FooterTopic, "t")
	w.SetKeyValue(archive.FooterPartition, "0")
	w.SetKeyValue(archive.FooterFirstOffset, "0")
	w.SetKeyValue(archive.FooterLastOffset, strconv.Itoa(len(values)-1))
	w.SetKeyValue(archive.FooterRecords, strconv.Itoa(len(values)))
	if footer != "" {
		w.SetKeyValue(archive.JSONTimestampUnitsKey, footer)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(sinkKey("t", 0, 0)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &archiveDir{dir: dir}
	c := &collector{}
	if _, err := a.run(t, context.Background(), Options{}, openDir(t, dir), c); err != nil {
		t.Fatal(err)
	}
	if len(c.msgs) != len(values) {
		t.Fatalf("%d records replayed, want %d", len(c.msgs), len(values))
	}
	var all []byte
	for _, m := range c.msgs {
		all = append(append(all, m.Value...), '\n')
	}
	return all
}

// TestReplayJSONNanosNarrowed replays the same JSON records from a file
// with a schema file's TIMESTAMP(NANOS) columns and from a table's file
// of table.timestamp_precision micros, where they are TIMESTAMP(MICROS)
// floored and the footer names them NANOS: records of whole microseconds
// replay to the same bytes; finer digits come back as zeros, floored
// before 1970.
func TestReplayJSONNanosNarrowed(t *testing.T) {
	const text = `message m {
  required int64 ts (TIMESTAMP(NANOS,true));
  optional int64 local (TIMESTAMP(NANOS,false));
  optional group many (LIST) { repeated group list { optional int64 element (TIMESTAMP(NANOS,true)); } }
}`
	whole := []string{
		`{"ts":1700000000123456000,"local":"2026-11-23T10:00:00.000001","many":[-1000,null,"1969-12-31T23:59:59.999999Z"]}`,
		`{"ts":"1677-09-21T00:12:43.145225Z"}`,
	}
	cut := []string{
		`{"ts":-1,"local":"2026-11-23T10:00:00.000001999","many":[1999]}`,
	}
	msg, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	narrow, _, err := schema.NarrowNanos(msg)
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]schema.TimeUnit{"ts": schema.Nanos, "local": schema.Nanos, "many.list.element": schema.Nanos}
	const footer = `{"local":"NANOS","many.list.element":"NANOS","ts":"NANOS"}`
	plain := replayJSON(t, msg, whole, "")
	narrowed := replayJSON(t, narrow, whole, footer, rowgroup.JSONTimestampUnits(units))
	if !bytes.Equal(plain, narrowed) {
		t.Errorf("replayed from the table's file:\n%s\nwithout a table:\n%s", narrowed, plain)
	}
	got := replayJSON(t, narrow, cut, footer, rowgroup.JSONTimestampUnits(units))
	want := `{"ts":"1969-12-31T23:59:59.999999000Z","local":"2026-11-23T10:00:00.000001000","many":["1970-01-01T00:00:00.000001000Z"]}` + "\n"
	if string(got) != want {
		t.Errorf("cut values replayed as\n%s\nwant\n%s", got, want)
	}
}
