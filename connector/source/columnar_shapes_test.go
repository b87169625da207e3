package source

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// writePayloadFile writes one JSON value per record, through the payload
// that newPayload makes for the row group, beside the envelope, as the
// sink lands them; it returns the file's path.
func writePayloadFile(t testing.TB, dir string, s *schema.Schema, newPayload func(*rowgroup.RowGroup) (rowgroup.Payload, error), values []string, rowGroup int) string {
	t.Helper()
	g := rowgroup.New(s)
	payload, err := newPayload(g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, payload)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := writer.New(&out, s, writer.Compression(meta.CodecZstd, 0))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i, v := range values {
		env := &rowgroup.Envelope{Topic: "t", Partition: 0, Offset: int64(i), Timestamp: t0.Add(time.Duration(i) * time.Second)}
		if i%3 == 1 {
			env.Key = []byte("k" + strconv.Itoa(i))
			env.Headers = []rowgroup.Header{{Key: "h", Value: []byte{byte(i)}}, {Key: "h2"}}
		}
		if err := b.Append([]byte(v), env); err != nil {
			t.Fatalf("record %d %s: %v", i, v, err)
		}
		if (i+1)%rowGroup == 0 || i == len(values)-1 {
			if err := w.WriteRowGroup(g); err != nil {
				t.Fatal(err)
			}
			g.Reset()
		}
	}
	w.SetKeyValue(archive.FooterTopic, "t")
	w.SetKeyValue(archive.FooterPartition, "0")
	w.SetKeyValue(archive.FooterFirstOffset, "0")
	w.SetKeyValue(archive.FooterLastOffset, strconv.Itoa(len(values)-1))
	w.SetKeyValue(archive.FooterRecords, strconv.Itoa(len(values)))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.parquet")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// emitAll reads every record of src.
func emitAll(t *testing.T, src rowSource, err error) []kafka.Message {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer src.release()
	var msgs []kafka.Message
	for {
		ok, err := src.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return msgs
		}
		b := &batch{}
		m := kafka.Message{}
		if err := src.emit(b, &m); err != nil {
			t.Fatal(err)
		}
		m.Key, m.Value = cloneBytes(m.Key), cloneBytes(m.Value)
		for i := range m.Headers {
			m.Headers[i].Value = cloneBytes(m.Headers[i].Value)
		}
		msgs = append(msgs, m)
	}
}

// compareSources reads every row group of the file at path through the
// columnar path, which must take it, and through reader.Rows, and
// requires the same messages, record by record; it returns the values.
func compareSources(t *testing.T, path string) []string {
	t.Helper()
	osf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	st, err := osf.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f, err := reader.Open(osf, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	s := &fileStream{f: f, kind: valueJSON, tsPerMilli: 1}
	for _, fl := range f.Schema().Fields() {
		if fl.Name != envField {
			s.payload = append(s.payload, fl)
		}
	}
	s.unwrap = len(s.payload) == 1 && s.payload[0].Logical.Kind == schema.Variant
	var values []string
	for g := range f.Metadata().RowGroups {
		col, err := newColumnSource(s, g)
		if errors.Is(err, reader.ErrNotColumnar) {
			t.Fatalf("row group %d: not read columnar: %v", g, err)
		}
		cm := emitAll(t, col, err)
		rsrc, err := newRowsSource(s, g)
		rm := emitAll(t, rsrc, err)
		if len(cm) != len(rm) {
			t.Fatalf("row group %d: %d records columnar, %d through Rows", g, len(cm), len(rm))
		}
		for i := range cm {
			c, r := cm[i], rm[i]
			if !bytes.Equal(c.Value, r.Value) || !bytes.Equal(c.Key, r.Key) || (c.Key == nil) != (r.Key == nil) ||
				!c.Time.Equal(r.Time) || !headersEqual(c.Headers, r.Headers) {
				t.Errorf("row group %d record %d:\ncolumnar %q key %q headers %v time %v\nrows     %q key %q headers %v time %v",
					g, i, c.Value, c.Key, c.Headers, c.Time, r.Value, r.Key, r.Headers, r.Time)
			}
			values = append(values, string(c.Value))
		}
	}
	return values
}

// legacyListSchema is a payload of legacy two-level lists and bare
// repeated fields beside the envelope. Legacy shapes pass only the reader's
// lenient schema rules: the message is parsed with the envelope written
// out beside them.
func legacyListSchema(t testing.TB) *schema.Schema {
	t.Helper()
	env, err := schema.New("e", rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	envText := strings.TrimSuffix(strings.TrimSpace(env.String()), "}")
	envText = envText[strings.Index(envText, "{")+1:]
	s, err := schema.Parse(`message m {
  optional group tags (LIST) { repeated binary element (STRING); }
  optional group pts (LIST) { repeated group array { required int32 x; optional binary y (STRING); } }
  optional group one (LIST) { repeated group one_tuple { optional int64 v; } }
  required group req (LIST) { repeated int32 element; }
  optional group nested (LIST) { repeated group array (LIST) { repeated int32 array; } }
  optional group three (LIST) { repeated group list { optional group element (LIST) { repeated double element; } } }
  repeated int32 nums;
  repeated group items { required binary name (STRING); repeated double w; }
` + envText + "}")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shreddedSchema is a VARIANT payload shredded by shape (see
// variant.ParseShapePaths) beside the envelope.
func shreddedSchema(t testing.TB, shapeText string) *schema.Schema {
	t.Helper()
	shape, err := rowgroup.ParseVariantShape(shapeText)
	if err != nil {
		t.Fatal(err)
	}
	node, err := rowgroup.VariantNode("payload", schema.Optional, shape)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New("m", node, rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestColumnarLegacyLists replays legacy two-level lists and bare repeated
// fields through the columnar path, record by record as reader.Rows does.
func TestColumnarLegacyLists(t *testing.T) {
	s := legacyListSchema(t)
	values := []string{
		`{"tags":["a","b\"c"],"pts":[{"x":1,"y":"q"},{"x":2}],"one":[{"v":5},{}],"req":[1,2],"nested":[[1,2],[],[3]],"three":[[1.5],null,[]],"nums":[1,2,3],"items":[{"name":"n","w":[1.5,2]},{"name":"m"}]}`,
		`{"req":[]}`,
		`{"tags":[],"pts":[],"one":[],"req":[7],"nested":[],"three":[],"nums":[],"items":[]}`,
		`{"tags":null,"req":[0],"nested":[[]],"three":[null],"nums":[-1]}`,
		`{"tags":["x"],"req":[1,2,3,4],"pts":[{"x":-5,"y":""}],"items":[{"name":"","w":[]}]}`,
	}
	var all []string
	for i := range 40 {
		all = append(all, values[i%len(values)])
	}
	path := writePayloadFile(t, t.TempDir(), s, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return rowgroup.NewJSONShredder(g)
	}, all, 16)
	got := compareSources(t, path)
	if len(got) != len(all) {
		t.Fatalf("%d records, want %d", len(got), len(all))
	}
	if want := `{"tags":["a","b\"c"],"pts":[{"x":1,"y":"q"},{"x":2}],"one":[{"v":5},{}],"req":[1,2],"nested":[[1,2],[],[3]],"three":[[1.5],null,[]],"nums":[1,2,3],"items":[{"name":"n","w":[1.5,2]},{"name":"m","w":[]}]}`; got[0] != want {
		t.Errorf("record 0:\n got %s\nwant %s", got[0], want)
	}
}

// TestColumnarShreddedVariant replays VARIANT payloads shredded by several
// shapes (primitives, objects with residual fields, arrays of objects and
// of primitives, values that do not fit the shape) through the columnar
// path, record by record as reader.Rows does.
func TestColumnarShreddedVariant(t *testing.T) {
	values := []string{
		`{"event":"click","user":{"id":42,"name":"ann","extra":[1,"two"]},"tags":["a","b"],"items":[{"sku":"x1","qty":2,"note":"n"},{"sku":"x2"}],"price":12.5,"at":1}`,
		`{"event":"view","user":{"id":"not-a-number"},"tags":[],"items":[],"more":{"deep":[null,true]}}`,
		`{"event":null,"user":null,"tags":null,"items":[null,{"qty":"many"},7]}`,
		`{"user":{"name":"bob"},"tags":["c",1,null,{"k":"v"}]}`,
		`{}`,
		`"just a string"`,
		`[1,2,{"event":"nested"}]`,
		`null`,
		`12345678901234`,
		`{"event":"e","price":-0.25,"user":{"id":-1,"name":"","extra":{}},"z":"last","a":"first"}`,
	}
	shapes := map[string]string{
		"primitive": `$ string`,
		"object": `$.event string
$.price double`,
		"nested": `$.event string
$.user.id int64
$.user.name string
$.tags[*] string
$.items[*].sku string
$.items[*].qty int32`,
		"array-top": `$[*] int64`,
		"decimal": `$.price decimal(9,2)
$.at timestamp`,
	}
	for name, text := range shapes {
		t.Run(name, func(t *testing.T) {
			s := shreddedSchema(t, text)
			var all []string
			for i := range 30 {
				all = append(all, values[i%len(values)])
			}
			path := writePayloadFile(t, t.TempDir(), s, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
				return rowgroup.NewVariantShredder(g)
			}, all, 12)
			got := compareSources(t, path)
			for i, v := range got {
				if !jsonEqual([]byte(v), []byte(all[i])) {
					t.Errorf("record %d: %s, want %s", i, v, all[i])
				}
			}
			if len(got) != len(all) {
				t.Fatalf("%d records, want %d", len(got), len(all))
			}
		})
	}
}
