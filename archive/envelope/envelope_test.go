package envelope

import (
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// TestSameSchema: schemas of the same tree are the same shape whatever
// their field ids and an Arrow writer's INTEGER annotations of a column's
// own width; another name, repetition, physical type, timestamp unit or
// integer width is not.
func TestSameSchema(t *testing.T) {
	leaf := func(name string, rep schema.Repetition, typ meta.Type, l schema.Logical) *schema.Node {
		return schema.Leaf(name, rep, typ, l)
	}
	ts := func(u schema.TimeUnit) schema.Logical {
		return schema.Logical{Kind: schema.Timestamp, Unit: u, UTC: true}
	}
	int64s := schema.Logical{Kind: schema.Int, BitWidth: 64, Signed: true}
	build := func(t *testing.T, id, at *schema.Node) *schema.Schema {
		s, err := schema.New("m", id, leaf("name", schema.Optional, meta.TypeByteArray, schema.Logical{Kind: schema.String}),
			schema.Group(Field, schema.Required, schema.Logical{}, leaf("offset", schema.Required, meta.TypeInt64, schema.Logical{}), at))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := func(t *testing.T) *schema.Schema {
		return build(t, leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), leaf("timestamp", schema.Required, meta.TypeInt64, ts(schema.Micros)))
	}
	for _, tc := range []struct {
		name    string
		other   func(t *testing.T) *schema.Schema
		same    bool
		payload bool // SamePayload's answer
	}{
		{"itself", base, true, true},
		{"INTEGER(64,true) on a long", func(t *testing.T) *schema.Schema {
			return build(t, leaf("id", schema.Required, meta.TypeInt64, int64s), leaf("timestamp", schema.Required, meta.TypeInt64, ts(schema.Micros)))
		}, true, true},
		{"INTEGER(64,false) on a long", func(t *testing.T) *schema.Schema {
			return build(t, leaf("id", schema.Required, meta.TypeInt64, schema.Logical{Kind: schema.Int, BitWidth: 64, Signed: false}), leaf("timestamp", schema.Required, meta.TypeInt64, ts(schema.Micros)))
		}, false, false},
		{"an optional id", func(t *testing.T) *schema.Schema {
			return build(t, leaf("id", schema.Optional, meta.TypeInt64, schema.Logical{}), leaf("timestamp", schema.Required, meta.TypeInt64, ts(schema.Micros)))
		}, false, false},
		{"an envelope timestamp in milliseconds", func(t *testing.T) *schema.Schema {
			return build(t, leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), leaf("timestamp", schema.Required, meta.TypeInt64, ts(schema.Millis)))
		}, false, true},
		{"another name", func(t *testing.T) *schema.Schema {
			return build(t, leaf("ID", schema.Required, meta.TypeInt64, schema.Logical{}), leaf("timestamp", schema.Required, meta.TypeInt64, ts(schema.Micros)))
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(t), tc.other(t)
			if got := SameSchema(a, b); got != tc.same {
				t.Errorf("SameSchema = %v, want %v", got, tc.same)
			}
			if got := SamePayload(a, b); got != tc.payload {
				t.Errorf("SamePayload = %v, want %v", got, tc.payload)
			}
		})
	}
}
