// Package changetest runs a format's ChangeDecoder over table-driven
// cases, the scaffolding the keyed and Debezium tests of each format
// share: each case's change (key, delete, op) or rejection (reason and
// text) is checked, and each row is appended to buffers of its schema, as
// the sink would write it.
package changetest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/rowgroup"
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
