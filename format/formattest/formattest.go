// Package formattest runs a format's ChangeDecoder over table-driven
// cases, the scaffolding the keyed and Debezium tests of each format
// share: each case's change (key, delete, op) or rejection (reason and
// text) is checked, and each row is appended to buffers of its schema, as
// the sink would write it. Changelog and MatchFold read a generated
// changelog (package changelog) with a JSON format's decoder and compare
// the table it leaves with the changelog's fold.
package formattest

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/testutil/changelog"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/table/keyindex"
)

// Case is one record and what its change must be.
type Case struct {
	Name       string
	Key, Value []byte // Value nil: a tombstone
	// Reason and Err: the record must be rejected with that reason, its
	// error containing Err.
	Reason, Err string
	// Want is the row key (canonical encoding); Delete and Op the change's.
	Want   []byte
	Delete bool
	Op     byte
}

// Result is what Check wrote: the rows appended, and the buffers they
// went into, by the decoder's BuffersKey.
type Result struct {
	Rows    int
	Buffers map[any]*format.Buffers
}

// Only returns the one buffers Check wrote into, failing t when there
// are none or several.
func (r Result) Only(t testing.TB) *format.Buffers {
	t.Helper()
	if len(r.Buffers) != 1 {
		t.Fatalf("%d buffers, want 1", len(r.Buffers))
	}
	for _, b := range r.Buffers {
		return b
	}
	return nil
}

// Check runs each case as a subtest of t, the record at offset 3: its
// DecodeChange must give the case's change or rejection, and a row must
// fit buffers of its schema (with a Kafka envelope of topic "t" when the
// schema has the column) and be appended to them.
func Check(t *testing.T, dec format.ChangeDecoder, cases []Case) Result {
	t.Helper()
	res := Result{Buffers: map[any]*format.Buffers{}}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ch, rej, err := dec.DecodeChange(context.Background(), c.Key, c.Value, 3)
			if err != nil {
				t.Fatal(err)
			}
			if c.Reason != "" {
				if rej == nil || rej.Reason != c.Reason || !strings.Contains(rej.Error(), c.Err) {
					t.Fatalf("change %+v, rejection %v, want reason %s containing %q", ch, rej, c.Reason, c.Err)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %s: %v", rej.Reason, rej)
			}
			if !bytes.Equal(ch.Key, c.Want) || ch.Delete != c.Delete || ch.Op != c.Op {
				t.Fatalf("key %x delete %v op %q, want %x %v %q", ch.Key, ch.Delete, ch.Op, c.Want, c.Delete, c.Op)
			}
			if ch.Delete {
				return
			}
			k := dec.BuffersKey(ch.Row)
			if res.Buffers[k] == nil {
				if res.Buffers[k], err = dec.NewBuffers(ch.Row); err != nil {
					t.Fatal(err)
				}
			}
			b := dec.Fits(res.Buffers[k], ch.Row)
			if b == nil {
				t.Fatal("the buffers of the row's own schema do not take it")
			}
			var env *rowgroup.Envelope
			if res.Buffers[k].Schema.Lookup(rowgroup.EnvelopeField) != nil {
				env = &rowgroup.Envelope{Topic: "t"}
			}
			if err := b.Append(ch.Row.Payload, env); err != nil {
				t.Fatalf("row %q: %v", ch.Row.Payload, err)
			}
			res.Rows++
		})
	}
	return res
}

// Columns are the columns of b's row group by dotted path.
func Columns(b *format.Buffers) map[string]*rowgroup.Column {
	cols := map[string]*rowgroup.Column{}
	for _, c := range b.Group.Columns() {
		cols[c.Leaf.PathString()] = c
	}
	return cols
}

// Changelog reads n events of g with dec as changes (the record at
// offset i the i-th event, as encode gives its Kafka key and value, or
// as the event has them when encode is nil) and returns the table they
// leave: row key → the row's bytes (Row.Text, else Row.Payload: a JSON
// format's JSON text). An event rejected, or an error, fails t.
func Changelog(t testing.TB, dec format.ChangeDecoder, g *changelog.Gen, n int, encode func(changelog.Event) (key, value []byte)) map[string][]byte {
	t.Helper()
	table := map[string][]byte{}
	for i := range n {
		ev := g.Next()
		key, value := ev.Key, ev.Value
		if encode != nil {
			key, value = encode(ev)
		}
		ch, rej, err := dec.DecodeChange(context.Background(), key, value, int64(i))
		if err != nil || rej != nil {
			t.Fatalf("event %d (%s %s): %v %v", i, ev.Key, ev.Value, rej, err)
		}
		if ch.Delete {
			delete(table, string(ch.Key))
			continue
		}
		text := ch.Row.Text
		if text == nil {
			text = ch.Row.Payload
		}
		table[string(ch.Key)] = append([]byte(nil), text...)
	}
	return table
}

// MatchFold checks that table (row key → a row's JSON text, as Changelog
// gives it) holds the rows of fold (a changelog's Fold) and no others:
// each fold row's key, of key fields keyFields in the canonical
// encoding, has a row of the same JSON value.
func MatchFold(t testing.TB, table map[string][]byte, keyFields []string, fold map[string]changelog.Row) {
	t.Helper()
	if len(fold) == 0 || len(table) != len(fold) {
		t.Fatalf("%d keys read, the fold has %d", len(table), len(fold))
	}
	for _, row := range fold {
		key := FoldKey(t, row, keyFields)
		text, ok := table[string(key)]
		if !ok {
			t.Fatalf("the fold's row %v is not in the table read", row)
		}
		want, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := decodeJSON(t, text), decodeJSON(t, want); !reflect.DeepEqual(got, want) {
			t.Fatalf("key %x: row read %v, the fold's %v", key, got, want)
		}
	}
}

// FoldKey is the row key of a fold's row, of key fields keyFields, in
// the canonical encoding.
func FoldKey(t testing.TB, row changelog.Row, keyFields []string) []byte {
	t.Helper()
	var key []byte
	for _, f := range keyFields {
		switch v := row[f].(type) {
		case int64:
			key = keyindex.AppendInt(key, v)
		case string:
			key = keyindex.AppendString(key, v)
		case float64:
			key = keyindex.AppendFloat(key, v)
		case bool:
			key = keyindex.AppendBool(key, v)
		default:
			t.Fatalf("key field %s of the fold's row %v: %T", f, row, v)
		}
	}
	return key
}

// decodeJSON decodes a JSON object, its numbers as their text.
func decodeJSON(t testing.TB, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}
