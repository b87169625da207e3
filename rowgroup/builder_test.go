package rowgroup

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// builderUserSchema is the payload part of the typed JSON cases.
const builderUserSchema = `message m {
  required int64 id;
  optional binary name (STRING);
  optional group tags (LIST) { repeated group list { required binary element (STRING); } }
}`

// withEnvelope returns the schema of text's fields plus EnvelopeNode.
func withEnvelope(t testing.TB, text string) *schema.Schema {
	t.Helper()
	user := schema.MustParse(text)
	s, err := schema.New(user.Name(), append(user.Fields()[:len(user.Fields()):len(user.Fields())], EnvelopeNode())...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// variantSchema returns the schema of a VARIANT column "payload" shredded
// by the shape paths (none for unshredded), with or without the envelope.
func variantSchema(t testing.TB, paths string, envelope bool) *schema.Schema {
	t.Helper()
	var shape variant.Shape
	if paths != "" {
		var err error
		if shape, err = variant.ParseShapePaths(paths); err != nil {
			t.Fatal(err)
		}
	}
	node, err := VariantNode("payload", schema.Required, shape)
	if err != nil {
		t.Fatal(err)
	}
	fields := []*schema.Node{node}
	if envelope {
		fields = append(fields, EnvelopeNode())
	}
	s, err := schema.New("m", fields...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshot is everything a failed Append must leave as it was.
type snapshot struct {
	rows  int
	dump  map[string]string
	lens  [][6]int
	check error
}

func takeSnapshot(g *RowGroup) snapshot {
	s := snapshot{rows: g.NumRows(), dump: dumpGroup(g), check: g.Check()}
	for _, c := range g.Columns() {
		s.lens = append(s.lens, [6]int{c.NumLevels(), c.NumValues(), len(c.Rep), len(c.Def), len(c.Bytes), len(c.Offsets)})
	}
	return s
}

// testEnvelope is the envelope of record i: keys and headers vary so that
// every shape appears (null key, empty key, no headers, a null header
// value, an empty one, a repeated header key).
func testEnvelope(i int) *Envelope {
	e := &Envelope{
		Topic:     fmt.Sprintf("topic-%d", i%2),
		Partition: int32(i % 3),
		Offset:    int64(1000 + i),
		Timestamp: time.UnixMilli(1714979289123 + int64(i)).Add(456 * time.Microsecond), // the micros are dropped
	}
	switch i % 4 {
	case 0: // null key, no headers
	case 1:
		e.Key = []byte{}
		e.Headers = []Header{{Key: "a", Value: []byte("1")}, {Key: "b"}}
	case 2:
		e.Key = []byte("key-2")
		e.Headers = []Header{}
	case 3:
		e.Key = []byte{0, 0xff}
		e.Headers = []Header{{Key: "x", Value: []byte{}}, {Key: "x", Value: []byte("again")}}
	}
	return e
}

// builderCase is a row group filled through a Builder.
type builderCase struct {
	name    string
	schema  func(t testing.TB, envelope bool) *schema.Schema
	payload func(t testing.TB, g *RowGroup) Payload
	good    []string // records that fit
	bad     []string // records that fail in the payload, some half-way through
	// want, for the records good, maps payload column paths to their dump.
	want map[string]string
}

func builderCases() []builderCase {
	jsonPayload := func(t testing.TB, g *RowGroup) Payload {
		sh, err := NewJSONShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	variantPayload := func(t testing.TB, g *RowGroup) Payload {
		sh, err := NewVariantShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	variantOf := func(paths string) func(testing.TB, bool) *schema.Schema {
		return func(t testing.TB, envelope bool) *schema.Schema { return variantSchema(t, paths, envelope) }
	}
	variantRecords := []string{`{"id":1,"tags":["a","b"]}`, `{"id":"two","tags":[]}`, `[1,2]`, `null`, `{"other":{"x":1}}`}
	return []builderCase{
		{
			name: "json",
			schema: func(t testing.TB, envelope bool) *schema.Schema {
				if envelope {
					return withEnvelope(t, builderUserSchema)
				}
				return schema.MustParse(builderUserSchema)
			},
			payload: jsonPayload,
			good:    []string{`{"id":1,"name":"a","tags":["x","y"]}`, `{"id":2,"tags":[]}`, `{"id":3,"name":null}`, `{"id":4,"tags":["z"]}`},
			bad: []string{
				`{"id":5,"tags":["p","q",7]}`, // half-way through a list
				`{"name":"no id"}`,
				`{"id":6,"_kafka":{"topic":"t"}}`, // the envelope is not the record's
				`{"id":7`,
			},
			want: map[string]string{
				"id":                `V[1 2 3 4]`,
				"name":              `D[1 0 0 0] V["a"]`,
				"tags.list.element": `R[0 1 0 0 0] D[2 2 1 0 2] V["x" "y" "z"]`,
			},
		},
		{
			name:    "variant-unshredded",
			schema:  variantOf(""),
			payload: variantPayload,
			good:    variantRecords,
			bad:     []string{`{"id":1,}`, `{"a":1,"a":2}`, `[1,2`},
			want:    map[string]string{"payload.value": ``},
		},
		{
			name:    "variant-shredded",
			schema:  variantOf("$.id int64\n$.tags[*] string"),
			payload: variantPayload,
			good:    variantRecords,
			bad:     []string{`{"id":1,}`, `{"a":1,"a":2}`},
			want: map[string]string{
				"payload.typed_value.id.typed_value":                            `D[2 1 0 0 1] V[1]`,
				"payload.typed_value.tags.typed_value.list.element.typed_value": `R[0 1 0 0 0 0] D[4 4 2 0 0 1] V["a" "b"]`,
			},
		},
		{
			// Without value columns a record can fail after some columns
			// were written.
			name: "variant-typed-only",
			schema: func(t testing.TB, envelope bool) *schema.Schema {
				text := `message m { required group payload (VARIANT) {
					required binary metadata;
					optional binary value;
					optional group typed_value {
						required group a { optional int64 typed_value; }
						required group b { optional group typed_value (LIST) { repeated group list { required group element { optional binary typed_value (STRING); } } } }
					}
				} }`
				if envelope {
					return withEnvelope(t, text)
				}
				return schema.MustParse(text)
			},
			payload: variantPayload,
			good:    []string{`{"a":1,"b":["x"]}`, `{"b":[]}`, `{"a":2}`},
			bad:     []string{`{"a":3,"b":["y",4]}`, `{"a":"x"}`, `{"a":1,"b":"not a list"}`},
			want: map[string]string{
				"payload.typed_value.a.typed_value": `D[2 1 2] V[1 2]`,
			},
		},
	}
}

// TestBuilderRows builds rows with and without the envelope for each
// payload kind, mixing in records that fail: a failed Append must leave
// the row group exactly as it was, and the good rows must be what they
// would be without the failures.
func TestBuilderRows(t *testing.T) {
	for _, tc := range builderCases() {
		for _, envelope := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/envelope=%v", tc.name, envelope), func(t *testing.T) {
				g := New(tc.schema(t, envelope))
				p := tc.payload(t, g)
				b, err := NewBuilder(g, p)
				if err != nil {
					t.Fatal(err)
				}
				if b.HasEnvelope() != envelope {
					t.Fatalf("HasEnvelope() = %v", b.HasEnvelope())
				}
				var envs []*Envelope
				env := func(i int) *Envelope {
					if !envelope {
						return nil
					}
					return testEnvelope(i)
				}
				fail := func(value string, e *Envelope, wantRecord bool) {
					t.Helper()
					before := takeSnapshot(g)
					err := b.Append([]byte(value), e)
					var re *RecordError
					switch {
					case err == nil:
						t.Fatalf("Append(%s) succeeded", value)
					case wantRecord && !errors.As(err, &re):
						t.Errorf("Append(%s): %v is not a *RecordError", value, err)
					case !wantRecord && !errors.Is(err, ErrEnvelope):
						t.Errorf("Append(%s): %v does not wrap ErrEnvelope", value, err)
					}
					after := takeSnapshot(g)
					if after.check != nil {
						t.Fatalf("after Append(%s) failed: %v", value, after.check)
					}
					if !reflect.DeepEqual(before, after) {
						t.Fatalf("Append(%s) failed with %v but changed the row group:\nbefore %v\nafter  %v", value, err, before, after)
					}
					if !wantRecord {
						return
					}
					// The payload alone undoes itself too.
					if err := p.Append([]byte(value)); !errors.As(err, &re) {
						t.Errorf("payload Append(%s): %v, want a *RecordError", value, err)
					}
					if after := takeSnapshot(g); !reflect.DeepEqual(before, after) {
						t.Fatalf("payload Append(%s) failed but changed the row group", value)
					}
				}
				for i, value := range tc.good {
					if i < len(tc.bad) {
						fail(tc.bad[i], env(100+i), true)
					}
					// The envelope's presence must match the schema.
					if envelope {
						fail(value, nil, false)
					} else {
						fail(value, testEnvelope(i), false)
					}
					e := env(i)
					if err := b.Append([]byte(value), e); err != nil {
						t.Fatalf("Append(%s): %v", value, err)
					}
					envs = append(envs, e)
				}
				for _, value := range tc.bad[min(len(tc.bad), len(tc.good)):] {
					fail(value, env(200), true)
				}
				if err := g.Check(); err != nil {
					t.Fatal(err)
				}
				if g.NumRows() != len(tc.good) {
					t.Fatalf("%d rows, want %d", g.NumRows(), len(tc.good))
				}
				got := dumpGroup(g)
				for path, want := range tc.want {
					if want == "" { // Variant values, compared as JSON
						want = variantDump(t, tc.good)
						got[path] = variantColumnDump(t, g, path)
					}
					if got[path] != want {
						t.Errorf("%s = %s, want %s", path, got[path], want)
					}
				}
				if envelope {
					checkEnvelopeColumns(t, g, envs)
				} else {
					for path := range got {
						if strings.HasPrefix(path, EnvelopeField+".") {
							t.Errorf("column %s without an envelope", path)
						}
					}
				}
			})
		}
	}
}

// variantDump renders records as their Variant JSON.
func variantDump(t *testing.T, records []string) string {
	var out []string
	for _, r := range records {
		md, val, err := variant.FromJSON([]byte(r))
		if err != nil {
			t.Fatal(err)
		}
		j, err := variant.AppendJSON(nil, md, val)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(j))
	}
	return strings.Join(out, "\n")
}

// variantColumnDump renders an unshredded Variant column's values as JSON.
func variantColumnDump(t *testing.T, g *RowGroup, valuePath string) string {
	metaPath := strings.TrimSuffix(valuePath, "value") + "metadata"
	var md, val *Column
	for _, c := range g.Columns() {
		switch c.Leaf.PathString() {
		case metaPath:
			md = c
		case valuePath:
			val = c
		}
	}
	var out []string
	for i := range val.NumValues() {
		j, err := variant.AppendJSON(nil, md.ByteArray(i), val.ByteArray(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(j))
	}
	return strings.Join(out, "\n")
}

// checkEnvelopeColumns compares the envelope columns with the envelopes.
func checkEnvelopeColumns(t *testing.T, g *RowGroup, envs []*Envelope) {
	t.Helper()
	var topics, keys, hkeys, hvals []string
	var parts, offs, ts, keyDef, hRep, hkDef, hvDef []string
	for _, e := range envs {
		topics = append(topics, fmt.Sprintf("%q", e.Topic))
		parts = append(parts, fmt.Sprint(e.Partition))
		offs = append(offs, fmt.Sprint(e.Offset))
		ts = append(ts, fmt.Sprint(e.Timestamp.UnixMilli()))
		if e.Key == nil {
			keyDef = append(keyDef, "0")
		} else {
			keyDef = append(keyDef, "1")
			keys = append(keys, fmt.Sprintf("%q", e.Key))
		}
		if len(e.Headers) == 0 {
			hRep, hkDef, hvDef = append(hRep, "0"), append(hkDef, "0"), append(hvDef, "0")
		}
		for i, h := range e.Headers {
			hRep = append(hRep, fmt.Sprint(min(i, 1)))
			hkDef = append(hkDef, "1")
			hkeys = append(hkeys, fmt.Sprintf("%q", h.Key))
			if h.Value == nil {
				hvDef = append(hvDef, "1")
			} else {
				hvDef = append(hvDef, "2")
				hvals = append(hvals, fmt.Sprintf("%q", h.Value))
			}
		}
	}
	j := func(s []string) string { return strings.Join(s, " ") }
	want := map[string]string{
		"_kafka.topic":                   "V[" + j(topics) + "]",
		"_kafka.partition":               "V[" + j(parts) + "]",
		"_kafka.offset":                  "V[" + j(offs) + "]",
		"_kafka.timestamp":               "V[" + j(ts) + "]",
		"_kafka.key":                     "D[" + j(keyDef) + "] V[" + j(keys) + "]",
		"_kafka.headers.key_value.key":   "R[" + j(hRep) + "] D[" + j(hkDef) + "] V[" + j(hkeys) + "]",
		"_kafka.headers.key_value.value": "R[" + j(hRep) + "] D[" + j(hvDef) + "] V[" + j(hvals) + "]",
	}
	got := dumpGroup(g)
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s = %s, want %s", path, got[path], w)
		}
	}
}

// TestEnvelopeNode checks the envelope's schema text and levels.
func TestEnvelopeNode(t *testing.T) {
	s, err := schema.New("m", EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	want := schema.MustParse(`message m {
  required group _kafka {
    required binary topic (STRING);
    required int32 partition;
    required int64 offset;
    required int64 timestamp (TIMESTAMP(MILLIS,true));
    optional binary key;
    required group headers (MAP) {
      repeated group key_value {
        required binary key (STRING);
        optional binary value;
      }
    }
  }
}`)
	if !s.Equal(want) {
		t.Errorf("EnvelopeNode:\n%s\nwant\n%s", s, want)
	}
	// An optional envelope group works too: its columns are one level deeper.
	opt := schema.MustParse(strings.Replace(want.String(), "required group _kafka", "optional group _kafka", 1))
	g := New(opt)
	sh, err := NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := b.Append([]byte(`{}`), testEnvelope(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	got := dumpGroup(g)
	for path, w := range map[string]string{
		"_kafka.topic":                 `D[1 1 1 1] V["topic-0" "topic-1" "topic-0" "topic-1"]`,
		"_kafka.key":                   `D[1 2 2 2] V["" "key-2" "\x00\xff"]`,
		"_kafka.headers.key_value.key": `R[0 0 1 0 0 1] D[1 2 2 1 2 2] V["a" "b" "x" "x"]`,
	} {
		if got[path] != w {
			t.Errorf("%s = %s, want %s", path, got[path], w)
		}
	}
}

// TestBuilderEnvelopeSchemas covers how payloads and the Builder share
// out the top-level fields.
func TestBuilderEnvelopeSchemas(t *testing.T) {
	t.Run("json member _kafka is unknown", func(t *testing.T) {
		g := New(withEnvelope(t, builderUserSchema))
		sh, err := NewJSONShredder(g, IgnoreUnknownFields())
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBuilder(g, sh)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Append([]byte(`{"id":1,"_kafka":{"topic":"from json"}}`), testEnvelope(0)); err != nil {
			t.Fatal(err)
		}
		if got := dumpGroup(g)["_kafka.topic"]; got != `V["topic-0"]` {
			t.Errorf("topic %s, want the envelope's", got)
		}
	})
	t.Run("Shred has no envelope", func(t *testing.T) {
		g := New(withEnvelope(t, builderUserSchema))
		sh, err := NewJSONShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.Shred([]byte(`{"id":1}`)); !errors.Is(err, ErrEnvelope) {
			t.Errorf("Shred: %v, want ErrEnvelope", err)
		}
		// Append, the Payload half, works: the Builder adds the rest.
		if err := sh.Append([]byte(`{"id":1}`)); err != nil || g.NumRows() != 0 {
			t.Errorf("Append: %v, %d rows", err, g.NumRows())
		}
	})
	t.Run("EnvelopeFromJSON", func(t *testing.T) {
		// Any _kafka field, envelope-shaped or not, is the record's.
		for _, text := range []string{
			withEnvelope(t, builderUserSchema).String(),
			`message m { required int64 id; optional group _kafka { optional binary note (STRING); } }`,
		} {
			g := New(schema.MustParse(text))
			sh, err := NewJSONShredder(g, EnvelopeFromJSON())
			if err != nil {
				t.Fatal(err)
			}
			if sh.b.HasEnvelope() {
				t.Fatalf("builder takes the envelope of %s", text)
			}
			if err := sh.Shred([]byte(`{"id":1,"_kafka":null}`)); err != nil && !strings.Contains(err.Error(), "_kafka") {
				t.Fatalf("Shred: %v", err)
			}
			b, err := NewBuilder(g, sh)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Append([]byte(`{"id":1}`), testEnvelope(0)); !errors.Is(err, ErrEnvelope) || !strings.Contains(err.Error(), "EnvelopeFromJSON") {
				t.Errorf("envelope given: %v", err)
			}
		}
	})
	t.Run("wrong envelope shape", func(t *testing.T) {
		g := New(schema.MustParse(`message m { required int64 id; optional group _kafka { optional binary note (STRING); } }`))
		if _, err := NewJSONShredder(g); err == nil || !strings.Contains(err.Error(), "reserved for the Kafka envelope") {
			t.Errorf("NewJSONShredder: %v", err)
		}
		g = New(schema.MustParse(`message m { required group v (VARIANT) { required binary metadata; required binary value; } required int32 _kafka; }`))
		if _, err := NewVariantShredder(g); err == nil {
			t.Errorf("NewVariantShredder accepted a leaf _kafka")
		}
	})
	t.Run("variant fields", func(t *testing.T) {
		v := `required group v (VARIANT) { required binary metadata; required binary value; }`
		w := `required group w (VARIANT) { required binary metadata; required binary value; }`
		for _, tt := range []struct {
			fields string
			opts   []VariantOption
			ok     bool
		}{
			{v, nil, true},
			{v + withEnvelopeText(), nil, true},
			{withEnvelopeText() + v, []VariantOption{VariantColumn("v")}, true},
			{v + w, nil, false},
			{v + w, []VariantOption{VariantColumn("w")}, false},
			{v + `required int32 id;`, nil, false},
			{v, []VariantOption{VariantColumn("x")}, false},
			{`required int32 v;`, []VariantOption{VariantColumn("v")}, false},
			{`required group v (VARIANT) { required binary metadata; optional group typed_value { required group a { optional int64 typed_value; } } }`, nil, true},
			{strings.Replace(v, " v ", " _kafka ", 1), []VariantOption{VariantColumn("_kafka")}, true},
		} {
			g := New(schema.MustParse("message m { " + tt.fields + " }"))
			_, err := NewVariantShredder(g, tt.opts...)
			if (err == nil) != tt.ok {
				t.Errorf("%s: err %v, want ok %v", tt.fields, err, tt.ok)
			}
		}
		// A VARIANT column the user named _kafka is the payload.
		g := New(schema.MustParse("message m { " + strings.Replace(v, " v ", " _kafka ", 1) + " }"))
		sh, err := NewVariantShredder(g, VariantColumn("_kafka"))
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.ShredJSON([]byte(`{"a":1}`)); err != nil || g.NumRows() != 1 {
			t.Errorf("ShredJSON: %v", err)
		}
	})
	t.Run("payload of another row group", func(t *testing.T) {
		s := schema.MustParse(builderUserSchema)
		sh, err := NewJSONShredder(New(s))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewBuilder(New(s), sh); err == nil {
			t.Error("NewBuilder accepted a payload of another row group")
		}
	})
}

func withEnvelopeText() string {
	s, _ := schema.New("m", EnvelopeNode())
	text := s.String()
	return text[strings.Index(text, "{")+1 : strings.LastIndex(text, "}")]
}

// halfPayload is a Payload of another package: it writes id, then fails
// without undoing when the value is "bad". The Builder must undo it.
type halfPayload struct{ id *Column }

func (p halfPayload) Append(value []byte) error {
	p.id.AppendInt64(0, int64(len(value)))
	if string(value) == "bad" {
		return &RecordError{Err: errors.New("bad")}
	}
	return nil
}

// builderWithRow returns a builder over a foreign payload (halfPayload)
// whose row group holds one good row, and the row group's snapshot.
func builderWithRow(t *testing.T) (*RowGroup, *Builder, snapshot) {
	t.Helper()
	g := New(withEnvelope(t, `message m { required int64 id; }`))
	b, err := NewBuilder(g, halfPayload{g.Column(0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append([]byte("good"), testEnvelope(1)); err != nil {
		t.Fatal(err)
	}
	return g, b, takeSnapshot(g)
}

func TestBuilderUndoesForeignPayload(t *testing.T) {
	g, b, before := builderWithRow(t)
	if err := b.Append([]byte("bad"), testEnvelope(2)); err == nil {
		t.Fatal("no error")
	}
	if after := takeSnapshot(g); !reflect.DeepEqual(before, after) || after.check != nil {
		t.Errorf("row group changed: %v", after.check)
	}
}

func TestBuilderAllocs(t *testing.T) {
	g := New(withEnvelope(t, clickSchema))
	sh, err := NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(clickLine)
	env := testEnvelope(3)
	if err := b.Append(line, env); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		g.Reset()
		if err := b.Append(line, env); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per row in the steady state, want 0", allocs)
	}
}

// TestRowGroupCapacity: Capacity counts what the buffers hold, which Reset
// keeps and Size does not count.
func TestRowGroupCapacity(t *testing.T) {
	g, sh := newShredder(t, orderSchema)
	empty := g.Size() // the first offset of each BYTE_ARRAY column
	if g.Capacity() < empty || g.Capacity() > 2*empty {
		t.Errorf("empty row group: size %d, capacity %d", empty, g.Capacity())
	}
	for range 100 {
		if err := sh.Shred([]byte(orderLine)); err != nil {
			t.Fatal(err)
		}
	}
	size, capacity := g.Size(), g.Capacity()
	if capacity < size || size == 0 {
		t.Fatalf("size %d, capacity %d", size, capacity)
	}
	g.Reset()
	if g.Size() != empty || g.Capacity() != capacity {
		t.Errorf("after Reset: size %d, capacity %d (was %d)", g.Size(), g.Capacity(), capacity)
	}
	g.Reserve(1000) // nothing before the first row
	if g.Capacity() != capacity {
		t.Errorf("Reserve on an empty row group grew it")
	}
}

// FuzzBuilderEnvelope builds rows of any JSON and any envelope: a row is
// added whole or not at all, and the row group stays consistent.
func FuzzBuilderEnvelope(f *testing.F) {
	for i, s := range append(append([]string(nil), fuzzGood...), fuzzBad...) {
		f.Add([]byte(s), "topic", int32(i), int64(i)<<40, int64(-i)*1e9, []byte("key"), i%2 == 0, "h", []byte{byte(i)}, uint8(i))
	}
	g := New(withEnvelope(f, fuzzSchema))
	sh, err := NewJSONShredder(g)
	if err != nil {
		f.Fatal(err)
	}
	b, err := NewBuilder(g, sh)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte, topic string, partition int32, offset, ms int64, key []byte, keyNull bool, hk string, hv []byte, nh uint8) {
		if g.NumRows() > 1000 {
			g.Reset()
		}
		env := &Envelope{Topic: topic, Partition: partition, Offset: offset, Timestamp: time.UnixMilli(ms), Key: key}
		if keyNull {
			env.Key = nil
		} else if env.Key == nil {
			env.Key = []byte{}
		}
		for i := range int(nh % 5) {
			h := Header{Key: hk, Value: hv}
			if i%2 == 1 {
				h.Value = nil
			}
			env.Headers = append(env.Headers, h)
		}
		rows, before := g.NumRows(), columnLengths(g)
		err := b.Append(line, env)
		if cerr := g.Check(); cerr != nil {
			t.Fatalf("Check after Append(%q) = %v: %v", line, err, cerr)
		}
		if err != nil {
			if after := columnLengths(g); after != before || g.NumRows() != rows {
				t.Fatalf("failed row changed the columns:\n got %s\nwant %s", after, before)
			}
			return
		}
		if g.NumRows() != rows+1 {
			t.Fatalf("NumRows %d → %d after a row", rows, g.NumRows())
		}
		if got := g.Column(g.Schema().Leaf("_kafka.timestamp").Column); got.Int64[got.NumValues()-1] != ms {
			t.Fatalf("timestamp %d, want %d", got.Int64[got.NumValues()-1], ms)
		}
	})
}

// TestBuilderRefusesEnvelopeText: a header key or topic that is not UTF-8
// is the record's fault: Append refuses the row whole with ErrEnvelopeText,
// and the STRING columns never hold the bytes.
func TestBuilderRefusesEnvelopeText(t *testing.T) {
	cases := []struct {
		name string
		env  Envelope
	}{
		{"header key", Envelope{Topic: "t", Headers: []Header{{Key: "ok", Value: []byte{1}}, {Key: "bad\xff", Value: []byte{2}}}}},
		{"lone continuation byte", Envelope{Topic: "t", Headers: []Header{{Key: "\x80"}}}},
		{"cut sequence", Envelope{Topic: "t", Headers: []Header{{Key: "\xe2\x82"}}}},
		{"topic", Envelope{Topic: "t\xc0\xaf"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, b, before := builderWithRow(t)
			err := b.Append([]byte("good"), &c.env)
			if !errors.Is(err, ErrEnvelopeText) {
				t.Fatalf("Append: %v, want ErrEnvelopeText", err)
			}
			if after := takeSnapshot(g); !reflect.DeepEqual(before, after) || after.check != nil {
				t.Errorf("row group changed: %v", after.check)
			}
			// A valid key with the same bytes elsewhere in the record is fine.
			ok := Envelope{Topic: "t", Key: []byte("\xff"), Headers: []Header{{Key: "k", Value: []byte("\xff")}}}
			if err := b.Append([]byte("good"), &ok); err != nil {
				t.Fatalf("binary key and header value: %v", err)
			}
		})
	}
}

// TestCheckRefusesInvalidText: whatever appends to a STRING, JSON or ENUM
// column, the row group's check (which the writer runs before it encodes
// a row group) refuses bytes that are not UTF-8; BINARY takes any bytes.
func TestCheckRefusesInvalidText(t *testing.T) {
	cases := []struct {
		leaf   string
		values []string
		bad    int // index of the first invalid value, or -1
	}{
		{"required binary s (STRING)", []string{"plain", "日本語", "é"}, -1},
		{"required binary s (STRING)", []string{"plain", "x\xff"}, 1},
		{"required binary s (STRING)", []string{"\xe2\x82", "\xac"}, 0},       // valid only when joined
		{"required binary s (JSON)", []string{"{\"a\":\"\xed\xa0\x80\"}"}, 0}, // a surrogate
		{"required binary s (ENUM)", []string{"A", "B\xfe"}, 1},
		{"required binary s", []string{"\xff\xfe", "\x80"}, -1},
		{"optional binary s (STRING)", []string{"aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbb\x81"}, 1},
	}
	for _, c := range cases {
		s, err := schema.Parse("message m { " + c.leaf + "; }")
		if err != nil {
			t.Fatal(err)
		}
		g := New(s)
		col := g.Column(0)
		for _, v := range c.values {
			col.AppendBytes(0, []byte(v))
			g.EndRow()
		}
		err = g.Check()
		want := ""
		if c.bad >= 0 {
			want = fmt.Sprintf("value %d is not valid UTF-8", c.bad)
		}
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s %q: Check() = %v, want an error with %q", c.leaf, c.values, err, want)
		}
	}
}

func BenchmarkIsASCII(b *testing.B) {
	data := []byte(strings.Repeat("user_2868 PT new sale blue 51b93e26c0666ebf ", 1<<14))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !isASCII(data) {
			b.Fatal("not ASCII")
		}
	}
}
