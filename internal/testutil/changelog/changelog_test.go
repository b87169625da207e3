package changelog

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func rec(key, value string) [2][]byte {
	r := [2][]byte{[]byte(key), nil}
	if value != "-" {
		r[1] = []byte(value)
	}
	return r
}

func TestFold(t *testing.T) {
	id := []string{"id"}
	tests := []struct {
		name    string
		fields  []string
		records [][2][]byte
		want    map[string]Row
		err     string
	}{
		{name: "insert", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":1,"a":"x"}`)},
			want:    map[string]Row{`{"id":1}`: {"id": int64(1), "a": "x"}}},
		{name: "update replaces", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":1,"a":"x"}`), rec(`{"id":1}`, `{"id":1,"a":"y","b":2.5}`)},
			want:    map[string]Row{`{"id":1}`: {"id": int64(1), "a": "y", "b": 2.5}}},
		{name: "tombstone after an update removes", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":1,"a":"x"}`), rec(`{"id":1}`, `{"id":1,"a":"y"}`), rec(`{"id":1}`, "-"), rec(`{"id":2}`, `{"id":2}`)},
			want:    map[string]Row{`{"id":2}`: {"id": int64(2)}}},
		{name: "re-insert after a delete resurrects", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":1,"a":"x"}`), rec(`{"id":1}`, "-"), rec(`{"id":1}`, `{"id":1,"a":"z"}`)},
			want:    map[string]Row{`{"id":1}`: {"id": int64(1), "a": "z"}}},
		{name: "tombstone of a key never seen", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, "-")},
			want:    map[string]Row{}},
		{name: "the key is the value's, whatever the Kafka key's member order", fields: []string{"t", "id"},
			records: [][2][]byte{rec(`{"id":1,"t":"a"}`, `{"id":1,"t":"a","v":1}`), rec(`{"id":1,"t":"b"}`, `{"t":"b","id":1,"v":2}`), rec(`{"id":1,"t":"a"}`, "-")},
			want:    map[string]Row{`{"t":"b","id":1}`: {"t": "b", "id": int64(1), "v": int64(2)}}},
		{name: "debezium c u d", fields: id,
			records: [][2][]byte{
				rec(`{"id":1}`, `{"before":null,"after":{"id":1,"a":"x"},"op":"c"}`),
				rec(`{"id":2}`, `{"before":null,"after":{"id":2,"a":"x"},"op":"r"}`),
				rec(`{"id":1}`, `{"before":{"id":1,"a":"x"},"after":{"id":1,"a":"y"},"op":"u"}`),
				rec(`{"id":2}`, `{"before":{"id":2,"a":"x"},"after":null,"op":"d"}`),
				rec(`{"id":2}`, "-")},
			want: map[string]Row{`{"id":1}`: {"id": int64(1), "a": "y"}}},
		{name: "debezium d without before deletes the Kafka key's", fields: id,
			records: [][2][]byte{rec(`{"id":3}`, `{"after":{"id":3},"op":"c"}`), rec(`{"id":3}`, `{"before":null,"after":null,"op":"d"}`)},
			want:    map[string]Row{}},
		{name: "debezium d after an update, then c resurrects", fields: id,
			records: [][2][]byte{
				rec(`{"id":1}`, `{"after":{"id":1,"a":"x"},"op":"c"}`),
				rec(`{"id":1}`, `{"after":{"id":1,"a":"y"},"op":"u"}`),
				rec(`{"id":1}`, `{"before":{"id":1,"a":"y"},"op":"d"}`),
				rec(`{"id":1}`, `{"after":{"id":1,"a":"w"},"op":"c"}`)},
			want: map[string]Row{`{"id":1}`: {"id": int64(1), "a": "w"}}},
		{name: "JsonConverter's schemas", fields: id,
			records: [][2][]byte{
				rec(`{"schema":{},"payload":{"id":1}}`, `{"schema":{"type":"struct"},"payload":{"after":{"id":1,"a":"x"},"op":"c"}}`),
				rec(`{"schema":{},"payload":{"id":2}}`, `{"schema":{"type":"struct"},"payload":{"after":{"id":2},"op":"c"}}`),
				rec(`{"schema":{},"payload":{"id":1}}`, `{"schema":{"type":"struct"},"payload":{"before":null,"after":null,"op":"d"}}`)},
			want: map[string]Row{`{"id":2}`: {"id": int64(2)}}},
		{name: "truncate is refused", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"op":"t"}`)}, err: `op "t"`},
		{name: "unknown op", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"op":"x","after":{"id":1}}`)}, err: `op "x"`},
		{name: "c without after", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"op":"c","after":null}`)}, err: "without after"},
		{name: "a value without its key", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"a":1}`)}, err: "key field id is missing"},
		{name: "a tombstone without a Kafka key", fields: id,
			records: [][2][]byte{rec(``, "-")}, err: "no Kafka key"},
		{name: "a null key field", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":null}`)}, err: "missing or null"},
		{name: "a nested key field", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":[1]}`)}, err: "not a scalar"},
		{name: "not JSON", fields: id,
			records: [][2][]byte{rec(`{"id":1}`, `{"id":`)}, err: "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fold(tt.fields, tt.records...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Fold: error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fold: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Fold:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestApplyLeavesTableOnError: a record the fold refuses changes nothing.
func TestApplyLeavesTableOnError(t *testing.T) {
	tab := map[string]Row{`{"id":1}`: {"id": int64(1)}}
	for _, v := range []string{`{"op":"t"}`, `{"op":"d","before":{"x":1}}`, `[1]`} {
		if err := Apply(tab, []string{"id"}, []byte(`{"id":1}`), []byte(v)); err == nil {
			t.Errorf("Apply(%s): no error", v)
		}
	}
	if len(tab) != 1 {
		t.Fatalf("table after refused records: %v", tab)
	}
}

func events(g *Gen, n int) []Event {
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = g.Next()
	}
	return evs
}

func TestGenDeterministic(t *testing.T) {
	for _, opts := range [][]Option{nil, {Debezium(), Tombstones(), Snapshot(5), CompositeKey()}} {
		a, b := events(New(7, 20, opts...), 300), events(New(7, 20, opts...), 300)
		c := events(New(8, 20, opts...), 300)
		same := true
		for i := range a {
			if !bytes.Equal(a[i].Key, b[i].Key) || !bytes.Equal(a[i].Value, b[i].Value) {
				t.Fatalf("event %d differs between two generators of one seed: %s %s / %s %s", i, a[i].Key, a[i].Value, b[i].Key, b[i].Value)
			}
			same = same && bytes.Equal(a[i].Value, c[i].Value)
		}
		if same {
			t.Fatal("seeds 7 and 8 gave the same events")
		}
	}
}

// TestGenFold: the generator's fold is the fold of its events' bytes, and
// matches the rows the events say their keys have.
func TestGenFold(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
	}{
		{"plain", nil},
		{"composite", []Option{CompositeKey()}},
		{"debezium", []Option{Debezium(), Snapshot(10)}},
		{"debezium with tombstones", []Option{Debezium(), Tombstones(), CompositeKey()}},
		{"debezium without before, with JsonConverter's schemas", []Option{Debezium(), NoBefore(), ConnectSchemas(), Snapshot(10)}},
		{"deletes heavy", []Option{Mix(1, 1, 3)}},
		{"inserts only", []Option{Mix(1, 0, 0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := New(42, 50, c.opts...)
			var records [][2][]byte
			last := map[string]Row{}
			kinds := map[Kind]int{}
			ops := map[byte]int{}
			for range 2000 {
				ev := g.Next()
				kinds[ev.Kind]++
				ops[ev.Op]++
				records = append(records, [2][]byte{ev.Key, ev.Value})
				want := rowJSON(ev.KeyFields, g.KeyFields())
				if strings.Contains(c.name, "schemas") {
					want = connectJSON(want, `{"type":"struct","optional":false,"name":"shop.items.Key","fields":[]}`)
				}
				if string(ev.Key) != string(want) {
					t.Fatalf("event key %s, want %s", ev.Key, want)
				}
				k := string(rowJSON(ev.KeyFields, g.KeyFields()))
				if ev.Row == nil {
					delete(last, k)
				} else {
					last[k] = ev.Row
				}
			}
			fold := g.Fold()
			ref, err := Fold(g.KeyFields(), records...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fold, ref) {
				t.Fatal("the generator's fold differs from the fold of its events")
			}
			if !reflect.DeepEqual(fold, last) {
				t.Fatal("the fold differs from each key's last row")
			}
			if len(fold) == 0 || len(fold) > 50 {
				t.Fatalf("%d live keys of 50", len(fold))
			}
			switch c.name {
			case "inserts only":
				if kinds[Delete] != 0 || kinds[Update] == 0 || len(fold) != 50 {
					t.Fatalf("kinds %v, %d live keys", kinds, len(fold))
				}
			default:
				if kinds[Insert] == 0 || kinds[Update] == 0 || kinds[Delete] == 0 {
					t.Fatalf("kinds %v: want inserts, updates and deletes", kinds)
				}
			}
			if strings.HasPrefix(c.name, "debezium") {
				snap := 10
				if strings.Contains(c.name, "tombstones") {
					snap = 0
				}
				if ops['c'] == 0 || ops['r'] != snap || ops['u'] == 0 || ops['d'] == 0 {
					t.Fatalf("ops %v", ops)
				}
				if (kinds[Tombstone] == kinds[Delete]) != strings.Contains(c.name, "tombstones") {
					t.Fatalf("kinds %v", kinds)
				}
			} else if len(ops) != 1 || ops[0] == 0 {
				t.Fatalf("ops %v without Debezium", ops)
			}
		})
	}
}

// TestFoldIsACopy: changing the returned fold leaves the generator's.
func TestFoldIsACopy(t *testing.T) {
	g := New(1, 3, Mix(1, 0, 0))
	g.Next()
	f := g.Fold()
	for k, r := range f {
		r["name"] = "changed"
		delete(f, k)
	}
	for _, r := range g.Fold() {
		if r["name"] == "changed" {
			t.Fatal("the fold shares its rows")
		}
		return
	}
	t.Fatal("the generator's fold lost its key")
}
