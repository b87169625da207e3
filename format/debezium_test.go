package format_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/schema"
)

func readEvent(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "debezium", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseDebezium reads Debezium's events as its PostgreSQL connector
// writes them with Kafka Connect's JsonConverter, with schemas.enable and
// without, and refuses what cannot be applied with a reason.
func TestParseDebezium(t *testing.T) {
	for _, c := range []struct {
		name          string
		value         string // or file: testdata/debezium/<file>
		file          string
		op            byte
		before, after string
		ts            int64 // -1: none
		err           string
	}{
		{name: "create", file: "create.json", op: 'c', after: `{"id":1001,"first_name":"Sally","last_name":"Thomas","email":"sally.thomas@acme.com"}`, ts: 1733580000123},
		{name: "snapshot read", file: "read.json", op: 'r', after: `{"id":1002,"first_name":"George","last_name":"Bailey","email":"gbailey@foobar.com"}`, ts: 1733580000123},
		{name: "update", file: "update.json", op: 'u', before: `{"id":1001,"first_name":"Sally","last_name":"Thomas","email":"sally.thomas@acme.com"}`,
			after: `{"id":1001,"first_name":"Sally","last_name":"Thomas","email":"sally@acme.com"}`, ts: 1733580000123},
		{name: "delete", file: "delete.json", op: 'd', before: `{"id":1001,"first_name":null,"last_name":null,"email":null}`, ts: 1733580000123},
		{name: "delete without before", file: "delete_nobefore.json", op: 'd', ts: 1733580000123},
		{name: "schemas.enable", file: "create_schemas.json", op: 'c', after: `{"id":1003,"first_name":"Edward","last_name":"Walker","email":"ed@walker.com"}`, ts: 1733580000999},
		{name: "truncate", file: "truncate.json", err: "truncate"},
		{name: "event ts_ms without source", value: `{"op":"c","after":{"id":1},"ts_ms":5}`, op: 'c', after: `{"id":1}`, ts: 5},
		{name: "no time", value: `{"op":"r","after":{}}`, op: 'r', after: `{}`, ts: -1},
		{name: "unknown op", value: `{"op":"x","after":{"id":1}}`, err: `unknown op "x"`},
		{name: "long op", value: `{"op":"cc","after":{"id":1}}`, err: `unknown op "cc"`},
		{name: "op not a string", value: `{"op":1,"after":{"id":1}}`, err: "op is a number"},
		{name: "no op", value: `{"id":1}`, err: "has no op"},
		{name: "payload without op", value: `{"schema":{},"payload":{"id":1}}`, err: "debezium payload: debezium: the event has no op"},
		{name: "create without after", value: `{"op":"c","after":null}`, err: "without after"},
		{name: "after not an object", value: `{"op":"u","after":[1]}`, err: "after is an array"},
		{name: "op twice", value: `{"op":"c","op":"d","after":{}}`, err: "member op twice"},
		{name: "ts_ms not a number", value: `{"op":"c","after":{},"source":{"ts_ms":"now"}}`, err: "source.ts_ms is a string"},
		{name: "ts_ms out of range", value: `{"op":"c","after":{},"ts_ms":99999999999999999}`, err: "not a time in milliseconds"},
		{name: "not an object", value: `[]`, err: "not a JSON object"},
		{name: "not JSON", value: `{"op":"c",`, err: "unexpected end"},
		{name: "trailing garbage", value: `{"op":"c","after":{}} x`, err: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			value := []byte(c.value)
			if c.file != "" {
				value = readEvent(t, c.file)
			}
			ev, err := format.ParseDebezium(value)
			if c.op == 0 {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("event %+v, error %v, want an error containing %q", ev, err, c.err)
				}
				if c.name == "truncate" && !errors.Is(err, format.ErrTruncate) {
					t.Errorf("error %v is not ErrTruncate", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Op != c.op || string(ev.Before) != c.before || string(ev.After) != c.after {
				t.Errorf("op %c before %s after %s, want %c %s %s", ev.Op, ev.Before, ev.After, c.op, c.before, c.after)
			}
			if c.ts < 0 && ev.HasTS || c.ts >= 0 && (!ev.HasTS || ev.TSMillis != c.ts) {
				t.Errorf("time %d (%v), want %d", ev.TSMillis, ev.HasTS, c.ts)
			}
		})
	}
}

// TestAppendCDC adds the change column to rows, in the column's unit.
func TestAppendCDC(t *testing.T) {
	ev := format.DebeziumEvent{Op: 'u', TSMillis: 1500, HasTS: true}
	for _, c := range []struct {
		row  string
		unit schema.TimeUnit
		ev   format.DebeziumEvent
		want string
	}{
		{`{"id":1}`, schema.Millis, ev, `{"id":1,"_cdc":{"op":"u","ts":1500}}`},
		{`{"id":1} `, schema.Micros, ev, `{"id":1,"_cdc":{"op":"u","ts":1500000}}`},
		{`{ }`, schema.Nanos, ev, `{ "_cdc":{"op":"u","ts":1500000000}}`},
		{`{"id":1}`, schema.Micros, format.DebeziumEvent{Op: 'c'}, `{"id":1,"_cdc":{"op":"c","ts":null}}`},
	} {
		if got := string(format.AppendCDC(nil, []byte(c.row), c.ev, c.unit)); got != c.want {
			t.Errorf("%s: %s, want %s", c.row, got, c.want)
		}
	}
}

// FuzzParseDebezium: untrusted bytes never panic; an event read is one of
// the ops a table applies, its rows are JSON objects within the value,
// and the row with its change column is JSON.
func FuzzParseDebezium(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "debezium"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readEvent(f, e.Name()))
	}
	for _, s := range []string{`{"op":"c","after":{}}`, `{"payload":{"op":"d","before":{"id":1}}}`, `{"op":"u","after":{"a":"\u0000"},"ts_ms":-1}`, `{"op":"x"}`, `null`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		ev, err := format.ParseDebezium(value)
		if err != nil {
			if ev.Op != 0 || ev.After != nil {
				t.Fatalf("an error %v with an event %+v", err, ev)
			}
			return
		}
		if !json.Valid(value) {
			t.Fatalf("an event read from invalid JSON %q", value)
		}
		switch ev.Op {
		case 'c', 'r', 'u':
			if ev.After == nil {
				t.Fatalf("op %c without after", ev.Op)
			}
		case 'd':
		default:
			t.Fatalf("op %q", ev.Op)
		}
		for _, row := range [][]byte{ev.Before, ev.After} {
			if row != nil && (row[0] != '{' || !json.Valid(row)) {
				t.Fatalf("row %q is not a JSON object", row)
			}
		}
		if ev.After != nil {
			for _, unit := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos} {
				out := format.AppendCDC(nil, ev.After, ev, unit)
				var obj map[string]any
				if err := json.Unmarshal(out, &obj); err != nil {
					t.Fatalf("row with its change column %q: %v", out, err)
				}
				if cdc, ok := obj[format.CDCField].(map[string]any); !ok || cdc["op"] != string(ev.Op) {
					t.Fatalf("row with its change column %q: no %s.op %c", out, format.CDCField, ev.Op)
				}
			}
		}
	})
}
